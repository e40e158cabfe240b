package envoy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// findings returns one finding per feature the rule sets, in
// translate.Assess's order: the filters Envoy writes and listener.https
// are decided by filterDecision and httpsDecision, the other features by
// assess. It describes what routes() and plan() generate; the judge
// (judge.go) checks every honoured claim against the file.
func (g *generator) findings(r *translate.Rule) []translate.Finding {
	return translate.Assess(r, translate.Decisions{
		Written: func(f translate.Feature) (report.Decision, bool) {
			switch {
			case isRuleFilter(f):
				return g.filterDecision(r, f), true
			case f == translate.FeatureListenerHTTPS:
				// Assess decides a rule on a listener gwretry does not
				// generate before asking.
				return g.httpsDecision(r), true
			}
			return report.Decision{}, false
		},
		Feature: func(f translate.Feature) report.Decision { return g.assess(r, f) },
		RetryOn: true,
		Shared:  g.shared,
	})
}

// assess decides how Envoy handles backendRefs, or a retry or timeout
// feature of a rule that forwards.
func (g *generator) assess(r *translate.Rule, f translate.Feature) report.Decision {
	if !g.placed[r.Name] {
		return report.Decide(report.ReasonRuleOnNoListener)
	}
	if f == translate.FeatureBackendRefs {
		return g.assessBackendRefs(r)
	}
	rt, req, be := r.Retry, r.Timeouts.Request, r.Timeouts.BackendRequest
	retrying := retries(r)
	// onlyExempt: every request the rule matches gets the policy of
	// POST, PATCH and LOCK (routes.modeFor), which is what is written.
	onlyExempt := r.OnlyNonIdempotent() && !g.retryNonIdempotent
	if onlyExempt && retrying && len(g.safeTokens(rt)) == 0 {
		// modeFor: the policy's triggers retry no failure before the
		// request was sent, so no route of the rule retries.
		if f.IsRetry() {
			return report.Decide(report.ReasonOnlyExemptMethods, "methods", strings.Join(nonIdempotentMethods(), ", "))
		}
		retrying = false
	}
	disabled := report.Decide(report.ReasonRetriesDisabled)
	configured := func(fact string) report.Decision { return report.Decide(report.ReasonConfigured).Set(fact) }
	defaultTimeout := report.NewCaveat(report.CaveatDefaultRouteTimeout, "timeout", formatDuration(g.cap.defaultRouteTimeout))
	// With retries and no request timeout, Envoy's default route timeout
	// still bounds the request: it can end a try before backendRequest
	// (answered 504 while no response headers went to the client; once
	// they did, per_try_timeout no longer applies and that default route
	// timeout alone cuts a stalled body, resetting the stream).
	defaultCutsTry := retrying && req == nil && be != nil && !be.IsZero() && be.Value >= g.cap.defaultRouteTimeout
	cutsTry := []report.Caveat{defaultTimeout, report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)}
	perTry := func() report.Decision { return configured("per_try_timeout " + formatDuration(be.Value)) }
	// exempt are the caveats of the requests the rule matches that a
	// retry feature does not cover as configured; any of them makes the
	// feature approximated.
	exempt := func() []report.Caveat {
		if !retrying {
			return nil
		}
		var out []report.Caveat
		if n := g.numRetries(rt.Attempts); uint64(n) != uint64(rt.Attempts) {
			out = append(out, report.NewCaveat(report.CaveatAttemptsClamped, "configured", fmt.Sprint(n), "max", fmt.Sprint(g.cap.maxNumRetries)))
		}
		if r.MatchesNonIdempotent() && !g.retryNonIdempotent {
			// Retried only when they never reached the backend (retry_on
			// of safeRetryOn); --retry-non-idempotent retries them too.
			out = append(out, report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", strings.Join(nonIdempotentMethods(), ", ")))
		}
		// per_request_buffer_limit_bytes: a larger body gets one try.
		out = append(out, report.NewCaveat(report.CaveatBodyBufferLimit, "limit", translate.ByteSize(uint64(g.cap.retryBufferLimit))))
		return out
	}
	switch f {
	case translate.FeatureRetryAttempts:
		if !retrying {
			return disabled
		}
		d := configured(fmt.Sprintf("num_retries %d", g.numRetries(rt.Attempts))).With(exempt()...)
		// Without timeouts.request, Envoy's default route timeout ends
		// the request, retries included, before every try of up to
		// backendRequest and its back-off can run.
		if req == nil && be != nil && !be.IsZero() && g.worstCase(rt, be.Value) > g.cap.defaultRouteTimeout {
			d = d.With(defaultTimeout)
		}
		return d
	case translate.FeatureRetryBackendTimeout:
		retryPerTry := perTry
		if on := rt.On; on != nil && !on.Timeouts {
			// trap 6: Envoy retries a try per_try_timeout cut only with
			// reset, 5xx or gateway-error; the policy's triggers, as
			// Envoy Gateway writes them, have none.
			retryPerTry = func() report.Decision {
				return report.Decide(report.ReasonTimeoutNotRetriedAsPolicy, "policy", on.Policy, "triggers", joinTokens(on.Triggers)).Set("per_try_timeout " + formatDuration(be.Value))
			}
		}
		switch {
		case !retrying:
			return disabled
		case be.IsZero():
			return report.Decide(report.ReasonTimeoutDisabled).With(exempt()...)
		case defaultCutsTry:
			return retryPerTry().With(cutsTry...).With(exempt()...)
		}
		return retryPerTry().With(g.headersCaveats(r)...).With(exempt()...)
	case translate.FeatureRetryCodes:
		if !retrying {
			return disabled
		}
		d := configured("retriable_status_codes " + codesText(rt.Codes)).With(g.egRouteRetry(r)...)
		if on := rt.On; on != nil {
			d = configured("retry_on " + joinTokens(on.Triggers) + ", retriable_status_codes " + codesText(on.StatusCodes))
			var below []string
			for _, c := range on.StatusCodes {
				if c < 400 && slices.Contains(on.Triggers, g.cap.statusCodesToken) {
					below = append(below, fmt.Sprint(c))
				}
			}
			if len(below) > 0 {
				d = d.With(report.NewCaveat(report.CaveatCodesBeyondGatewayAPI, "codes", strings.Join(below, ", ")))
			}
		}
		if onlyExempt {
			// Every route of the rule has the policy of requests never
			// sent, which lists no codes.
			d = report.Decide(report.ReasonConfigured)
		}
		return d.With(exempt()...)
	case translate.FeatureRetryConnectionErrors:
		if !retrying {
			return disabled
		}
		if onlyExempt {
			return configured("retry_on " + joinTokens(g.safeTokens(rt))).With(exempt()...)
		}
		on := rt.On
		if on == nil {
			return configured("retry_on " + joinTokens(g.cap.retryOn)).With(g.egRouteRetry(r)...).With(exempt()...)
		}
		fact := "retry_on " + joinTokens(on.Triggers)
		if on.ConnErrors != translate.ConnRetryAll {
			return report.Decide(report.ReasonConnErrorsAsPolicy, "policy", on.Policy, "triggers", joinTokens(on.Triggers), "retried", connRetriedText(on.ConnErrors)).Set(fact).With(exempt()...)
		}
		return configured(fact).With(exempt()...)
	case translate.FeatureRetryBackoff:
		if !retrying {
			return disabled
		}
		fact := "retry_back_off base_interval " + formatDuration(backoffBase(rt.Backoff))
		if rt.On != nil && rt.On.MaxInterval != nil {
			fact += " max_interval " + formatDuration(rt.On.MaxInterval.Value)
		}
		d := configured(fact)
		if rt.Backoff.IsZero() {
			// base_interval 1ms, Envoy's minimum.
			return d
		}
		return d.With(report.NewCaveat(report.CaveatFullJitterBackoff))
	case translate.FeatureBackendRequestTimeout:
		if be.IsZero() {
			if req == nil {
				// The route timeout 0s keeps Envoy's default from
				// cutting the try.
				return report.Decide(report.ReasonTimeoutDisabled).Set("route timeout 0s")
			}
			return report.Decide(report.ReasonTimeoutDisabled)
		}
		if defaultCutsTry {
			return perTry().With(cutsTry...)
		}
		if retrying {
			return perTry().With(g.headersCaveats(r)...)
		}
		return configured("route timeout " + formatDuration(*g.plan(r, false).timeout))
	case translate.FeatureRequestTimeout:
		if req.IsZero() {
			d := report.Decide(report.ReasonTimeoutDisabled)
			if p := g.plan(r, retrying); p.timeout != nil && *p.timeout == 0 {
				d = d.Set("route timeout 0s")
			}
			return d
		}
		if !retrying && be != nil && !be.IsZero() && be.Value < req.Value {
			// One try only: the shorter backendRequest is the route
			// timeout.
			return configured("route timeout " + formatDuration(be.Value))
		}
		return configured("route timeout " + formatDuration(req.Value))
	}
	return report.Decide(report.ReasonNotTranslated)
}

// headersCaveats say what bounds a try once its response headers went to
// the client: Envoy then ignores per_try_timeout
// (UpstreamRequest::onPerTryTimeout in
// source/common/router/upstream_request.cc), and what is left (a route
// timeout, the default one when timeouts.request is unset) resets the
// stream (Filter::onUpstreamAbort in source/common/router/router.cc).
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

// assessBackendRefs decides what Envoy does with the share of invalid
// backendRefs (a weighted_clusters entry naming no cluster, answered 500
// by cluster_not_found_response_code), or with every request of a dead
// rule (a direct_response route).
func (g *generator) assessBackendRefs(r *translate.Rule) report.Decision {
	if r.Dead() {
		return report.Decide(report.ReasonAnswers500).Set("direct_response 500")
	}
	if r.InvalidWeight() == 0 {
		return report.Decide(report.ReasonInvalidBackendsUnweighted)
	}
	return report.Decide(report.ReasonAnswers500).Set(fmt.Sprintf("weighted_clusters %s weight %d", invalidCluster, r.InvalidWeight()))
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

// connRetriedText names which connection failures are retried.
func connRetriedText(c translate.ConnRetry) string {
	switch c {
	case translate.ConnRetryUnsent:
		return "only the connection failures before the request was sent"
	case translate.ConnRetryAll:
		return "every connection failure"
	}
	return "no connection failure"
}

func codesText(codes []int) string {
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprint(c)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// egDefaultTriggers are Envoy Gateway's retry_on for an HTTPRoute's own
// retry, as for a BackendTrafficPolicy without triggers (v1.9:
// internal/xds/translator/route.go, retryDefaultRetryOn; egctl x translate
// writes them for a rule's retry, TestEgctlBTP).
var egDefaultTriggers = []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "retriable-status-codes"}

// egRouteRetry is the caveat of a rule's own (Gateway API) retry when the
// input holds Envoy Gateway BackendTrafficPolicies, so that Envoy Gateway
// is where the objects run: it writes the retry otherwise than gwretry
// (egDefaultTriggers, not reset; code 503 when the rule lists none), a
// difference from egctl that gwretry makes on purpose (it writes the
// Gateway API's retry: every connection error and a try cut by
// backendRequest retried, no code unless listed).
func (g *generator) egRouteRetry(r *translate.Rule) []report.Caveat {
	if r.Retry == nil || r.Retry.On != nil || g.model == nil || !slices.ContainsFunc(g.model.Policies, func(p translate.PolicyReport) bool {
		return p.Kind == "BackendTrafficPolicy"
	}) {
		return nil
	}
	codes := r.Retry.Codes
	if len(codes) == 0 {
		codes = []int{503}
	}
	return []report.Caveat{report.NewCaveat(report.CaveatEnvoyGatewayRouteRetry, "triggers", joinTokens(egDefaultTriggers), "codes", codesText(codes))}
}
