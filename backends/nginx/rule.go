package nginx

import (
	"fmt"
	"slices"
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
	Findings []translate.Finding
	Notes    []translate.Note
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

// planRule maps one rule to nginx directives and findings. A dead rule
// (no backend can receive traffic) gets `return 500` and no upstream; a
// redirect-only rule gets `return CODE LOCATION`. matches are the rule's
// matches (for the prefix of ReplacePrefixMatch); served says on which
// kinds of listener it is served (for a redirect's scheme and port).
func planRule(r *translate.Rule, v version, opts translate.Options, matches ruleMatches, served schemes) rulePlan {
	var p rulePlan
	fp := planFilters(r, v, matches, served)
	p.Maps, p.PortMap, p.Server, p.MirrorUpstreams = fp.Maps, fp.PortMap, fp.Server, fp.Upstreams
	if !r.Forwards() {
		if r.Filters.Redirect != nil {
			p.Location = fp.Location
			p.Findings = noForwardFindings(r, fp, redirectAnswer(r))
			return p
		}
		p.Location = crossplane.Directives{directive("return", "500")}
		p.Maps, p.PortMap = nil, false
		p.Findings = deadFindings(r)
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
		directive("proxy_pass", "http://"+upstreamName(r)),
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
	p.Findings = findings(r, v, attempts, supported, unsupported, p.Upstream, opts, fp)
	return p
}

// filterFinding returns the finding planFilters made for feature f.
func filterFinding(fp filterPlan, f translate.Feature) (translate.Finding, bool) {
	for _, x := range fp.Findings {
		if x.Feature == f {
			return x, true
		}
	}
	return translate.Finding{}, false
}

// redirectAnswer says what nginx does with every request of a redirect-only
// rule.
func redirectAnswer(r *translate.Rule) string {
	return fmt.Sprintf("nginx answers with the redirect (%s)", r.Filters.Redirect)
}

// noForwardFindings are the findings of a redirect-only rule: the filters
// planFilters translated, and for the rest what happens instead.
func noForwardFindings(r *translate.Rule, fp filterPlan, answer string) []translate.Finding {
	var fs []translate.Finding
	for _, f := range r.Features() {
		if x, ok := filterFinding(fp, f); ok {
			fs = append(fs, x)
			continue
		}
		if u, ok := translate.UntranslatedFinding(r, f, "nginx", answer); ok {
			fs = append(fs, u)
			continue
		}
		fs = append(fs, translate.DeadRuleFinding(r, f, answer))
	}
	return fs
}

// deadFindings are the findings of a dead rule: nginx answers 500 itself,
// which is what the Gateway API asks, and nothing else takes effect.
func deadFindings(r *translate.Rule) []translate.Finding {
	var fs []translate.Finding
	for _, f := range r.Features() {
		if u, ok := translate.UntranslatedFinding(r, f, "nginx", deadAnswer); ok {
			fs = append(fs, u)
			continue
		}
		if f == translate.FeatureBackendRefs {
			fs = append(fs, translate.Decided(r, f, report.Decide(report.ReasonAnswers500).Set("return 500"),
				"%s: nginx answers 500 itself (return 500) for every request the rule matches", r.DeadReason()))
			continue
		}
		fs = append(fs, translate.DeadRuleFinding(r, f, deadAnswer))
	}
	return fs
}

// deadAnswer says what nginx does with every request of a rule that
// forwards nothing.
const deadAnswer = "nginx answers 500 (return 500)"

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

// findings returns one finding per feature of a rule that has backends.
func findings(r *translate.Rule, v version, attempts int, supported, unsupported []int, up upstreamPlan, opts translate.Options, fp filterPlan) []translate.Finding {
	var fs []translate.Finding
	add := func(f translate.Feature, d report.Decision, format string, args ...any) {
		fs = append(fs, translate.Decided(r, f, d, format, args...))
	}
	retrying := attempts > 0
	t := r.Timeouts
	// Deviations that touch every retry finding: the clamp of attempts
	// and the POST/PATCH/LOCK exemption, each in words and as a caveat.
	var clamp, caveats deviations
	if retrying && r.Retry.Attempts > attempts {
		clamp.add(fmt.Sprintf("only %d of the %d retries are configured (gwretry caps nginx retries at %d: each retry needs one more upstream entry per endpoint)",
			attempts, r.Retry.Attempts, v.MaxRetries),
			report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.Itoa(attempts), "max", strconv.Itoa(v.MaxRetries)))
	}
	caveats.text = append(caveats.text, clamp.text...)
	caveats.cs = append(caveats.cs, clamp.cs...)
	if retrying && r.MatchesNonIdempotent() && !opts.RetryNonIdempotent {
		caveats.add(exemptionText(r), report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", strings.Join(translate.NonIdempotentMethods(), ", ")))
	}
	// caveatedBy adds the deviations to the decision (an honoured one
	// becomes approximated) and appends them to its message.
	caveatedBy := func(dv deviations, f translate.Feature, d report.Decision, msg string) {
		if len(dv.text) == 0 {
			add(f, d, "%s", msg)
			return
		}
		add(f, d.With(dv.cs...), "%s; but %s", msg, strings.Join(dv.text, "; and "))
	}
	caveated := func(f translate.Feature, d report.Decision, msg string) { caveatedBy(caveats, f, d, msg) }
	// interim adds to dv, for the codes finding, that nginx before 1.29
	// takes a backend's 1xx as the final response.
	interim := func(dv deviations) deviations {
		if v.ReadsEarlyHints {
			return dv
		}
		out := deviations{text: slices.Clone(dv.text), cs: slices.Clone(dv.cs)}
		out.add(fmt.Sprintf("nginx %s takes a backend's informational response (1xx, such as 103 Early Hints or 100 Continue) as the final one: "+
			"the client gets it, and a listed code that follows is not retried and reaches the client inside the body (nginx 1.29.0 reads 103 as interim)", v.Name),
			report.NewCaveat(report.CaveatInterimResponseIsFinal, "version", v.Name))
		return out
	}
	configured := report.Decide(report.ReasonConfigured)
	disabled := report.Decide(report.ReasonRetriesDisabled).Set("proxy_next_upstream off")
	for _, f := range r.Features() {
		if x, ok := filterFinding(fp, f); ok {
			fs = append(fs, x)
			continue
		}
		if u, ok := translate.UntranslatedFinding(r, f, "nginx", deadAnswer); ok {
			fs = append(fs, u)
			continue
		}
		switch f {
		case translate.FeatureBackendRefs:
			share, total := invalidShare(r)
			add(f, configured.Set("upstream "+upstreamName(r)).With(report.NewCaveat(report.CaveatInvalidShareToValidBackends,
				"share", strconv.Itoa(share), "total", strconv.Itoa(total))), "%s", invalidShareText(r))
		case translate.FeatureRetryAttempts:
			if !retrying {
				add(f, disabled, "attempts is 0: proxy_next_upstream off, nothing is retried")
				continue
			}
			msg := fmt.Sprintf("proxy_next_upstream_tries %d (first try + %d retries); nginx never retries an upstream entry already tried, "+
				"so each endpoint is listed %d times with max_fails=0: retries may go to the same endpoint%s, and passive health checks are off for this rule's upstream",
				attempts+1, attempts, up.Repeat, otherBackends(r))
			if s := nonIdempotentText(r, opts); s != "" {
				msg += "; " + s
			}
			caveated(f, configured.Set(fmt.Sprintf("proxy_next_upstream_tries %d", attempts+1)), msg)
		case translate.FeatureRetryCodes:
			next := "proxy_next_upstream http_" + strings.ReplaceAll(codeList(supported), ", ", " http_")
			switch {
			case !retrying:
				add(f, disabled, "attempts is 0: no code is retried")
			case len(unsupported) == 0:
				caveatedBy(interim(caveats), f, configured.Set(next), next)
			case len(supported) == 0:
				add(f, report.Decide(report.ReasonCodesNotRetryable, "codes", codeList(unsupported)), "nginx cannot retry %s (it retries only 403, 404, 429, 500, 502, 503 and 504): these responses are returned as they are; use a code nginx can retry or another data plane",
					codeList(unsupported))
			default:
				caveatedBy(interim(caveats), f, configured.Set(next).With(report.NewCaveat(report.CaveatCodesNotRetried, "codes", codeList(unsupported))),
					fmt.Sprintf("nginx retries %s but cannot retry %s (it retries only 403, 404, 429, 500, 502, 503 and 504): those responses are returned as they are",
						codeList(supported), codeList(unsupported)))
			}
		case translate.FeatureRetryConnectionErrors:
			if !retrying {
				add(f, disabled, "attempts is 0: connection errors are not retried")
			} else {
				caveated(f, configured.Set("proxy_next_upstream error timeout invalid_header"), "proxy_next_upstream error timeout invalid_header: refused, reset and timed-out connections and responses with an invalid or too large header are retried, as long as no response byte has reached the client; a reply without a valid HTTP/1.x status line (a server that does not speak HTTP/1.x) is not: nginx passes it to the client as an HTTP/0.9 response"+framingText(v))
			}
		case translate.FeatureRetryBackoff:
			if !retrying {
				add(f, disabled, "attempts is 0: there is no retry to delay")
			} else {
				add(f, report.Decide(report.ReasonNoBackoff), "nginx has no delay between tries; retries are immediate. Remove backoff, or use a data plane with backoff (Envoy, Traefik)")
			}
		case translate.FeatureRetryBackendTimeout:
			switch {
			case t.BackendRequest.IsZero():
				// No try is cut, so the method exemption does not matter;
				// the clamp still limits the retries of other failures.
				caveatedBy(clamp, f, report.Decide(report.ReasonTimeoutDisabled).Set(timersFact(noTimeout)),
					fmt.Sprintf("backendRequest is 0s: no try is cut (proxy timers set to %s, longer than any Gateway API duration)", noTimeout))
			case !retrying:
				add(f, disabled.Set(timersFact(nginxDuration(t.BackendRequest))).With(tryCutCaveats(t.BackendRequest)...),
					"attempts is 0, so a try cut by the %s timers is not retried: cut before the response headers arrive it answers 504; cut after them it answers no 504: %s; %s",
					nginxDuration(t.BackendRequest), cutAfterHeaders, idleText(t.BackendRequest))
			default:
				caveated(f, configured.Set("proxy_next_upstream timeout, "+timersFact(nginxDuration(t.BackendRequest))).With(tryCutCaveats(t.BackendRequest)...),
					fmt.Sprintf("a try cut by the %s timers before the response headers arrive is retried (timeout in proxy_next_upstream); one cut after them is neither retried nor answered with 504: %s; %s",
						nginxDuration(t.BackendRequest), cutAfterHeaders, idleText(t.BackendRequest)))
			}
		case translate.FeatureBackendRequestTimeout:
			if t.BackendRequest.IsZero() {
				add(f, report.Decide(report.ReasonTimeoutDisabled).Set(timersFact(noTimeout)),
					"backendRequest is 0s: proxy_connect/send/read_timeout set to %s, longer than any Gateway API duration (nginx cannot turn them off)", noTimeout)
			} else {
				arg := nginxDuration(t.BackendRequest)
				add(f, configured.Set(timersFact(arg)).With(append(tryCutCaveats(t.BackendRequest), upgradedCaveat(arg))...),
					"proxy_connect_timeout, proxy_send_timeout and proxy_read_timeout %s; %s; a try cut by them before the response headers arrive answers 504 (unless it is retried); one cut after them answers no 504: %s; %s",
					arg, idleText(t.BackendRequest), cutAfterHeaders, upgradedText(arg))
			}
		case translate.FeatureRequestTimeout:
			add(f, requestDecision(t, retrying), "%s", requestText(t, retrying))
		}
	}
	return fs
}

// deviations are ways a rule's retries differ from the Gateway API's, in
// words for the message and as caveats for the decision.
type deviations struct {
	text []string
	cs   []report.Caveat
}

func (d *deviations) add(text string, c report.Caveat) {
	d.text = append(d.text, text)
	d.cs = append(d.cs, c)
}

// timersFact is the configured fact of the three proxy timers set to arg.
func timersFact(arg string) string { return "proxy_connect/send/read_timeout " + arg }

// tryCutCaveats are the caveats of a try bounded by the proxy timers set
// to d: idle timers (idleCaveats) that, once the response headers have
// been sent, cut the try without an answer.
func tryCutCaveats(d *translate.Duration) []report.Caveat {
	return append(idleCaveats(d), report.NewCaveat(report.CaveatNoAnswerAfterHeaders))
}

// framingText is what the connectionErrors finding adds for a version
// that does not check the framing headers of a backend's response.
func framingText(v version) string {
	if v.ChecksResponseFraming {
		return ""
	}
	return fmt.Sprintf("; nor is a response whose framing nginx %s does not check (two Content-Length lines, a Content-Length it cannot parse, "+
		"both Content-Length and Transfer-Encoding, a Transfer-Encoding other than chunked): it reaches the client as the backend sent it "+
		"(nginx 1.23.0 takes these as invalid headers and retries them)", v.Name)
}

// invalidShareText says where the share of a rule's invalid backendRefs
// goes: nginx cannot answer a weighted share of a location with 500, so it
// goes to the valid backends.
func invalidShareText(r *translate.Rule) string {
	share, total := invalidShare(r)
	var refs []string
	for _, b := range r.Invalid {
		refs = append(refs, fmt.Sprintf("backendRefs[%d] (weight %d: %s)", b.Index, b.Weight, b.Reason))
	}
	return fmt.Sprintf("the Gateway API answers the share of %s, %d of a total weight of %d, with 500; nginx cannot answer a weighted share of a route with 500, so those requests go to the valid backends instead",
		strings.Join(refs, ", "), share, total)
}

// invalidShare is the weight of a rule's invalid backendRefs and the
// total weight of its backendRefs.
func invalidShare(r *translate.Rule) (share, total int) {
	for _, b := range r.Backends {
		total += b.Weight
	}
	return r.InvalidWeight(), total + r.InvalidWeight()
}

// exemptionText names nginx's default exemption of POST, PATCH and LOCK and
// the opt-in that lifts it.
func exemptionText(r *translate.Rule) string {
	which := "the POST, PATCH and LOCK requests this rule matches"
	if r.OnlyNonIdempotent() {
		which = "this rule matches only POST, PATCH or LOCK requests, which"
		return which + " nginx retries only when the connection failed before the request was sent (refused, connect timeout), never on a response code or on a reset or timeout after sending (nginx's default without non_idempotent; --retry-non-idempotent lifts it)"
	}
	return which + " are retried only when the connection failed before the request was sent (refused, connect timeout), never on a response code or on a reset or timeout after sending (nginx's default without non_idempotent; --retry-non-idempotent lifts it)"
}

// requestDecision: a disabled request timeout is honoured (nothing ends
// the whole request); any other is approximated, as nothing bounds the
// whole request (requestText says what bounds it instead).
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

func requestText(t translate.Timeouts, retrying bool) string {
	if t.Request.IsZero() {
		if t.BackendRequest == nil {
			return fmt.Sprintf("request is 0s: no request timeout (proxy timers set to %s)", noTimeout)
		}
		return "request is 0s: nginx has no request timeout"
	}
	d := nginxDuration(t.Request)
	parts := []string{"nginx has no total request timeout (nginx/nginx#1262)"}
	if retrying {
		parts = append(parts, fmt.Sprintf("proxy_next_upstream_timeout %s stops new retries once %s have passed, but a try started before runs past it and no 504 is sent at the deadline", d, d))
	}
	if t.BackendRequest == nil {
		parts = append(parts, fmt.Sprintf("the proxy connect/send/read timers are set to %s, so a backend silent for %s before its response headers gets a 504; one silent that long after them gets no 504: %s; a response that keeps arriving is never cut", d, d, cutAfterHeaders), upgradedText(d))
	} else if t.BackendRequest.IsZero() {
		parts = append(parts, "and tries are not bounded either (backendRequest is 0s)")
	} else {
		parts = append(parts, "only the backendRequest idle timers bound each try")
	}
	return strings.Join(parts, "; ")
}

// cutAfterHeaders says what a try cut by the proxy timers after the
// response headers arrived gives the client: nginx has already sent the
// status line and headers, so it can neither retry nor answer 504 (proven
// live by TestLiveCutAfterHeaders).
const cutAfterHeaders = "the client gets the status and headers already sent and a truncated body, then nginx closes the connection"

// upgradedCaveat is the caveat upgradedText says in words.
func upgradedCaveat(arg string) report.Caveat {
	return report.NewCaveat(report.CaveatUpgradedConnectionIdle, "timeout", arg)
}

// upgradedText says what the proxy timers set to arg do to an upgraded
// connection (ngx_http_upstream_process_upgraded; proven live by
// TestLivePassThrough): every event, either way, re-arms the wait for the
// backend's next bytes with proxy_read_timeout, and proxy_send_timeout
// times only a write to the backend that blocks.
func upgradedText(arg string) string {
	return fmt.Sprintf("an upgraded (WebSocket) connection of the rule is timed by the same proxy_read_timeout: nginx closes it once no data has passed either way for %s (proxy_send_timeout times a write to the backend that blocks, send_timeout one to the client)", arg)
}

// idleCaveats are the caveats idleText says in words.
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

func idleText(d *translate.Duration) string {
	s := "they are idle timers per try (connect, between two writes, between two reads), not a total: a backend that keeps sending is usually not cut (nginx does not re-arm a timer for reads less than 300ms apart, so a body trickling in faster than that can be cut at the timeout)"
	if d.Value > osConnectLimit {
		s += "; the operating system usually ends a connect attempt after about 75s"
	}
	return s
}

func otherBackends(r *translate.Rule) string {
	if len(r.Backends) > 1 {
		return " or, by weight, to another backend"
	}
	return ""
}

func nonIdempotentText(r *translate.Rule, opts translate.Options) string {
	switch {
	case !r.MatchesNonIdempotent():
		return "the rule matches no POST, PATCH or LOCK request"
	case opts.RetryNonIdempotent:
		return "POST, PATCH and LOCK requests are retried too (non_idempotent, --retry-non-idempotent), with bodies of any size: nginx reads the whole request body before the first try (proxy_request_buffering on) and sends it again"
	}
	return "" // the exemption is a caveat of the finding

}
