package ingressnginx

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/report"
)

// plan is what a rule carries of its Ingress's settings.
type plan struct {
	attempts int
	codes    []int
	// backendRequest and request are seconds; request 0 is not set.
	backendRequest int
	request        int
}

// retries reports whether proxy-next-upstream lists a condition at all:
// with none of error, timeout, invalid_header or http_NNN nothing is
// retried.
func (s *settings) retries() bool {
	if s.has("off") {
		return false
	}
	for _, t := range s.tokens {
		if t == "error" || t == "timeout" || t == "invalid_header" || strings.HasPrefix(t, "http_") {
			return true
		}
	}
	return false
}

// planFor maps settings to the rule's retry and timeouts.
func planFor(s *settings) plan {
	p := plan{backendRequest: s.read}
	switch {
	case !s.retries(), s.tries == 1:
		p.attempts = 0
	case s.tries == 0:
		p.attempts = 1 // no unlimited attempts in the Gateway API
	default:
		p.attempts = s.tries - 1
	}
	if p.attempts > 0 {
		p.codes = s.codes()
		if s.nextTimeout > 0 && s.nextTimeout >= s.read {
			p.request = s.nextTimeout
		}
	}
	return p
}

// carryInto writes the owner's settings into the rule and records the
// findings of every Ingress whose path the rule serves.
func carryInto(rule *gwv1.HTTPRouteRule, owner *ingress, ings []*ingress, route string, index int, res *Result) {
	p := planFor(owner.s)
	attempts := p.attempts
	rule.Retry = &gwv1.HTTPRouteRetry{Attempts: &attempts}
	for _, c := range p.codes {
		rule.Retry.Codes = append(rule.Retry.Codes, gwv1.HTTPRouteRetryStatusCode(c))
	}
	br := gwv1.Duration(seconds(p.backendRequest))
	rule.Timeouts = &gwv1.HTTPRouteTimeouts{BackendRequest: &br}
	if p.request > 0 {
		rq := gwv1.Duration(seconds(p.request))
		rule.Timeouts.Request = &rq
	}
	for _, ig := range ings {
		for _, f := range findings(ig.s, p) {
			f.Ingress, f.Route, f.Rule = ig.key, route, index
			name := strings.TrimPrefix(strings.TrimPrefix(f.Annotation, Prefix), "configmap:")
			if ig != owner && ig.s.values[name].raw != owner.s.values[name].raw {
				// ingress-nginx served the host and path with the owner's
				// settings, and so does the rule.
				f = f.record(ReasonOtherIngressSettings, "servedBy", owner.key, "ruleValue", owner.s.values[name].raw)
				f.Caveats = nil
			}
			res.Report.Findings = append(res.Report.Findings, f)
		}
	}
}

// findings says, setting by setting, what the plan carries of s.
func findings(s *settings, p plan) []Finding {
	var out []Finding
	add := func(name string, f Finding) {
		v := s.values[name]
		f.Annotation = Prefix + name
		if name == RetryNonIdempotent {
			f.Annotation = "configmap:" + name
		}
		f.Source, f.Value = v.source, v.raw
		out = append(out, f)
	}
	var none Finding
	add(NextUpstream, nextUpstreamFinding(s, p))
	add(NextUpstreamTries, triesFinding(s, p))
	switch {
	case s.nextTimeout == 0:
		add(NextUpstreamTimeout, none.record(ReasonNoLimit))
	case p.attempts == 0:
		add(NextUpstreamTimeout, none.record(ReasonNothingRetried))
	case p.request > 0:
		// ingress-nginx stopped starting new tries after the timeout but
		// let the try in flight run on (up to proxy-read-timeout of
		// silence); timeouts.request ends the whole request with 504.
		add(NextUpstreamTimeout, none.record(ReasonRequestTimeoutEndsAll, "request", seconds(p.request)))
	default:
		// timeouts.request below backendRequest would cut tries that
		// ingress-nginx let run.
		add(NextUpstreamTimeout, none.record(ReasonRetryWindowDropped, "backendRequest", seconds(p.backendRequest)))
	}
	// A connection that fails is retried as a connection error when the
	// rule retries.
	add(ConnectTimeout, none.record(ReasonNoConnectTimeout))
	// ingress-nginx cut a try after that much silence between two reads;
	// backendRequest cuts a try that long after it starts, however much
	// the backend is sending (504).
	add(ReadTimeout, none.record(ReasonIdleTimerBecomesTotal, "backendRequest", seconds(p.backendRequest)))
	add(SendTimeout, none.record(ReasonNoSendTimeout, "backendRequest", seconds(p.backendRequest)))
	if v, ok := s.values[RetryNonIdempotent]; ok && v.source == FromConfigMap {
		// ingress-nginx adds non_idempotent to proxy-next-upstream when
		// true; else POST, LOCK and PATCH are not retried once sent.
		add(RetryNonIdempotent, none.record(ReasonSeeNextUpstream))
	}
	return out
}

// nonIdempotentMethods are the methods nginx does not retry once sent
// without non_idempotent.
const nonIdempotentMethods = "POST, LOCK, PATCH"

func nextUpstreamFinding(s *settings, p plan) Finding {
	var f Finding
	switch {
	case s.has("off"):
		// With off, nginx ignores the other conditions.
		return f.record(ReasonRetriesOff)
	case !s.retries():
		return f.record(ReasonNoRetryCondition)
	case p.attempts == 0:
		// proxy-next-upstream-tries 1 allows no retry.
		return f.record(ReasonNothingRetried)
	}
	cs := make([]string, 0, len(p.codes))
	for _, c := range p.codes {
		cs = append(cs, strconv.Itoa(c))
	}
	codes := strings.Join(cs, ", ")
	// error is the connection errors a retry stanza retries, timeout the
	// retry of a try timeouts.backendRequest cuts, http_NNN retry.codes.
	if s.nonIdempotent {
		// The Gateway API retries every method, as non_idempotent does;
		// gwretry translate keeps nginx's exemption without
		// --retry-non-idempotent.
		f = f.record(ReasonConditionsCarriedAllMethods, "codes", codes)
	} else {
		f = f.record(ReasonConditionsCarried, "codes", codes)
		f.Caveats = append(f.Caveats, report.NewCaveat(CaveatNonIdempotentNotListed, "methods", nonIdempotentMethods))
	}
	if !s.has("error") {
		f.Caveats = append(f.Caveats, report.NewCaveat(CaveatErrorNotListed))
	}
	if !s.has("timeout") {
		f.Caveats = append(f.Caveats, report.NewCaveat(CaveatTimeoutNotListed))
	}
	if s.has("invalid_header") {
		f.Caveats = append(f.Caveats, report.NewCaveat(CaveatInvalidHeaderUnmapped))
	}
	slices.SortFunc(f.Caveats, func(a, b report.Caveat) int { return cmp.Compare(a.Reason, b.Reason) })
	return f
}

func triesFinding(s *settings, p plan) Finding {
	var f Finding
	switch {
	case !s.retries():
		return f.record(ReasonNothingRetried)
	case s.tries == 0:
		// ingress-nginx retried until a try succeeded or
		// proxy-next-upstream-timeout ran out.
		return f.record(ReasonUnlimitedTries)
	case s.tries == 1:
		return f.record(ReasonNothingRetried)
	}
	// The count does not depend on the number of endpoints: ingress-nginx's
	// Lua balancer asks nginx for one more try each time, and its default
	// round_robin may send a retry to an endpoint already tried.
	return f.record(ReasonTriesCarried, "attempts", strconv.Itoa(p.attempts))
}
