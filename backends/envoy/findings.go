package envoy

import (
	"fmt"
	"strings"
	"time"

	"github.com/gwretry/gwretry/translate"
)

// findings returns one finding per feature the rule sets. It describes what
// routes() and plan() generate; tests check the two agree.
func (g *generator) findings(r *translate.Rule) []translate.Finding {
	var out []translate.Finding
	for _, f := range r.Features() {
		status, msg := g.assess(r, f)
		out = append(out, translate.NewFinding(r, f, status, "%s", msg))
	}
	return out
}

// assess says how Envoy handles one feature of r.
func (g *generator) assess(r *translate.Rule, f translate.Feature) (translate.Status, string) {
	if r.AllWeightsZero() {
		return translate.Honoured, "every backendRef has weight 0: Envoy answers 500 itself, as the Gateway API requires, and never contacts a backend, so this setting never applies"
	}
	rt, req, be := r.Retry, r.Timeouts.Request, r.Timeouts.BackendRequest
	retrying := retries(r)
	noRetries := "attempts is 0: the route has no retry policy and Envoy does not retry"
	// With retries and no request timeout, Envoy's default route timeout
	// still bounds the request: it can end a try before backendRequest.
	defaultCutsTry := retrying && req == nil && be != nil && !be.IsZero() && be.Value >= g.cap.defaultRouteTimeout
	cutsTry := fmt.Sprintf("per_try_timeout %s, but timeouts.request is unset, so Envoy's default route timeout of %s ends the request (504) before a try reaches %s; set timeouts.request (\"0s\" disables it)",
		textOf(be), formatDuration(g.cap.defaultRouteTimeout), textOf(be))
	switch f {
	case translate.FeatureRetryAttempts:
		if !retrying {
			return translate.Honoured, noRetries
		}
		if req == nil && be != nil && !be.IsZero() {
			if worst := g.worstCase(rt, be.Value); worst > g.cap.defaultRouteTimeout {
				return translate.Approximated, fmt.Sprintf("num_retries %d, but timeouts.request is unset, so Envoy's default route timeout of %s ends the request, retries included, before %d tries of up to %s (backendRequest) and their back-off can all run; set timeouts.request (\"0s\" disables it). %s",
					rt.Attempts, formatDuration(g.cap.defaultRouteTimeout), rt.Attempts+1, be.Text, g.methodNote())
			}
		}
		return translate.Honoured, fmt.Sprintf("num_retries %d. %s", rt.Attempts, g.methodNote())
	case translate.FeatureRetryBackendTimeout:
		switch {
		case !retrying && be.IsZero():
			return translate.Honoured, "attempts is 0 and backendRequest is 0s: there is no retry and no per-try timeout"
		case !retrying:
			return translate.Honoured, fmt.Sprintf("attempts is 0: no retries; backendRequest %s bounds the single try", be.Text)
		case be.IsZero():
			return translate.Honoured, "backendRequest is 0s: no per_try_timeout, tries are not cut"
		case defaultCutsTry:
			return translate.Approximated, cutsTry
		}
		return translate.Honoured, fmt.Sprintf("per_try_timeout %s with retry_on reset: a try that exceeds it is cut and retried", be.Text)
	case translate.FeatureRetryBackoff:
		if !retrying {
			return translate.Honoured, "attempts is 0: no retries, so no back-off applies"
		}
		if rt.Backoff.IsZero() {
			return translate.Honoured, "backoff 0s: base_interval 1ms (Envoy's minimum), so retries wait at most a few milliseconds"
		}
		base := backoffBase(rt.Backoff)
		return translate.Approximated, fmt.Sprintf("retry_back_off base_interval %s: Envoy's back-off is fully jittered, retry n waits a random time in [0, min(2^(n-1)×%s, %s)) (max_interval defaults to %d× base_interval), so a retry can start sooner than %s after the previous try, even at once",
			rt.Backoff.Text, rt.Backoff.Text, formatDuration(base*time.Duration(g.cap.backoffMaxFactor)), g.cap.backoffMaxFactor, rt.Backoff.Text)
	case translate.FeatureRetryCodes:
		if !retrying {
			return translate.Honoured, noRetries
		}
		return translate.Honoured, fmt.Sprintf("%s %s: the listed codes are retried and no others (retry_on has neither 5xx nor gateway-error)", g.cap.statusCodesToken, codesText(rt.Codes))
	case translate.FeatureRetryConnectionErrors:
		if !retrying {
			return translate.Honoured, noRetries
		}
		return translate.Honoured, fmt.Sprintf("retry_on %s: refused connections, connect timeouts and resets are retried (a reset after the request was sent is retried too, so the backend may see it twice)", joinTokens(g.cap.retryOn))
	case translate.FeatureBackendRequestTimeout:
		if be.IsZero() {
			if req == nil {
				return translate.Honoured, fmt.Sprintf("backendRequest is 0s: no per-try timeout, and the route timeout is 0s so that Envoy's default of %s does not cut the try either", formatDuration(g.cap.defaultRouteTimeout))
			}
			return translate.Honoured, "backendRequest is 0s: no per-try timeout"
		}
		if defaultCutsTry {
			return translate.Approximated, cutsTry
		}
		if retrying {
			return translate.Honoured, fmt.Sprintf("per_try_timeout %s: every try, the first included, is cut after %s; a try that is not retried answers 504", be.Text, be.Text)
		}
		return translate.Honoured, fmt.Sprintf("route timeout %s: a single try, cut after %s with a 504", formatDuration(*g.plan(r, false).timeout), formatDuration(*g.plan(r, false).timeout))
	case translate.FeatureRequestTimeout:
		if req.IsZero() {
			return translate.Honoured, "request is 0s: no total timeout (route timeout and stream idle timeout disabled unless backendRequest bounds a single try)"
		}
		if !retrying && be != nil && !be.IsZero() && be.Value < req.Value {
			return translate.Honoured, fmt.Sprintf("route timeout %s, the shorter backendRequest, since there is only one try: the request cannot outlast %s", be.Text, req.Text)
		}
		return translate.Honoured, fmt.Sprintf("route timeout %s: it bounds the whole request, retries included, and answers 504", req.Text)
	}
	return translate.Unsupported, fmt.Sprintf("gwretry's Envoy backend does not know feature %s", f)
}

// methodNote says how non-idempotent requests are retried.
func (g *generator) methodNote() string {
	if g.retryNonIdempotent {
		return "POST, PATCH and LOCK requests are retried too (--retry-non-idempotent)"
	}
	return "POST, PATCH and LOCK requests are not retried (gwretry's default; --retry-non-idempotent lets Envoy retry them)"
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
