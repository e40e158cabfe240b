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

// findings returns one finding per feature that r sets: the filters and
// listener.https Traefik writes, then the shared cases (translate.Assess),
// then what Traefik does with the rule's retry and timeouts.
func findings(r *translate.Rule, sup support, opts translate.Options, sites []site, view tlsStoreView, reads []time.Duration) []translate.Finding {
	return translate.Assess(r, translate.Decisions{
		Shared: opts.Shared,
		Written: func(f translate.Feature) (report.Decision, bool) {
			if f == translate.FeatureListenerHTTPS {
				return httpsDecision(r, sites, view), true
			}
			return filterDecision(r, f, sites)
		},
		Feature: func(f translate.Feature) report.Decision { return assess(r, f, sup, opts, reads) },
		Retried: func() (translate.ConnRetry, bool) {
			// Only a request that could not be sent, unless 3.7 retries
			// the 502 of a failed one; a try cut by responseHeaderTimeout
			// only as 3.7's 504 (assess says each).
			rt := r.Retry
			conn := translate.ConnRetryUnsent
			if sup.StatusRetry && slices.Contains(rt.Codes, 502) {
				conn = translate.ConnRetryAll
			}
			return conn, sup.StatusRetry && slices.Contains(rt.Codes, 504)
		},
	})
}

// assess decides feature f of rule r, which forwards (or f is
// backendRefs); reads are the readTimeouts of the entry points that serve
// r (see readTimeouts). Every proxied rule's servers transport has
// upstream keep-alive off (maxIdleConnsPerHost -1), so Go's transport
// never re-sends a request by itself.
func assess(r *translate.Rule, f translate.Feature, sup support, opts translate.Options, reads []time.Duration) report.Decision {
	if f == translate.FeatureBackendRefs {
		return backendRefsDecision(r)
	}
	rt := r.Retry
	if f.IsRetry() && (rt == nil || rt.Attempts == 0) {
		// No Retry middleware: nothing is retried.
		if d := r.Timeouts.BackendRequest; f == translate.FeatureRetryBackendTimeout && !d.IsZero() {
			// The try itself is cut by responseHeaderTimeout.
			return report.Decide(report.ReasonRetriesDisabled).Set("responseHeaderTimeout " + traefikDuration(d.Value)).
				With(report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders))
		}
		return report.Decide(report.ReasonRetriesDisabled).Set(keepAliveOffFact)
	}
	switch f {
	case translate.FeatureRetryAttempts:
		return attemptsDecision(r, sup, opts)
	case translate.FeatureRetryCodes:
		return codesDecision(r, sup, opts)
	case translate.FeatureRetryBackoff:
		return backoffDecision(rt)
	case translate.FeatureRetryConnectionErrors:
		// Traefik retries a try only when the request could not be sent
		// (connection refused, DNS or dial error, dial timeout), whatever
		// the method; a connection reset or closed after the request was
		// sent is not retried, unless Traefik 3.7 retries it as a 502
		// status (inferred from its source).
		d := report.Decide(report.ReasonConfigured).Set(attemptsFact(r, sup))
		if sup.StatusRetry && slices.Contains(rt.Codes, 502) {
			return d.Set(attemptsFact(r, sup) + ", " + statusFact(rt)).
				With(report.NewCaveat(report.CaveatInferredFromSource, "version", sup.Version)).
				With(statusExemptions(r, sup, opts)...)
		}
		return d.With(report.NewCaveat(report.CaveatSentRequestNotRetried))
	case translate.FeatureRetryBackendTimeout:
		switch {
		case r.Timeouts.BackendRequest.IsZero():
			return report.Decide(report.ReasonTimeoutDisabled).Set("responseHeaderTimeout 0s")
		case !sup.StatusRetry:
			// A try cut by responseHeaderTimeout is not retried
			// (traefik/traefik#4710): the client gets 504.
			return report.Decide(report.ReasonNeedsNewerVersion, "version", sup.Version, "needs", statusRetryVersion)
		case !slices.Contains(rt.Codes, 504):
			return report.Decide(report.ReasonTimedOutTryNeedsCode, "code", "504")
		case onlyExempt(r, opts):
			return report.Decide(report.ReasonOnlyExemptMethods, "methods", exemptMethods)
		}
		return report.Decide(report.ReasonConfigured).
			Set("responseHeaderTimeout "+traefikDuration(r.Timeouts.BackendRequest.Value)+", "+statusFact(rt)).
			With(report.NewCaveat(report.CaveatInferredFromSource, "version", sup.Version),
				report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders)).
			With(statusExemptions(r, sup, opts)...)
	case translate.FeatureBackendRequestTimeout:
		d := r.Timeouts.BackendRequest
		if d.IsZero() {
			// No per-try timer (Traefik's dialTimeout is 30s otherwise).
			return report.Decide(report.ReasonTimeoutDisabled).Set("dialTimeout 0s, responseHeaderTimeout 0s").
				With(readCutCaveat(reads))
		}
		// responseHeaderTimeout bounds the time from the end of sending
		// the request to the response headers, not the whole try.
		s := traefikDuration(d.Value)
		return report.Decide(report.ReasonConfigured).Set("dialTimeout " + s + ", responseHeaderTimeout " + s).
			With(report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders))
	case translate.FeatureRequestTimeout:
		if r.Timeouts.Request.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled).With(readCutCaveat(reads))
		}
		// Traefik has no per-route request timeout: the entry points'
		// respondingTimeouts are static, apply to every route and do not
		// answer 504.
		return report.Decide(report.ReasonNotExpressible)
	}
	return report.Decide(report.ReasonNotTranslated)
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

// readCutCaveat says what the entry points' readTimeouts (reads;
// Traefik's default when none) do to a rule whose request or
// backendRequest is 0s: they cut a request whose head and body have not
// all been read by then. Verified with Traefik v3.6.12: a request whose
// body was still arriving when readTimeout passed got 499 or 504 (the
// status depends on which error Traefik's proxy sees first: the request's
// context canceled or the read timed out), and the backend a truncated
// body.
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

// backendRefsDecision: a dead rule's routers send every request to
// noop@internal, whose 418 the errors middleware rewrites to 500 (Traefik's
// file provider has no direct-response service); the share of invalid
// backendRefs goes there in the weighted service, and that middleware sits
// on the whole rule.
func backendRefsDecision(r *translate.Rule) report.Decision {
	switch {
	case r.Dead():
		return report.Decide(report.ReasonAnswers500).Set(fmt.Sprintf("%s, errors %d to 500", noopService, noopStatus))
	case r.InvalidWeight() == 0:
		return report.Decide(report.ReasonInvalidBackendsUnweighted)
	}
	return report.Decide(report.ReasonAnswers500).Set(fmt.Sprintf("%s weight %d, errors %d to 500", noopService, r.InvalidWeight(), noopStatus)).
		With(report.NewCaveat(report.CaveatStatusRewriteCoversRule, "status", strconv.Itoa(noopStatus)))
}

// statusExemptions are the caveats of the requests of r that a Traefik
// 3.7 status retry leaves out: POST, PATCH and LOCK without the opt-in
// (retryNonIdempotentMethod, --retry-non-idempotent), and bodies over
// retry.maxRequestBodyBytes, which Traefik buffers (no gwretry option
// lifts it). None when no status retry is configured.
func statusExemptions(r *translate.Rule, sup support, opts translate.Options) []report.Caveat {
	if !sup.StatusRetry || r.Retry == nil || len(r.Retry.Codes) == 0 {
		return nil
	}
	var cs []report.Caveat
	if !opts.RetryNonIdempotent && r.MatchesNonIdempotent() {
		cs = append(cs, report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", exemptMethods))
	}
	if !onlyExempt(r, opts) {
		cs = append(cs, report.NewCaveat(report.CaveatBodyBufferLimit, "limit", translate.ByteSize(uint64(max(sup.StatusBodyLimit, 0)))))
	}
	return cs
}

// onlyExempt reports whether every request of r is a POST, PATCH or LOCK
// that a status retry leaves out.
func onlyExempt(r *translate.Rule, opts translate.Options) bool {
	return !opts.RetryNonIdempotent && r.OnlyNonIdempotent()
}

// attemptsDecision: Traefik counts the first try in retry.attempts.
func attemptsDecision(r *translate.Rule, sup support, opts translate.Options) report.Decision {
	rt := r.Retry
	n := configuredAttempts(rt, sup)
	d := report.Decide(report.ReasonConfigured).Set(attemptsFact(r, sup))
	if rt.Attempts > n {
		// The most gwretry configures: the largest retry.attempts every
		// Traefik build reads as written.
		d = d.With(report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.Itoa(n), "max", strconv.Itoa(sup.MaxAttempts)))
	}
	if n > 0 && !(sup.StatusRetry && slices.Contains(rt.Codes, 502)) {
		d = d.With(report.NewCaveat(report.CaveatSentRequestNotRetried))
	}
	d = d.With(statusExemptions(r, sup, opts)...)
	if rt.Backoff != nil && !rt.Backoff.IsZero() {
		worst := worstWaits(rt, n)
		if d := r.Timeouts.BackendRequest; d != nil && !d.IsZero() && worst < maxElapsed {
			// The tries before the last; computed in float64 and capped, as
			// attempts × backendRequest can overflow a time.Duration.
			worst += time.Duration(math.Min(float64(n)*float64(d.Value), float64(maxElapsed)))
		}
		if worst >= maxElapsed {
			d = d.With(report.NewCaveat(report.CaveatLateRetriesDropped, "after", traefikDuration(maxElapsed)))
		}
	}
	return d
}

// codesDecision: Traefik before 3.7 retries only when the backend could
// not be reached; 3.7 adds retry.status.
func codesDecision(r *translate.Rule, sup support, opts translate.Options) report.Decision {
	switch {
	case !sup.StatusRetry:
		return report.Decide(report.ReasonNeedsNewerVersion, "version", sup.Version, "needs", statusRetryVersion)
	case onlyExempt(r, opts):
		return report.Decide(report.ReasonOnlyExemptMethods, "methods", exemptMethods)
	}
	return report.Decide(report.ReasonConfigured).Set(statusFact(r.Retry)).With(statusExemptions(r, sup, opts)...)
}

// backoffDecision: retry.initialInterval is twice the backoff, because
// Traefik multiplies each wait by a random factor in [0.5, 1.5] and grows
// the interval to twice its start over the attempts; it caps the interval
// at 60s.
func backoffDecision(rt *translate.Retry) report.Decision {
	b := rt.Backoff
	if b.IsZero() {
		return report.Decide(report.ReasonRetriesImmediate)
	}
	d := report.Decide(report.ReasonConfigured).Set("retry.initialInterval " + traefikDuration(2*b.Value)).
		With(report.NewCaveat(report.CaveatRandomizedBackoff, "min", traefikDuration(b.Value), "max", traefikDuration(6*b.Value)))
	if b.Value > maxInterval/2 {
		d = d.With(report.NewCaveat(report.CaveatBackoffIntervalCapped, "max", traefikDuration(maxInterval)))
	}
	return d
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
