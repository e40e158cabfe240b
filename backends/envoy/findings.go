package envoy

import (
	"fmt"
	"strings"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// findings returns one finding per feature the rule sets. It describes what
// routes() and plan() generate; the judge (judge.go) checks every honoured
// claim against the file.
func (g *generator) findings(r *translate.Rule) []translate.Finding {
	var out []translate.Finding
	answer := ruleAnswer(r)
	for _, f := range r.Features() {
		if isRuleFilter(f) {
			out = append(out, g.filterFinding(r, f))
			continue
		}
		if f == translate.FeatureListenerHTTPS && len(r.Ungenerated) == 0 {
			out = append(out, g.httpsFinding(r))
			continue
		}
		if u, ok := translate.UntranslatedFinding(r, f, "Envoy", answer); ok {
			out = append(out, u)
			continue
		}
		if !r.Forwards() && f != translate.FeatureBackendRefs {
			out = append(out, translate.DeadRuleFinding(r, f, answer))
			continue
		}
		d, msg := g.assess(r, f)
		out = append(out, translate.Decided(r, f, d, "%s", msg))
	}
	return out
}

// notPlaced is the finding text of a rule that no generated listener
// serves.
const notPlaced = "the rule is on no listener of the generated configuration: no request reaches it"

// exemption is one kind of request a retry feature does not cover as
// configured: its words and its caveat.
type exemption struct {
	text   string
	caveat report.Caveat
}

// texts and caveatsOf split exemptions into the message's words and the
// decision's caveats.
func texts(es []exemption) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.text)
	}
	return out
}

func caveatsOf(es []exemption) []report.Caveat {
	var out []report.Caveat
	for _, e := range es {
		out = append(out, e.caveat)
	}
	return out
}

// assess says how Envoy handles one feature of r: the decision and its
// message.
func (g *generator) assess(r *translate.Rule, f translate.Feature) (report.Decision, string) {
	if !g.placed[r.Name] {
		return report.Decide(report.ReasonRuleOnNoListener), notPlaced
	}
	if f == translate.FeatureBackendRefs {
		return g.assessBackendRefs(r)
	}
	rt, req, be := r.Retry, r.Timeouts.Request, r.Timeouts.BackendRequest
	retrying := retries(r)
	noRetries := "attempts is 0: the route has no retry policy and Envoy does not retry"
	// onlyExempt: every request the rule matches gets the policy of
	// POST, PATCH and LOCK (routes.modeFor), which is what is written.
	onlyExempt := r.OnlyNonIdempotent() && !g.retryNonIdempotent
	disabled := report.Decide(report.ReasonRetriesDisabled)
	configured := func(fact string) report.Decision { return report.Decide(report.ReasonConfigured).Set(fact) }
	defaultTimeout := report.NewCaveat(report.CaveatDefaultRouteTimeout, "timeout", formatDuration(g.cap.defaultRouteTimeout))
	// With retries and no request timeout, Envoy's default route timeout
	// still bounds the request: it can end a try before backendRequest.
	defaultCutsTry := retrying && req == nil && be != nil && !be.IsZero() && be.Value >= g.cap.defaultRouteTimeout
	cutsTry := fmt.Sprintf("per_try_timeout %s, but timeouts.request is unset, so Envoy's default route timeout of %s ends the request before a try reaches %s: answered 504 %s; set timeouts.request (\"0s\" disables it)",
		textOf(be), formatDuration(g.cap.defaultRouteTimeout), textOf(be), afterHeadersStall)
	cutsTryCaveats := []report.Caveat{defaultTimeout, report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)}
	perTry := func() report.Decision { return configured("per_try_timeout " + formatDuration(be.Value)) }
	// exempt lists the requests the rule matches that a retry feature does
	// not cover as configured; any of them makes the feature approximated.
	exempt := func(what string) []exemption {
		if !retrying {
			return nil
		}
		var out []exemption
		if n := g.numRetries(rt.Attempts); uint64(n) != uint64(rt.Attempts) {
			out = append(out, exemption{fmt.Sprintf("attempts %d is more than Envoy's largest num_retries, %d (a UInt32): clamped to %d", rt.Attempts, n, n),
				report.NewCaveat(report.CaveatAttemptsClamped, "configured", fmt.Sprint(n), "max", fmt.Sprint(g.cap.maxNumRetries))})
		}
		if r.MatchesNonIdempotent() && !g.retryNonIdempotent {
			out = append(out, exemption{g.methodExemption(r, what),
				report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", strings.Join(nonIdempotentMethods(), ", "))})
		}
		out = append(out, exemption{g.bodyExemption(),
			report.NewCaveat(report.CaveatBodyBufferLimit, "limit", translate.ByteSize(uint64(g.cap.retryBufferLimit)))})
		return out
	}
	switch f {
	case translate.FeatureRetryAttempts:
		if !retrying {
			return disabled, noRetries
		}
		var why []exemption
		if req == nil && be != nil && !be.IsZero() {
			if worst := g.worstCase(rt, be.Value); worst > g.cap.defaultRouteTimeout {
				why = append(why, exemption{fmt.Sprintf("timeouts.request is unset, so Envoy's default route timeout of %s ends the request, retries included, before %d tries of up to %s (backendRequest) and their back-off can all run; set timeouts.request (\"0s\" disables it)",
					formatDuration(g.cap.defaultRouteTimeout), uint64(rt.Attempts)+1, be.Text), defaultTimeout})
			}
		}
		fact := fmt.Sprintf("num_retries %d", g.numRetries(rt.Attempts))
		what := fact
		if g.retryNonIdempotent && r.MatchesNonIdempotent() {
			what += " (POST, PATCH and LOCK requests are retried too: --retry-non-idempotent)"
		}
		return approximatedIf(configured(fact), what, append(why, exempt("retried")...))
	case translate.FeatureRetryBackendTimeout:
		switch {
		case !retrying && be.IsZero():
			return disabled, "attempts is 0 and backendRequest is 0s: there is no retry and no per-try timeout"
		case !retrying:
			return disabled, fmt.Sprintf("attempts is 0: no retries; backendRequest %s bounds the single try", be.Text)
		case be.IsZero():
			return approximatedIf(report.Decide(report.ReasonTimeoutDisabled), "backendRequest is 0s: no per_try_timeout, tries are not cut", exempt("retried"))
		case defaultCutsTry:
			es := exempt("retried after a per-try timeout")
			return perTry().With(cutsTryCaveats...).With(caveatsOf(es)...), joinWhy(cutsTry, texts(es))
		}
		es := exempt("retried after a per-try timeout")
		return perTry().With(g.headersCaveats(r)...).With(caveatsOf(es)...),
			joinWhy(fmt.Sprintf("per_try_timeout %s with retry_on reset: a try whose response headers have not arrived %s after Envoy received the whole request is cut and retried", be.Text, be.Text),
				append([]string{g.headersStarted(r)}, texts(es)...))
	case translate.FeatureRetryCodes:
		if !retrying {
			return disabled, noRetries
		}
		d := configured("retriable_status_codes " + codesText(rt.Codes))
		if onlyExempt {
			// Every route of the rule has the policy of requests never
			// sent, which lists no codes.
			d = report.Decide(report.ReasonConfigured)
		}
		return approximatedIf(d,
			fmt.Sprintf("%s %s: the listed codes are retried and no others (retry_on has neither 5xx nor gateway-error)", g.cap.statusCodesToken, codesText(rt.Codes)), exempt("retried on these codes"))
	case translate.FeatureRetryConnectionErrors:
		if !retrying {
			return disabled, noRetries
		}
		tokens := g.cap.retryOn
		if onlyExempt {
			tokens = g.cap.safeRetryOn
		}
		return approximatedIf(configured("retry_on "+joinTokens(tokens)),
			fmt.Sprintf("retry_on %s: refused connections, connect timeouts and resets are retried (a reset after the request was sent is retried too, so the backend may see it twice)", joinTokens(g.cap.retryOn)), exempt("retried after a reset once the request was sent"))
	case translate.FeatureRetryBackoff:
		if !retrying {
			return disabled, "attempts is 0: no retries, so no back-off applies"
		}
		base := backoffBase(rt.Backoff)
		d := configured("retry_back_off base_interval " + formatDuration(base))
		if rt.Backoff.IsZero() {
			return d, "backoff 0s: base_interval 1ms (Envoy's minimum), so retries wait at most a few milliseconds"
		}
		return d.With(report.NewCaveat(report.CaveatFullJitterBackoff)), fmt.Sprintf("retry_back_off base_interval %s: Envoy's back-off is fully jittered, retry n waits a random time in [0, min(2^(n-1)×%s, %s)) (max_interval defaults to %d× base_interval), so a retry can start sooner than %s after the previous try, even at once",
			rt.Backoff.Text, rt.Backoff.Text, formatDuration(base*time.Duration(g.cap.backoffMaxFactor)), g.cap.backoffMaxFactor, rt.Backoff.Text)
	case translate.FeatureBackendRequestTimeout:
		if be.IsZero() {
			if req == nil {
				return report.Decide(report.ReasonTimeoutDisabled).Set("route timeout 0s"), fmt.Sprintf("backendRequest is 0s: no per-try timeout, and the route timeout is 0s so that Envoy's default of %s does not cut the try either", formatDuration(g.cap.defaultRouteTimeout))
			}
			return report.Decide(report.ReasonTimeoutDisabled), "backendRequest is 0s: no per-try timeout"
		}
		if defaultCutsTry {
			return perTry().With(cutsTryCaveats...), cutsTry
		}
		if retrying {
			return perTry().With(g.headersCaveats(r)...), joinWhy(fmt.Sprintf("per_try_timeout %s: every try, the first included, whose response headers have not arrived %s after Envoy received the whole request is cut (504 when it is not retried)", be.Text, be.Text),
				[]string{g.headersStarted(r)})
		}
		d := formatDuration(*g.plan(r, false).timeout)
		return configured("route timeout " + d), fmt.Sprintf("route timeout %s: a single try, cut %s after Envoy received the whole request, answered 504 %s", d, d, afterHeadersReset)
	case translate.FeatureRequestTimeout:
		if req.IsZero() {
			d := report.Decide(report.ReasonTimeoutDisabled)
			if p := g.plan(r, retrying); p.timeout != nil && *p.timeout == 0 {
				d = d.Set("route timeout 0s")
			}
			return d, "request is 0s: no total timeout (route timeout and stream idle timeout disabled unless backendRequest bounds a single try)"
		}
		if !retrying && be != nil && !be.IsZero() && be.Value < req.Value {
			return configured("route timeout " + formatDuration(be.Value)), fmt.Sprintf("route timeout %s, the shorter backendRequest, since there is only one try: the request cannot outlast %s; answered 504 %s", be.Text, req.Text, afterHeadersReset)
		}
		return configured("route timeout " + formatDuration(req.Value)), fmt.Sprintf("route timeout %s: it bounds the whole request, retries included, counted from when Envoy received the whole request, and answers 504 %s", req.Text, afterHeadersReset)
	}
	return report.Decide(report.ReasonNotTranslated), fmt.Sprintf("gwretry's Envoy backend does not know feature %s", f)
}

// afterHeadersReset says what the route timeout gives a client whose
// response has started: Envoy can no longer send a status, so it resets
// the stream (Filter::onUpstreamAbort in source/common/router/router.cc).
const afterHeadersReset = "while no response headers went to the client; once they did, Envoy resets the stream at the deadline (the client gets the status, the headers and a truncated body), the only timeout error HTTP leaves"

// afterHeadersStall is afterHeadersReset for a rule whose route timeout is
// Envoy's default: once the response headers went to the client,
// per_try_timeout no longer applies (UpstreamRequest::onPerTryTimeout), so
// a backend that stalls its body is cut by the default route timeout alone.
const afterHeadersStall = "while no response headers went to the client; once they did, per_try_timeout no longer applies, and a backend that stalls or trickles its body is cut only by that default route timeout, which resets the stream (the client gets the status, the headers and a truncated body: no 504, no retry)"

// headersStarted says what bounds a try once its response headers went to
// the client: Envoy then ignores per_try_timeout
// (UpstreamRequest::onPerTryTimeout in source/common/router/upstream_request.cc)
// and only the route timeout is left.
func (g *generator) headersStarted(r *translate.Rule) string {
	req := r.Timeouts.Request
	left := fmt.Sprintf("Envoy's default route timeout of %s, which then resets the stream (the client gets the headers and a truncated body, no 504, no retry)", formatDuration(g.cap.defaultRouteTimeout))
	switch {
	case req.IsZero() && req != nil:
		left = "nothing: timeouts.request is 0s, so the response may take any time"
	case req != nil:
		left = fmt.Sprintf("the route timeout %s (timeouts.request), which then resets the stream (the client gets the headers and a truncated body, no 504, no retry)", req.Text)
	}
	return "once a try's response headers went to the client, Envoy ignores per_try_timeout: a backend that sends its headers in time and then stalls or trickles its body is not cut by backendRequest, only by " + left
}

// headersCaveats are the caveats of headersStarted: the per-try timer
// stops at the response headers, and what is left (a route timeout, the
// default one when timeouts.request is unset) resets the stream.
func (g *generator) headersCaveats(r *translate.Rule) []report.Caveat {
	cs := []report.Caveat{report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders)}
	req := r.Timeouts.Request
	switch {
	case req == nil:
		cs = append(cs, report.NewCaveat(report.CaveatDefaultRouteTimeout, "timeout", formatDuration(g.cap.defaultRouteTimeout)),
			report.NewCaveat(report.CaveatNoAnswerAfterHeaders))
	case !req.IsZero():
		cs = append(cs, report.NewCaveat(report.CaveatNoAnswerAfterHeaders))
	}
	return cs
}

// assessBackendRefs says what Envoy does with the share of invalid
// backendRefs, or with every request of a dead rule.
func (g *generator) assessBackendRefs(r *translate.Rule) (report.Decision, string) {
	if r.Dead() {
		return report.Decide(report.ReasonAnswers500).Set("direct_response 500"), fmt.Sprintf("%s: a direct_response route answers 500 for every request the rule matches, of any method, and no backend is contacted", r.DeadReason())
	}
	var reasons []string
	for _, b := range r.Invalid {
		reasons = append(reasons, fmt.Sprintf("backendRefs[%d] (weight %d): %s", b.Index, b.Weight, b.Reason))
	}
	if r.InvalidWeight() == 0 {
		return report.Decide(report.ReasonInvalidBackendsUnweighted), fmt.Sprintf("the invalid backendRefs have weight 0, so no request is meant for them (%s)", strings.Join(reasons, "; "))
	}
	return report.Decide(report.ReasonAnswers500).Set(fmt.Sprintf("weighted_clusters %s weight %d", invalidCluster, r.InvalidWeight())),
		fmt.Sprintf("the invalid backendRefs' share (weight %d) is a weighted_clusters entry %q that names no cluster, so Envoy answers those requests 500 (cluster_not_found_response_code INTERNAL_SERVER_ERROR; the listener's route table has validate_clusters false so that Envoy loads it) (%s)",
			r.InvalidWeight(), invalidCluster, strings.Join(reasons, "; "))
}

// methodExemption says which POST, PATCH and LOCK requests are not what
// was asked: they are retried only when they were never sent.
func (g *generator) methodExemption(r *translate.Rule, what string) string {
	which := "POST, PATCH and LOCK requests"
	if r.OnlyNonIdempotent() {
		which = "every request this rule matches is a POST, PATCH or LOCK, and such requests"
	}
	return fmt.Sprintf("%s are not %s: they are retried only when they never reached the backend (retry_on %s), gwretry's default for non-idempotent methods; --retry-non-idempotent retries them like any other method",
		which, what, joinTokens(g.cap.safeRetryOn))
}

// bodyExemption says which request bodies Envoy does not retry.
func (g *generator) bodyExemption() string {
	return fmt.Sprintf("Envoy buffers a request body for retries only up to per_request_buffer_limit_bytes %d (%s) and does not retry a request whose body is larger (one try only)",
		g.cap.retryBufferLimit, translate.ByteSize(uint64(g.cap.retryBufferLimit)))
}

// approximatedIf is d with what when nothing is exempt, else d with every
// exemption's caveat (approximated) and what with every exemption's words.
func approximatedIf(d report.Decision, what string, exempt []exemption) (report.Decision, string) {
	if len(exempt) == 0 {
		return d, what
	}
	return d.With(caveatsOf(exempt)...), joinWhy(what, texts(exempt))
}

func joinWhy(what string, why []string) string {
	if len(why) == 0 {
		return what
	}
	return what + ", but " + strings.Join(why, "; ")
}

// worstCase is how long all tries of a retrying rule can take when every
// try times out after perTry and every back-off is at its longest.
func (g *generator) worstCase(rt *translate.Retry, perTry time.Duration) time.Duration {
	limit := g.cap.defaultRouteTimeout
	base := g.cap.defaultBackoffBase
	if rt.Backoff != nil {
		base = backoffBase(rt.Backoff)
	}
	maxInterval := base * time.Duration(g.cap.backoffMaxFactor)
	total, interval := perTry, base
	for n := 1; n <= rt.Attempts && total <= limit; n++ {
		total += perTry + min(interval, maxInterval)
		interval = min(2*interval, maxInterval)
	}
	return total
}

func codesText(codes []int) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprint(c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// textOf is the text of an optional duration.
func textOf(d *translate.Duration) string {
	if d == nil {
		return ""
	}
	return d.Text
}
