package linkerd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// ruleContext is what the findings of one rule depend on beyond its plan.
type ruleContext struct {
	// meshed: Linkerd applies the route (a Service parent that
	// attaches, Rule.MeshParents); unattached: the route has Service
	// parentRefs, but none attaches.
	meshed, unattached bool
	// written is "namespace/name" of the output route holding the rule;
	// split is true when the input route was split.
	written string
	split   bool
}

// findings returns one finding per feature of rule r.
func findings(p rulePlan, c ruleContext) []translate.Finding {
	r := p.rule
	var out []translate.Finding
	for _, f := range r.Features() {
		fd := finding(p, c, f)
		if fd.Status == translate.Honoured {
			fd.Message = joinMessage(fd.Message, sourceBased)
		}
		if c.split {
			fd.Message = joinMessage(fd.Message, fmt.Sprintf("annotations apply to a whole route, so HTTPRoute %s is split for Linkerd and this rule is written to HTTPRoute %s", r.Route, c.written))
		}
		out = append(out, fd)
	}
	return out
}

// sourceBased is said of every honoured claim: no test runs Linkerd, so
// the claim rests on what Linkerd's documentation and source say it does
// with the route as the judge reads it back.
const sourceBased = "per Linkerd's documentation and policy-controller source (gwretry's tests do not run Linkerd)"

func joinMessage(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func finding(p rulePlan, c ruleContext, f translate.Feature) translate.Finding {
	r := p.rule
	un := func(reason report.Reason, format string, args ...any) translate.Finding {
		return translate.Decided(r, f, report.Decide(reason), format, args...)
	}
	if !c.meshed && c.unattached {
		return un(report.ReasonNoServiceParentAttaches, "Linkerd applies an HTTPRoute only for a Service parent, and none of this route's Service parentRefs attaches (gwretry's warnings say why: a Service or port not in the input), so Linkerd does not apply the route and its annotations")
	}
	if p.rejected != "" {
		refused := report.Decide(report.ReasonRouteRefusedForFilter, "filter", p.rejected)
		if f.IsFilter() && !isBackendRefFeature(f) {
			if name := filterName(f); name == p.rejected {
				return translate.Decided(r, f, refused, "Linkerd does not support the %s filter and refuses a route that has one (\"Failed to convert route\"); the rule is written to a route of its own, which Linkerd ignores, so the route's other rules still apply", p.rejected)
			}
		}
		return translate.Decided(r, f, refused, "Linkerd ignores the route this rule is written to, because the rule has a %s filter, which Linkerd refuses", p.rejected)
	}
	switch {
	case f == translate.FeatureListenerHTTPS:
		return un(report.ReasonMeshServesNoListener, "Linkerd implements no Gateway listener: it applies the route to meshed clients' requests to its Service parents, over its own mTLS, and never presents the listener's certificate")
	case f == translate.FeatureBackendRefs:
		if r.NoBackendRefs {
			return un(report.ReasonNoBackendRefsGoToParent, "Linkerd sends the requests of a rule with no backendRefs to the parent Service, instead of answering 500")
		}
		var why []string
		for _, b := range r.Invalid {
			why = append(why, fmt.Sprintf("backendRefs[%d]: %s", b.Index, b.Reason))
		}
		d := report.Decide(report.ReasonAnswers500).Set("backendRefs written back").With(report.NewCaveat(report.CaveatFailedShareStatusUnknown))
		return translate.Decided(r, f, d, "Linkerd fails the share of requests of a backendRef it cannot use with its own error response, which gwretry does not know to be 500 in every case (%s)", strings.Join(why, "; "))
	case f.IsFilter() && !r.Forwards() && f != translate.FeatureRequestRedirect:
		return un(report.ReasonRuleForwardsNothing, "the rule forwards nothing (%s): Linkerd sends none of its requests to a backend, so %s never takes effect", r.NoForwardReason(), f)
	case f.IsFilter():
		return filterFinding(p, f)
	}
	if !r.Forwards() {
		return translate.DeadRuleFinding(r, f, "Linkerd does not send them to a backend")
	}
	return inheritedFinding(p, retryFinding(p, f))
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

// inheritedFinding says what the Service parents' own annotations add to
// the finding fd of a rule whose route sets no retry policy or no timeout
// (fromServices): a retry feature with the Service's retry policy, a
// timeout feature with its retry timeout or timeouts, is not honoured.
func inheritedFinding(p rulePlan, fd translate.Finding) translate.Finding {
	retry, timers := routeSets(p)
	var hit []inherited
	for _, x := range fromServices(p.rule.MeshParents, retry, timers) {
		switch f := fd.Feature; {
		case f.IsRetry() && x.retry != nil,
			// A Service's retry.linkerd.io/timeout cuts every try, so
			// a stalled request also ends, after the last.
			(f == translate.FeatureBackendRequestTimeout || f == translate.FeatureRetryBackendTimeout || f == translate.FeatureRequestTimeout) && (x.retry != nil && x.retry.timeout != 0 || x.timers.set()):
			hit = append(hit, x)
		}
	}
	if len(hit) == 0 {
		return fd
	}
	if st := fd.Decision.Status(); st == translate.Honoured || st == translate.Approximated {
		var services, keys []string
		for _, x := range hit {
			services = append(services, x.parent.String())
			for _, t := range x.text {
				// The annotations that act on this feature: the
				// retry policy on a retry feature, its try timeout
				// and the timeouts on a timeout feature.
				k, _, _ := strings.Cut(t, " ")
				acts := slices.Contains(retryKeys, k)
				if !fd.Feature.IsRetry() {
					acts = k == annRetryTimeout || slices.Contains(timeoutKeys, k)
				}
				if acts && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		slices.Sort(keys)
		fd.AddCaveats(report.NewCaveat(report.CaveatServiceAnnotationsApply, "services", strings.Join(services, ", "), "annotations", strings.Join(keys, ", ")))
	}
	fd.Message = joinMessage(fd.Message, fmt.Sprintf("but Linkerd also applies %s to this rule: its policy controller gives a rule whose route sets no retry annotation the Service's retry policy, and a rule with no timeout at all (no timeout.linkerd.io/request, response or idle on the route, no non-zero timeouts.request it reads) the Service's timeouts (convert_outbound_route in policy-controller/grpc/src/outbound/http.rs)", describe(hit)))
	return fd
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

func filterFinding(p rulePlan, f translate.Feature) translate.Finding {
	r := p.rule
	switch f {
	case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier, translate.FeatureRequestRedirect:
		return translate.Decided(r, f, report.Decide(report.ReasonConfigured).Set(filterName(f)+" filter"), "the route is written back with the filter, which Linkerd applies")
	}
	if isBackendRefFeature(f) {
		base := translate.Feature(f[len("backendRefs."):])
		switch base {
		case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier:
			d := report.Decide(report.ReasonConfigured).Set("backendRef " + filterName(base) + " filter").With(report.NewCaveat(report.CaveatNotCheckedByJudge))
			return translate.Decided(r, f, d, "the route is written back with the filter, which Linkerd applies to the requests sent to that backend; gwretry's judge does not read backendRef filters back, so it does not claim more")
		}
		return translate.Decided(r, f, report.Decide(report.ReasonBackendFilterInvalidatesBackend, "filter", filterName(base)), "Linkerd does not support the %s filter on a backendRef: it treats that backend as invalid and fails its share of the requests", filterName(base))
	}
	// Rule-level filters Linkerd refuses make the rule rejected; this is
	// not reached for them.
	return translate.Decided(r, f, report.Decide(report.ReasonNotExpressible), "Linkerd does not support the %s filter", filterName(f))
}

func retryFinding(p rulePlan, f translate.Feature) translate.Finding {
	r := p.rule
	decided := func(d report.Decision, format string, args ...any) translate.Finding {
		return translate.Decided(r, f, d, format, args...)
	}
	// set is the decision that annotation key is written with its value.
	set := func(key string) report.Decision {
		return report.Decide(report.ReasonConfigured).Set(key + " " + p.ann[key])
	}
	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	be, req := r.Timeouts.BackendRequest, r.Timeouts.Request
	const body = "Linkerd never retries a request whose body is larger than 64 KiB"
	bodyLimit := translate.ByteSize(maxRetriedBody)
	// retried are the caveats of every retry the policy makes: the
	// body limit, and the clamp of the limit.
	retried := []report.Caveat{report.NewCaveat(report.CaveatBodyBufferLimit, "limit", bodyLimit)}
	if f.IsRetry() && attempts == 0 {
		return decided(report.Decide(report.ReasonRetriesDisabled), "attempts is 0: no retry annotation is written, so Linkerd does not retry (unless the Service itself has retry annotations or a ServiceProfile)")
	}
	limit := fmt.Sprintf("%s %q", annRetryLimit, p.ann[annRetryLimit])
	if p.clamped {
		limit += fmt.Sprintf(" (attempts %d is more than Linkerd's largest limit, %d)", attempts, maxLimit)
		retried = append(retried, report.NewCaveat(report.CaveatAttemptsClamped, "configured", p.ann[annRetryLimit], "max", fmt.Sprint(maxLimit)))
	}
	switch f {
	case translate.FeatureRetryAttempts:
		if !retries(r) {
			return decided(report.Decide(report.ReasonConnectionFailuresNotRetryable), "the rule retries only on connection failures, which Linkerd cannot be configured to retry, so no retry annotation is written")
		}
		d := set(annRetryLimit).With(retried...).With(report.NewCaveat(report.CaveatConnectionFailuresNotRetried))
		return decided(d, "%s retries up to that many times on the listed codes and cut tries; %s, and has no setting to retry connection failures", limit, body)
	case translate.FeatureRetryCodes:
		return decided(set(annRetryHTTP).With(retried...), "%s %q with %s; %s", annRetryHTTP, p.ann[annRetryHTTP], limit, body)
	case translate.FeatureRetryConnectionErrors:
		return decided(report.Decide(report.ReasonConnectionFailuresNotRetryable), "Linkerd has no setting to retry connection failures (refused, reset, closed)")
	case translate.FeatureRetryBackoff:
		return decided(report.Decide(report.ReasonFixedBackoff, "min", "25ms", "max", "250ms"), "Linkerd has no backoff setting: its proxy waits by its own fixed exponential backoff (25 ms to 250 ms, jittered), whatever backoff is (%s)", r.Retry.Backoff.Text)
	case translate.FeatureRetryBackendTimeout:
		if be.IsZero() {
			return decided(report.Decide(report.ReasonTimeoutDisabled), "backendRequest is 0s: no try is cut")
		}
		return decided(set(annRetryTimeout).With(retried...), "%s %q cuts each try and retries it (%s); %s", annRetryTimeout, p.ann[annRetryTimeout], limit, body)
	case translate.FeatureBackendRequestTimeout:
		switch {
		case be.IsZero():
			return decided(report.Decide(report.ReasonTimeoutDisabled), "backendRequest is 0s: no try is cut")
		case retries(r):
			d := set(annRetryTimeout).With(report.NewCaveat(report.CaveatTryTimerSkipsLargeBodies, "limit", bodyLimit))
			return decided(d, "%s %q cuts each try, but it is part of Linkerd's retry policy, which does not take requests whose body is larger than 64 KiB: gwretry does not know such a request's try to be cut", annRetryTimeout, p.ann[annRetryTimeout])
		}
		d := set(annResponseTimeout).With(report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders))
		return decided(d, "%s %q waits for the response headers only, not for the whole response: retry.linkerd.io/timeout would be a total per try but always comes with a retry policy, which the rule does not ask for", annResponseTimeout, p.ann[annResponseTimeout])
	case translate.FeatureRequestTimeout:
		switch {
		case req.IsZero():
			return decided(report.Decide(report.ReasonTimeoutDisabled), "request is 0s: Linkerd sets no request timeout")
		case p.ann[annRequestTimeout] != "":
			return decided(set(annRequestTimeout), "%s %q (Linkerd does not read timeouts.request from this route itself, or not as written)", annRequestTimeout, p.ann[annRequestTimeout])
		}
		return decided(report.Decide(report.ReasonConfigured).Set("timeouts.request "+req.Text), "Linkerd reads timeouts.request from the route")
	}
	return decided(report.Decide(report.ReasonNotTranslated), "gwretry does not translate %s for Linkerd", f)
}
