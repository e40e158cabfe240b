package traefik

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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
func findings(r *translate.Rule, sup support, opts translate.Options) []translate.Finding {
	var out []translate.Finding
	for _, f := range r.Features() {
		status, msg := assess(r, f, sup, opts)
		out = append(out, translate.NewFinding(r, f, status, "%s", msg))
	}
	return out
}

// assess says how Traefik, as configured, handles feature f of rule r.
func assess(r *translate.Rule, f translate.Feature, sup support, opts translate.Options) (translate.Status, string) {
	rt := r.Retry
	if f.IsRetry() && (rt == nil || rt.Attempts == 0) {
		return translate.Honoured, "attempts is 0: no Retry middleware, nothing is retried"
	}
	switch f {
	case translate.FeatureRetryAttempts:
		return assessAttempts(r)
	case translate.FeatureRetryCodes:
		return assessCodes(rt, sup, opts)
	case translate.FeatureRetryBackoff:
		return assessBackoff(rt)
	case translate.FeatureRetryConnectionErrors:
		msg := "Traefik retries a try only when the request could not be sent (connection refused, " +
			"DNS or dial error, dial timeout); a connection reset or closed after the request was sent " +
			"is not retried and the client gets 502"
		if sup.StatusRetry && slices.Contains(rt.Codes, 502) {
			msg += " (with 502 in codes, Traefik 3.7 should retry it as a 502 status; inferred from its " +
				"source, not verified)"
		}
		return translate.Approximated, msg
	case translate.FeatureRetryBackendTimeout:
		if r.Timeouts.BackendRequest.IsZero() {
			return translate.Honoured, "backendRequest is 0s: no try is cut, so none is retried for it"
		}
		if !sup.StatusRetry {
			return translate.Unsupported, "Traefik " + sup.Version + " does not retry a try cut by " +
				"responseHeaderTimeout (traefik/traefik#4710): the client gets 504 after the first " +
				"timed-out try; Traefik 3.7 with 504 in codes retries it"
		}
		if !slices.Contains(rt.Codes, 504) {
			return translate.Unsupported, "a try cut by responseHeaderTimeout ends in 504, which Traefik " +
				"retries only as a listed status: add 504 to codes"
		}
		return translate.Approximated, "a try cut by responseHeaderTimeout becomes a 504 that is retried " +
			"because 504 is in codes (inferred from Traefik 3.7's source, not verified); the timer ends " +
			"when response headers arrive, and " + nonIdempotentText(opts)
	case translate.FeatureBackendRequestTimeout:
		d := r.Timeouts.BackendRequest
		if d.IsZero() {
			return translate.Honoured, "backendRequest is 0s: no per-try timeout (Traefik's " +
				"responseHeaderTimeout defaults to none)"
		}
		return translate.Approximated, fmt.Sprintf("serversTransport forwardingTimeouts dialTimeout and "+
			"responseHeaderTimeout %s: bounds the time until the response headers arrive, not the whole "+
			"response; a slow response body is not cut", d.Text)
	case translate.FeatureRequestTimeout:
		d := r.Timeouts.Request
		if d.IsZero() {
			return translate.Honoured, "request is 0s: Traefik sets no total request timeout by default"
		}
		msg := "Traefik has no per-route request timeout: entryPoints.<name>.transport.respondingTimeouts " +
			"are static, apply to every route of the entry point and do not answer 504; " +
			"set a timeout in the client or use the Envoy target"
		if sup.RetryTimeout && retries(r) {
			msg += fmt.Sprintf("; retry.timeout %s is set, so no retry starts after %s, but the "+
				"request itself is not cut", d.Text, d.Text)
		}
		return translate.Unsupported, msg
	}
	return translate.Unsupported, "internal error: unknown feature " + string(f)
}

func assessAttempts(r *translate.Rule) (translate.Status, string) {
	rt := r.Retry
	msg := fmt.Sprintf("retry.attempts %d (Traefik counts the first try, so %d retries)", rt.Attempts+1, rt.Attempts)
	if rt.Backoff == nil || rt.Backoff.IsZero() {
		return translate.Honoured, msg
	}
	worst := worstWaits(rt)
	if d := r.Timeouts.BackendRequest; d != nil && !d.IsZero() && worst < maxElapsed {
		// The tries before the last; computed in float64 and capped, as
		// attempts × backendRequest can overflow a time.Duration.
		worst += time.Duration(math.Min(float64(rt.Attempts)*float64(d.Value), float64(maxElapsed)))
	}
	if worst >= maxElapsed {
		return translate.Approximated, msg + "; but Traefik starts no retry 15m after the first " +
			"try started, and the waits and timed tries can exceed 15m, so later retries can be dropped"
	}
	return translate.Honoured, msg + "; Traefik starts no retry 15m after the first try started"
}

func assessCodes(rt *translate.Retry, sup support, opts translate.Options) (translate.Status, string) {
	if !sup.StatusRetry {
		return translate.Unsupported, "Traefik " + sup.Version + " cannot retry on response codes (its " +
			"Retry middleware retries only when the backend could not be reached): the response is " +
			"returned as it is; Traefik 3.7 adds retry.status (choose traefik@3.7)"
	}
	return translate.Approximated, "retry.status " + strings.Join(statusCodes(rt.Codes), ",") +
		"; Traefik buffers the request body to retry on a status and does not retry a request whose " +
		"body exceeds 2 MiB (maxRequestBodyBytes); " + nonIdempotentText(opts)
}

func nonIdempotentText(opts translate.Options) string {
	if opts.RetryNonIdempotent {
		return "POST, PATCH and LOCK are retried on a status too (retryNonIdempotentMethod, opted in)"
	}
	return "POST, PATCH and LOCK are not retried on a status (--retry-non-idempotent retries them)"
}

func assessBackoff(rt *translate.Retry) (translate.Status, string) {
	b := rt.Backoff
	if b.IsZero() {
		return translate.Honoured, "backoff is 0s: retries are immediate"
	}
	msg := fmt.Sprintf("retry.initialInterval %s, twice the backoff, because Traefik multiplies each wait "+
		"by a random factor in [0.5, 1.5] and grows the interval to twice its start over the attempts: "+
		"every wait is between %s and 6 times it", traefikDuration(2*b.Value), b.Text)
	if b.Value > maxInterval/2 {
		msg += "; but Traefik caps the interval at 60s, so waits after the first are between 30s and 90s, " +
			"shorter than the backoff"
	}
	return translate.Approximated, msg
}

// worstWaits is the longest total wait Traefik's backoff can add over all
// retries of rt.
func worstWaits(rt *translate.Retry) time.Duration {
	interval := float64(2 * rt.Backoff.Value)
	// Traefik's multiplier is 2^(1/(its attempts - 1)), its attempts being
	// rt.Attempts+1.
	mult := math.Pow(2, 1/float64(rt.Attempts))
	var total float64
	for i := 0; i < rt.Attempts; i++ {
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
