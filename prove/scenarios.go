package prove

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/translate"
)

// Timings of the scenarios: short, so that the suite stays fast, and far
// enough apart that loopback jitter cannot blur them.
const (
	backoff        = 200 * time.Millisecond
	backendRequest = 300 * time.Millisecond
	requestTimeout = 400 * time.Millisecond
	slow           = time.Second
)

// Namespace of every scenario route; Service names are the endpoints'
// scenario names.
const Namespace = "e2e"

// Endpoint is one address of a scenario's Service: a flaky server that
// plays Script on the scenario path, or a refused port.
type Endpoint struct {
	Name    string
	Refused bool
	Script  flaky.Script
}

// Scenario is one route rule, the backend's behaviour, the requests sent
// and what the judge expects.
type Scenario struct {
	// Name is the route name and, with a leading slash, its path prefix
	// and the request path.
	Name string
	// Mirrors names the Gateway API conformance test it mirrors, if any.
	Mirrors string
	// Retry and Timeouts are the rule's YAML (flow style), "" for none.
	Retry, Timeouts string
	// Endpoints of the rule's Service; one flaky endpoint "a" when empty.
	Endpoints []Endpoint
	// Method of the requests (GET when empty) and how many are sent one
	// after the other (1 when 0).
	Method   string
	Requests int
	// BodyBytes is the size of the request body of methods that have one
	// (a small JSON body when 0).
	BodyBytes int
	// KeepAlive keeps client and upstream connections alive: a warm-up
	// request opens them, and the measured requests reuse them.
	KeepAlive bool
	// Dead makes the scenario's rule refer only to a backend that is not a
	// Service, so that it has no usable backend, and adds a catch-all rule
	// to the same route that the requests must not fall through to.
	Dead bool
	// RetryNonIdempotent runs the CLI with --retry-non-idempotent.
	RetryNonIdempotent bool
	// WantBody, when set, is the body a complete answer has.
	WantBody string
	// Header are headers sent with every request besides the match's
	// (the old values of the headers a filter changes).
	Header map[string]string
	// User is set for a scenario derived from a user's own rule (see
	// Derive): it then runs on the user's manifests instead of Manifest.
	User *UserRule
	Test
}

// UserRule places a scenario on a rule of a user's manifests: the rule,
// the request that its match selects, and the Services whose endpoints the
// scripted backend stands in for.
type UserRule struct {
	// Route is "namespace/name" of the HTTPRoute; Rule the rule's index.
	Route string
	Rule  int
	// Path (with the query string, if the match needs one), Host and
	// Header make a request that the rule's first match selects.
	Path   string
	Host   string
	Header map[string]string
	// Method is the method the match selects, "" for any (the scenarios
	// then send GET, and a POST where NoPost is false).
	Method string
	// NoPost is true when a POST to Path is taken by a rule that
	// precedes this one.
	NoPost bool
	// BackendPath is the path the backend gets when the rule's URLRewrite
	// changes it ("" when it does not): the endpoints' scripts play there
	// too.
	BackendPath string
	// MatchPath and MatchType are the path match the request was made
	// from (a prefix rewrite or redirect replaces the part it matched).
	MatchPath string
	MatchType translate.PathMatchType
	// TLS sends the requests over TLS to the rule's HTTPS listener, with
	// the virtual host's name as SNI; Secret and CertFile are the
	// certificate it must serve. ListenTLS is the --listen-https address
	// the run binds (set by Observe).
	TLS                         bool
	Secret, CertFile, ListenTLS string
	// Mirrors are the --endpoint keys of the Services the rule's
	// RequestMirror filters copy requests to, served by the mirror
	// endpoint (MirrorEndpoint), whose hits are a request's Mirrored.
	Mirrors []string
	// Services are the --endpoint keys ("name.namespace:port") of the
	// rule's backends, served by the scenario's endpoints; Others are the
	// keys of every other Service, served by a stray endpoint whose hits
	// show a request that went elsewhere.
	Services, Others []string
}

// Path is the request path and the rule's PathPrefix.
func (s Scenario) Path() string {
	if s.User != nil {
		return s.User.Path
	}
	return "/" + s.Name
}

// Route is "namespace/name" of the scenario's HTTPRoute, as in the report.
func (s Scenario) Route() string {
	if s.User != nil {
		return s.User.Route
	}
	return Namespace + "/" + s.Name
}

// RuleIndex is the index of the scenario's rule in its route.
func (s Scenario) RuleIndex() int {
	if s.User != nil {
		return s.User.Rule
	}
	return 0
}

// RequestMethod returns the request method.
func (s Scenario) RequestMethod() string { return s.method() }

// method returns the request method.
func (s Scenario) method() string {
	if s.Method == "" {
		return http.MethodGet
	}
	return s.Method
}

// body is the request body: BodyBytes bytes, or a small JSON body, for the
// methods that have one.
func (s Scenario) body() string {
	if !slices.Contains([]string{http.MethodPost, http.MethodPut, http.MethodPatch}, s.method()) {
		return ""
	}
	if s.BodyBytes > 0 {
		return strings.Repeat("x", s.BodyBytes)
	}
	return `{"e2e":true}`
}

func (s Scenario) requests() int {
	if s.Requests == 0 {
		return 1
	}
	return s.Requests
}

// ScriptedEndpoints are the backend's endpoints: Endpoints, else one
// endpoint named a with an empty script.
func (s Scenario) ScriptedEndpoints() []Endpoint {
	if len(s.Endpoints) == 0 {
		return []Endpoint{{Name: "a"}}
	}
	return s.Endpoints
}

// ReadyPath is served by a separate route and endpoint in every manifest;
// the harness polls it until the proxy has loaded its configuration.
const ReadyPath = "/ready"

// Manifest returns the scenario's HTTPRoute and the readiness route.
func (s Scenario) Manifest() string {
	var rule strings.Builder
	fmt.Fprintf(&rule, "  - matches: [{path: {type: PathPrefix, value: %s}}]\n", s.Path())
	if s.Retry != "" {
		fmt.Fprintf(&rule, "    retry: %s\n", s.Retry)
	}
	if s.Timeouts != "" {
		fmt.Fprintf(&rule, "    timeouts: %s\n", s.Timeouts)
	}
	if s.Dead {
		fmt.Fprintf(&rule, "    backendRefs: [{name: %s, group: example.com, kind: Bucket, port: 8080}]\n", s.Name)
		fmt.Fprintf(&rule, "  - matches: [{path: {type: PathPrefix, value: /}}]\n")
	}
	fmt.Fprintf(&rule, "    backendRefs: [{name: %s, port: 8080}]\n", s.Name)
	return RouteManifest(s.Name, rule.String()) + "---\n" +
		RouteManifest("ready", fmt.Sprintf("  - matches: [{path: {type: PathPrefix, value: %s}}]\n    backendRefs: [{name: ready, port: 8080}]\n", ReadyPath))
}

func RouteManifest(name, rules string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: %s
  namespace: %s
spec:
  parentRefs: [{name: same-namespace}]
  rules:
%s`, name, Namespace, rules)
}

func boolPtr(b bool) *bool { return &b }

// codesClaim: a listed code answered by the first try is retried.
func codesClaim(code int) Claim {
	return Claim{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: Shortfall{Class: ListedCodeNotRetried, Code: code},
		Otherwise: []Expect{{Hits: Exactly(1), Status: code}}}
}

// attemptsClaim: exactly attempts retries happen when every try fails.
func attemptsClaim(attempts int, otherwise ...Expect) Claim {
	if len(otherwise) == 0 {
		otherwise = []Expect{{Hits: Between(2, attempts)}, {Hits: AtLeast(attempts + 2)}}
	}
	return Claim{Feature: translate.FeatureRetryAttempts, InEffect: true, Shortfall: Shortfall{Class: AttemptsNotKept}, Otherwise: otherwise}
}

// Shortfalls of the scenarios without values to check.
var (
	attemptsShort       = Shortfall{Class: AttemptsNotKept}
	closedShort         = Shortfall{Class: ConnectionNotRetried}
	refusedShort        = Shortfall{Class: RefusedNotRetried}
	cutTryShort         = Shortfall{Class: CutTryNotRetried}
	nonIdempotentShort  = Shortfall{Class: NonIdempotentNotRetried}
	retriedByDefault    = Shortfall{Class: NonIdempotentRetried}
	bodyShort           = Shortfall{Class: BodyNotRetried}
	disabledCut         = Shortfall{Class: CutWhileDisabled}
	resentShort         = Shortfall{Class: Resent}
	closedUnanswered    = Shortfall{Class: ClosedUnanswered}
	notAnswered500Short = Shortfall{Class: NotAnswered500}
)

// Scenarios returns the scenario table. Every scenario has its own route,
// so one rule's configuration cannot disturb another.
func Scenarios() []Scenario {
	const codes500 = "{codes: [500], attempts: 3}"
	const codesAll = "{codes: [500, 502, 503, 504], attempts: 2}"
	return []Scenario{
		{
			Name: "code-500-attempts-3-recovers", Mirrors: "HTTPRouteRetry (/retry/code-500-attempts-3, fails twice)",
			Retry: codes500, Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(2, 500)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(3)}, Claims: []Claim{
				codesClaim(500),
				attemptsClaim(3, Expect{Status: 500, Hits: Exactly(2)}),
			}},
		},
		{
			Name: "code-500-attempts-3-exhausts", Mirrors: "HTTPRouteRetry (/retry/code-500-attempts-3, fails 4 times)",
			Retry: codes500, Endpoints: []Endpoint{{Name: "a", Script: flaky.AlwaysFail(500)}},
			Test: Test{Spec: Expect{Status: 500, Hits: Exactly(4)}, Claims: []Claim{
				codesClaim(500), attemptsClaim(3),
			}},
		},
		{
			Name: "unlisted-code-not-retried", Mirrors: "HTTPRouteRetry (/retry/code-500-attempts-3, 503)",
			Retry: codes500, Endpoints: []Endpoint{{Name: "a", Script: flaky.AlwaysFail(503)}},
			Test: Test{Spec: Expect{Status: 503, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, Shortfall: Shortfall{Class: UnlistedCodeRetried, Code: 503},
					Otherwise: []Expect{{Hits: AtLeast(2)}}},
			}},
		},
		{
			Name: "code-all-attempts-2-recovers", Mirrors: "HTTPRouteRetry (/retry/code-all-attempts-2, 502 then 504)",
			Retry: codesAll, Endpoints: []Endpoint{{Name: "a", Script: flaky.Steps(flaky.Action{Status: 502}, flaky.Action{Status: 504})}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(3)}, Claims: []Claim{
				codesClaim(502),
				{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: Shortfall{Class: ListedCodeNotRetried, Code: 504},
					Otherwise: []Expect{{Hits: Exactly(2), Status: 504}}},
			}},
		},
		{
			Name: "code-all-attempts-2-503", Mirrors: "HTTPRouteRetry (/retry/code-all-attempts-2, 503 once)",
			Retry: codesAll, Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 503)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{codesClaim(503)}},
		},
		{
			Name: "code-all-attempts-2-exhausts", Mirrors: "HTTPRouteRetry (/retry/code-all-attempts-2, fails 3 times)",
			Retry: codesAll, Endpoints: []Endpoint{{Name: "a", Script: flaky.AlwaysFail(503)}},
			Test: Test{Spec: Expect{Status: 503, Hits: Exactly(3)}, Claims: []Claim{
				codesClaim(503), attemptsClaim(2),
			}},
		},
		{
			Name: "attempts-0-no-retry", Mirrors: "HTTPRouteRetry (/retry/code-all-attempts-0)",
			Retry: "{codes: [500, 502, 503, 504], attempts: 0}", Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 500, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRetryAttempts, Shortfall: attemptsShort, Otherwise: []Expect{{Hits: AtLeast(2)}}},
			}},
		},
		{
			Name: "code-429", Retry: "{codes: [429], attempts: 1}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 429)}},
			Test:      Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{codesClaim(429)}},
		},
		{
			Name: "code-501", Retry: "{codes: [501], attempts: 1}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 501)}},
			Test:      Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{codesClaim(501)}},
		},
		{
			Name: "connection-closed-retried", Retry: "{attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.CloseFirst(1)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: closedShort,
					Otherwise: []Expect{{Hits: Exactly(1), Failed: true}}},
			}},
		},
		{
			Name: "connection-closed-exhausts", Retry: "{attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.CloseAlways()}},
			Test: Test{Spec: Expect{Failed: true, Hits: Exactly(3)}, Claims: []Claim{
				{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: closedShort,
					Otherwise: []Expect{{Hits: Exactly(1), Failed: true}}},
				attemptsClaim(2),
			}},
		},
		{
			Name: "connection-refused-retried", Mirrors: "HTTPRouteRetryConnectionError",
			Retry:     "{attempts: 3}",
			Endpoints: []Endpoint{{Name: "broken", Refused: true}, {Name: "healthy"}},
			Requests:  6,
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(1), LastEndpoint: "healthy"}, Claims: []Claim{
				{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: refusedShort,
					Otherwise: []Expect{{Failed: true}}},
			}},
		},
		{
			Name: "several-endpoints", Retry: codes500,
			Endpoints: []Endpoint{{Name: "failing", Script: flaky.AlwaysFail(500)}, {Name: "healthy"}},
			Requests:  4,
			Test: Test{Spec: Expect{Status: 200, Hits: Between(1, 4), LastEndpoint: "healthy"}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: Shortfall{Class: ListedCodeNotRetried, Code: 500},
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
				{Feature: translate.FeatureRetryAttempts, InEffect: true, Shortfall: attemptsShort,
					Otherwise: []Expect{{Status: 500}}},
			}},
		},
		{
			Name: "backend-timeout-retried", Retry: "{codes: [500], attempts: 2}", Timeouts: "{backendRequest: 300ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.DelayFirst(1, slow)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2), FirstCut: cutWindow(backendRequest), Duration: &Window{Max: slow}},
				Claims: []Claim{
					{Feature: translate.FeatureBackendRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: TryNotCut, Timer: backendRequest},
						Otherwise: []Expect{{Duration: &Window{Min: slow}}}},
					{Feature: translate.FeatureRetryBackendTimeout, InEffect: true, Shortfall: cutTryShort,
						Otherwise: []Expect{{Hits: Exactly(1)}}},
				}},
		},
		{
			Name: "backend-timeout-exhausts", Mirrors: "HTTPRouteRetryWithBackendTimeout (1s delay)",
			Retry: codes500, Timeouts: "{backendRequest: 300ms, request: 5s}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.DelayAlways(slow)}},
			Test: Test{Spec: Expect{Status: 504, Hits: Exactly(4), EveryTryCut: true}, Claims: []Claim{
				{Feature: translate.FeatureBackendRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: TryNotCut, Timer: backendRequest},
					Otherwise: []Expect{{Duration: &Window{Min: slow}, Hits: Exactly(1)}}},
				{Feature: translate.FeatureRetryBackendTimeout, InEffect: true, Shortfall: cutTryShort,
					Otherwise: []Expect{{Hits: Exactly(1)}}},
				attemptsClaim(3),
			}},
		},
		{
			Name: "backend-timeout-slow-failures", Mirrors: "HTTPRouteRetryWithBackendTimeout (two delayed failures)",
			Retry: codes500, Timeouts: "{backendRequest: 300ms, request: 5s}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.Steps(
				flaky.Action{Status: 500, Delay: 100 * time.Millisecond}, flaky.Action{Status: 500, Delay: 100 * time.Millisecond})}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(3)}, Claims: []Claim{codesClaim(500)}},
		},
		{
			Name: "backend-request-timeout", Mirrors: "HTTPRouteTimeoutBackendRequest (/backend-timeout)",
			Timeouts:  "{backendRequest: 300ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.DelayAlways(slow)}},
			Test: Test{Spec: Expect{Status: 504, Hits: Exactly(1), FirstCut: cutWindow(backendRequest)}, Claims: []Claim{
				{Feature: translate.FeatureBackendRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: TryNotCut, Timer: backendRequest},
					Otherwise: []Expect{{Status: 200}}},
			}},
		},
		{
			Name: "backend-request-timeout-disabled", Mirrors: "HTTPRouteTimeoutBackendRequest (/disable-backend-timeout)",
			Timeouts:  `{backendRequest: "0s"}`,
			Endpoints: []Endpoint{{Name: "a", Script: flaky.DelayAlways(600 * time.Millisecond)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureBackendRequestTimeout, Shortfall: disabledCut, Otherwise: []Expect{{Status: 504}}},
			}},
		},
		{
			// The body arrives in 4 chunks 400ms apart: never silent for
			// 500ms, but 1.2s in total. (400ms, not less: nginx defers
			// moving a timer by less than 300ms, which would make its idle
			// timer act as a total.)
			Name: "backend-request-slow-body", Timeouts: "{backendRequest: 500ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.Script{Then: flaky.Action{Chunks: 4, ChunkEvery: 400 * time.Millisecond}}}},
			WantBody:  strings.Repeat(flaky.ChunkedBody(4), 4),
			Test: Test{Spec: Expect{Complete: boolPtr(false), Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureBackendRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: BodyNotCut, Timer: 500 * time.Millisecond},
					Otherwise: []Expect{{Status: 200, Complete: boolPtr(true)}}},
			}},
		},
		{
			Name: "request-timeout", Mirrors: "HTTPRouteTimeoutRequest (/request-timeout)",
			Timeouts:  "{request: 400ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.DelayAlways(slow)}},
			Test: Test{Spec: Expect{Status: 504, Hits: Exactly(1), Duration: cutWindow(requestTimeout)}, Claims: []Claim{
				{Feature: translate.FeatureRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: RequestNotCut, Timer: requestTimeout},
					Otherwise: []Expect{{Status: 200}}},
			}},
		},
		{
			Name: "request-timeout-disabled", Mirrors: "HTTPRouteTimeoutRequest (/disable-request-timeout)",
			Timeouts:  `{request: "0s"}`,
			Endpoints: []Endpoint{{Name: "a", Script: flaky.DelayAlways(600 * time.Millisecond)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRequestTimeout, Shortfall: disabledCut, Otherwise: []Expect{{Status: 504}}},
			}},
		},
		{
			Name: "retry-within-request-timeout", Mirrors: "HTTPRouteRetryWithRequestTimeout (one failure)",
			Retry: "{codes: [500], attempts: 5}", Timeouts: "{request: 400ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test:      Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{codesClaim(500)}},
		},
		{
			Name: "retries-exceed-request-timeout", Mirrors: "HTTPRouteRetryWithRequestTimeout (delayed failures)",
			Retry: "{codes: [500], attempts: 5}", Timeouts: "{request: 400ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.Steps(
				flaky.Action{Status: 500, Delay: 250 * time.Millisecond},
				flaky.Action{Status: 500, Delay: 250 * time.Millisecond},
				flaky.Action{Status: 500, Delay: 250 * time.Millisecond})}},
			Test: Test{Spec: Expect{Status: 504, Hits: Between(1, 2), Duration: cutWindow(requestTimeout)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, Shortfall: Shortfall{Class: ListedCodeNotRetried, Code: 500},
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
				{Feature: translate.FeatureRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: RequestNotCut, Timer: requestTimeout},
					Otherwise: []Expect{{Status: 200}, {Status: 500}}},
			}},
		},
		{
			Name: "backoff-between-tries", Retry: "{codes: [500], attempts: 2, backoff: 200ms}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(2, 500)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(3), MinGap: backoff}, Claims: []Claim{
				codesClaim(500),
				{Feature: translate.FeatureRetryBackoff, InEffect: true, Shortfall: Shortfall{Class: NoDelay, Timer: backoff},
					Otherwise: []Expect{{ShortGap: backoff}}},
			}},
		},
		{
			// A refused try is invisible to the backend, so the gap is
			// measured by the client: refusals on loopback are instant.
			Name: "backoff-after-refusal", Retry: "{attempts: 1, backoff: 200ms}",
			Endpoints: []Endpoint{{Name: "broken", Refused: true}},
			Test: Test{Spec: Expect{Failed: true, Duration: &Window{Min: backoff}}, Claims: []Claim{
				{Feature: translate.FeatureRetryBackoff, Shortfall: Shortfall{Class: NoDelay, Timer: backoff},
					Otherwise: []Expect{{Duration: &Window{Max: backoff - time.Millisecond}}}},
			}},
		},
		{
			Name: "post-not-retried-by-default", Method: http.MethodPost, Retry: "{codes: [500], attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 500, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, Shortfall: retriedByDefault, Otherwise: []Expect{{Hits: AtLeast(2)}}},
			}},
		},
		{
			Name: "patch-not-retried-by-default", Method: http.MethodPatch, Retry: "{codes: [500], attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 500, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, Shortfall: retriedByDefault, Otherwise: []Expect{{Hits: AtLeast(2)}}},
			}},
		},
		{
			Name: "put-retried-by-default", Method: http.MethodPut, Retry: "{codes: [500], attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test:      Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{codesClaim(500)}},
		},
		{
			Name: "post-connection-closed-not-retried-by-default", Method: http.MethodPost, Retry: "{attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.CloseFirst(1)}},
			Test: Test{Spec: Expect{Failed: true, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRetryConnectionErrors, Shortfall: retriedByDefault, Otherwise: []Expect{{Hits: AtLeast(2)}}},
			}},
		},
		{
			Name: "post-connection-closed-retried-with-opt-in", Method: http.MethodPost, Retry: "{attempts: 2}",
			RetryNonIdempotent: true,
			Endpoints:          []Endpoint{{Name: "a", Script: flaky.CloseFirst(1)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: closedShort,
					Otherwise: []Expect{{Hits: Exactly(1), Failed: true}}},
			}},
		},
		{
			Name: "post-retried-with-opt-in", Method: http.MethodPost, Retry: "{codes: [500], attempts: 2}",
			RetryNonIdempotent: true,
			Endpoints:          []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: Shortfall{Class: ListedCodeNotRetried, Code: 500},
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
			}},
		},
		{
			Name: "post-4k-body-retried-with-opt-in", Method: http.MethodPost, BodyBytes: 4 << 10,
			Retry: "{codes: [500], attempts: 2}", RetryNonIdempotent: true,
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: bodyShort,
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
			}},
		},
		{
			Name: "post-100k-body-retried-with-opt-in", Method: http.MethodPost, BodyBytes: 100 << 10,
			Retry: "{codes: [500], attempts: 2}", RetryNonIdempotent: true,
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: bodyShort,
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
				{Feature: translate.FeatureRetryAttempts, InEffect: true, Shortfall: bodyShort,
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
			}},
		},
		{
			Name: "post-100k-body-not-retried-by-default", Method: http.MethodPost, BodyBytes: 100 << 10,
			Retry:     "{codes: [500], attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.FailFirst(1, 500)}},
			Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryCodes, Shortfall: nonIdempotentShort,
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
				{Feature: translate.FeatureRetryAttempts, Shortfall: nonIdempotentShort,
					Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}},
			}},
		},
		{
			// The backend drops the kept-alive upstream connection as the
			// proxy reuses it: with attempts 0 nothing may re-send it, and
			// the client must still get an HTTP error.
			Name: "keepalive-close-attempts-0", KeepAlive: true,
			Retry:     "{codes: [500], attempts: 0}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.Script{Then: flaky.Action{CloseIfReused: true}}}},
			// A proxy that opens a new upstream connection per request
			// gets a 200; one that reuses it must answer an error.
			Test: Test{Spec: Expect{Answered: true, Hits: Exactly(1)}, Claims: []Claim{
				{Feature: translate.FeatureRetryAttempts, Shortfall: resentShort, Otherwise: []Expect{{Hits: AtLeast(2)}}},
				{Feature: translate.FeatureRetryConnectionErrors, Shortfall: closedUnanswered, Otherwise: []Expect{{NoAnswer: true}}},
			}},
		},
		{
			Name: "keepalive-close-retried", KeepAlive: true, Retry: "{attempts: 2}",
			Endpoints: []Endpoint{{Name: "a", Script: flaky.Script{First: []flaky.Action{{}, {CloseIfReused: true}}}}},
			Test: Test{Spec: Expect{Status: 200, Hits: Between(1, 2)}, Claims: []Claim{
				{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: closedShort,
					Otherwise: []Expect{{Hits: Exactly(1), Failed: true}}},
				{Feature: translate.FeatureRetryAttempts, Shortfall: resentShort, Otherwise: []Expect{{Hits: AtLeast(3)}}},
			}},
		},
		{
			// A rule whose only backendRef is not a Service: its requests
			// get 500 and never reach the catch-all rule after it.
			Name: "dead-rule-answers-500", Dead: true, Retry: "{codes: [500], attempts: 2}",
			Endpoints: []Endpoint{{Name: "fallback"}},
			Test: Test{Spec: Expect{Status: 500, Hits: Exactly(0)}, Claims: []Claim{
				{Feature: translate.FeatureBackendRefs, InEffect: true, Shortfall: notAnswered500Short,
					Otherwise: []Expect{{Hits: AtLeast(1)}, {Status: 503}, {Status: 502}, {Status: 404}}},
			}},
		},
	}
}

// cutWindow is when a proxy timeout of d is expected to fire, with room
// for loopback and scheduling delays.
func cutWindow(d time.Duration) *Window {
	return &Window{Min: d - 50*time.Millisecond, Max: d + 400*time.Millisecond}
}
