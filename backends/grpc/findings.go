package grpc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// deadAnswer says what becomes of the calls of a rule that forwards
// nothing.
const deadAnswer = "a gRPC service config cannot answer a call itself, so gwretry writes no methodConfig for the " +
	"rule and its calls go to the target the client dials, with the policy of a less specific name if there is one"

// uncommitted is said wherever a retry claim depends on the call still
// being retryable.
const uncommitted = "gRPC retries a call only while it is uncommitted: not once the server has sent response " +
	"headers (only a trailers-only answer is retried), and not once its request messages, each with gRPC's " +
	"5-byte prefix, exceed the client's retry buffer (grpc-go: 256 KiB per call, compressed size, raised with the grpc.MaxRetryRPCBufferSize call option; other " +
	"languages have their own limits)"

// findings returns one finding per feature that r sets.
func findings(r *translate.Rule, p *rulePlan, throttling *RetryThrottling) []translate.Finding {
	var out []translate.Finding
	for _, f := range r.Features() {
		if ff, ok := fixedFinding(r, f); ok {
			out = append(out, ff)
			continue
		}
		if !r.Forwards() {
			out = append(out, translate.Decided(r, f, report.Decide(report.ReasonRuleForwardsNothing), "the rule forwards nothing (%s), "+
				"so %s never takes effect; %s",
				r.NoForwardReason(), f, deadAnswer))
			continue
		}
		if len(p.Names) == 0 {
			msg := "no methodConfig is written for this rule, as no service config name selects its calls: " + p.partial()
			if len(p.Untranslatable) > 0 {
				msg += "; give each gRPC method or service its own match, an Exact /package.Service/Method or a " +
					"PathPrefix /package.Service, without headers or query parameters"
			}
			out = append(out, translate.Decided(r, f, report.Decide(report.ReasonNoNameSelectsCalls), "%s", msg))
			continue
		}
		d, msg := assess(r, f, throttling)
		msg = names(p) + ": " + msg
		if part := p.partial(); part != "" {
			// An unsupported finding stays so; any other covers only
			// some of the rule's calls.
			if d.Status() != translate.Unsupported {
				d = d.With(p.caveats()...)
			}
			msg += "; and the methodConfig covers only the calls these names select, not those of: " + part
		}
		out = append(out, translate.Decided(r, f, d, "%s", msg))
	}
	return out
}

// caveats are what the rule's methodConfig does not cover: the matches no
// name can express, the names another rule holds.
func (p *rulePlan) caveats() []report.Caveat {
	var cs []report.Caveat
	if n := len(p.Untranslatable); n > 0 {
		cs = append(cs, report.NewCaveat(report.CaveatMatchesNotSelectable, "count", strconv.Itoa(n)))
	}
	if len(p.LostNames) > 0 {
		s := make([]string, len(p.LostNames))
		for i, n := range p.LostNames {
			// As data: the empty name as the service config writes it.
			s[i] = n.String()
			if n == (Name{}) {
				s[i] = "{}"
			}
		}
		cs = append(cs, report.NewCaveat(report.CaveatCallsTakenByOtherRule, "names", strings.Join(s, ", ")))
	}
	return cs
}

// names describes the methodConfig's names.
func names(p *rulePlan) string {
	s := make([]string, len(p.Names))
	for i, n := range p.Names {
		s[i] = n.String()
	}
	return "methodConfig " + strings.Join(s, ", ")
}

// fixedFinding returns the finding of a feature a service config cannot
// express whatever the rule says: backendRefs, filters, HTTPS listeners.
func fixedFinding(r *translate.Rule, f translate.Feature) (translate.Finding, bool) {
	switch {
	case f == translate.FeatureBackendRefs:
		return backendRefsFinding(r), true
	case f == translate.FeatureListenerHTTPS:
		var where []string
		for _, u := range r.Ungenerated {
			where = append(where, u.String())
		}
		where = append(where, r.TLSListeners...)
		return translate.Decided(r, f, report.Decide(report.ReasonClientHasNoListeners), "a gRPC client serves no listener: the route's "+
			"HTTPS listeners (%s) have no counterpart in a service config; TLS to the server is the channel's "+
			"transport credentials, chosen in the client's code", strings.Join(where, ", ")), true
	case f.IsFilter():
		return filterFinding(r, f), true
	}
	return translate.Finding{}, false
}

func backendRefsFinding(r *translate.Rule) translate.Finding {
	f := translate.FeatureBackendRefs
	if r.Dead() {
		return translate.Decided(r, f, report.Decide(report.ReasonNotAnswered500), "%s, so the Gateway API answers every request "+
			"500; %s", r.DeadReason(), deadAnswer)
	}
	reasons := make([]string, len(r.Invalid))
	for i, b := range r.Invalid {
		reasons[i] = fmt.Sprintf("backendRefs[%d]: %s", b.Index, b.Reason)
	}
	if r.InvalidWeight() == 0 {
		d := report.Decide(report.ReasonInvalidBackendsUnweighted).With(report.NewCaveat(report.CaveatRequestsNotRouted))
		return translate.Decided(r, f, d, "the invalid backendRefs (%s) have weight 0, "+
			"so no call is meant for them; but a service config does not route: the client sends every call "+
			"to the target it dials, not to the rule's backendRefs", strings.Join(reasons, "; "))
	}
	d := report.Decide(report.ReasonTrafficNotSplit, "weight", strconv.Itoa(r.InvalidWeight()))
	return translate.Decided(r, f, d, "a service config does not route or split "+
		"traffic: the client sends every call to the target it dials, so the share of the invalid backendRefs "+
		"(%s; weight %d) is not answered with an error", strings.Join(reasons, "; "), r.InvalidWeight())
}

func filterFinding(r *translate.Rule, f translate.Feature) translate.Finding {
	base := strings.TrimPrefix(string(f), "backendRefs.")
	if base != string(f) {
		return translate.Decided(r, f, report.Decide(report.ReasonNotExpressible), "a service config has no per-backend "+
			"filters (%s on backendRefs): the client sends each call to the target it dials, without it", base)
	}
	why := map[translate.Feature]string{
		translate.FeatureRequestHeaderModifier:  "a service config cannot change a call's metadata: calls are sent without it (a client interceptor can add metadata)",
		translate.FeatureResponseHeaderModifier: "a service config cannot change a response's metadata: responses are returned without it",
		translate.FeatureRequestRedirect:        "a gRPC client follows no redirects and a service config cannot answer a call",
		translate.FeatureURLRewrite:             "a service config cannot change a call's method or authority: calls are sent as the application makes them",
		translate.FeatureRequestMirror:          "a service config cannot mirror calls: nothing is mirrored",
	}[f]
	if why == "" {
		why = "a gRPC service config has no such filter: calls are sent without it"
	}
	switch {
	case f == translate.FeatureRequestRedirect && r.Filters.Redirect != nil:
		return translate.Decided(r, f, report.Decide(report.ReasonNotExpressible), "instead of redirecting (%s): %s, so gwretry "+
			"writes no methodConfig for the rule", r.Filters.Redirect, why)
	case !r.Forwards():
		return translate.Decided(r, f, report.Decide(report.ReasonNotExpressible), "the rule forwards nothing (%s): %s: %s",
			r.NoForwardReason(), base, why)
	}
	return translate.Decided(r, f, report.Decide(report.ReasonNotExpressible), "%s: %s", base, why)
}

// assess says how the client, with the rule's methodConfig, handles
// feature f of rule r, which forwards and has names: the decision, and the
// message that says it in words.
func assess(r *translate.Rule, f translate.Feature, throttling *RetryThrottling) (report.Decision, string) {
	rt := r.Retry
	be := r.Timeouts.BackendRequest
	noTryTimer := "gRPC has no per-attempt timeout (gRFC A6; A44 ignores per_try_timeout), so no try is cut"
	if f == translate.FeatureRetryBackendTimeout && !be.IsZero() {
		return report.Decide(report.ReasonNoPerTryTimeout), noTryTimer + " and none is retried for it; timeouts.request becomes " +
			"the deadline of the whole call"
	}
	if f.IsRetry() && rt.Attempts == 0 {
		return report.Decide(report.ReasonRetriesDisabled), "attempts is 0: no retryPolicy, so the client retries nothing (gRPC's " +
			"transparent retry re-sends only a call that the server reports it never processed)"
	}
	switch f {
	case translate.FeatureRetryAttempts:
		n := min(rt.Attempts, maxAttemptsCap-1) + 1
		msg := fmt.Sprintf("retryPolicy maxAttempts %d (gRPC counts the first try, so %d retries) on every "+
			"status in retryableStatusCodes, for every call (all are POSTs)", n, n-1)
		if n == 2 {
			msg = strings.Replace(msg, "1 retries", "1 retry", 1)
		}
		d := report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("maxAttempts %d", n)).With(uncommittedCaveats()...)
		var gaps []string
		if rt.Attempts > maxAttemptsCap-1 {
			gaps = append(gaps, fmt.Sprintf("attempts %d is capped: gwretry writes maxAttempts 5, as gRPC clients "+
				"treat a larger one as 5 by default (grpc-go's grpc.WithMaxCallAttempts raises that limit, not the "+
				"file's value), so at most 4 retries", rt.Attempts))
			d = d.With(report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.Itoa(n-1), "max", strconv.Itoa(maxAttemptsCap-1)))
		}
		gaps = append(gaps, uncommitted)
		if throttling != nil {
			gaps = append(gaps, throttlingGap(throttling))
			d = d.With(report.NewCaveat(report.CaveatRetriesThrottled, "maxTokens", strconv.Itoa(throttling.MaxTokens),
				"tokenRatio", strconv.FormatFloat(throttling.TokenRatio, 'f', -1, 64)))
		}
		return d, msg + "; but " + strings.Join(gaps, "; ")
	case translate.FeatureRetryCodes:
		return codesDecision(rt.Codes), codesMessage(rt.Codes)
	case translate.FeatureRetryConnectionErrors:
		d := report.Decide(report.ReasonConfigured).Set("retryableStatusCodes UNAVAILABLE").
			With(report.NewCaveat(report.CaveatResetStreamsNotRetried)).With(uncommittedCaveats()...)
		return d, "UNAVAILABLE is in retryableStatusCodes, and it is the status of a call " +
			"whose connection fails (refused, closed or reset, GOAWAY), so those calls are retried; but a stream the " +
			"server or a proxy resets on its own (RST_STREAM other than REFUSED_STREAM) ends INTERNAL (CANCELLED for " +
			"CANCEL, RESOURCE_EXHAUSTED for ENHANCE_YOUR_CALM), retried only if that status is listed; and " + uncommitted
	case translate.FeatureRetryBackoff:
		return assessBackoff(rt)
	case translate.FeatureRetryBackendTimeout:
		return report.Decide(report.ReasonTimeoutDisabled), "backendRequest is 0s: " + noTryTimer
	case translate.FeatureBackendRequestTimeout:
		if be.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled), "backendRequest is 0s: " + noTryTimer
		}
		return report.Decide(report.ReasonNoPerTryTimeout), noTryTimer + ": a slow try is never cut by " + be.Text + "; set " +
			"timeouts.request for a deadline on the whole call"
	case translate.FeatureRequestTimeout:
		d := r.Timeouts.Request
		if d.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled), "request is 0s: the methodConfig sets no timeout (a deadline the " +
				"application sets still applies)"
		}
		dec := report.Decide(report.ReasonConfigured).Set("timeout "+protoDuration(d.Value)).
			With(report.NewCaveat(report.CaveatDeadlineExceededNot504), report.NewCaveat(report.CaveatApplicationDeadlineWins))
		return dec, fmt.Sprintf("timeout %s: the deadline of the whole call, every attempt "+
			"included; but the call then ends with status DEADLINE_EXCEEDED from the client itself, not a 504, "+
			"and a shorter deadline set by the application wins", protoDuration(d.Value))
	}
	return report.Decide(report.ReasonNotTranslated), "internal error: unknown feature " + string(f)
}

// uncommittedCaveats are what uncommitted says: a call is no longer
// retried once the server sent headers, or once its request messages
// exceed grpc-go's retry buffer.
func uncommittedCaveats() []report.Caveat {
	return []report.Caveat{report.NewCaveat(report.CaveatNotRetriedAfterHeaders),
		report.NewCaveat(report.CaveatBodyBufferLimit, "limit", "256 KiB")}
}

func throttlingGap(t *RetryThrottling) string {
	return fmt.Sprintf("retryThrottling (maxTokens %d, tokenRatio %s) stops every retry on the channel while "+
		"its tokens are at or below %s (each try that fails with a retryable status takes 1, each successful call gives %s back)", t.MaxTokens,
		strconv.FormatFloat(t.TokenRatio, 'f', -1, 64), strconv.FormatFloat(float64(t.MaxTokens)/2, 'f', -1, 64),
		strconv.FormatFloat(t.TokenRatio, 'f', -1, 64))
}

func assessBackoff(rt *translate.Retry) (report.Decision, string) {
	b := rt.Backoff
	ib := initialBackoff(b)
	d := report.Decide(report.ReasonConfigured).Set("initialBackoff " + protoDuration(ib))
	if b.IsZero() {
		return d, fmt.Sprintf("backoff is 0s: retries may be immediate; A6 needs a positive "+
			"initialBackoff, so it is %s (maxBackoff %s): waits of %s to %s", protoDuration(ib),
			protoDuration(10*ib), ib*8/10, 12*ib)
	}
	d = d.With(report.NewCaveat(report.CaveatExponentialBackoff, "multiplier", strconv.Itoa(multiplier), "max", protoDuration(10*ib)),
		report.NewCaveat(report.CaveatPushbackOverridesBackoff))
	return d, fmt.Sprintf("initialBackoff %s, 1.25 × the backoff, because gRPC multiplies "+
		"each wait by a random factor in [0.8, 1.2] (gRFC A6): the first wait is %s to %s; backoffMultiplier 2 "+
		"and maxBackoff %s (10 × initialBackoff, as gRFC A44) make later waits longer; but a server's "+
		"grpc-retry-pushback-ms overrides the wait, shorter or longer", protoDuration(ib), b.Value, ib*12/10,
		protoDuration(10*ib))
}

// codesDecision records what codesMessage says: the statuses written and
// each way the HTTP-to-status mapping retries more than the codes.
func codesDecision(codes []int) report.Decision {
	list := retryableCodes(codes)
	d := report.Decide(report.ReasonConfigured).Set("retryableStatusCodes " + strings.Join(list, " ")).
		With(report.NewCaveat(report.CaveatServerStatusesRetried))
	if extra := unlistedUnavailable(codes); len(extra) > 0 {
		d = d.With(report.NewCaveat(report.CaveatUnlistedCodesRetried, "codes", strings.Join(extra, ", "), "status", "UNAVAILABLE"))
	}
	if slices.Contains(list, "UNKNOWN") {
		d = d.With(report.NewCaveat(report.CaveatUnknownStatusRetried))
	}
	if internalLossy(codes, list) {
		d = d.With(report.NewCaveat(report.CaveatInternalStatusRetried))
	}
	return d
}

// unlistedUnavailable are the HTTP codes that map to UNAVAILABLE, always
// listed, and that codes does not name.
func unlistedUnavailable(codes []int) []string {
	var extra []string
	for _, c := range []int{429, 502, 503, 504} {
		if !slices.Contains(codes, c) {
			extra = append(extra, strconv.Itoa(c))
		}
	}
	return extra
}

// internalLossy says whether INTERNAL is listed for only one of 400 and
// 431, which it merges (with the client's own errors).
func internalLossy(codes []int, list []string) bool {
	return slices.Contains(list, "INTERNAL") && !(slices.Contains(codes, 400) && slices.Contains(codes, 431))
}

// codesMessage names the statuses the codes become, what merges and what
// is lost.
func codesMessage(codes []int) string {
	var maps []string
	for _, c := range codes {
		maps = append(maps, fmt.Sprintf("%d → %s", c, strings.Join(httpStatus(c), " and ")))
	}
	list := retryableCodes(codes)
	msg := fmt.Sprintf("retryableStatusCodes %s, through gRPC's HTTP-to-status mapping for responses that are not "+
		"gRPC, without an application/grpc content-type (one with it but without grpc-status ends UNKNOWN, whatever "+
		"its HTTP status) (%s; UNAVAILABLE is listed for connection errors in any case); but the mapping is lossy: ",
		strings.Join(list, ", "), strings.Join(maps, ", "))
	var lossy []string
	if extra := unlistedUnavailable(codes); len(extra) > 0 {
		lossy = append(lossy, "UNAVAILABLE also retries "+strings.Join(extra, ", "))
	}
	if slices.Contains(list, "UNKNOWN") {
		lossy = append(lossy, "UNKNOWN also retries every HTTP code without a row in the mapping (all but 400, "+
			"401, 403, 404, 429, 431 and 502-504; 431 too in grpc-go) and every call the server ends with UNKNOWN (what "+
			"a grpc-go handler's plain error becomes), failures no one asked to retry")
	}
	if internalLossy(codes, list) {
		lossy = append(lossy, "INTERNAL covers both 400 and 431 (431 only outside grpc-go), and also the "+
			"client's own protocol and decoding errors")
	}
	lossy = append(lossy, "a gRPC server answers HTTP 200 and puts its status in grpc-status, so the listed "+
		"statuses are also retried when the server itself ends a call with them, though no HTTP code was sent")
	return msg + strings.Join(lossy, "; ")
}
