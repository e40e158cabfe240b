package haproxy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/translate"
	"github.com/haproxytech/client-native/v5/config-parser/params"
	"github.com/haproxytech/client-native/v5/config-parser/parsers/http/actions"
	"github.com/haproxytech/client-native/v5/config-parser/types"
)

// connectionRetryOn are the retry-on conditions for failed tries: refused
// or failed connections, a server that closes without answering, and a
// try cut by timeout server before the response began.
const connectionRetryOn = "conn-failure empty-response response-timeout"

// unsafeMethods are not retried after anything but a connection failure
// unless Options.RetryNonIdempotent.
func unsafeMethodsCond() string {
	return "{ method " + strings.Join(translate.NonIdempotentMethods(), " ") + " }"
}

// backendPlan is one rule's backend section.
type backendPlan struct {
	name          string
	bufferRequest bool
	redispatch    bool
	timeouts      timeoutPlan
	retries       int64
	retryOn       string
	disableUnsafe bool
	servers       []types.Server
	// weightsRounded reports that server weights only approximate the
	// backendRefs' weights.
	weightsRounded bool
	// allZero reports that every backendRef has weight 0.
	allZero bool
}

// planRule translates one rule into its backend and its findings.
func planRule(r *translate.Rule, vs versionSupport, opts translate.Options, ck *tokenChecker) (backendPlan, []translate.Finding) {
	b := backendPlan{name: ruleBackendName(r, ck), timeouts: planTimeouts(r.Timeouts)}
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
	b.allZero = active == 0

	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	supported, unsupported := r.Retry.SplitCodes(vs.RetryCodes)
	if attempts > 0 {
		b.retries = int64(attempts)
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

// ruleFindings returns one finding per feature the rule sets.
func ruleFindings(r *translate.Rule, vs versionSupport, opts translate.Options, b backendPlan, supported, unsupported []int) []translate.Finding {
	var fs []translate.Finding
	attempts := 0
	if r.Retry != nil {
		attempts = r.Retry.Attempts
	}
	unsafeNote := ""
	if !opts.RetryNonIdempotent {
		unsafeNote = "; POST, PATCH and LOCK requests are retried only after a connection failure (http-request disable-l7-retry; --retry-non-idempotent retries them too)"
	}
	bufferNote := "; a request whose body does not fit in one buffer (tune.bufsize 16384 bytes) is retried only after a connection failure"
	for _, feat := range r.Features() {
		var f translate.Finding
		switch feat {
		case translate.FeatureRetryAttempts:
			if attempts == 0 {
				f = translate.NewFinding(r, feat, translate.Honoured, "retries 0: HAProxy does not retry")
			} else {
				f = translate.NewFinding(r, feat, translate.Honoured, "retries %d (retries after the first try)%s%s", attempts, unsafeNote, bufferNote)
			}
		case translate.FeatureRetryCodes:
			f = codesFinding(r, vs, attempts, supported, unsupported, unsafeNote)
		case translate.FeatureRetryConnectionErrors:
			if attempts == 0 {
				f = translate.NewFinding(r, feat, translate.Honoured, "attempts is 0: nothing is retried")
			} else {
				note := ""
				if !opts.RetryNonIdempotent {
					note = "; for POST, PATCH and LOCK only connection failures are retried"
				}
				f = translate.NewFinding(r, feat, translate.Honoured, "retry-on %s retries refused or failed connections and servers that close without a response%s", connectionRetryOn, note)
			}
		case translate.FeatureRetryBackoff:
			if attempts == 0 {
				f = translate.NewFinding(r, feat, translate.Honoured, "attempts is 0: nothing is retried, so there is no delay to keep")
			} else {
				f = translate.NewFinding(r, feat, translate.Unsupported,
					"HAProxy has no backoff: a retry after an error status, empty response or timeout starts at once, and the only pause is a fixed turn-around of min(timeout connect, 1s) after a connection failure on the same server; backoff %s is ignored (Envoy or Traefik can delay retries)",
					r.Retry.Backoff.Text)
			}
		case translate.FeatureRetryBackendTimeout:
			f = backendTimeoutRetryFinding(r, attempts, b.timeouts, unsafeNote)
		case translate.FeatureBackendRequestTimeout:
			f = backendRequestFinding(r, b.timeouts)
		case translate.FeatureRequestTimeout:
			f = requestFinding(r, attempts, b.timeouts)
		default:
			f = translate.NewFinding(r, feat, translate.Unsupported, "gwretry's HAProxy backend does not know feature %s", feat)
		}
		fs = append(fs, f)
	}
	return fs
}

func codesFinding(r *translate.Rule, vs versionSupport, attempts int, supported, unsupported []int, unsafeNote string) translate.Finding {
	feat := translate.FeatureRetryCodes
	if attempts == 0 {
		return translate.NewFinding(r, feat, translate.Honoured, "attempts is 0: no status code is retried")
	}
	if len(unsupported) == 0 {
		return translate.NewFinding(r, feat, translate.Honoured, "retry-on %s%s", joinInts(supported), unsafeNote)
	}
	var hints []string
	for _, c := range unsupported {
		if v := firstVersionWithCode(c); v != "" {
			hints = append(hints, fmt.Sprintf("%d needs HAProxy %s or later", c, v))
		}
	}
	what := "HAProxy " + vs.Version + " retry-on cannot match " + joinInts(unsupported) + ", so responses with those codes are returned without a retry"
	if len(hints) > 0 {
		what += " (" + strings.Join(hints, "; ") + ": choose it with --target haproxy@VERSION)"
	} else {
		what += " (no HAProxy version can; Envoy retries any code)"
	}
	if len(supported) == 0 {
		return translate.NewFinding(r, feat, translate.Unsupported, "%s; only connection failures, empty responses and timeouts are retried", what)
	}
	return translate.NewFinding(r, feat, translate.Approximated, "%s; %s are retried%s", what, joinInts(supported), unsafeNote)
}

func backendTimeoutRetryFinding(r *translate.Rule, attempts int, t timeoutPlan, unsafeNote string) translate.Finding {
	feat := translate.FeatureRetryBackendTimeout
	switch {
	case attempts == 0:
		return translate.NewFinding(r, feat, translate.Honoured, "attempts is 0: a timed-out try is not retried")
	case r.Timeouts.BackendRequest.IsZero():
		return translate.NewFinding(r, feat, translate.Honoured, "backendRequest is 0s: no try times out")
	}
	return translate.NewFinding(r, feat, translate.Approximated,
		"retry-on response-timeout retries a try whose timeout server %s expired before the response began; timeout server is an inactivity timer, so a try whose server keeps sending data is not cut after %s in total%s%s",
		ms(t.serverMs), r.Timeouts.BackendRequest.Text, clampNote(r.Timeouts.BackendRequest, t), unsafeNote)
}

func backendRequestFinding(r *translate.Rule, t timeoutPlan) translate.Finding {
	feat := translate.FeatureBackendRequestTimeout
	if r.Timeouts.BackendRequest.IsZero() {
		return translate.NewFinding(r, feat, translate.Approximated,
			"0s (no timeout) becomes timeout server %s (about 24.8 days), HAProxy's largest value: HAProxy warns about a zero timeout", ms(maxTimeoutMs))
	}
	return translate.NewFinding(r, feat, translate.Approximated,
		"timeout server %s is an inactivity timer, not a total per try: a try ends with 504 only when the server sends nothing for %s (while it is sent the request or while it answers), so a slow response that keeps sending data can take longer; timeout connect %s%s",
		ms(t.serverMs), r.Timeouts.BackendRequest.Text, ms(t.connectMs), clampNote(r.Timeouts.BackendRequest, t))
}

func requestFinding(r *translate.Rule, attempts int, t timeoutPlan) translate.Finding {
	feat := translate.FeatureRequestTimeout
	rq := r.Timeouts.Request
	br := r.Timeouts.BackendRequest
	switch {
	case rq.IsZero() && br != nil && !br.IsZero():
		return translate.NewFinding(r, feat, translate.Honoured, "0s: no total request timeout (HAProxy has none); tries are limited by backendRequest only")
	case rq.IsZero():
		return translate.NewFinding(r, feat, translate.Approximated,
			"0s (no timeout): HAProxy has no total request timeout, and timeout server is set to %s (about 24.8 days, its largest) so that the default %s does not cut the request", ms(maxTimeoutMs), ms(defaultServerMs))
	case br != nil:
		return translate.NewFinding(r, feat, translate.Unsupported,
			"HAProxy has no total request timeout; only backendRequest's timeout server %s (an inactivity timer per try) is set, so with retries a request can take much longer than %s; enforce %s in front of HAProxy or in the client",
			ms(t.serverMs), rq.Text, rq.Text)
	}
	total := ""
	if attempts > 0 {
		total = fmt.Sprintf(" and each of the %d tries gets its own timer (retry-on response-timeout), so the total can reach about %d×%s", attempts+1, attempts+1, rq.Text)
	}
	return translate.NewFinding(r, feat, translate.Approximated,
		"HAProxy has no total request timeout; timeout server %s is used instead: a request ends with 504 when the server sends nothing for %s, but a response that keeps sending data is not cut%s%s",
		ms(t.serverMs), rq.Text, total, clampNote(rq, t))
}

// clampNote says when a duration was clamped to HAProxy's largest time.
func clampNote(d *translate.Duration, t timeoutPlan) string {
	if !t.clamped {
		return ""
	}
	return fmt.Sprintf("; %s is longer than HAProxy's largest time and was clamped to %s (about 24.8 days)", d.Text, ms(maxTimeoutMs))
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
