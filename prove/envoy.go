package prove

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Intent is a scenario rule's retry and timeouts, read from its YAML.
type Intent struct {
	Retry                   bool
	Attempts                int
	Codes                   []int
	Backoff                 *time.Duration
	Request, BackendRequest *time.Duration
}

// Intent reads the scenario's retry and timeouts as the Gateway API v1.7.0
// defines them (attempts defaults to 1).
func (s Scenario) Intent() (Intent, error) {
	var in Intent
	if s.Retry != "" {
		var r struct {
			Codes    []int   `json:"codes"`
			Attempts *int    `json:"attempts"`
			Backoff  *string `json:"backoff"`
		}
		if err := yaml.UnmarshalStrict([]byte(s.Retry), &r); err != nil {
			return in, fmt.Errorf("scenario %s retry: %w", s.Name, err)
		}
		in.Retry, in.Attempts, in.Codes = true, 1, r.Codes
		if r.Attempts != nil {
			in.Attempts = *r.Attempts
		}
		var err error
		if in.Backoff, err = parseOptional(r.Backoff); err != nil {
			return in, fmt.Errorf("scenario %s backoff: %w", s.Name, err)
		}
	}
	if s.Timeouts != "" {
		var t struct {
			Request        *string `json:"request"`
			BackendRequest *string `json:"backendRequest"`
		}
		if err := yaml.UnmarshalStrict([]byte(s.Timeouts), &t); err != nil {
			return in, fmt.Errorf("scenario %s timeouts: %w", s.Name, err)
		}
		var err error
		if in.Request, err = parseOptional(t.Request); err != nil {
			return in, err
		}
		if in.BackendRequest, err = parseOptional(t.BackendRequest); err != nil {
			return in, err
		}
	}
	return in, nil
}

func parseOptional(s *string) (*time.Duration, error) {
	if s == nil {
		return nil, nil
	}
	d, err := translate.ParseDuration(*s)
	return &d, err
}

// direct is the status a direct_response route answers, 0 when it proxies.
func direct(t *envoy.RequestRoute) uint32 { return t.Route.GetDirectResponse().GetStatus() }

// retryPolicy is the retry policy the request gets: the route's, else the
// virtual host's (Envoy's route-level policy replaces the host's).
func retryPolicy(t *envoy.RequestRoute) *routev3.RetryPolicy {
	if t.Route.GetRoute() == nil {
		return nil
	}
	if p := t.Route.GetRoute().GetRetryPolicy(); p != nil {
		return p
	}
	return t.VirtualHost.GetRetryPolicy()
}

// bufferLimit is the largest request body Envoy buffers, and so retries:
// the route's per_request_buffer_limit_bytes, else the virtual host's, else
// the listener's per_connection_buffer_limit_bytes (1 MiB by default).
func bufferLimit(t *envoy.RequestRoute) uint64 {
	if v := t.Route.GetPerRequestBufferLimitBytes(); v != nil { //nolint:staticcheck // the field every Envoy 1.x reads
		return uint64(v.GetValue())
	}
	if v := t.VirtualHost.GetPerRequestBufferLimitBytes(); v != nil { //nolint:staticcheck // as above
		return uint64(v.GetValue())
	}
	if v := t.Listener.GetPerConnectionBufferLimitBytes(); v != nil {
		return uint64(v.GetValue())
	}
	return 1 << 20
}

// idleTimeout is the stream idle timer that still runs for the route: the
// route's idle_timeout, else the connection manager's stream_idle_timeout
// (5 minutes by default); 0 when disabled.
func idleTimeout(t *envoy.RequestRoute) time.Duration {
	if d := t.Route.GetRoute().GetIdleTimeout(); d != nil {
		return d.AsDuration()
	}
	if d := t.Manager.GetStreamIdleTimeout(); d != nil {
		return d.AsDuration()
	}
	return 5 * time.Minute
}

// nonIdempotent are the methods gwretry does not retry by default.
func nonIdempotent(method string) bool {
	return method == http.MethodPost || method == http.MethodPatch || method == "LOCK"
}

// safeTokens are the retry_on tokens that retry only a request that never
// reached the backend: all that POST, PATCH and LOCK may get by default.
var safeTokens = []string{"connect-failure", "refused-stream", "reset-before-request"}

// sentTokens retry a request after it reached the backend.
var sentTokens = []string{"reset", "5xx", "gateway-error", "retriable-status-codes", "retriable-4xx", "retriable-headers", "envoy-ratelimited"}

// bodyRetryFeatures are the findings a request body above Envoy's buffer
// limit exempts (Envoy sends it once).
var bodyRetryFeatures = []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryCodes,
	translate.FeatureRetryConnectionErrors, translate.FeatureRetryBackendTimeout}

// envoyCheck holds what the static check reads for one scenario request.
type envoyCheck struct {
	sc     Scenario
	in     Intent
	t      *envoy.RequestRoute
	route  *routev3.Route
	policy *routev3.RetryPolicy
	// retrying: the request's route has a retry policy (POST, PATCH and
	// LOCK without the opt-in get the safe one).
	retrying bool
	// asked: the rule asks for at least one retry.
	asked  bool
	method string
	optIn  bool
	tokens []string
	// stated are the exemptions an approximated finding's caveats state:
	// the body buffer limit (BodyBufferLimit), and num_retries other than
	// attempts (AttemptsClamped).
	statedBody, statedClamp bool
}

// JudgeEnvoy checks the generated Envoy configuration of a scenario field
// by field against each finding's decision record: honoured must be
// configured as the Gateway API needs, approximated must be configured and
// carry the caveats that state what differs (with the parameters the
// configuration has), unsupported must not be configured. It returns one
// verdict per finding. No finding's message is read.
func JudgeEnvoy(bs *bootstrapv3.Bootstrap, sc Scenario, optIn bool, findings []translate.Finding) []Verdict {
	in, err := sc.Intent()
	if err != nil {
		return []Verdict{{Outcome: Contradicted, Reason: err.Error()}}
	}
	t, err := envoy.FindRoute(bs, sc.Path(), sc.method())
	if err != nil {
		return []Verdict{{Outcome: Contradicted, Reason: err.Error()}}
	}
	c := envoyCheck{sc: sc, in: in, t: t, route: t.Route, policy: retryPolicy(t), method: sc.method(), optIn: optIn,
		asked: in.Retry && in.Attempts > 0}
	c.retrying = c.policy != nil
	if c.policy != nil {
		c.tokens = strings.Split(c.policy.GetRetryOn(), ",")
	}
	var verdicts []Verdict
	for _, f := range findings {
		problems := c.check(f, findings)
		v := Verdict{Feature: f.Feature, Status: f.Status, Outcome: Backed, Reason: "configured as the finding says"}
		if len(problems) > 0 {
			v.Outcome = Contradicted
			routeJSON, _ := protojson.Marshal(t.Route)
			v.Reason = fmt.Sprintf("REPORT AND GENERATED ENVOY CONFIG DISAGREE\n  finding: envoy %s rule %d %s = %s (%s)\n  config: %s\n  route %s: %s",
				f.Route, f.Rule, f.Feature, f.Status, RecordText(f.Decision), strings.Join(problems, "; "), t.Route.GetName(), routeJSON)
		}
		verdicts = append(verdicts, v)
	}
	return verdicts
}

// check returns what is wrong with one finding.
func (c envoyCheck) check(f translate.Finding, all []translate.Finding) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	configured, why := c.configured(f.Feature)
	switch f.Status {
	case translate.Honoured:
		problems = append(problems, c.honoured(f.Feature)...)
	case translate.Approximated:
		if !configured {
			bad("approximated, but nothing is configured for it (%s)", why)
		}
		if !statesShortfall(f.Feature, f.Decision) {
			bad("approximated, but no reason or caveat of the record says what differs (%s)", RecordText(f.Decision))
		}
		if c.retrying && slices.Contains(bodyRetryFeatures, f.Feature) {
			problems = append(problems, c.statesBodyLimit(f.Decision)...)
		}
		problems = append(problems, c.approximated(f)...)
	case translate.Unsupported:
		if configured {
			bad("unsupported, but it is configured (%s)", why)
		}
	}
	if f.Feature == translate.FeatureRetryAttempts && c.in.Retry && nonIdempotent(c.method) && !c.optIn && direct(c.t) == 0 {
		if c.retrying && !c.safeOnly() {
			bad("%s must be retried only when it never reached the backend by default, but retry_on is %q (retriable_status_codes %v)",
				c.method, c.policy.GetRetryOn(), c.policy.GetRetriableStatusCodes())
		}
		if c.in.Attempts > 0 {
			said := false
			for _, g := range all {
				if g.Feature == translate.FeatureRetryAttempts || g.Feature == translate.FeatureRetryCodes {
					said = said || c.exempts(g.Decision)
				}
			}
			if !said {
				bad("%s is not retried by default after it reached the backend, but neither the attempts nor the codes finding has caveat %s naming it", c.method, report.CaveatNonIdempotentExempt)
			}
		}
	}
	return problems
}

// statesBodyLimit: an approximated retry finding on a retrying route must
// carry caveat BodyBufferLimit (bodies above Envoy's buffer limit are not
// retried) with the configured limit.
func (c envoyCheck) statesBodyLimit(d report.Decision) []string {
	limit := bufferLimit(c.t)
	cv, ok := caveat(d, report.CaveatBodyBufferLimit)
	if !ok {
		return []string{fmt.Sprintf("Envoy does not retry a body larger than its buffer limit (%d bytes), but the record has no caveat %s", limit, report.CaveatBodyBufferLimit)}
	}
	if got, ok := parseByteSize(cv.Params["limit"]); !ok || got != limit {
		return []string{fmt.Sprintf("the buffer limit is %d bytes (%s), but caveat %s says %q", limit, translate.ByteSize(limit), report.CaveatBodyBufferLimit, cv.Params["limit"])}
	}
	return nil
}

// exempts: d has caveat NonIdempotentExempt naming the request's method.
func (c envoyCheck) exempts(d report.Decision) bool {
	cv, ok := caveat(d, report.CaveatNonIdempotentExempt)
	return ok && slices.Contains(paramList(cv.Params["methods"]), c.method)
}

// clamped: d has caveat AttemptsClamped with the route's num_retries.
func (c envoyCheck) clamped(d report.Decision) bool {
	cv, ok := caveat(d, report.CaveatAttemptsClamped)
	return ok && cv.Params["configured"] == fmt.Sprint(c.retries())
}

// caveat returns d's caveat of reason r.
func caveat(d report.Decision, r report.Reason) (report.Caveat, bool) {
	for _, cv := range d.Caveats {
		if cv.Reason == r {
			return cv, true
		}
	}
	return report.Caveat{}, false
}

func (c envoyCheck) has(tokens ...string) bool {
	for _, t := range tokens {
		if slices.Contains(c.tokens, t) {
			return true
		}
	}
	return false
}

// safeOnly: the policy retries only requests that never reached the
// backend.
func (c envoyCheck) safeOnly() bool {
	for _, t := range c.tokens {
		if !slices.Contains(safeTokens, t) {
			return false
		}
	}
	return len(c.policy.GetRetriableStatusCodes()) == 0 && len(c.policy.GetRetriableHeaders()) == 0
}

// safePolicy: a non-idempotent request without the opt-in takes a retry
// policy that retries it only before it was sent, as gwretry intends.
func (c envoyCheck) safePolicy() bool {
	return c.retrying && nonIdempotent(c.method) && !c.optIn && c.safeOnly()
}

func (c envoyCheck) retries() uint32 {
	if c.policy == nil {
		return 0
	}
	if n := c.policy.GetNumRetries(); n != nil {
		return n.GetValue()
	}
	return 1 // Envoy's default
}

// configured reports whether anything is configured for a feature.
func (c envoyCheck) configured(f translate.Feature) (bool, string) {
	switch f {
	case translate.FeatureBackendRefs:
		return direct(c.t) != 0 || len(c.t.Missing) > 0, "direct_response or a weighted entry naming no cluster"
	case translate.FeatureRetryAttempts:
		return c.policy != nil, "retry_policy"
	case translate.FeatureRetryCodes:
		if c.safePolicy() {
			return true, "the safe retry policy of " + c.method + ": retry_on " + c.policy.GetRetryOn()
		}
		return c.has("retriable-status-codes"), "retry_on " + c.policy.GetRetryOn()
	case translate.FeatureRetryConnectionErrors:
		return c.has("connect-failure", "reset", "reset-before-request", "5xx", "gateway-error"), "retry_on " + c.policy.GetRetryOn()
	case translate.FeatureRetryBackoff:
		return c.policy.GetRetryBackOff() != nil, "retry_back_off"
	case translate.FeatureRetryBackendTimeout:
		if c.safePolicy() {
			return true, "the safe retry policy of " + c.method + ": retry_on " + c.policy.GetRetryOn()
		}
		return c.policy.GetPerTryTimeout() != nil && c.has("reset", "5xx", "gateway-error"), "per_try_timeout with a reset token"
	case translate.FeatureBackendRequestTimeout:
		return c.policy.GetPerTryTimeout() != nil || c.route.GetRoute().GetTimeout() != nil, "per_try_timeout or timeout"
	case translate.FeatureRequestTimeout:
		return c.route.GetRoute().GetTimeout() != nil, "route timeout"
	}
	return false, ""
}

// approximated checks an approximated retry finding: everything the
// Gateway API asks must be configured except the exemptions its caveats
// state (bodies above the buffer limit, a clamped num_retries), and the
// num_retries of its configured fact must be the route's. POST,
// PATCH and LOCK without the opt-in take the safe policy instead, checked
// with the attempts finding.
func (c envoyCheck) approximated(f translate.Finding) []string {
	switch f.Feature {
	case translate.FeatureRetryAttempts, translate.FeatureRetryCodes, translate.FeatureRetryConnectionErrors:
	default:
		return nil
	}
	if !c.retrying || !c.asked || direct(c.t) != 0 {
		return nil
	}
	var problems []string
	if m := numRetriesFact.FindStringSubmatch(f.Configured); m != nil && m[1] != fmt.Sprint(c.retries()) {
		problems = append(problems, fmt.Sprintf("the finding says it configured num_retries %s, the route has %d", m[1], c.retries()))
	}
	if nonIdempotent(c.method) && !c.optIn {
		if f.Feature == translate.FeatureRetryAttempts && c.retries() != uint32(c.in.Attempts) && !c.clamped(f.Decision) {
			problems = append(problems, fmt.Sprintf("num_retries %d, want attempts %d", c.retries(), c.in.Attempts))
		}
		return problems
	}
	_, c.statedBody = caveat(f.Decision, report.CaveatBodyBufferLimit)
	c.statedClamp = c.clamped(f.Decision)
	return append(problems, c.honoured(f.Feature)...)
}

// numRetriesFact reads num_retries from a finding's configured fact
// ("num_retries 2"), which is data of the record, not its message.
var numRetriesFact = regexp.MustCompile(`\bnum_retries (\d+)\b`)

// retriedExactly returns why the request is not retried exactly as often
// as attempts asks, for every request the rule matches.
func (c envoyCheck) retriedExactly() []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !c.asked {
		if c.retries() != 0 {
			bad("attempts is 0, but the route has num_retries %d (retry_on %q)", c.retries(), c.policy.GetRetryOn())
		}
		return problems
	}
	if c.policy == nil {
		return []string{fmt.Sprintf("no retry_policy, want attempts %d", c.in.Attempts)}
	}
	if got := c.retries(); got != uint32(c.in.Attempts) && !c.statedClamp {
		bad("num_retries %d, want attempts %d", got, c.in.Attempts)
	}
	if !c.has(sentTokens...) {
		bad("retry_on %q retries only a request that never reached the backend", c.policy.GetRetryOn())
	}
	if !c.statedBody {
		bad("Envoy does not retry a request body larger than its buffer limit, %d bytes (per_request_buffer_limit_bytes), so not every request is retried", bufferLimit(c.t))
	}
	return problems
}

// honoured returns why the configuration does not do what the Gateway
// API says for a feature.
func (c envoyCheck) honoured(f translate.Feature) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if f == translate.FeatureBackendRefs {
		switch {
		case c.sc.Dead && direct(c.t) != 500:
			bad("the rule has no usable backend, but the route does not answer 500 itself (direct_response status %d)", direct(c.t))
		case !c.sc.Dead && len(c.t.Missing) == 0:
			bad("no weighted_clusters entry carries the invalid backendRefs' share: it goes to the valid backends")
		}
		return problems
	}
	if s := direct(c.t); s != 0 {
		return []string{fmt.Sprintf("the route answers %d itself (direct_response): it never contacts a backend, so %s never takes effect", s, f)}
	}
	routeTimeout := c.route.GetRoute().GetTimeout()
	switch f {
	case translate.FeatureRetryAttempts:
		problems = append(problems, c.retriedExactly()...)
		if c.asked {
			if !c.has("connect-failure", "reset", "reset-before-request", "5xx", "gateway-error", "retriable-status-codes") {
				bad("retry_on %q retries nothing", c.policy.GetRetryOn())
			}
			for _, cl := range c.t.Clusters {
				if max := maxRetries(cl); max < uint32(c.in.Attempts) || max <= 3 {
					bad("cluster %s allows %d concurrent retries (circuit_breakers max_retries; Envoy's default is 3)", cl.GetName(), max)
				}
			}
		}
	case translate.FeatureRetryCodes:
		if !c.asked {
			break
		}
		problems = append(problems, c.retriedExactly()...)
		var got []int
		for _, code := range c.policy.GetRetriableStatusCodes() {
			got = append(got, int(code))
		}
		slices.Sort(got)
		want := slices.Clone(c.in.Codes)
		slices.Sort(want)
		if !c.has("retriable-status-codes") || !slices.Equal(got, want) {
			bad("retriable status codes %v (retry_on %q), want exactly %v", got, c.policy.GetRetryOn(), want)
		}
		if c.has("5xx", "gateway-error", "retriable-4xx", "retriable-headers") {
			bad("retry_on %q also retries codes that are not listed", c.policy.GetRetryOn())
		}
	case translate.FeatureRetryConnectionErrors:
		if !c.asked {
			break
		}
		problems = append(problems, c.retriedExactly()...)
		if !c.has("connect-failure", "reset", "reset-before-request", "5xx", "gateway-error") {
			bad("retry_on %q does not retry refused connections", c.policy.GetRetryOn())
		}
		if !c.has("reset", "5xx", "gateway-error") {
			bad("retry_on %q does not retry a connection reset after the request was sent", c.policy.GetRetryOn())
		}
	case translate.FeatureRetryBackoff:
		if c.asked {
			bad("Envoy's back-off is full jitter from 0 (a retry can start at once), so backoff cannot be honoured")
		}
	case translate.FeatureRetryBackendTimeout:
		if !c.asked {
			break
		}
		problems = append(problems, c.retriedExactly()...)
		if c.in.BackendRequest == nil || *c.in.BackendRequest == 0 {
			break
		}
		if got := c.policy.GetPerTryTimeout().AsDuration(); got != *c.in.BackendRequest {
			bad("per_try_timeout %v, want backendRequest %v", got, *c.in.BackendRequest)
		}
		if !c.has("reset", "5xx", "gateway-error") {
			bad("retry_on %q does not retry a try cut by per_try_timeout (needs reset, 5xx or gateway-error)", c.policy.GetRetryOn())
		}
	case translate.FeatureBackendRequestTimeout:
		if c.in.BackendRequest == nil {
			bad("the rule sets no backendRequest")
			break
		}
		b := *c.in.BackendRequest
		switch {
		case b == 0:
			if c.policy.GetPerTryTimeout().AsDuration() != 0 {
				bad("backendRequest 0s, but per_try_timeout %v", c.policy.GetPerTryTimeout().AsDuration())
			}
			if c.in.Request == nil && (routeTimeout == nil || routeTimeout.AsDuration() != 0) {
				bad("backendRequest 0s and no request timeout, but the route timeout is %s (Envoy's default is 15s)", durationText(routeTimeout))
			}
			if c.in.Request == nil || *c.in.Request == 0 {
				if idle := idleTimeout(c.t); idle != 0 {
					bad("backendRequest 0s, but the stream idle timeout %v still cuts a quiet try", idle)
				}
			}
		case c.retrying:
			if got := c.policy.GetPerTryTimeout().AsDuration(); got != b {
				bad("per_try_timeout %v, want backendRequest %v", got, b)
			}
			if routeTimeout == nil && b >= 15*time.Second {
				bad("no route timeout: Envoy's default 15s ends the request before a try reaches backendRequest %v", b)
			}
		default:
			if routeTimeout == nil || routeTimeout.AsDuration() != b {
				bad("a single try: route timeout %v, want backendRequest %v", durationText(routeTimeout), b)
			}
		}
	case translate.FeatureRequestTimeout:
		if c.in.Request == nil {
			bad("the rule sets no request timeout")
			break
		}
		r := *c.in.Request
		single := !c.retrying && c.in.BackendRequest != nil && *c.in.BackendRequest > 0
		switch {
		case single && routeTimeout != nil && routeTimeout.AsDuration() == *c.in.BackendRequest && (r == 0 || *c.in.BackendRequest <= r):
			// One try bounded by backendRequest ends before request.
		case routeTimeout == nil:
			bad("no route timeout: Envoy's default 15s applies, want %v", r)
		case routeTimeout.AsDuration() != r:
			bad("route timeout %v, want request %v", routeTimeout.AsDuration(), r)
		case r == 0:
			if idle := idleTimeout(c.t); idle != 0 {
				bad("request 0s, but the stream idle timeout %v still cuts a quiet request", idle)
			}
		}
	}
	return problems
}

func maxRetries(c *clusterv3.Cluster) uint32 {
	for _, t := range c.GetCircuitBreakers().GetThresholds() {
		if t.GetPriority().String() == "DEFAULT" && t.GetMaxRetries() != nil {
			return t.GetMaxRetries().GetValue()
		}
	}
	return 3
}

func durationText(d *durationpb.Duration) string {
	if d == nil {
		return "unset"
	}
	return d.AsDuration().String()
}
