package haproxy

import (
	"fmt"
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

// planRule translates one rule into its backend and its findings.
func planRule(m *translate.Model, r *translate.Rule, vs versionSupport, opts translate.Options, ck *tokenChecker) (backendPlan, []translate.Finding) {
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
		return b, deadFindings(r, b.filters)
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
	supported, unsupported := r.Retry.SplitCodes(vs.RetryCodes)
	if attempts > 0 {
		b.retries = min(int64(attempts), vs.MaxRetries)
		b.retryOn = connectionRetryOn
		for _, c := range supported {
			b.retryOn += " " + strconv.Itoa(c)
		}
		b.bufferRequest = true
		b.redispatch = active > 1
		b.disableUnsafe = !opts.RetryNonIdempotent
	} else {
		b.retryOn = "none"
	}
	return b, ruleFindings(r, vs, opts, b, supported, unsupported)
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

// deadAnswer says what HAProxy does with every request of a rule that
// forwards nothing.
const deadAnswer = "HAProxy answers 500 (http-request return status 500)"

// redirectAnswer says what HAProxy does with every request of a rule that
// redirects.
const redirectAnswer = "HAProxy answers with the redirect (http-request redirect)"

// deadFindings are the findings of a rule that forwards nothing: it is
// dead or it redirects.
func deadFindings(r *translate.Rule, p filterPlan) []translate.Finding {
	var fs []translate.Finding
	answer := deadAnswer
	if !r.Dead() {
		answer = redirectAnswer
	}
	for _, feat := range r.Features() {
		if f, ok := filterFinding(r, feat, p); ok {
			fs = append(fs, f)
			continue
		}
		if u, ok := translate.UntranslatedFinding(r, feat, "HAProxy", answer); ok {
			fs = append(fs, u)
			continue
		}
		if feat == translate.FeatureBackendRefs {
			fs = append(fs, translate.Decided(r, feat, report.Decide(report.ReasonAnswers500).Set("http-request return status 500"),
				"%s: HAProxy answers 500 to every request the rule matches (http-request return status 500, no server)", r.DeadReason()))
			continue
		}
		fs = append(fs, translate.DeadRuleFinding(r, feat, answer))
	}
	return fs
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

// note lists the exemptions for a message; withKeepAlive adds the
// keep-alive one (it concerns what the client gets after the last try).
func (e exemptions) note(withKeepAlive bool) string {
	var parts []string
	if e.nonIdempotent {
		parts = append(parts, "POST, PATCH and LOCK requests are retried only after a connection failure, never on a status code, an empty response or a timeout (http-request disable-l7-retry; --retry-non-idempotent lifts this)")
	}
	if e.body {
		parts = append(parts, fmt.Sprintf("whatever the method, a request that does not fit in one buffer (tune.bufsize %d bytes minus tune.maxrewrite %d, headers and HAProxy's internal framing included: with short headers a 15000-byte body is retried, a 15200-byte one is not) is retried only after a connection failure (raise tune.bufsize in the global section to retry larger bodies)", defaultBufSize, defaultMaxRewrite))
	}
	if withKeepAlive && e.keepAlive {
		parts = append(parts, silentCloseNote(e.version, "the last try of", "the whole series of tries twice"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, "; ")
}

// caveats are the exemptions as caveats, those note names with the same
// withKeepAlive.
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

// keepAliveCaveat is the caveat silentCloseNote says in words.
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

// ruleFindings returns one finding per feature the rule sets.
func ruleFindings(r *translate.Rule, vs versionSupport, opts translate.Options, b backendPlan, supported, unsupported []int) []translate.Finding {
	var fs []translate.Finding
	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	ex := exemptions{}
	if attempts > 0 {
		ex = exemptions{nonIdempotent: !opts.RetryNonIdempotent && r.MatchesNonIdempotent(), body: true,
			keepAlive: vs.SilentKeepAliveClose, version: vs.Version}
	}
	// noRetry is the finding of a retry feature of a rule with attempts 0:
	// HAProxy does not retry, but where it closes kept-alive client
	// connections silently the client sends a failed request again.
	noRetry := func(feat translate.Feature, configured, what string) translate.Finding {
		d := report.Decide(report.ReasonRetriesDisabled).Set(configured)
		if !vs.SilentKeepAliveClose {
			return translate.Decided(r, feat, d, "%s", what)
		}
		return translate.Decided(r, feat, d.With(keepAliveCaveat(vs.Version)), "%s, but %s", what,
			silentCloseNote(vs.Version, "the one try of", "a second try, at once"))
	}
	clamped := int64(attempts) > b.retries && attempts > 0
	for _, feat := range r.Features() {
		if f, ok := filterFinding(r, feat, b.filters); ok {
			fs = append(fs, f)
			continue
		}
		if u, ok := translate.UntranslatedFinding(r, feat, "HAProxy", deadAnswer); ok {
			fs = append(fs, u)
			continue
		}
		var f translate.Finding
		switch feat {
		case translate.FeatureBackendRefs:
			f = backendRefsFinding(r, b)
		case translate.FeatureRetryAttempts:
			switch {
			case attempts == 0:
				f = noRetry(feat, "retries 0", "retries 0: HAProxy does not retry")
			case clamped:
				d := report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("retries %d", b.retries)).With(ex.caveats(true)...).
					With(report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.FormatInt(b.retries, 10), "max", strconv.FormatInt(vs.MaxRetries, 10)))
				f = translate.Decided(r, feat, d,
					"attempts %d is more than HAProxy's largest retries value %d (it reads the number into a C int, so larger values wrap around): clamped to retries %d%s",
					attempts, vs.MaxRetries, b.retries, ex.note(true))
			default:
				f = translate.Decided(r, feat, report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("retries %d", b.retries)).With(ex.caveats(true)...),
					"retries %d (retries after the first try)%s", attempts, ex.note(true))
			}
		case translate.FeatureRetryCodes:
			f = codesFinding(r, vs, attempts, supported, unsupported, ex)
		case translate.FeatureRetryConnectionErrors:
			if attempts == 0 {
				f = noRetry(feat, "retry-on none", "attempts is 0: HAProxy retries nothing")
			} else {
				f = translate.Decided(r, feat, report.Decide(report.ReasonConfigured).Set("retry-on "+connectionRetryOn).With(ex.caveats(true)...),
					"retry-on %s retries refused or failed connections and servers that close or reset without a response%s", connectionRetryOn, ex.note(true))
			}
		case translate.FeatureRetryBackoff:
			if attempts == 0 {
				f = noRetry(feat, "", "attempts is 0: HAProxy retries nothing, so there is no delay to keep")
			} else {
				f = translate.Decided(r, feat, report.Decide(report.ReasonNoBackoff),
					"HAProxy has no backoff: a retry after an error status, empty response or timeout starts at once, and the only pause is a fixed turn-around of min(timeout connect, 1s) after a connection to the same server refused or failed before timeout connect (none when timeout connect expired); backoff %s is ignored (Envoy or Traefik can delay retries)",
					r.Retry.Backoff.Text)
			}
		case translate.FeatureRetryBackendTimeout:
			f = backendTimeoutRetryFinding(r, attempts, b.timeouts, ex)
		case translate.FeatureBackendRequestTimeout:
			f = backendRequestFinding(r, b.timeouts)
		case translate.FeatureRequestTimeout:
			f = requestFinding(r, attempts, b.timeouts)
		default:
			f = translate.Decided(r, feat, report.Decide(report.ReasonNotTranslated), "gwretry's HAProxy backend does not know feature %s", feat)
		}
		fs = append(fs, f)
	}
	return fs
}

// backendRefsFinding is the finding of a rule with some invalid
// backendRefs (a dead rule has deadFindings).
func backendRefsFinding(r *translate.Rule, b backendPlan) translate.Finding {
	feat := translate.FeatureBackendRefs
	var reasons []string
	for _, inv := range r.Invalid {
		reasons = append(reasons, fmt.Sprintf("backendRefs[%d]: %s", inv.Index, inv.Reason))
	}
	why := strings.Join(reasons, "; ")
	inv, total := invalidShare(r)
	if inv == 0 {
		return translate.Decided(r, feat, report.Decide(report.ReasonConfigured), "the invalid backendRefs (%s) have weight 0 and get no requests", why)
	}
	return translate.Decided(r, feat, report.Decide(report.ReasonAnswers500).Set("http-request return status 500 if "+b.answer500),
		"the invalid backendRefs' share of the requests (%d in %d: %s) is answered 500 by HAProxy (http-request return status 500 if %s), drawn at random per request as the weighted servers are; the rest goes to the valid backends",
		inv, total, why, b.answer500)
}

func codesFinding(r *translate.Rule, vs versionSupport, attempts int, supported, unsupported []int, ex exemptions) translate.Finding {
	feat := translate.FeatureRetryCodes
	if attempts == 0 {
		return translate.Decided(r, feat, report.Decide(report.ReasonRetriesDisabled).Set("retry-on none"), "attempts is 0: no status code is retried")
	}
	configured := report.Decide(report.ReasonConfigured).Set("retry-on " + joinInts(supported)).With(ex.caveats(false)...)
	if len(unsupported) == 0 {
		return translate.Decided(r, feat, configured, "retry-on %s%s", joinInts(supported), ex.note(false))
	}
	var hints []string
	for _, c := range unsupported {
		v := firstVersionWithCode(c)
		if v == "" {
			continue
		}
		hint := fmt.Sprintf("%d needs HAProxy %s or later", c, v)
		if p := vs.Backported[c]; p != "" {
			hint += fmt.Sprintf(", or %s or later (backported; earlier %s releases refuse it, so haproxy@%s leaves it out, but the output of --target haproxy@%s suits %s and later)", p, vs.Version, vs.Version, v, p)
		}
		hints = append(hints, hint)
	}
	what := "HAProxy " + vs.Version + " retry-on cannot match " + joinInts(unsupported) + ", so responses with those codes are returned without a retry"
	if len(vs.Backported) > 0 {
		what = "retry-on for HAProxy " + vs.Version + " leaves out " + joinInts(unsupported) + ", so responses with those codes are returned without a retry"
	}
	if len(hints) > 0 {
		what += " (" + strings.Join(hints, "; ") + ": choose it with --target haproxy@VERSION)"
	} else {
		what += " (no HAProxy version can; Envoy retries any code)"
	}
	if len(supported) == 0 {
		return translate.Decided(r, feat, report.Decide(report.ReasonCodesNotRetryable, "codes", codeList(unsupported)),
			"%s; only connection failures, empty responses and timeouts are retried", what)
	}
	return translate.Decided(r, feat, configured.With(report.NewCaveat(report.CaveatCodesNotRetried, "codes", codeList(unsupported))),
		"%s; %s are retried%s", what, joinInts(supported), ex.note(false))
}

func backendTimeoutRetryFinding(r *translate.Rule, attempts int, t timeoutPlan, ex exemptions) translate.Finding {
	feat := translate.FeatureRetryBackendTimeout
	server := "timeout server " + ms(t.serverMs)
	switch {
	case attempts == 0:
		return translate.Decided(r, feat, report.Decide(report.ReasonRetriesDisabled).Set("retry-on none, "+server).With(report.NewCaveat(report.CaveatIdleTimer)),
			"attempts is 0: a timed-out try is not retried, but the try is cut by timeout server %s, an inactivity timer, not after %s in total (see timeouts.backendRequest)",
			ms(t.serverMs), r.Timeouts.BackendRequest.Text)
	case r.Timeouts.BackendRequest.IsZero():
		d := report.Decide(report.ReasonTimeoutDisabled).Set("retry-on response-timeout, " + server).
			With(ex.caveats(false)...).With(largestTimeoutCaveat())
		return translate.Decided(r, feat, d,
			"backendRequest is 0s, but HAProxy's server timeout cannot be off without a warning: timeout server %s (about 24.8 days, its largest) can cut a try, which retry-on response-timeout then retries%s",
			ms(maxTimeoutMs), ex.note(false))
	}
	d := report.Decide(report.ReasonConfigured).Set("retry-on response-timeout, "+server).
		With(ex.caveats(false)...).With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)).
		With(clampCaveats(t)...)
	return translate.Decided(r, feat, d,
		"retry-on response-timeout retries a try whose timeout server %s expired before the response began; timeout server is an inactivity timer, so a try whose server keeps sending data is not cut after %s in total%s%s",
		ms(t.serverMs), r.Timeouts.BackendRequest.Text, clampNote(r.Timeouts.BackendRequest, t), ex.note(false))
}

func backendRequestFinding(r *translate.Rule, t timeoutPlan) translate.Finding {
	feat := translate.FeatureBackendRequestTimeout
	if r.Timeouts.BackendRequest.IsZero() {
		return translate.Decided(r, feat, report.Decide(report.ReasonTimeoutDisabled).Set("timeout server "+ms(t.serverMs)).With(largestTimeoutCaveat()),
			"0s (no timeout) becomes timeout server %s (about 24.8 days), HAProxy's largest value, so a try that sends nothing for that long is still cut: `timeout server 0` would mean no timeout, but HAProxy warns about it (missing timeouts) and a per-request `http-request set-timeout server` cannot be 0", ms(maxTimeoutMs))
	}
	d := report.Decide(report.ReasonConfigured).Set("timeout server "+ms(t.serverMs)+", timeout connect "+ms(t.connectMs)).
		With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoAnswerAfterHeaders)).With(clampCaveats(t)...)
	return translate.Decided(r, feat, d,
		"timeout server %s is an inactivity timer, not a total per try: a try ends with 504 only when the server sends nothing for %s before its response headers; a server that falls silent that long after them has its response cut short (the client gets the headers and a truncated body, not 504, and the try is not retried), and a slow response that keeps sending data can take longer; timeout connect %s%s",
		ms(t.serverMs), r.Timeouts.BackendRequest.Text, ms(t.connectMs), clampNote(r.Timeouts.BackendRequest, t))
}

func requestFinding(r *translate.Rule, attempts int, t timeoutPlan) translate.Finding {
	feat := translate.FeatureRequestTimeout
	rq := r.Timeouts.Request
	br := r.Timeouts.BackendRequest
	switch {
	case rq.IsZero() && br != nil && !br.IsZero() && attempts > 0:
		return translate.Decided(r, feat, report.Decide(report.ReasonTimeoutDisabled).
			With(report.NewCaveat(report.CaveatBufferedBodyReadTimeout, "timeout", ms(defaultHTTPRequestMs))),
			"0s: no total request timeout (HAProxy has none) and tries are limited by backendRequest, but the rule retries, so HAProxy reads the request body before the first try (option http-buffer-request) under timeout http-request %s: a client that takes longer to send its headers and body (or the first buffer of a larger one) gets 408", ms(defaultHTTPRequestMs))
	case rq.IsZero() && br != nil && !br.IsZero():
		return translate.Decided(r, feat, report.Decide(report.ReasonTimeoutDisabled), "0s: no total request timeout (HAProxy has none); tries are limited by backendRequest only")
	case rq.IsZero():
		return translate.Decided(r, feat, report.Decide(report.ReasonTimeoutDisabled).Set("timeout server "+ms(t.serverMs)).With(largestTimeoutCaveat()),
			"0s (no timeout): HAProxy has no total request timeout, and timeout server is set to %s (about 24.8 days, its largest) so that the default %s does not cut the request; a try that sends nothing for that long is still cut", ms(maxTimeoutMs), ms(defaultServerMs))
	case br != nil:
		return translate.Decided(r, feat, report.Decide(report.ReasonNotExpressible),
			"HAProxy has no total request timeout; only backendRequest's timeout server %s (an inactivity timer per try) is set, so with retries a request can take much longer than %s; enforce %s in front of HAProxy or in the client",
			ms(t.serverMs), rq.Text, rq.Text)
	}
	total := ""
	d := report.Decide(report.ReasonConfigured).Set("timeout server "+ms(t.serverMs)).
		With(report.NewCaveat(report.CaveatIdleTimer), report.NewCaveat(report.CaveatNoTotalRequestTimeout)).With(clampCaveats(t)...)
	if attempts > 0 {
		d = d.With(report.NewCaveat(report.CaveatTimerPerTry, "tries", strconv.Itoa(attempts+1)))
		total = fmt.Sprintf(" and each of the %d tries gets its own timer (retry-on response-timeout), so the total can reach about %d×%s", attempts+1, attempts+1, rq.Text)
	}
	return translate.Decided(r, feat, d,
		"HAProxy has no total request timeout; timeout server %s is used instead: a request ends with 504 when the server sends nothing for %s, but a response that keeps sending data is not cut%s%s",
		ms(t.serverMs), rq.Text, total, clampNote(rq, t))
}

// largestTimeoutCaveat is the caveat of a 0s timeout, which becomes
// HAProxy's largest time.
func largestTimeoutCaveat() report.Caveat {
	return report.NewCaveat(report.CaveatDisabledTimeoutIsLargest, "timeout", ms(maxTimeoutMs))
}

// clampCaveats are the caveats clampNote says in words.
func clampCaveats(t timeoutPlan) []report.Caveat {
	if !t.clamped {
		return nil
	}
	return []report.Caveat{report.NewCaveat(report.CaveatTimeoutClamped, "max", ms(maxTimeoutMs))}
}

// clampNote says when a duration was clamped to HAProxy's largest time.
func clampNote(d *translate.Duration, t timeoutPlan) string {
	if !t.clamped {
		return ""
	}
	return fmt.Sprintf("; %s is longer than HAProxy's largest time and was clamped to %s (about 24.8 days)", d.Text, ms(maxTimeoutMs))
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
