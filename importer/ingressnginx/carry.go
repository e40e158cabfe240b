package ingressnginx

import (
	"fmt"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
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
				f.Reason = ReasonOtherIngressServes
				f.Message = fmt.Sprintf("ingress-nginx served this host and path with the settings of Ingress %s (%s), and so does the rule: this Ingress's value (%s) is not carried: the rule has %s", owner.key, orderRule, ig.s.values[name].raw, owner.s.values[name].raw)
			}
			res.Report.Findings = append(res.Report.Findings, f)
		}
	}
}

// findings says, setting by setting, what the plan carries of s.
func findings(s *settings, p plan) []Finding {
	var out []Finding
	add := func(name string, r Reason, format string, args ...any) {
		v := s.values[name]
		ann := Prefix + name
		if name == RetryNonIdempotent {
			ann = "configmap:" + name
		}
		out = append(out, Finding{Annotation: ann, Source: v.source, Value: v.raw, Reason: r, Message: fmt.Sprintf(format, args...)})
	}
	r, msg := nextUpstreamFinding(s, p)
	add(NextUpstream, r, "%s", msg)
	r, msg = triesFinding(s, p)
	add(NextUpstreamTries, r, "%s", msg)
	switch {
	case s.nextTimeout == 0:
		add(NextUpstreamTimeout, ReasonNoLimit, "0 is no limit: timeouts.request is not set")
	case p.attempts == 0:
		add(NextUpstreamTimeout, ReasonNothingRetried, "nothing is retried, so there is nothing to limit: timeouts.request is not set")
	case p.request > 0:
		add(NextUpstreamTimeout, ReasonRequestTimeoutEndsAll, "timeouts.request %s: ingress-nginx stopped starting new tries after %s but let the try in flight run on (up to proxy-read-timeout of silence); timeouts.request ends the whole request at %s with 504, retries included",
			seconds(p.request), seconds(p.request), seconds(p.request))
	default:
		add(NextUpstreamTimeout, ReasonRetryWindowDropped, "timeouts.request is not set: it must be at least timeouts.backendRequest (%s, from proxy-read-timeout), and %s would cut tries that ingress-nginx let run; retries are bounded by retry.attempts only",
			seconds(p.backendRequest), seconds(s.nextTimeout))
	}
	add(ConnectTimeout, ReasonNoConnectTimeout, "the Gateway API has no connect timeout: the data plane's own applies; a connection that fails is retried as a connection error when the rule retries")
	add(ReadTimeout, ReasonIdleTimerBecomesTotal, "timeouts.backendRequest %s: ingress-nginx cut a try after %s of silence between two reads from the backend; backendRequest cuts a try %s after it starts, however much the backend is sending, so a response that takes longer in total is cut (504)",
		seconds(p.backendRequest), seconds(s.read), seconds(p.backendRequest))
	add(SendTimeout, ReasonNoSendTimeout, "the Gateway API has no timer on sending the request: timeouts.backendRequest (%s, from proxy-read-timeout) bounds the whole try, sending included", seconds(p.backendRequest))
	if v, ok := s.values[RetryNonIdempotent]; ok && v.source == FromConfigMap {
		if s.nonIdempotent && p.attempts > 0 {
			add(RetryNonIdempotent, ReasonSeeNextUpstream, "ingress-nginx adds non_idempotent to proxy-next-upstream: see proxy-next-upstream")
		} else {
			add(RetryNonIdempotent, ReasonSeeNextUpstream, "POST, LOCK and PATCH are not retried once sent: see proxy-next-upstream")
		}
	}
	return out
}

func nextUpstreamFinding(s *settings, p plan) (Reason, string) {
	switch {
	case s.has("off"):
		msg := "off: retry.attempts 0, nothing is retried"
		if len(s.tokens) > 1 {
			msg += " (with off, nginx ignores the other conditions)"
		}
		return ReasonRetriesOff, msg
	case !s.retries():
		return ReasonNothingRetried, "no retry condition (error, timeout, invalid_header or http_NNN): retry.attempts 0, nothing is retried"
	case p.attempts == 0:
		return ReasonNothingRetried, "proxy-next-upstream-tries 1 allows no retry: retry.attempts 0"
	}
	var carried, changed []string
	if codes := p.codes; len(codes) > 0 {
		var cs []string
		for _, c := range codes {
			cs = append(cs, strconv.Itoa(c))
		}
		carried = append(carried, "http_"+strings.Join(cs, " http_")+" as retry.codes ["+strings.Join(cs, ", ")+"]")
	}
	if s.has("error") {
		carried = append(carried, "error as the connection errors a retry stanza retries")
	} else {
		changed = append(changed, "without error ingress-nginx did not retry a refused or reset connection; a Gateway API retry stanza retries connection errors")
	}
	if s.has("timeout") {
		carried = append(carried, "timeout as the retry of a try cut by timeouts.backendRequest")
	} else {
		changed = append(changed, "without timeout ingress-nginx did not retry a try that timed out; with timeouts.backendRequest set, a try it cuts is retried")
	}
	if s.has("invalid_header") {
		changed = append(changed, "invalid_header (an empty or invalid response header) has no Gateway API condition: whether such a try is retried is up to the data plane")
	}
	if s.nonIdempotent {
		carried = append(carried, "non_idempotent as the Gateway API's retry of every method (pass --retry-non-idempotent to gwretry translate, whose targets otherwise keep nginx's exemption)")
	} else {
		changed = append(changed, "without non_idempotent ingress-nginx did not retry POST, LOCK and PATCH requests once sent; the Gateway API retries every method (gwretry translate keeps the exemption unless given --retry-non-idempotent, and its report says so)")
	}
	if len(changed) == 0 {
		return ReasonConditionsCarried, "carries " + strings.Join(carried, "; ")
	}
	if len(carried) == 0 {
		return ReasonConditionsChange, "retry.attempts only, no condition maps exactly: " + strings.Join(changed, "; ")
	}
	return ReasonConditionsChange, "carries " + strings.Join(carried, "; ") + "; but " + strings.Join(changed, "; ")
}

func triesFinding(s *settings, p plan) (Reason, string) {
	switch {
	case !s.retries():
		return ReasonNothingRetried, "nothing is retried (proxy-next-upstream): retry.attempts 0"
	case s.tries == 0:
		return ReasonUnlimitedTries, "0 is no limit: ingress-nginx retried until a try succeeded or proxy-next-upstream-timeout ran out; the Gateway API has no unlimited attempts, so retry.attempts is 1 (its default): raise it to the bound you want"
	case s.tries == 1:
		return ReasonNothingRetried, "1 try in all: retry.attempts 0"
	}
	return ReasonTriesCarried, fmt.Sprintf("%d tries in all: retry.attempts %d (attempts counts the retries after the first try); the count does not depend on the number of endpoints: ingress-nginx's Lua balancer asks nginx for one more try each time, and its default round_robin may send a retry to an endpoint already tried", s.tries, p.attempts)
}
