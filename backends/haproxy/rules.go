package haproxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
	"github.com/haproxytech/client-native/v5/config-parser/params"
	"github.com/haproxytech/client-native/v5/config-parser/parsers/http/actions"
	"github.com/haproxytech/client-native/v5/config-parser/types"
)

// connectionRetryOn are the retry-on conditions for failed tries: refused
// or failed connections, a server that closes (or resets) without
// answering, and a try cut by timeout server before the response began.
const connectionRetryOn = "conn-failure empty-response response-timeout"

// Buffer sizes that bound L7 retries: HAProxy retries a request on anything
// but a connection failure only when the whole request fits in one buffer
// minus the reserve kept for header rewrites ("Requests not fitting in a
// single buffer will never be retried", haproxy/haproxy#2751). gwretry
// leaves both at HAProxy's defaults.
const (
	defaultBufSize    = 16384
	defaultMaxRewrite = 1024
)

// deadStatus is what the Gateway API answers for requests that no valid
// backendRef can take.
const deadStatus = 500

// unsafeMethodsCond is the condition of http-request disable-l7-retry:
// POST, PATCH and LOCK are retried only after a connection failure unless
// Options.RetryNonIdempotent.
func unsafeMethodsCond() string {
	return "{ method " + strings.Join(translate.NonIdempotentMethods(), " ") + " }"
}

// backendPlan is one rule's backend section.
type backendPlan struct {
	name          string
	conn          connPlan // server-side connection timeouts of its Gateways
	bufferRequest bool
	redispatch    bool
	timeouts      timeoutPlan
	retries       int64
	retryOn       string
	disableUnsafe bool
	servers       []types.Server
	// answer500 is the condition under which the backend answers 500
	// itself: "" for never, "always" for a dead rule, or the anonymous
	// ACL that picks the invalid backendRefs' share of the requests.
	answer500 string
	// weightsRounded reports that server weights only approximate the
	// backendRefs' weights.
	weightsRounded bool
	// object names the rule in notes.
	object string
	// filters are the rule's filters as HAProxy rules; redirects reports
	// that the rule answers with a redirect and has no server.
	filters   filterPlan
	redirects bool
}

// planRule translates one rule into its backend.
func planRule(m *translate.Model, r *translate.Rule, vs versionSupport, opts translate.Options, ck *tokenChecker) backendPlan {
	b := backendPlan{name: ruleBackendName(r, ck), object: translate.RuleObject(r), filters: planFilters(m, r, ck)}
	if !r.Forwards() {
		// No server at all: every request the rule matches gets the
		// redirect, or 500, from HAProxy itself, and nothing is retried
		// or timed.
		if r.Filters.Redirect != nil {
			b.redirects = true
		} else {
			b.answer500 = "always"
		}
		return b
	}
	b.timeouts = planTimeouts(r.Timeouts)
	weights, rounded := serverWeights(r.Backends)
	b.weightsRounded = rounded
	active := 0
	for i, ref := range r.Backends {
		name := ck.word("backend name", ref.Name)
		for j, e := range ref.Endpoints {
			w := weights[i][j]
			if w > 0 {
				active++
			}
			b.servers = append(b.servers, types.Server{
				Name:    fmt.Sprintf("s%d_%s", len(b.servers)+1, name),
				Address: bindAddress(ck.word("endpoint host", e.Host), e.Port),
				Params:  []params.ServerOption{&params.ServerOptionValue{Name: "weight", Value: strconv.FormatInt(w, 10)}},
			})
		}
	}
	if inv, total := invalidShare(r); inv > 0 {
		b.answer500 = randCond(inv, total)
	}

	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	supported, _ := r.Retry.SplitCodes(vs.RetryCodes)
	if attempts > 0 {
		b.retries = min(int64(attempts), vs.MaxRetries)
		tokens := []string{failureRetryOn(r.Retry, supported)}
		for _, c := range supported {
			tokens = append(tokens, strconv.Itoa(c))
		}
		b.retryOn = strings.TrimSpace(strings.Join(tokens, " "))
		b.bufferRequest = true
		b.redispatch = active > 1
		b.disableUnsafe = !opts.RetryNonIdempotent
	} else {
		b.retryOn = "none"
	}
	return b
}

// failureRetryOn are the retry-on conditions of failed tries the rule's
// retry asks for: every failure and a try timeout server cut
// (connectionRetryOn), or, for a BackendTrafficPolicy's retry condition
// that asks for fewer, conn-failure alone (failures before the request was
// sent) or nothing but the codes. A condition that retries nothing HAProxy
// can see (no codes, no connection failure) keeps conn-failure, so that
// attempts still counts something; its finding says it is wider.
func failureRetryOn(rt *translate.Retry, codes []int) string {
	switch {
	case rt.On == nil || rt.On.ConnErrors == translate.ConnRetryAll:
		return connectionRetryOn
	case rt.On.ConnErrors == translate.ConnRetryNone && len(codes) > 0:
		return ""
	}
	return "conn-failure"
}

// failuresRetried are which connection failures the retry-on conditions
// retry, and whether a try timeout server cut is retried.
func failuresRetried(retryOn string) (translate.ConnRetry, bool) {
	tokens := strings.Fields(retryOn)
	switch {
	case slices.Contains(tokens, "empty-response"):
		return translate.ConnRetryAll, slices.Contains(tokens, "response-timeout")
	case slices.Contains(tokens, "conn-failure"):
		return translate.ConnRetryUnsent, slices.Contains(tokens, "response-timeout")
	}
	return translate.ConnRetryNone, slices.Contains(tokens, "response-timeout")
}

// invalidShare returns the weight of the rule's invalid backendRefs and the
// total weight, both divided by their greatest common divisor.
func invalidShare(r *translate.Rule) (invalid, total int64) {
	invalid = int64(r.InvalidWeight())
	total = invalid
	for _, b := range r.Backends {
		total += int64(max(b.Weight, 0))
	}
	if invalid == 0 || total == 0 {
		return 0, total
	}
	g := gcd(invalid, total)
	return invalid / g, total / g
}

// randCond is true for invalid out of total requests: rand(total) draws
// an integer in [0, total).
func randCond(invalid, total int64) string {
	return fmt.Sprintf("{ rand(%d) lt %d }", total, invalid)
}

// exemptions are the requests of a rule that HAProxy, as configured, does
// not retry as the Gateway API asks; each makes the retry findings it
// touches approximated.
type exemptions struct {
	// nonIdempotent: the rule matches POST, PATCH or LOCK and the user did
	// not opt in, so disable-l7-retry applies to them.
	nonIdempotent bool
	// body: L7 retries (status codes, empty responses, timeouts) need the
	// whole request in one buffer.
	body bool
	// keepAlive: the version closes a kept-alive client connection without
	// an answer when the last try fails (versionSupport.SilentKeepAliveClose).
	keepAlive bool
	version   string
}

// caveats are the exemptions as caveats; withKeepAlive adds the
// keep-alive one (it concerns what the client gets after the last try).
func (e exemptions) caveats(withKeepAlive bool) []report.Caveat {
	var cs []report.Caveat
	if e.nonIdempotent {
		cs = append(cs, report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", strings.Join(translate.NonIdempotentMethods(), ", ")))
	}
	if e.body {
		cs = append(cs, report.NewCaveat(report.CaveatRetryBufferLimitedByHeaders,
			"bufsize", strconv.Itoa(defaultBufSize), "maxrewrite", strconv.Itoa(defaultMaxRewrite)))
	}
	if withKeepAlive && e.keepAlive {
		cs = append(cs, keepAliveCaveat(e.version))
	}
	return cs
}

// keepAliveCaveat is the caveat of versions with SilentKeepAliveClose.
func keepAliveCaveat(version string) report.Caveat {
	return report.NewCaveat(report.CaveatKeepAliveClosedUnanswered, "version", version)
}

// silentCloseNote says what HAProxy versions with SilentKeepAliveClose do
// when a request that is not the first on a kept-alive client connection
// gets no answer from its server (what names the try concerned), and what
// clients then do: they take the silent close for a kept-alive connection
// that the server closed as it was reused, and re-send the request, so the
// backend gets again (again) what HAProxy sent it.
func silentCloseNote(version, what, again string) string {
	return fmt.Sprintf("HAProxy %s closes the client connection without any answer, instead of 502, when %s a request that is not the first on a kept-alive client connection ends with an empty response or a reset, and clients that re-send a request when a kept-alive connection closes without an answer (curl; Go's net/http for GET, HEAD, OPTIONS and TRACE; browsers) send it again on a new connection, so the backend gets %s (HAProxy 3.0 answers 502; option httpclose would avoid it at the cost of client keep-alive)", version, what, again)
}

// decisions are what HAProxy does with each feature of rule r, planned
// as b, for translate.Assess: the filters and listener.https it writes,
// then backendRefs and the retry and timeout features.
func decisions(m *translate.Model, r *translate.Rule, vs versionSupport, opts translate.Options, b backendPlan, tls map[string]*tlsPlan) translate.Decisions {
	return translate.Decisions{
		Written: func(feat translate.Feature) (report.Decision, bool) {
			if feat == translate.FeatureListenerHTTPS {
				return tlsDecision(m, r, tls), true
			}
			return filterDecision(r, feat, b.filters)
		},
		Feature: func(feat translate.Feature) report.Decision { return ruleDecision(r, feat, vs, opts, b) },
		Retried: func() (translate.ConnRetry, bool) { return failuresRetried(b.retryOn) },
	}
}

// ruleDecision decides backendRefs, and the retry and timeout features of
// a rule that forwards.
func ruleDecision(r *translate.Rule, feat translate.Feature, vs versionSupport, opts translate.Options, b backendPlan) report.Decision {
	if feat == translate.FeatureBackendRefs {
		return backendRefsDecision(r, b)
	}
	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	ex := exemptions{}
	if attempts > 0 {
		ex = exemptions{nonIdempotent: !opts.RetryNonIdempotent && r.MatchesNonIdempotent(), body: true,
			keepAlive: vs.SilentKeepAliveClose, version: vs.Version}
	}
	// noRetry is the decision of a retry feature of a rule with attempts
	// 0: HAProxy does not retry, but where it closes kept-alive client
	// connections silently the client sends a failed request again.
	noRetry := func(configured string) report.Decision {
		d := report.Decide(report.ReasonRetriesDisabled).Set(configured)
		if vs.SilentKeepAliveClose {
			d = d.With(keepAliveCaveat(vs.Version))
		}
		return d
	}
	switch feat {
	case translate.FeatureRetryAttempts:
		if attempts == 0 {
			return noRetry("retries 0")
		}
		d := report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("retries %d", b.retries)).With(ex.caveats(true)...)
		if int64(attempts) > b.retries {
			// HAProxy reads retries into a C int: larger values wrap.
			d = d.With(report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.FormatInt(b.retries, 10), "max", strconv.FormatInt(vs.MaxRetries, 10)))
		}
		return d
	case translate.FeatureRetryCodes:
		return codesDecision(r, vs, attempts, ex)
	case translate.FeatureRetryConnectionErrors:
		if attempts == 0 {
			return noRetry("retry-on none")
		}
		fact := "retry-on " + failureRetryOn(r.Retry, nil)
		if on := r.Retry.On; on != nil && on.ConnErrors != translate.ConnRetryAll {
			if conn, _ := failuresRetried(b.retryOn); conn == on.ConnErrors {
				// The policy's narrower condition, as written.
				return report.Decide(report.ReasonConnErrorsAsPolicy, "policy", on.Policy, "triggers", strings.Join(on.Triggers, ","), "retried", connRetriedText(conn)).
					Set("retry-on " + b.retryOn).With(ex.caveats(true)...)
			}
		}
		return report.Decide(report.ReasonConfigured).Set(fact).With(ex.caveats(true)...)
	case translate.FeatureRetryBackoff:
		if attempts == 0 {
			return noRetry("")
		}
		// A retry starts at once; the only pause is the turn-around of
		// min(timeout connect, 1s) after a failed connection.
		return report.Decide(report.ReasonNoBackoff)
	case translate.FeatureRetryBackendTimeout:
		return withUpgraded(backendTimeoutRetryDecision(r, attempts, b.timeouts, ex), b)
	case translate.FeatureBackendRequestTimeout:
		return withUpgraded(backendRequestDecision(r, b.timeouts), b)
	case translate.FeatureRequestTimeout:
		return withUpgraded(requestDecision(r, attempts, b.timeouts), b)
	}
	return report.Decide(report.ReasonNotTranslated)
}

// backendRefsDecision is the decision of a rule with some or all
// backendRefs invalid: HAProxy answers their share of the requests 500
// itself (drawn at random per request, as the weighted servers are), or
// every request of a rule that forwards nothing.
func backendRefsDecision(r *translate.Rule, b backendPlan) report.Decision {
	switch {
	case !r.Forwards():
		return report.Decide(report.ReasonAnswers500).Set("http-request return status 500")
	case b.answer500 == "":
		// The invalid backendRefs have weight 0 and get no requests.
		return report.Decide(report.ReasonConfigured)
	}
	return report.Decide(report.ReasonAnswers500).Set("http-request return status 500 if " + b.answer500)
}

// codesDecision decides retry.codes. Codes the version cannot retry are
// returned as they are; those a later release can are named with the
// release (laterVersions), so that the user can choose it.
func codesDecision(r *translate.Rule, vs versionSupport, attempts int, ex exemptions) report.Decision {
	if attempts == 0 {
		return report.Decide(report.ReasonRetriesDisabled).Set("retry-on none")
	}
	supported, unsupported := r.Retry.SplitCodes(vs.RetryCodes)
	later := laterVersions(vs, unsupported)
	if len(supported) == 0 {
		if later != "" {
			return report.Decide(report.ReasonCodesNeedLaterVersion, "codes", codeList(unsupported), "versions", later)
		}
		return report.Decide(report.ReasonCodesNotRetryable, "codes", codeList(unsupported))
	}
	d := report.Decide(report.ReasonConfigured).Set("retry-on " + joinInts(supported)).With(ex.caveats(false)...)
	if len(unsupported) > 0 {
		d = d.With(report.NewCaveat(report.CaveatCodesNotRetried, "codes", codeList(unsupported)))
	}
	if later != "" {
		d = d.With(report.NewCaveat(report.CaveatCodesRetriedByLaterVersion, "versions", later))
	}
	return d
}

// laterVersions names, for each code of unsupported that a later release
// retries, the first such release, and the patch release of vs's branch
// it was backported to: "421 from 3.2, 429 from 3.1 or 3.0.4". "" when no
// release retries any of them.
func laterVersions(vs versionSupport, unsupported []int) string {
	var out []string
	for _, c := range unsupported {
		v := firstVersionWithCode(c)
		if v == "" {
			continue
		}
		s := fmt.Sprintf("%d from %s", c, v)
		if p := vs.Backported[c]; p != "" {
			s += " or " + p
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// backendTimeoutRetryDecision decides retry.backendTimeout: retry-on
// response-timeout retries a try whose timeout server, an inactivity
// timer, expired before the response began.
func backendTimeoutRetryDecision(r *translate.Rule, attempts int, t timeoutPlan, ex exemptions) report.Decision {
	server := "timeout server " + ms(t.serverMs)
	switch {
	case attempts == 0:
		return report.Decide(report.ReasonRetriesDisabled).Set("retry-on none, " + server).With(report.NewCaveat(report.CaveatIdleTimer))
	case r.Timeouts.BackendRequest.IsZero():
		return report.Decide(report.ReasonTimeoutDisabled).Set("retry-on response-timeout, " + server).
			With(ex.caveats(false)...).With(largestTimeoutCaveat())
	}
	if on := r.Retry.On; on != nil && !on.Timeouts {
		// The policy's condition retries no timed-out try: retry-on has
		// no response-timeout, and the try ends with 504.
		return report.Decide(report.ReasonTimeoutNotRetriedAsPolicy, "policy", on.Policy, "triggers", strings.Join(on.Triggers, ",")).Set(server).
			With(ex.caveats(false)...).With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)).
			With(clampCaveats(t)...)
	}
	return report.Decide(report.ReasonConfigured).Set("retry-on response-timeout, "+server).
		With(ex.caveats(false)...).With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)).
		With(clampCaveats(t)...)
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

// backendRequestDecision decides timeouts.backendRequest: timeout server
// is an inactivity timer per try, and 0s becomes its largest value
// (`timeout server 0` makes HAProxy warn about missing timeouts, and a
// per-request set-timeout cannot be 0).
func backendRequestDecision(r *translate.Rule, t timeoutPlan) report.Decision {
	if r.Timeouts.BackendRequest.IsZero() {
		return report.Decide(report.ReasonTimeoutDisabled).Set("timeout server " + ms(t.serverMs)).With(largestTimeoutCaveat())
	}
	return report.Decide(report.ReasonConfigured).Set("timeout server "+ms(t.serverMs)+", timeout connect "+ms(t.connectMs)).
		With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)).With(clampCaveats(t)...)
}

// requestDecision decides timeouts.request: HAProxy has no total request
// timeout, so timeout server stands in for it when backendRequest is
// not set.
func requestDecision(r *translate.Rule, attempts int, t timeoutPlan) report.Decision {
	rq := r.Timeouts.Request
	br := r.Timeouts.BackendRequest
	switch {
	case rq.IsZero() && br != nil && !br.IsZero() && attempts > 0:
		// The rule retries, so HAProxy reads the body before the first
		// try (option http-buffer-request) under timeout http-request.
		return report.Decide(report.ReasonTimeoutDisabled).
			With(report.NewCaveat(report.CaveatBufferedBodyReadTimeout, "timeout", ms(defaultHTTPRequestMs)))
	case rq.IsZero() && br != nil && !br.IsZero():
		return report.Decide(report.ReasonTimeoutDisabled)
	case rq.IsZero():
		return report.Decide(report.ReasonTimeoutDisabled).Set("timeout server " + ms(t.serverMs)).With(largestTimeoutCaveat())
	case br != nil:
		// Only backendRequest's timer per try is set.
		return report.Decide(report.ReasonNotExpressible)
	}
	d := report.Decide(report.ReasonConfigured).Set("timeout server "+ms(t.serverMs)).
		With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoTotalRequestTimeout)).With(clampCaveats(t)...)
	if attempts > 0 {
		d = d.With(report.NewCaveat(report.CaveatTimerPerTry, "tries", strconv.Itoa(attempts+1)))
	}
	return d
}

// withUpgraded: a rule's own timeout server (its backendRequest or
// request timeout) also times an upgraded (WebSocket) connection of the
// rule, which HAProxy closes once it stays idle that long, when the
// backend has no timeout tunnel (a Gateway's tunnelTimeout writes one,
// which supersedes timeout server and timeout client there). Data either
// way re-arms it (TestLiveUpgradedConnectionIdle, HAProxy 2.6 and 3.0).
// The Gateway API's timeouts bound a request and its response; the
// reference implementation's (Envoy's route timeout) ends with the
// upgrade response, so this is an approximation, said as nginx's is. A
// disabled timeout (the largest time) cuts nothing before timeout client.
// withUpgraded adds it to d where d's timer is that timeout server: a
// decision whose configured fact writes it (not a disabled request
// timeout beside a backendRequest, which that claim has).
func withUpgraded(d report.Decision, b backendPlan) report.Decision {
	if !b.timeouts.set || b.timeouts.serverMs == maxTimeoutMs || b.conn.tunnel != "" ||
		!strings.Contains(d.Configured, "timeout server "+ms(b.timeouts.serverMs)) {
		return d
	}
	return d.With(report.NewCaveat(report.CaveatUpgradedConnectionIdle, "timeout", ms(b.timeouts.serverMs)))
}

// largestTimeoutCaveat is the caveat of a 0s timeout, which becomes
// HAProxy's largest time.
func largestTimeoutCaveat() report.Caveat {
	return report.NewCaveat(report.CaveatDisabledTimeoutIsLargest, "timeout", ms(maxTimeoutMs))
}

// clampCaveats names the clamp of a timeout longer than HAProxy's largest
// time.
func clampCaveats(t timeoutPlan) []report.Caveat {
	if !t.clamped {
		return nil
	}
	return []report.Caveat{report.NewCaveat(report.CaveatTimeoutClamped, "max", ms(maxTimeoutMs))}
}

// codeList is a list of status codes as a parameter: "409, 421".
func codeList(v []int) string {
	return strings.ReplaceAll(joinInts(v), " ", ", ")
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}

// disableL7RetryAction is http-request disable-l7-retry for unsafe methods.
func disableL7RetryAction() *actions.DisableL7Retry {
	return &actions.DisableL7Retry{Cond: "if", CondTest: unsafeMethodsCond()}
}

// returnAction is http-request return status 500, always or under cond.
func returnAction(cond string) *actions.Return {
	status := int64(deadStatus)
	a := &actions.Return{Status: &status, Hdrs: []*actions.Hdr{}}
	if cond != "always" {
		a.Cond, a.CondTest = "if", cond
	}
	return a
}
