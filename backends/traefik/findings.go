package traefik

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Traefik's retry backoff is cenkalti/backoff v4 with its defaults: each
// wait is the current interval times a random factor in [0.5, 1.5], the
// interval is capped at maxInterval, and no retry starts once
// maxElapsed has passed since the first try started.
const (
	maxInterval = 60 * time.Second
	maxElapsed  = 15 * time.Minute
)

// findings returns one finding per feature that r sets.
func findings(r *translate.Rule, sup support, opts translate.Options, sites []site, view tlsStoreView, reads []time.Duration) []translate.Finding {
	var out []translate.Finding
	answer := deadAnswer
	if redirects(r) {
		answer = redirectAnswer
	}
	for _, f := range r.Features() {
		if ff, ok := filterFinding(r, f, sites); ok {
			out = append(out, ff)
			continue
		}
		if f == translate.FeatureListenerHTTPS && len(r.Ungenerated) == 0 {
			out = append(out, httpsFinding(r, sites, view))
			continue
		}
		if u, ok := translate.UntranslatedFinding(r, f, "Traefik", answer); ok {
			out = append(out, u)
			continue
		}
		if !r.Forwards() && f != translate.FeatureBackendRefs {
			out = append(out, translate.DeadRuleFinding(r, f, answer))
			continue
		}
		d, msg := assess(r, f, sup, opts, reads)
		out = append(out, translate.Decided(r, f, d, "%s", msg))
	}
	return out
}

// deadAnswer says what Traefik does with every request of a dead rule.
const deadAnswer = "Traefik answers 500 (the routers send every request to noop@internal, whose 418 an " +
	"errors middleware rewrites to 500)"

// keepAliveOff is said wherever a claim depends on Go's transport not
// re-sending requests by itself.
const keepAliveOff = "upstream keep-alive is off (maxIdleConnsPerHost -1), so Go's transport never re-sends " +
	"a request by itself"

// assess says how Traefik, as configured, handles feature f of rule r,
// which is not dead (dead rules get translate.DeadRuleFinding); reads are
// the readTimeouts of the entry points that serve r (see readTimeouts).
func assess(r *translate.Rule, f translate.Feature, sup support, opts translate.Options, reads []time.Duration) (report.Decision, string) {
	if f == translate.FeatureBackendRefs {
		return assessBackendRefs(r)
	}
	rt := r.Retry
	if f.IsRetry() && (rt == nil || rt.Attempts == 0) {
		if d := r.Timeouts.BackendRequest; f == translate.FeatureRetryBackendTimeout && !d.IsZero() {
			return report.Decide(report.ReasonRetriesDisabled).Set("responseHeaderTimeout " + traefikDuration(d.Value)).
					With(report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders)),
				"attempts is 0: no Retry middleware, nothing is retried; but the " +
					"try itself is cut by responseHeaderTimeout " + d.Text + ", which bounds the time from the " +
					"end of sending the request (its body included) to the response headers, not the whole try"
		}
		return report.Decide(report.ReasonRetriesDisabled).Set(keepAliveOffFact),
			"attempts is 0: no Retry middleware, nothing is retried; " + keepAliveOff
	}
	switch f {
	case translate.FeatureRetryAttempts:
		return assessAttempts(r, sup, opts)
	case translate.FeatureRetryCodes:
		return assessCodes(r, sup, opts)
	case translate.FeatureRetryBackoff:
		return assessBackoff(rt)
	case translate.FeatureRetryConnectionErrors:
		msg := "Traefik retries a try only when the request could not be sent (connection refused, " +
			"DNS or dial error, dial timeout), whatever the method; a connection reset or closed after the " +
			"request was sent is not retried: the client gets 502 when it fails before the response " +
			"headers; after them, a response cut short, or no answer at all (the connection closed) when it " +
			"fails before Traefik's first flush (100ms)"
		d := report.Decide(report.ReasonConfigured).Set(attemptsFact(r, sup))
		if sup.StatusRetry && slices.Contains(rt.Codes, 502) {
			msg += " (with 502 in codes, Traefik 3.7 should retry it as a 502 status; inferred from its " +
				"source, not verified)"
			d = d.Set(attemptsFact(r, sup) + ", " + statusFact(rt)).
				With(report.NewCaveat(report.CaveatInferredFromSource, "version", sup.Version))
			if ex, cs := statusExemptions(r, sup, opts); len(ex) > 0 {
				msg += "; as a status retry: " + strings.Join(ex, "; ")
				d = d.With(cs...)
			}
		} else {
			d = d.With(report.NewCaveat(report.CaveatSentRequestNotRetried))
		}
		return d, msg
	case translate.FeatureRetryBackendTimeout:
		if r.Timeouts.BackendRequest.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled).Set("responseHeaderTimeout 0s"),
				"backendRequest is 0s: no try is cut, so none is retried for it"
		}
		if !sup.StatusRetry {
			return report.Decide(report.ReasonNeedsNewerVersion, "version", sup.Version, "needs", statusRetryVersion),
				"Traefik " + sup.Version + " does not retry a try cut by " +
					"responseHeaderTimeout (traefik/traefik#4710): the client gets 504 after the first " +
					"timed-out try; Traefik 3.7 with 504 in codes retries it"
		}
		if !slices.Contains(rt.Codes, 504) {
			return report.Decide(report.ReasonTimedOutTryNeedsCode, "code", "504"),
				"a try cut by responseHeaderTimeout ends in 504, which Traefik " +
					"retries only as a listed status: add 504 to codes"
		}
		if onlyExempt(r, opts) {
			return report.Decide(report.ReasonOnlyExemptMethods, "methods", exemptMethods),
				"a try cut by responseHeaderTimeout ends in 504, which Traefik " +
					"retries only as a status, and the rule matches only POST, PATCH or LOCK, which are not " +
					"retried on a status (--retry-non-idempotent sets retryNonIdempotentMethod)"
		}
		ex, cs := statusExemptions(r, sup, opts)
		d := report.Decide(report.ReasonConfigured).
			Set("responseHeaderTimeout "+traefikDuration(r.Timeouts.BackendRequest.Value)+", "+statusFact(rt)).
			With(report.NewCaveat(report.CaveatInferredFromSource, "version", sup.Version),
				report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders)).
			With(cs...)
		return d, "a try cut by responseHeaderTimeout becomes a 504 that is retried " +
			"because 504 is in codes (inferred from Traefik 3.7's source, not verified); the timer ends " +
			"when response headers arrive; " + strings.Join(ex, "; ")
	case translate.FeatureBackendRequestTimeout:
		d := r.Timeouts.BackendRequest
		if d.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled).Set("dialTimeout 0s, responseHeaderTimeout 0s").
					With(readCutCaveat(reads)),
				"backendRequest is 0s: serversTransport forwardingTimeouts dialTimeout " +
					"and responseHeaderTimeout 0s, so Traefik runs no per-try timer (its dialTimeout is 30s " +
					"otherwise); only the operating system's own limit on connecting remains; " + readCut(reads)
		}
		s := traefikDuration(d.Value)
		return report.Decide(report.ReasonConfigured).Set("dialTimeout " + s + ", responseHeaderTimeout " + s).
				With(report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders)),
			fmt.Sprintf("serversTransport forwardingTimeouts dialTimeout and "+
				"responseHeaderTimeout %s: bounds the time from the end of sending the request to the response "+
				"headers, not the whole try: a slow request body (upload) and a slow response body are not cut", d.Text)
	case translate.FeatureRequestTimeout:
		d := r.Timeouts.Request
		if d.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled).With(readCutCaveat(reads)),
				"request is 0s: Traefik runs no timer on the whole request and " +
					"response; " + readCut(reads)
		}
		msg := "Traefik has no per-route request timeout: entryPoints.<name>.transport.respondingTimeouts " +
			"are static, apply to every route of the entry point and do not answer 504; " +
			"set a timeout in the client or use the Envoy target"
		if sup.RetryTimeout && retries(r) {
			msg += fmt.Sprintf("; retry.timeout %s is set, so no retry starts after %s, but the "+
				"request itself is not cut", d.Text, d.Text)
		}
		return report.Decide(report.ReasonNotExpressible), msg
	}
	return report.Decide(report.ReasonNotTranslated), "internal error: unknown feature " + string(f)
}

// keepAliveOffFact is what makes a rule's tries Traefik's own: every
// proxied rule's servers transport has it.
const keepAliveOffFact = "maxIdleConnsPerHost -1"

// statusRetryVersion is the first Traefik version with retry.status.
const statusRetryVersion = "3.7"

// exemptMethods are the methods a Traefik 3.7 status retry leaves out
// unless retryNonIdempotentMethod is set.
const exemptMethods = "POST, PATCH, LOCK"

// attemptsFact is the retry.attempts gwretry writes for r.
func attemptsFact(r *translate.Rule, sup support) string {
	return fmt.Sprintf("retry.attempts %d", configuredAttempts(r.Retry, sup)+1)
}

// statusFact is the retry.status gwretry writes for rt.
func statusFact(rt *translate.Retry) string {
	return "retry.status " + strings.Join(statusCodes(rt.Codes), ",")
}

// readCutCaveat is readCut as a caveat.
func readCutCaveat(reads []time.Duration) report.Caveat {
	if len(reads) == 0 {
		reads = []time.Duration{defaultEntryPointReadTimeout}
	}
	texts := make([]string, len(reads))
	for i, d := range reads {
		texts[i] = traefikDuration(d)
	}
	return report.NewCaveat(report.CaveatReadTimeoutCutsUpload, "timeout", strings.Join(texts, ", "))
}

// assessBackendRefs reports what happens to the traffic of r's invalid
// backendRefs, or to all of it when r is dead.
func assessBackendRefs(r *translate.Rule) (report.Decision, string) {
	answer := fmt.Sprintf("%s, errors %d to 500", noopService, noopStatus)
	switch {
	case r.Dead():
		return report.Decide(report.ReasonAnswers500).Set(answer),
			fmt.Sprintf("%s: the routers send every request to %s, which answers %d "+
				"without contacting anything, and the errors middleware %s rewrites that %d to 500 (Traefik's file "+
				"provider has no direct-response service)", r.DeadReason(), noopService, noopStatus,
				answerName(r), noopStatus)
	case r.InvalidWeight() == 0:
		return report.Decide(report.ReasonInvalidBackendsUnweighted),
			"the invalid backendRefs have weight 0, so no request is meant for them; " +
				"the valid ones get all the traffic"
	}
	total := r.InvalidWeight()
	for _, b := range r.Backends {
		total += max(b.Weight, 0)
	}
	reasons := make([]string, len(r.Invalid))
	for i, b := range r.Invalid {
		reasons[i] = fmt.Sprintf("backendRefs[%d]: %s", b.Index, b.Reason)
	}
	return report.Decide(report.ReasonAnswers500).Set(fmt.Sprintf("%s weight %d, errors %d to 500", noopService, r.InvalidWeight(), noopStatus)).
			With(report.NewCaveat(report.CaveatStatusRewriteCoversRule, "status", strconv.Itoa(noopStatus))),
		fmt.Sprintf("the share of the invalid backendRefs (%s; weight %d of %d) "+
			"goes to %s in the weighted service and the errors middleware %s answers it 500, as the Gateway "+
			"API asks; but that middleware sits on the whole rule, so a %d answered by a valid backend is also "+
			"turned into a 500 with an empty body (Traefik cannot answer a weighted share itself)",
			strings.Join(reasons, "; "), r.InvalidWeight(), total, noopService, answerName(r), noopStatus)
}

// statusExemptions lists the requests of r that a Traefik 3.7 status
// retry leaves out, in words and as caveats: POST, PATCH and LOCK without
// the opt-in, and bodies over retry.maxRequestBodyBytes. None when no
// status retry is configured.
func statusExemptions(r *translate.Rule, sup support, opts translate.Options) ([]string, []report.Caveat) {
	if !sup.StatusRetry || r.Retry == nil || len(r.Retry.Codes) == 0 {
		return nil, nil
	}
	var out []string
	var cs []report.Caveat
	if !opts.RetryNonIdempotent && r.MatchesNonIdempotent() {
		out = append(out, "POST, PATCH and LOCK requests are not retried on a status "+
			"(retryNonIdempotentMethod is off; --retry-non-idempotent turns it on)")
		cs = append(cs, report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", exemptMethods))
	}
	if !onlyExempt(r, opts) {
		who := "requests"
		if opts.RetryNonIdempotent {
			who = "requests, POST, PATCH and LOCK included (retryNonIdempotentMethod, opted in),"
		}
		size := translate.ByteSize(uint64(max(sup.StatusBodyLimit, 0)))
		out = append(out, fmt.Sprintf("%s are retried on a status only when their body fits in "+
			"retry.maxRequestBodyBytes %d (%s), which Traefik buffers; no gwretry option lifts this "+
			"(maxRequestBodyBytes -1 would buffer any body in memory)", who, sup.StatusBodyLimit, size))
		cs = append(cs, report.NewCaveat(report.CaveatBodyBufferLimit, "limit", size))
	}
	return out, cs
}

// onlyExempt reports whether every request of r is a POST, PATCH or LOCK
// that a status retry leaves out.
func onlyExempt(r *translate.Rule, opts translate.Options) bool {
	return !opts.RetryNonIdempotent && r.OnlyNonIdempotent()
}

func assessAttempts(r *translate.Rule, sup support, opts translate.Options) (report.Decision, string) {
	rt := r.Retry
	n := configuredAttempts(rt, sup)
	msg := fmt.Sprintf("retry.attempts %d (Traefik counts the first try, so %d retries)", n+1, n)
	d := report.Decide(report.ReasonConfigured).Set(attemptsFact(r, sup))
	var gaps []string
	if rt.Attempts > n {
		gaps = append(gaps, fmt.Sprintf("attempts %d is clamped to %d retries, the most gwretry configures for "+
			"Traefik (retry.attempts %d is the largest value every Traefik build reads as written)",
			rt.Attempts, n, n+1))
		d = d.With(report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.Itoa(n), "max", strconv.Itoa(sup.MaxAttempts)))
	}
	if n > 0 && !(sup.StatusRetry && slices.Contains(rt.Codes, 502)) {
		gaps = append(gaps, "Traefik retries only a request it could not send (refused connection, dial "+
			"error or timeout): a request that was sent and then failed (reset, closed connection) is tried once")
		d = d.With(report.NewCaveat(report.CaveatSentRequestNotRetried))
	}
	ex, cs := statusExemptions(r, sup, opts)
	gaps = append(gaps, ex...)
	d = d.With(cs...)
	if rt.Backoff != nil && !rt.Backoff.IsZero() {
		worst := worstWaits(rt, n)
		if d := r.Timeouts.BackendRequest; d != nil && !d.IsZero() && worst < maxElapsed {
			// The tries before the last; computed in float64 and capped, as
			// attempts × backendRequest can overflow a time.Duration.
			worst += time.Duration(math.Min(float64(n)*float64(d.Value), float64(maxElapsed)))
		}
		if worst >= maxElapsed {
			gaps = append(gaps, "Traefik starts no retry 15m after the first try started, and the waits and "+
				"timed tries can exceed 15m, so later retries can be dropped")
			d = d.With(report.NewCaveat(report.CaveatLateRetriesDropped, "after", traefikDuration(maxElapsed)))
		}
	}
	if len(gaps) > 0 {
		return d, msg + "; but " + strings.Join(gaps, "; ")
	}
	return d, msg + "; " + keepAliveOff
}

func assessCodes(r *translate.Rule, sup support, opts translate.Options) (report.Decision, string) {
	if !sup.StatusRetry {
		return report.Decide(report.ReasonNeedsNewerVersion, "version", sup.Version, "needs", statusRetryVersion),
			"Traefik " + sup.Version + " cannot retry on response codes (its " +
				"Retry middleware retries only when the backend could not be reached): the response is " +
				"returned as it is; Traefik 3.7 adds retry.status (choose traefik@3.7)"
	}
	if onlyExempt(r, opts) {
		return report.Decide(report.ReasonOnlyExemptMethods, "methods", exemptMethods),
			"the rule matches only POST, PATCH or LOCK, which Traefik does not retry " +
				"on a status unless retryNonIdempotentMethod is set (--retry-non-idempotent sets it)"
	}
	ex, cs := statusExemptions(r, sup, opts)
	return report.Decide(report.ReasonConfigured).Set(statusFact(r.Retry)).With(cs...),
		"retry.status " + strings.Join(statusCodes(r.Retry.Codes), ",") + "; but " + strings.Join(ex, "; ")
}

func assessBackoff(rt *translate.Retry) (report.Decision, string) {
	b := rt.Backoff
	if b.IsZero() {
		return report.Decide(report.ReasonRetriesImmediate), "backoff is 0s: retries are immediate"
	}
	d := report.Decide(report.ReasonConfigured).Set("retry.initialInterval " + traefikDuration(2*b.Value)).
		With(report.NewCaveat(report.CaveatRandomizedBackoff, "min", traefikDuration(b.Value), "max", traefikDuration(6*b.Value)))
	msg := fmt.Sprintf("retry.initialInterval %s, twice the backoff, because Traefik multiplies each wait "+
		"by a random factor in [0.5, 1.5] and grows the interval to twice its start over the attempts: "+
		"every wait is between %s and 6 times it", traefikDuration(2*b.Value), b.Text)
	if b.Value > maxInterval/2 {
		msg += "; but Traefik caps the interval at 60s, so waits after the first are between 30s and 90s, " +
			"shorter than the backoff"
		d = d.With(report.NewCaveat(report.CaveatBackoffIntervalCapped, "max", traefikDuration(maxInterval)))
	}
	return d, msg
}

// worstWaits is the longest total wait Traefik's backoff can add over n
// retries of rt.
func worstWaits(rt *translate.Retry, n int) time.Duration {
	interval := float64(2 * rt.Backoff.Value)
	// Traefik's multiplier is 2^(1/(its attempts - 1)), its attempts being
	// n+1.
	mult := math.Pow(2, 1/float64(n))
	var total float64
	for i := 0; i < n; i++ {
		total += 1.5 * interval
		if total >= float64(maxElapsed) {
			break
		}
		if interval >= float64(maxInterval)/mult {
			interval = float64(maxInterval)
		} else {
			interval *= mult
		}
	}
	return time.Duration(total)
}

func statusCodes(codes []int) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = strconv.Itoa(c)
	}
	return out
}

// traefikDuration writes d as a Go duration, which Traefik parses.
func traefikDuration(d time.Duration) string { return d.String() }
