package linkerd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// findings returns one finding per feature of rule r, in
// translate.Assess's order. meshed: Linkerd applies the route (a Service
// parent that attaches, Rule.MeshParents); a route in the target's scope
// that is not meshed has Service parentRefs of which none attaches.
//
// Every honoured claim rests on what Linkerd's documentation and
// policy-controller source say it does with the route as the judge reads
// it back: gwretry's tests do not run Linkerd.
func findings(p rulePlan, meshed bool, shared *report.Interner) []translate.Finding {
	r := p.rule
	return translate.Assess(r, translate.Decisions{
		Shared: shared,
		First:  func(f translate.Feature) (report.Decision, bool) { return wholeRoute(p, meshed, f) },
		Written: func(f translate.Feature) (report.Decision, bool) {
			if !r.Forwards() && f != translate.FeatureRequestRedirect {
				// Linkerd sends none of the rule's requests to a backend.
				return report.Decide(report.ReasonRuleForwardsNothing), true
			}
			return hosted(p, filterDecision(p, f)), true
		},
		Feature: func(f translate.Feature) report.Decision {
			if f == translate.FeatureBackendRefs {
				return hosted(p, backendRefsDecision(r))
			}
			return hosted(p, inheritedDecision(p, f, retryDecision(p, f)))
		},
	})
}

// hosted adds to decision d, when it is honoured or approximated, that the
// route's hostnames restrict it: the proxy skips a route whose hosts do
// not match the request (linkerd-http-route's find), so requests to the
// Service with another host (its cluster IP, another of its names) get
// none of the route's rules, although on a Service parent every request
// to the Service matches in GAMMA.
func hosted(p rulePlan, d report.Decision) report.Decision {
	if st := d.Status(); len(p.hosts) == 0 || st != translate.Honoured && st != translate.Approximated {
		return d
	}
	return d.With(report.NewCaveat(report.CaveatHostnamesRestrictRoute, "hostnames", strings.Join(p.hosts, ", ")))
}

// wholeRoute decides the features that Linkerd treats alike for the whole
// rule: a route it does not apply (no Service parent attaches; gwretry's
// warnings say why), a rule with a field the version's bundled CRDs lack
// (its route is not written), a route it refuses for a filter ("Failed to convert
// route": the rule is written to a route of its own, so the route's other
// rules still apply), and listener.https, since Linkerd implements no
// Gateway listener (it applies the route to meshed clients' requests to
// its Service parents, over its own mTLS).
func wholeRoute(p rulePlan, meshed bool, f translate.Feature) (report.Decision, bool) {
	switch {
	case !meshed:
		return report.Decide(report.ReasonNoServiceParentAttaches), true
	case p.crdLacks != "":
		return report.Decide(report.ReasonBundledCRDLacksField, "field", p.crdLacks), true
	case p.rejected != "":
		return report.Decide(report.ReasonRouteRefusedForFilter, "filter", p.rejected), true
	case f == translate.FeatureListenerHTTPS:
		return report.Decide(report.ReasonMeshServesNoListener), true
	}
	return report.Decision{}, false
}

// backendRefsDecision: Linkerd sends the requests of a rule with no
// backendRefs to the parent Service instead of answering 500, and fails
// the share of a backendRef it cannot use with its own error response,
// which gwretry does not know to be 500 in every case.
func backendRefsDecision(r *translate.Rule) report.Decision {
	if r.NoBackendRefs {
		return report.Decide(report.ReasonNoBackendRefsGoToParent)
	}
	return report.Decide(report.ReasonAnswers500).Set("backendRefs written back").With(report.NewCaveat(report.CaveatFailedShareStatusUnknown))
}

// routeSets reports whether the route holding the rule of p sets a retry
// policy and any timeout of its own (the annotations plan wrote, or a
// non-zero timeouts.request that Linkerd reads, which plan writes as an
// annotation wherever Linkerd would not read it).
func routeSets(p rulePlan) (retry, timers bool) {
	for _, k := range retryKeys {
		retry = retry || p.ann[k] != ""
	}
	req := p.rule.Timeouts.Request
	timers = p.ann[annRequestTimeout] != "" || p.ann[annResponseTimeout] != "" || (req != nil && !req.IsZero())
	return retry, timers
}

// inheritedDecision says what the Service parents' own annotations add
// to decision d of feature f of a rule whose route sets no retry policy or
// no timeout (fromServices): Linkerd's policy controller gives a rule whose
// route sets no retry annotation the Service's retry policy, and a rule
// with no timeout at all (no timeout.linkerd.io/request, response or idle
// on the route, no non-zero timeouts.request it reads) the Service's
// timeouts (convert_outbound_route in
// policy-controller/grpc/src/outbound/http.rs). A retry feature with the
// Service's retry policy, a timeout feature with its retry timeout or
// timeouts, is then not honoured.
func inheritedDecision(p rulePlan, f translate.Feature, d report.Decision) report.Decision {
	retry, timers := routeSets(p)
	var hit []inherited
	for _, x := range fromServices(p.rule.MeshParents, retry, timers) {
		switch {
		case f.IsRetry() && x.retry != nil,
			// A Service's retry.linkerd.io/timeout cuts every try, so
			// a stalled request also ends, after the last.
			(f == translate.FeatureBackendRequestTimeout || f == translate.FeatureRetryBackendTimeout || f == translate.FeatureRequestTimeout) && (x.retry != nil && x.retry.timeout != 0 || x.timers.set()):
			hit = append(hit, x)
		}
	}
	if st := d.Status(); len(hit) == 0 || st != translate.Honoured && st != translate.Approximated {
		return d
	}
	var services, keys []string
	for _, x := range hit {
		services = append(services, x.parent.String())
		for _, t := range x.text {
			// The annotations that act on this feature: the retry
			// policy on a retry feature, its try timeout and the
			// timeouts on a timeout feature.
			k, _, _ := strings.Cut(t, " ")
			acts := slices.Contains(retryKeys, k)
			if !f.IsRetry() {
				acts = k == annRetryTimeout || slices.Contains(timeoutKeys, k)
			}
			if acts && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return d.With(report.NewCaveat(report.CaveatServiceAnnotationsApply, "services", strings.Join(services, ", "), "annotations", strings.Join(keys, ", ")))
}

// inheritedNote warns of a rule that some Service parent's annotations
// reach (a retry policy or timeouts the rule does not ask for), findings
// or not.
func inheritedNote(p rulePlan) []translate.Note {
	retry, timers := routeSets(p)
	in := fromServices(p.rule.MeshParents, retry, timers)
	if len(in) == 0 {
		return nil
	}
	return []translate.Note{translate.Warning("HTTPRoute "+p.rule.Route, "rule %d: Linkerd applies %s to it, because the route sets no retry annotation or no timeout of its own (a Service's retry.linkerd.io and timeout.linkerd.io annotations fill what a route rule leaves unset)", p.rule.Index, describe(in))}
}

func isBackendRefFeature(f translate.Feature) bool {
	return len(f) > len("backendRefs.") && f[:len("backendRefs.")] == "backendRefs."
}

// filterName is the HTTPRoute filter type of a rule-level filter feature.
func filterName(f translate.Feature) string {
	switch f {
	case translate.FeatureRequestHeaderModifier:
		return "RequestHeaderModifier"
	case translate.FeatureResponseHeaderModifier:
		return "ResponseHeaderModifier"
	case translate.FeatureRequestRedirect:
		return "RequestRedirect"
	case translate.FeatureURLRewrite:
		return "URLRewrite"
	case translate.FeatureRequestMirror:
		return "RequestMirror"
	case translate.FeatureExtensionRef:
		return "ExtensionRef"
	case translate.FeatureCORS:
		return "CORS"
	case translate.FeatureExternalAuth:
		return "ExternalAuth"
	}
	return ""
}

// filterDecision decides a filter of a rule that forwards (or a redirect):
// the route is written back with the filters Linkerd applies; a
// backendRef with a filter Linkerd does not support is an invalid backend
// to it, whose share of the requests fails.
func filterDecision(p rulePlan, f translate.Feature) report.Decision {
	switch f {
	case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier, translate.FeatureRequestRedirect:
		return report.Decide(report.ReasonConfigured).Set(filterName(f) + " filter")
	}
	if isBackendRefFeature(f) {
		base := translate.Feature(f[len("backendRefs."):])
		switch base {
		case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier:
			// gwretry's judge does not read backendRef filters back.
			return report.Decide(report.ReasonConfigured).Set("backendRef " + filterName(base) + " filter").With(report.NewCaveat(report.CaveatNotCheckedByJudge))
		}
		return report.Decide(report.ReasonBackendFilterInvalidatesBackend, "filter", filterName(base))
	}
	// Rule-level filters Linkerd refuses make the rule rejected; this is
	// not reached for them.
	return report.Decide(report.ReasonNotExpressible)
}

// timers is the configured fact of the try timers plan wrote for
// backendRequest: timeout.linkerd.io/response, and
// retry.linkerd.io/timeout with it when the rule is retried.
func timers(p rulePlan) string {
	out := annResponseTimeout + " " + p.ann[annResponseTimeout]
	if v := p.ann[annRetryTimeout]; v != "" {
		out += ", " + annRetryTimeout + " " + v
	}
	return out
}

// tryTimerCaveats are how Linkerd's try timers differ from backendRequest:
// both start once the request body has been sent (the proxy's
// request_flushed), so an upload is not timed; and a try cut after its
// response headers is not retried, its response body cut short.
func tryTimerCaveats() []report.Caveat {
	return []report.Caveat{report.NewCaveat(report.CaveatTimerStartsAfterRequestBody), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)}
}

// retryDecision decides a retry or timeout feature of a rule that
// forwards, from the annotations plan wrote. Linkerd never retries a
// request whose body is larger than 64 KiB, has no setting to retry
// connection failures, and waits by its own fixed, jittered backoff.
func retryDecision(p rulePlan, f translate.Feature) report.Decision {
	r := p.rule
	// set is the decision that annotation key is written with its value.
	set := func(key string) report.Decision {
		return report.Decide(report.ReasonConfigured).Set(key + " " + p.ann[key])
	}
	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	be, req := r.Timeouts.BackendRequest, r.Timeouts.Request
	bodyLimit := translate.ByteSize(maxRetriedBody)
	// retried are the caveats of every retry the policy makes: the
	// body limit, and the clamp of the limit.
	retried := []report.Caveat{report.NewCaveat(report.CaveatBodyBufferLimit, "limit", bodyLimit)}
	if f.IsRetry() && attempts == 0 {
		// No retry annotation is written.
		return report.Decide(report.ReasonRetriesDisabled)
	}
	if p.clamped {
		retried = append(retried, report.NewCaveat(report.CaveatAttemptsClamped, "configured", p.ann[annRetryLimit], "max", fmt.Sprint(maxLimit)))
	}
	switch f {
	case translate.FeatureRetryAttempts:
		if !retries(r) {
			// Only connection failures, which Linkerd cannot retry.
			return report.Decide(report.ReasonConnectionFailuresNotRetryable)
		}
		return set(annRetryLimit).With(retried...).With(report.NewCaveat(report.CaveatConnectionFailuresNotRetried))
	case translate.FeatureRetryCodes:
		return set(annRetryHTTP).With(retried...)
	case translate.FeatureRetryConnectionErrors:
		return report.Decide(report.ReasonConnectionFailuresNotRetryable)
	case translate.FeatureRetryBackoff:
		return report.Decide(report.ReasonFixedBackoff, "min", "25ms", "max", "250ms")
	case translate.FeatureRetryBackendTimeout:
		if be.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled)
		}
		// The headers timer retries a try cut before its headers; the
		// response timer cuts every try, the last too.
		return report.Decide(report.ReasonConfigured).Set(timers(p)).With(retried...).With(tryTimerCaveats()...)
	case translate.FeatureBackendRequestTimeout:
		if be.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled)
		}
		return report.Decide(report.ReasonConfigured).Set(timers(p)).With(tryTimerCaveats()...)
	case translate.FeatureRequestTimeout:
		switch {
		case req.IsZero():
			return report.Decide(report.ReasonTimeoutDisabled)
		case p.ann[annRequestTimeout] != "":
			// Linkerd does not read timeouts.request from this route
			// itself, or not as written.
			return set(annRequestTimeout)
		}
		return report.Decide(report.ReasonConfigured).Set("timeouts.request " + req.Text)
	}
	return report.Decide(report.ReasonNotTranslated)
}
