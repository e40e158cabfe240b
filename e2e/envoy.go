package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"sigs.k8s.io/yaml"

	// Typed configs a generated bootstrap holds, for protojson.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"

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

// DecodeEnvoy reads a generated envoy.yaml strictly into a bootstrap and
// runs go-control-plane's validation over it and its typed configs.
func DecodeEnvoy(data []byte) (*bootstrapv3.Bootstrap, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("envoy.yaml: %w", err)
	}
	bs := &bootstrapv3.Bootstrap{}
	if err := protojson.Unmarshal(j, bs); err != nil {
		return nil, fmt.Errorf("envoy.yaml as a bootstrap: %w", err)
	}
	if err := bs.ValidateAll(); err != nil {
		return nil, fmt.Errorf("envoy.yaml: ValidateAll: %w", err)
	}
	for _, l := range bs.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				if err := validateAny(f.GetTypedConfig()); err != nil {
					return nil, fmt.Errorf("listener %s filter %s: %w", l.GetName(), f.GetName(), err)
				}
			}
		}
	}
	return bs, nil
}

// validateAny unpacks a typed config and validates it, and the typed
// configs of an HTTP connection manager's filters and retry predicates.
func validateAny(a *anypb.Any) error {
	m, err := a.UnmarshalNew()
	if err != nil {
		return fmt.Errorf("unpacking %s: %w", a.GetTypeUrl(), err)
	}
	if v, ok := m.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			return fmt.Errorf("%s: %w", a.GetTypeUrl(), err)
		}
	}
	hcm, ok := m.(*hcmv3.HttpConnectionManager)
	if !ok {
		return nil
	}
	for _, f := range hcm.GetHttpFilters() {
		if err := validateAny(f.GetTypedConfig()); err != nil {
			return err
		}
	}
	for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			for _, p := range r.GetRoute().GetRetryPolicy().GetRetryHostPredicate() {
				if err := validateAny(p.GetTypedConfig()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// EnvoyRoute returns the route a request with this path and method takes
// (the first that matches, as Envoy does), and its cluster.
func EnvoyRoute(bs *bootstrapv3.Bootstrap, path, method string) (*routev3.Route, *clusterv3.Cluster, error) {
	for _, l := range bs.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				m, err := f.GetTypedConfig().UnmarshalNew()
				if err != nil {
					return nil, nil, err
				}
				hcm, ok := m.(*hcmv3.HttpConnectionManager)
				if !ok {
					continue
				}
				for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
					if !slices.Contains(vh.GetDomains(), "*") {
						continue
					}
					for _, r := range vh.GetRoutes() {
						ok, err := routeMatches(r.GetMatch(), path, method)
						if err != nil {
							return nil, nil, fmt.Errorf("route %s: %w", r.GetName(), err)
						}
						if ok {
							c := findCluster(bs, r.GetRoute().GetCluster())
							if c == nil {
								return nil, nil, fmt.Errorf("route %s: no cluster %q", r.GetName(), r.GetRoute().GetCluster())
							}
							return r, c, nil
						}
					}
				}
			}
		}
	}
	return nil, nil, fmt.Errorf("no route for %s %s", method, path)
}

func findCluster(bs *bootstrapv3.Bootstrap, name string) *clusterv3.Cluster {
	for _, c := range bs.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

// routeMatches evaluates the subset of route matching that gwretry
// generates; anything else is an error rather than a guess.
func routeMatches(m *routev3.RouteMatch, path, method string) (bool, error) {
	if len(m.GetQueryParameters()) > 0 || m.GetGrpc() != nil || m.GetRuntimeFraction() != nil {
		return false, errors.New("unsupported match (query, grpc or runtime)")
	}
	var ok bool
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		ok = strings.HasPrefix(path, p.Prefix)
	case *routev3.RouteMatch_Path:
		ok = path == p.Path
	case *routev3.RouteMatch_PathSeparatedPrefix:
		ok = path == p.PathSeparatedPrefix || strings.HasPrefix(path, strings.TrimSuffix(p.PathSeparatedPrefix, "/")+"/")
	case *routev3.RouteMatch_SafeRegex:
		re, err := regexp.Compile(`^(?:` + p.SafeRegex.GetRegex() + `)$`)
		if err != nil {
			return false, err
		}
		ok = re.MatchString(path)
	default:
		return false, fmt.Errorf("unsupported path match %T", p)
	}
	for _, h := range m.GetHeaders() {
		if h.GetName() != ":method" {
			return false, fmt.Errorf("unsupported header match on %s", h.GetName())
		}
		hit, err := stringMatches(h.GetStringMatch(), method)
		if err != nil {
			return false, err
		}
		ok = ok && (hit != h.GetInvertMatch())
	}
	return ok, nil
}

func stringMatches(sm *matcherv3.StringMatcher, s string) (bool, error) {
	switch p := sm.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		return s == p.Exact, nil
	case *matcherv3.StringMatcher_SafeRegex:
		re, err := regexp.Compile(`^(?:` + p.SafeRegex.GetRegex() + `)$`)
		if err != nil {
			return false, err
		}
		return re.MatchString(s), nil
	}
	return false, fmt.Errorf("unsupported string match %T", sm.GetMatchPattern())
}

// factsFor is what an approximated Envoy finding must state, per feature.
func factsFor(f translate.Feature) *regexp.Regexp {
	switch f {
	case translate.FeatureRetryAttempts:
		return attemptsFacts
	case translate.FeatureRetryConnectionErrors:
		return connFacts
	case translate.FeatureRetryBackendTimeout:
		return retryCutFacts
	case translate.FeatureRetryBackoff:
		return backoffFacts
	case translate.FeatureBackendRequestTimeout:
		return cutFacts
	case translate.FeatureRequestTimeout:
		return requestFacts
	}
	return regexp.MustCompile(`\d{3}`)
}

// nonIdempotent are the methods gwretry does not retry by default.
func nonIdempotent(method string) bool {
	return method == http.MethodPost || method == http.MethodPatch || method == "LOCK"
}

// envoyCheck holds what the static check reads for one scenario request.
type envoyCheck struct {
	in       Intent
	route    *routev3.Route
	policy   *routev3.RetryPolicy
	cluster  *clusterv3.Cluster
	retrying bool // the rule retries this method
	tokens   []string
}

// JudgeEnvoy checks the generated Envoy configuration of a scenario field
// by field against each finding of its rule: honoured must be configured
// as the Gateway API needs, approximated must be configured and state what
// differs, unsupported must not be configured. It returns one verdict per
// finding.
func JudgeEnvoy(bs *bootstrapv3.Bootstrap, sc Scenario, optIn bool, findings []translate.Finding) []Verdict {
	in, err := sc.Intent()
	if err != nil {
		return []Verdict{{Outcome: Contradicted, Reason: err.Error()}}
	}
	route, cluster, err := EnvoyRoute(bs, sc.Path(), sc.method())
	if err != nil {
		return []Verdict{{Outcome: Contradicted, Reason: err.Error()}}
	}
	c := envoyCheck{in: in, route: route, cluster: cluster, policy: route.GetRoute().GetRetryPolicy(),
		retrying: in.Retry && in.Attempts > 0 && (optIn || !nonIdempotent(sc.method()))}
	if c.policy != nil {
		c.tokens = strings.Split(c.policy.GetRetryOn(), ",")
	}
	var verdicts []Verdict
	for _, f := range findings {
		problems := c.check(f, findings, sc.method(), optIn)
		v := Verdict{Feature: f.Feature, Status: f.Status, Outcome: Backed, Reason: "configured as the finding says"}
		if len(problems) > 0 {
			v.Outcome = Contradicted
			routeJSON, _ := protojson.Marshal(route)
			v.Reason = fmt.Sprintf("REPORT AND GENERATED ENVOY CONFIG DISAGREE\n  finding: envoy %s rule %d %s = %s %q\n  config: %s\n  route %s: %s",
				f.Route, f.Rule, f.Feature, f.Status, f.Message, strings.Join(problems, "; "), route.GetName(), routeJSON)
		}
		verdicts = append(verdicts, v)
	}
	return verdicts
}

// check returns what is wrong with one finding.
func (c envoyCheck) check(f translate.Finding, all []translate.Finding, method string, optIn bool) []string {
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
		if !factsFor(f.Feature).MatchString(f.Message) {
			bad("the approximated message does not say what differs (matching %v)", factsFor(f.Feature))
		}
	case translate.Unsupported:
		if configured {
			bad("unsupported, but it is configured (%s)", why)
		}
	}
	if f.Feature == translate.FeatureRetryAttempts && c.in.Attempts > 0 && nonIdempotent(method) && !optIn {
		said := false
		for _, g := range all {
			if g.Feature == translate.FeatureRetryAttempts || g.Feature == translate.FeatureRetryCodes {
				said = said || postFacts.MatchString(g.Message)
			}
		}
		if !said {
			bad("%s is not retried by default, but neither the attempts nor the codes finding says so", method)
		}
	}
	return problems
}

func (c envoyCheck) has(tokens ...string) bool {
	for _, t := range tokens {
		if slices.Contains(c.tokens, t) {
			return true
		}
	}
	return false
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
	case translate.FeatureRetryAttempts:
		return c.policy != nil, "retry_policy"
	case translate.FeatureRetryCodes:
		return c.has("retriable-status-codes"), "retry_on " + c.policy.GetRetryOn()
	case translate.FeatureRetryConnectionErrors:
		return c.has("connect-failure", "reset", "reset-before-request", "5xx", "gateway-error"), "retry_on " + c.policy.GetRetryOn()
	case translate.FeatureRetryBackoff:
		return c.policy.GetRetryBackOff() != nil, "retry_back_off"
	case translate.FeatureRetryBackendTimeout:
		return c.policy.GetPerTryTimeout() != nil && c.has("reset", "5xx", "gateway-error"), "per_try_timeout with a reset token"
	case translate.FeatureBackendRequestTimeout:
		return c.policy.GetPerTryTimeout() != nil || c.route.GetRoute().GetTimeout() != nil, "per_try_timeout or timeout"
	case translate.FeatureRequestTimeout:
		return c.route.GetRoute().GetTimeout() != nil, "route timeout"
	}
	return false, ""
}

// honoured returns why the configuration does not do what the Gateway
// API says for a feature.
func (c envoyCheck) honoured(f translate.Feature) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	routeTimeout := c.route.GetRoute().GetTimeout()
	switch f {
	case translate.FeatureRetryAttempts:
		if !c.retrying {
			if c.retries() != 0 {
				bad("this request must not be retried, but the route has num_retries %d", c.retries())
			}
			break
		}
		if got := c.retries(); got != uint32(c.in.Attempts) {
			bad("num_retries %d, want attempts %d", got, c.in.Attempts)
		}
		if !c.has("connect-failure", "reset", "reset-before-request", "5xx", "gateway-error", "retriable-status-codes") {
			bad("retry_on %q retries nothing", c.policy.GetRetryOn())
		}
		if max := maxRetries(c.cluster); max < uint32(c.in.Attempts) || max <= 3 {
			bad("cluster %s allows %d concurrent retries (circuit_breakers max_retries; Envoy's default is 3)", c.cluster.GetName(), max)
		}
	case translate.FeatureRetryCodes:
		if !c.retrying {
			break
		}
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
		if !c.retrying {
			break
		}
		if !c.has("connect-failure", "reset", "reset-before-request", "5xx", "gateway-error") {
			bad("retry_on %q does not retry refused connections", c.policy.GetRetryOn())
		}
		if !c.has("reset", "5xx", "gateway-error") {
			bad("retry_on %q does not retry a connection reset after the request was sent", c.policy.GetRetryOn())
		}
	case translate.FeatureRetryBackoff:
		bad("Envoy's back-off is full jitter from 0 (a retry can start at once), so backoff cannot be honoured")
	case translate.FeatureRetryBackendTimeout:
		if !c.retrying {
			break
		}
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
		case c.retrying:
			if got := c.policy.GetPerTryTimeout().AsDuration(); got != b {
				bad("per_try_timeout %v, want backendRequest %v", got, b)
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
