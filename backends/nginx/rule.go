package nginx

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// maxAttempts is the retry cap of every version (version.MaxRetries).
const maxAttempts = 100

// noTimeout is what gwretry writes for a timeout set to "0s" (disabled):
// nginx cannot turn its proxy timers off, so they get a value longer than
// any GEP-2257 duration (translate.MaxDuration is 99999h59m59.999s), which
// never fires within that range. nginx keeps it as 360000000000 ms in a
// 64-bit ngx_msec_t; epoll_wait gets the remaining time truncated to an
// int, which only wakes the event loop early, and an early wake-up never
// expires a timer before its key.
const noTimeout = "100000h"

// rulePlan is everything gwretry writes and reports for one rule.
type rulePlan struct {
	Upstream upstreamPlan
	// Location is the body of the rule's named location.
	Location crossplane.Directives
	// Decisions decide the rule's features; Assess asks them once the
	// rule's routing and TLS are known (planConfig).
	Decisions translate.Decisions
	Notes     []translate.Note
	// Maps are the rule's http-level maps (filters); PortMap says it
	// needs the shared redirect port map.
	Maps    crossplane.Directives
	PortMap bool
	// Server are the locations every server that routes to the rule
	// needs beside its named location (mirror targets).
	Server crossplane.Directives
	// MirrorUpstreams are the upstream blocks of its mirror backends.
	MirrorUpstreams crossplane.Directives
}

// planRule maps one rule to nginx directives and the decisions of its
// features (Decisions, for translate.Assess once routing is known). A dead
// rule (no backend can receive traffic) gets `return 500` and no upstream;
// a redirect-only rule gets `return CODE LOCATION`. matches are the rule's
// matches (for the prefix of ReplacePrefixMatch); served says on which
// kinds of listener it is served (for a redirect's scheme and port).
func planRule(r *translate.Rule, v version, opts translate.Options, matches ruleMatches, served schemes) rulePlan {
	var p rulePlan
	fp := planFilters(r, v, matches, served)
	p.Maps, p.PortMap, p.Server, p.MirrorUpstreams = fp.Maps, fp.PortMap, fp.Server, fp.Upstreams
	if !r.Forwards() {
		if r.Filters.Redirect != nil {
			// The filters planFilters translated; every other feature
			// never takes effect (backendRefs included: the redirect
			// answers every request).
			p.Location = fp.Location
			p.Decisions = translate.Decisions{Written: fp.written(), Feature: func(translate.Feature) report.Decision {
				return report.Decide(report.ReasonRuleForwardsNothing)
			}}
			return p
		}
		// nginx answers 500 itself, which is what the Gateway API asks,
		// and nothing else takes effect: no filter is written.
		p.Location = crossplane.Directives{directive("return", "500")}
		p.Maps, p.PortMap = nil, false
		p.Decisions = translate.Decisions{Feature: func(translate.Feature) report.Decision {
			return report.Decide(report.ReasonAnswers500).Set("return 500")
		}}
		p.Notes = append(p.Notes, translate.Warning(translate.RuleObject(r), "%s, so nginx answers every request it matches with 500", r.DeadReason()))
		return p
	}
	attempts := 0
	if r.Retry != nil {
		attempts = min(r.Retry.Attempts, v.MaxRetries)
	}
	retrying := attempts > 0
	p.Upstream = planUpstream(r, attempts+1)

	supported, unsupported := r.Retry.SplitCodes(v.RetryCodes)

	loc := crossplane.Directives{
		directive("proxy_pass", "http://"+upstreamName(r)+fp.PassURI),
		directive("proxy_http_version", "1.1"),
	}
	loc = append(loc, fp.Headers...)
	loc = append(loc, fp.Pass...)
	if retrying {
		next := []string{"error", "timeout", "invalid_header"}
		for _, c := range supported {
			next = append(next, "http_"+strconv.Itoa(c))
		}
		if opts.RetryNonIdempotent {
			next = append(next, "non_idempotent")
		}
		loc = append(loc,
			directive("proxy_next_upstream", next...),
			directive("proxy_next_upstream_tries", strconv.Itoa(attempts+1)))
	} else {
		// nginx retries errors and timeouts on another peer by default.
		loc = append(loc, directive("proxy_next_upstream", "off"))
	}
	t := r.Timeouts
	if retrying && t.Request != nil && !t.Request.IsZero() {
		loc = append(loc, directive("proxy_next_upstream_timeout", nginxDuration(t.Request)))
	}
	if timer := tryTimer(t); timer != "" {
		loc = append(loc,
			directive("proxy_connect_timeout", timer),
			directive("proxy_send_timeout", timer),
			directive("proxy_read_timeout", timer))
	}
	p.Location = append(loc, fp.Location...)
	rd := forwardDecisions{r: r, v: v, attempts: attempts, supported: supported, unsupported: unsupported, opts: opts}
	p.Decisions = translate.Decisions{Written: fp.written(), Feature: rd.decide}
	return p
}

// tryTimer returns the value of the per-try idle timers, or "" to keep
// nginx's defaults (60s). backendRequest sets them; without it a request
// timeout bounds them too, since nothing else can.
func tryTimer(t translate.Timeouts) string {
	switch {
	case t.BackendRequest != nil:
		return nginxDuration(t.BackendRequest)
	case t.Request != nil:
		return nginxDuration(t.Request)
	}
	return ""
}

// nginxDuration writes d in milliseconds, which every nginx time parameter
// accepts; "0s" (disabled) becomes noTimeout.
func nginxDuration(d *translate.Duration) string {
	if d.IsZero() {
		return noTimeout
	}
	return strconv.FormatInt(d.Value.Milliseconds(), 10) + "ms"
}

func upstreamName(r *translate.Rule) string { return r.Name }

func codeList(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}

// forwardDecisions decides the backendRefs, retry and timeout features of a
// rule that forwards, from what planRule wrote.
type forwardDecisions struct {
	r                      *translate.Rule
	v                      version
	attempts               int
	supported, unsupported []int
	opts                   translate.Options
}

// clamp is the caveat of attempts above the version's cap, if any.
func (x forwardDecisions) clamp() []report.Caveat {
	if x.attempts > 0 && x.r.Retry.Attempts > x.attempts {
		return []report.Caveat{report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.Itoa(x.attempts), "max", strconv.Itoa(x.v.MaxRetries))}
	}
	return nil
}

// retryCaveats touch every retry finding: the clamp of attempts and the
// exemption of POST, PATCH and LOCK (nginx's default without
// non_idempotent; --retry-non-idempotent lifts it).
func (x forwardDecisions) retryCaveats() []report.Caveat {
	cs := x.clamp()
	if x.attempts > 0 && x.r.MatchesNonIdempotent() && !x.opts.RetryNonIdempotent {
		cs = append(cs, report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", strings.Join(translate.NonIdempotentMethods(), ", ")))
	}
	return cs
}

// interim is the caveat of the codes finding on nginx before 1.29, which
// takes a backend's 1xx as the final response (TestLiveInterimResponse).
func (x forwardDecisions) interim() []report.Caveat {
	if x.v.ReadsEarlyHints {
		return nil
	}
	return []report.Caveat{report.NewCaveat(report.CaveatInterimResponseIsFinal, "version", x.v.Name)}
}

// framing is the caveat of the connectionErrors finding on a version that
// does not check the framing headers of a backend's response: a malformed
// one reaches the client unretried (TestLiveResponseFraming).
func (x forwardDecisions) framing() []report.Caveat {
	if x.v.ChecksResponseFraming {
		return nil
	}
	return []report.Caveat{report.NewCaveat(report.CaveatResponseFramingNotChecked, "version", x.v.Name, "fixedIn", "1.23.0")}
}

// decide is the decision of feature f.
func (x forwardDecisions) decide(f translate.Feature) report.Decision {
	r, t := x.r, x.r.Timeouts
	retrying := x.attempts > 0
	configured := report.Decide(report.ReasonConfigured)
	disabled := report.Decide(report.ReasonRetriesDisabled).Set("proxy_next_upstream off")
	switch f {
	case translate.FeatureBackendRefs:
		// nginx cannot answer a weighted share of a location with 500:
		// the invalid backendRefs' share goes to the valid ones.
		share, total := invalidShare(r)
		return configured.Set("upstream " + upstreamName(r)).With(report.NewCaveat(report.CaveatInvalidShareToValidBackends,
			"share", strconv.Itoa(share), "total", strconv.Itoa(total)))
	case translate.FeatureRetryAttempts:
		if !retrying {
			return disabled
		}
		return configured.Set(fmt.Sprintf("proxy_next_upstream_tries %d", x.attempts+1)).With(x.retryCaveats()...)
	case translate.FeatureRetryCodes:
		next := "proxy_next_upstream http_" + strings.ReplaceAll(codeList(x.supported), ", ", " http_")
		switch {
		case !retrying:
			return disabled
		case len(x.unsupported) == 0:
			return configured.Set(next).With(x.retryCaveats()...).With(x.interim()...)
		case len(x.supported) == 0:
			return report.Decide(report.ReasonCodesNotRetryable, "codes", codeList(x.unsupported))
		}
		return configured.Set(next).With(report.NewCaveat(report.CaveatCodesNotRetried, "codes", codeList(x.unsupported))).
			With(x.retryCaveats()...).With(x.interim()...)
	case translate.FeatureRetryConnectionErrors:
		if !retrying {
			return disabled
		}
		return configured.Set("proxy_next_upstream error timeout invalid_header").With(x.retryCaveats()...).With(x.framing()...)
	case translate.FeatureRetryBackoff:
		if !retrying {
			return disabled
		}
		return report.Decide(report.ReasonNoBackoff)
	case translate.FeatureRetryBackendTimeout:
		switch {
		case t.BackendRequest.IsZero():
			// No try is cut, so the method exemption does not matter;
			// the clamp still limits the retries of other failures.
			return report.Decide(report.ReasonTimeoutDisabled).Set(timersFact(noTimeout)).With(x.clamp()...)
		case !retrying:
			return disabled.Set(timersFact(nginxDuration(t.BackendRequest))).With(tryCutCaveats(t.BackendRequest)...)
		}
		return configured.Set("proxy_next_upstream timeout, " + timersFact(nginxDuration(t.BackendRequest))).
			With(tryCutCaveats(t.BackendRequest)...).With(x.retryCaveats()...)
	case translate.FeatureBackendRequestTimeout:
		if t.BackendRequest.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled).Set(timersFact(noTimeout))
		}
		arg := nginxDuration(t.BackendRequest)
		return configured.Set(timersFact(arg)).With(append(tryCutCaveats(t.BackendRequest), upgradedCaveat(arg))...)
	case translate.FeatureRequestTimeout:
		return requestDecision(t, retrying)
	}
	return report.Decide(report.ReasonNotTranslated)
}

// timersFact is the configured fact of the three proxy timers set to arg.
func timersFact(arg string) string { return "proxy_connect/send/read_timeout " + arg }

// tryCutCaveats are the caveats of a try bounded by the proxy timers set
// to d: idle timers (idleCaveats) that, once the response headers have
// been sent, cut the try without an answer: the client gets the status
// and headers already sent and a truncated body (TestLiveCutAfterHeaders).
func tryCutCaveats(d *translate.Duration) []report.Caveat {
	return append(idleCaveats(d), report.NewCaveat(report.CaveatNoAnswerAfterHeaders))
}

// invalidShare is the weight of a rule's invalid backendRefs and the
// total weight of its backendRefs.
func invalidShare(r *translate.Rule) (share, total int) {
	for _, b := range r.Backends {
		total += b.Weight
	}
	return r.InvalidWeight(), total + r.InvalidWeight()
}

// requestDecision: a disabled request timeout is honoured (nothing ends
// the whole request); any other is approximated, as nothing bounds the
// whole request (nginx/nginx#1262): proxy_next_upstream_timeout only stops
// new retries, and without backendRequest the proxy timers, set to the
// request timeout, bound each try.
func requestDecision(t translate.Timeouts, retrying bool) report.Decision {
	if t.Request.IsZero() {
		d := report.Decide(report.ReasonTimeoutDisabled)
		if t.BackendRequest == nil {
			d = d.Set(timersFact(noTimeout))
		}
		return d
	}
	arg := nginxDuration(t.Request)
	var facts []string
	cs := []report.Caveat{report.NewCaveat(report.CaveatNoTotalRequestTimeout)}
	if retrying {
		facts = append(facts, "proxy_next_upstream_timeout "+arg)
	}
	if t.BackendRequest == nil {
		facts = append(facts, timersFact(arg))
		cs = append(cs, report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoAnswerAfterHeaders), upgradedCaveat(arg))
	}
	return report.Decide(report.ReasonConfigured).Set(strings.Join(facts, ", ")).With(cs...)
}

// upgradedCaveat: the proxy timers set to arg also time an upgraded
// (WebSocket) connection of the rule (ngx_http_upstream_process_upgraded;
// proven live by TestLivePassThrough): every event, either way, re-arms
// the wait for the backend's next bytes with proxy_read_timeout.
func upgradedCaveat(arg string) report.Caveat {
	return report.NewCaveat(report.CaveatUpgradedConnectionIdle, "timeout", arg)
}

// idleCaveats: the proxy timers are idle timers per try (connect, between
// two writes, between two reads), not a total; nginx does not re-arm a
// timer for reads less than 300ms apart; and the operating system usually
// ends a connect attempt after about 75s.
func idleCaveats(d *translate.Duration) []report.Caveat {
	cs := []report.Caveat{report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatIdleTimerNotRearmed, "interval", "300ms")}
	if d.Value > osConnectLimit {
		cs = append(cs, report.NewCaveat(report.CaveatOSConnectLimit, "limit", "75s"))
	}
	return cs
}

// osConnectLimit is about when the operating system usually ends a
// connect attempt.
const osConnectLimit = 75 * time.Second
