package envoy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// EgctlVersion is the Envoy Gateway release whose egctl the comparison
// runs (make deps builds it into the cache).
const EgctlVersion = "v1.9.1"

// egctlPath finds egctl: GWRETRY_EGCTL, else the cached build of make deps.
func egctlPath() string {
	if p := os.Getenv("GWRETRY_EGCTL"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	p := filepath.Join(cache, "gwretry", "egctl-"+EgctlVersion, "egctl")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// egctlBase is what every case shares: what egctl needs to translate (a
// GatewayClass of Envoy Gateway's controller, a Service with a clusterIP)
// and a Gateway with two listeners.
const egctlBase = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: eg}
spec: {controllerName: gateway.envoyproxy.io/gatewayclass-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: eg
  listeners:
  - {name: http, port: 8080, protocol: HTTP}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: default}
spec:
  clusterIP: 10.96.0.10
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
%s`

// egRule is one rule of the case's route: its path prefix and the rest of
// its fields (indented YAML after the backendRefs).
func egRule(path, extra string) string {
	return fmt.Sprintf("  - matches: [{path: {type: PathPrefix, value: %s}}]\n    backendRefs: [{name: cart, port: 80}]\n%s", path, extra)
}

func egNamedRule(name, path, extra string) string {
	return fmt.Sprintf("  - name: %s\n    matches: [{path: {type: PathPrefix, value: %s}}]\n    backendRefs: [{name: cart, port: 80}]\n%s", name, path, extra)
}

// egPolicy is a BackendTrafficPolicy named name targeting target ("HTTPRoute
// r", "Gateway gw", "HTTPRoute r/rule") with spec (indented YAML).
func egPolicy(name, target, created, spec string) string {
	kind, obj, _ := strings.Cut(target, " ")
	obj, section, _ := strings.Cut(obj, "/")
	ref := fmt.Sprintf("{group: gateway.networking.k8s.io, kind: %s, name: %s", kind, obj)
	if section != "" {
		ref += ", sectionName: " + section
	}
	return fmt.Sprintf("---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nmetadata: {name: %s, namespace: default, creationTimestamp: %q}\nspec:\n  targetRefs: [%s}]\n%s", name, created, ref, spec)
}

// egctlCases is the corpus: each case a route's rules and the policies.
var egctlCases = []struct {
	name, rules, policies string
}{
	{"defaults", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {}\n")},
	{"numRetries", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 5}\n")},
	{"numRetries 0", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 0}\n")},
	{"empty retryOn", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {}}\n")},
	{"httpStatusCodes without triggers", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 3, retryOn: {httpStatusCodes: [429, 502, 503]}}\n")},
	{"connect-failure and retriable-status-codes", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [connect-failure, retriable-status-codes], httpStatusCodes: [503]}}\n")},
	{"reset-before-request", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [reset-before-request]}}\n")},
	{"reset", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [connect-failure, reset]}}\n")},
	{"5xx", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [5xx]}}\n")},
	{"gateway-error and retriable-4xx", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [gateway-error, retriable-4xx]}}\n")},
	{"codes without their trigger", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [connect-failure], httpStatusCodes: [429]}}\n")},
	{"perRetry.timeout", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 2, retryOn: {triggers: [connect-failure, reset]}, perRetry: {timeout: 250ms}}\n")},
	{"backOff", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {perRetry: {backOff: {baseInterval: 100ms, maxInterval: 1s}}}\n")},
	{"requestTimeout", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  timeout: {http: {requestTimeout: 5s}}\n")},
	{"retry and requestTimeout", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1, perRetry: {timeout: 1s}}\n  timeout: {http: {requestTimeout: 5s}}\n")},
	{"rule's own retry replaces the policy's", egRule("/a", "    retry: {attempts: 1, codes: [500]}\n    timeouts: {request: 4s, backendRequest: 2s}\n"),
		egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 4, retryOn: {triggers: [gateway-error]}, perRetry: {timeout: 1s}}\n  timeout: {http: {requestTimeout: 9s}}\n")},
	{"rule's request beats requestTimeout", egRule("/a", "    timeouts: {request: 4s}\n"), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1}\n  timeout: {http: {requestTimeout: 9s}}\n")},
	{"rule's backendRequest beside a policy's retry", egRule("/a", "    timeouts: {backendRequest: 4s}\n"),
		egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1, retryOn: {triggers: [reset]}, perRetry: {timeout: 1s}}\n  timeout: {http: {requestTimeout: 9s}}\n")},
	{"rule's request and backendRequest beside a policy's retry", egRule("/a", "    timeouts: {request: 8s, backendRequest: 4s}\n"),
		egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1, retryOn: {triggers: [reset]}}\n")},
	{"rule's backendRequest beats requestTimeout", egRule("/a", "    timeouts: {backendRequest: 4s}\n"), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  timeout: {http: {requestTimeout: 3s}}\n")},
	{"route's policy beats the Gateway's", egRule("/a", ""),
		egPolicy("p", "HTTPRoute r", "2024-01-02T00:00:00Z", "  retry: {numRetries: 4, retryOn: {triggers: [connect-failure]}}\n") +
			egPolicy("g", "Gateway gw", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1}\n  timeout: {http: {requestTimeout: 3s}}\n")},
	{"Gateway's policy alone", egRule("/a", "") + egRule("/b", "    retry: {attempts: 2}\n"),
		egPolicy("g", "Gateway gw", "2024-01-01T00:00:00Z", "  retry: {numRetries: 3, retryOn: {triggers: [gateway-error]}}\n  timeout: {http: {requestTimeout: 6s}}\n")},
	{"rule's policy beats the route's", egRule("/a", "") + egNamedRule("main", "/b", ""),
		egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 4, retryOn: {triggers: [connect-failure]}}\n") +
			egPolicy("q", "HTTPRoute r/main", "2024-01-02T00:00:00Z", "  retry: {numRetries: 1, retryOn: {triggers: [reset]}}\n")},
	{"two policies on the route: the oldest wins", egRule("/a", ""),
		egPolicy("new", "HTTPRoute r", "2024-01-02T00:00:00Z", "  retry: {numRetries: 4}\n") +
			egPolicy("old", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1}\n")},
	{"mergeType StrategicMerge", egRule("/a", ""),
		egPolicy("p", "HTTPRoute r", "2024-01-02T00:00:00Z", "  mergeType: StrategicMerge\n  retry: {retryOn: {triggers: [reset], httpStatusCodes: [502]}}\n") +
			egPolicy("g", "Gateway gw", "2024-01-01T00:00:00Z", "  retry: {numRetries: 5, retryOn: {triggers: [connect-failure]}, perRetry: {timeout: 2s}}\n  timeout: {http: {requestTimeout: 7s}}\n")},
	{"mergeType JSONMerge", egRule("/a", ""),
		egPolicy("p", "HTTPRoute r", "2024-01-02T00:00:00Z", "  mergeType: JSONMerge\n  timeout: {http: {requestTimeout: 3s}}\n") +
			egPolicy("g", "Gateway gw", "2024-01-01T00:00:00Z", "  retry: {numRetries: 5, retryOn: {triggers: [gateway-error]}}\n  timeout: {http: {requestTimeout: 7s}}\n")},
	{"listener policy", egRule("/a", ""),
		egPolicy("l", "Gateway gw/http", "2024-01-01T00:00:00Z", "  retry: {numRetries: 2, retryOn: {triggers: [5xx]}}\n")},
	{"reset-before-request with a per-try timeout", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 2, retryOn: {triggers: [reset-before-request]}, perRetry: {timeout: 300ms}}\n")},
	{"default triggers with a per-try timeout", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 3, perRetry: {timeout: 2s, backOff: {baseInterval: 50ms}}}\n")},
	{"gRPC triggers only", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1, retryOn: {triggers: [unavailable, deadline-exceeded, resource-exhausted, internal]}}\n")},
	{"triggers repeated and unordered", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [retriable-status-codes, reset, connect-failure, reset], httpStatusCodes: [504, 429, 504]}}\n")},
	{"codes below 400", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {retryOn: {triggers: [retriable-status-codes], httpStatusCodes: [302, 503]}}\n")},
	{"retriable-4xx and refused-stream", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 4, retryOn: {triggers: [retriable-4xx, refused-stream]}}\n  timeout: {http: {requestTimeout: 10s}}\n")},
	{"two policies on the route, same creationTimestamp: by name", egRule("/a", ""),
		egPolicy("b", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 4, retryOn: {triggers: [reset]}}\n") +
			egPolicy("a", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1, retryOn: {triggers: [connect-failure]}}\n")},
	{"mergeType: route's triggers, Gateway's codes", egRule("/a", ""),
		egPolicy("p", "HTTPRoute r", "2024-01-02T00:00:00Z", "  mergeType: JSONMerge\n  retry: {retryOn: {triggers: [retriable-status-codes, connect-failure]}}\n") +
			egPolicy("g", "Gateway gw", "2024-01-01T00:00:00Z", "  retry: {numRetries: 3, retryOn: {triggers: [reset], httpStatusCodes: [502, 503]}, perRetry: {timeout: 1s}}\n")},
	{"maxInterval without baseInterval", egRule("/a", ""), egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 1, retryOn: {triggers: [reset]}, perRetry: {backOff: {maxInterval: 2s}}}\n")},
	{"perRetry.timeout beside requestTimeout and the rule's request", egRule("/a", "    timeouts: {request: 6s}\n"),
		egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 2, retryOn: {triggers: [gateway-error]}, perRetry: {timeout: 500ms}}\n  timeout: {http: {requestTimeout: 9s}}\n")},
}

// egctlKnown are the cases where gwretry differs from egctl on purpose;
// each is still run, and the finding it reports is asserted
// (egctlFindings). docs/usage.md ("Policies: RetryPolicy and BackendTrafficPolicy")
// documents them.
var egctlKnown = map[string]string{
	// Envoy Gateway's processRouteRetry gives an HTTPRoute retry without
	// codes its BackendTrafficPolicy default (retriable-status-codes 503);
	// gwretry follows the Gateway API: no codes, none retried (rule /b).
	// The finding is the caveat EnvoyGatewayRouteRetry (codes [503]) that
	// routeRetryReported asserts.
	"Gateway's policy alone": "an HTTPRoute retry without codes: Envoy Gateway retries 503, the Gateway API none",
	// Envoy Gateway's controller sorts BackendTrafficPolicies by
	// creationTimestamp, then namespace, then name (gatewayapi/resource
	// Resources.Sort), and the first to target a route wins. egctl's file
	// loader (resource/load.go) keeps only name and namespace, so every
	// timestamp is zero and the name decides: "new" before "old". gwretry
	// reads creationTimestamp, as the controller does.
	"two policies on the route: the oldest wins": "egctl drops creationTimestamp, so the name decides there; the controller applies the oldest",
}

// egctlFindings are, per known case, a text the notes must hold: the
// finding that reports the difference.
var egctlFindings = map[string]string{
	"Gateway's policy alone":                     "",
	"two policies on the route: the oldest wins": "BackendTrafficPolicy default/new: Conflicted: default/r rule 0: not applied, BackendTrafficPolicy default/old targets the same place and is older (creationTimestamp)",
}

// egctlRefuses are the cases egctl cannot translate (Envoy's own
// validation refuses what Envoy Gateway writes): egctl's error must hold
// the first text, gwretry's notes the second (what it does instead).
var egctlRefuses = map[string][2]string{
	// Envoy Gateway writes retry_back_off with max_interval alone;
	// Envoy requires base_interval. gwretry leaves maxInterval out.
	"maxInterval without baseInterval": {"RetryBackOff.BaseInterval: value is required", "not carried to any target: spec.retry.perRetry.backOff.maxInterval 2s"},
}

// egRoute is what the comparison reads of an Envoy route.
type egRoute struct {
	Name           string   `json:"-"`
	Timeout        string   `json:"timeout,omitempty"`
	NumRetries     *int     `json:"numRetries,omitempty"`
	RetryOn        []string `json:"retryOn,omitempty"`
	Codes          []int    `json:"retriableStatusCodes,omitempty"`
	PerTry         string   `json:"perTryTimeout,omitempty"`
	BackoffBase    string   `json:"backoffBase,omitempty"`
	BackoffMax     string   `json:"backoffMax,omitempty"`
	retried        []int
	hasRetryPolicy bool
}

// readRoutes collects, from any JSON, the routes of every virtual host,
// by the value of their path match; routes with header matchers (gwretry's
// twin for POST, PATCH and LOCK) are left out.
func readRoutes(t *testing.T, v any, out map[string]egRoute) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			readRoutes(t, e, out)
		}
	case map[string]any:
		if routes, ok := field(x, "routes").([]any); ok && field(x, "domains") != nil {
			for _, r := range routes {
				m, _ := r.(map[string]any)
				match, _ := field(m, "match").(map[string]any)
				if field(match, "headers") != nil {
					continue
				}
				var path string
				for _, k := range []string{"prefix", "path_separated_prefix", "path"} {
					if s, ok := field(match, k).(string); ok {
						path = s
					}
				}
				out[path] = decodeRoute(m)
			}
			return
		}
		for _, e := range x {
			readRoutes(t, e, out)
		}
	}
}

// field reads a key in either protojson spelling (snake or camel case).
func field(m map[string]any, snake string) any {
	if v, ok := m[snake]; ok {
		return v
	}
	parts := strings.Split(snake, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return m[strings.Join(parts, "")]
}

func decodeRoute(m map[string]any) egRoute {
	var out egRoute
	out.Name, _ = field(m, "name").(string)
	ra, _ := field(m, "route").(map[string]any)
	if s, ok := field(ra, "timeout").(string); ok {
		out.Timeout = normDur(s)
	}
	rp, _ := field(ra, "retry_policy").(map[string]any)
	if rp == nil {
		return out
	}
	out.hasRetryPolicy = true
	n := 1 // Envoy's default num_retries
	if v, ok := field(rp, "num_retries").(float64); ok {
		n = int(v)
	}
	out.NumRetries = &n
	if s, ok := field(rp, "retry_on").(string); ok && s != "" {
		out.RetryOn = strings.Split(s, ",")
		slices.Sort(out.RetryOn)
	}
	if cs, ok := field(rp, "retriable_status_codes").([]any); ok {
		for _, c := range cs {
			out.Codes = append(out.Codes, int(c.(float64)))
		}
	}
	slices.Sort(out.Codes)
	if s, ok := field(rp, "per_try_timeout").(string); ok {
		out.PerTry = normDur(s)
	}
	if bo, ok := field(rp, "retry_back_off").(map[string]any); ok {
		if s, ok := field(bo, "base_interval").(string); ok {
			out.BackoffBase = normDur(s)
		}
		if s, ok := field(bo, "max_interval").(string); ok {
			out.BackoffMax = normDur(s)
		}
	}
	out.retried = retriedCodes(out.RetryOn, out.Codes)
	return out
}

func normDur(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil {
		return s
	}
	return d.String()
}

// retriedCodes are the status codes Envoy retries with retry_on triggers
// and retriable_status_codes (Envoy's router docs: 5xx, gateway-error,
// retriable-4xx, retriable-status-codes).
func retriedCodes(triggers []string, codes []int) []int {
	var out []int
	for _, t := range triggers {
		switch t {
		case "5xx":
			for c := 500; c <= 599; c++ {
				out = append(out, c)
			}
		case "gateway-error":
			out = append(out, 502, 503, 504)
		case "retriable-4xx":
			out = append(out, 409)
		case "retriable-status-codes":
			out = append(out, codes...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestEgctlBTP compares, for each BackendTrafficPolicy case, gwretry's
// Envoy routes with Envoy Gateway's own translation (egctl x translate
// --to xds -t route), route by route: the route timeout, num_retries, the
// status codes retried, per_try_timeout and the back-off base are equal.
// The differences gwretry makes on purpose (egctlDifferences) are each
// checked to be reported as a warning.
func TestEgctlBTP(t *testing.T) {
	if testing.Short() {
		t.Skip("egctl comparison: not in the fast tier (-short)")
	}
	egctl := egctlPath()
	if egctl == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("egctl %s is required in CI (make deps builds it, or set GWRETRY_EGCTL)", EgctlVersion)
		}
		t.Skipf("egctl %s not found; make deps builds it (or set GWRETRY_EGCTL)", EgctlVersion)
	}
	for _, tc := range egctlCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			why, known := egctlKnown[tc.name]
			doc := fmt.Sprintf(egctlBase, tc.rules) + tc.policies
			p := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(egctl, "x", "translate", "--from", "gateway-api", "--to", "xds", "-t", "route", "-o", "json", "-f", p)
			if refused, ok := egctlRefuses[tc.name]; ok {
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), refused[0]) {
					t.Fatalf("egctl: %v, want its refusal %q:\n%s", err, refused[0], out)
				}
				m := egModel(t, p)
				if notes := translate.NotesText(m.Notes); !strings.Contains(notes, refused[1]) {
					t.Errorf("egctl refuses it (%s), but gwretry's notes lack %q:\n%s", refused[0], refused[1], notes)
				}
				return
			}
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("egctl: %v\n%s", err, raw)
			}
			var ej any
			if err := json.Unmarshal(raw, &ej); err != nil {
				t.Fatalf("egctl output: %v\n%s", err, raw)
			}
			eg := map[string]egRoute{}
			readRoutes(t, ej, eg)

			m := egModel(t, p)
			out, bs := generate(t, m, translate.Options{})
			gj, err := protojson.Marshal(bs)
			if err != nil {
				t.Fatal(err)
			}
			var gv any
			if err := json.Unmarshal(gj, &gv); err != nil {
				t.Fatal(err)
			}
			gw := map[string]egRoute{}
			readRoutes(t, gv, gw)
			notes := translate.NotesText(m.Notes)
			if len(eg) == 0 {
				t.Fatalf("egctl gave no route:\n%s", raw)
			}
			// Known case or not, a rule's own retry reports how Envoy
			// Gateway writes it otherwise.
			routeRetryReported(t, eg, gw, m, out)
			if known {
				// The difference is reported: its finding is there.
				if f := egctlFindings[tc.name]; f != "" && !strings.Contains(notes, f) {
					t.Errorf("known difference (%s) without its finding %q:\n%s", why, f, notes)
				}
				rec := &recorder{TB: t}
				compareRoutes(rec, eg, gw, m, notes)
				if !rec.failed {
					t.Errorf("known difference (%s): egctl and gwretry now agree; drop it from egctlKnown", why)
				}
				t.Logf("known difference, reported: %s", why)
				return
			}
			compareRoutes(t, eg, gw, m, notes)
		})
	}
}

// egModel reads the case's file into gwretry's model.
func egModel(t *testing.T, p string) *translate.Model {
	t.Helper()
	in, err := input.Load([]string{p}, nil, translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := resolve.Build(in, translate.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// recorder notes a failure instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.Logf(format, args...)
}

// compareRoutes compares each route egctl writes with gwretry's of the
// same path.
func compareRoutes(t testing.TB, eg, gw map[string]egRoute, m *translate.Model, notes string) {
	t.Helper()
	for path, e := range eg {
		g, ok := gw[path]
		if !ok {
			t.Errorf("%s: no gwretry route (gwretry has %v)", path, keys(gw))
			continue
		}
		var rule *translate.Rule
		for _, r := range m.Rules {
			if r.Name == g.Name {
				rule = r
			}
		}
		if rule == nil {
			t.Errorf("%s: gwretry's route %s has no rule in the model", path, g.Name)
			continue
		}
		compareEgRoute(t, path, e, g, rule, notes)
	}
}

// compareEgRoute checks one route. Equal: the route timeout, num_retries
// (no retry policy is 0), the per-try timeout and the back-off base. For
// a retry that comes from a BackendTrafficPolicy (the rule's Retry.On),
// retry_on and retriable_status_codes are equal too, token by token: Envoy
// Gateway's, never widened. For the route's own retry, gwretry writes the
// Gateway API's retry (connect-failure,refused-stream,reset, with
// retriable-status-codes for its codes) where Envoy Gateway writes its
// default triggers: the status codes retried (400-599) are equal.
// max_interval, which the Gateway API has not, must be warned about.
func compareEgRoute(t testing.TB, path string, e, g egRoute, rule *translate.Rule, notes string) {
	t.Helper()
	if e.Timeout != g.Timeout {
		t.Errorf("%s: route timeout: egctl %q, gwretry %q", path, e.Timeout, g.Timeout)
	}
	n := func(r egRoute) int {
		if r.NumRetries == nil {
			return 0
		}
		return *r.NumRetries
	}
	if n(e) != n(g) {
		t.Errorf("%s: num_retries: egctl %d, gwretry %d", path, n(e), n(g))
	}
	if n(e) == 0 {
		return
	}
	gwAPI := func(cs []int) []int {
		var out []int
		for _, c := range cs {
			if c >= 400 && c <= 599 {
				out = append(out, c)
			}
		}
		return out
	}
	if !slices.Equal(gwAPI(e.retried), gwAPI(g.retried)) {
		t.Errorf("%s: status codes retried: egctl %v (retry_on %v, codes %v), gwretry %v", path, e.retried, e.RetryOn, e.Codes, g.retried)
	}
	if e.PerTry != g.PerTry {
		t.Errorf("%s: per_try_timeout: egctl %q, gwretry %q", path, e.PerTry, g.PerTry)
	}
	if e.BackoffBase != g.BackoffBase {
		t.Errorf("%s: back-off base: egctl %q, gwretry %q", path, e.BackoffBase, g.BackoffBase)
	}
	if rule.Retry != nil && rule.Retry.On != nil {
		// maxInterval without a baseInterval: Envoy Gateway writes a
		// retry_back_off Envoy refuses (base_interval is required);
		// gwretry leaves it out and says so.
		if e.BackoffMax != g.BackoffMax && (e.BackoffBase != "" || !strings.Contains(notes, "maxInterval")) {
			t.Errorf("%s: max_interval: egctl %q, gwretry %q:\n%s", path, e.BackoffMax, g.BackoffMax, notes)
		}
		if !slices.Equal(e.RetryOn, g.RetryOn) {
			t.Errorf("%s: retry_on of %s: egctl %v, gwretry %v", path, rule.Retry.On.Policy, e.RetryOn, g.RetryOn)
		}
		if !slices.Equal(e.Codes, g.Codes) && len(e.Codes)+len(g.Codes) > 0 {
			t.Errorf("%s: retriable_status_codes of %s: egctl %v, gwretry %v", path, rule.Retry.On.Policy, e.Codes, g.Codes)
		}
		return
	}
	if e.BackoffMax != "" && e.BackoffMax != g.BackoffMax {
		t.Errorf("%s: max_interval %s of the route's own retry", path, e.BackoffMax)
	}
	if !slices.Equal(e.RetryOn, g.RetryOn) {
		// Reported: routeRetryReported checks the caveat.
		t.Logf("%s: the route's own retry: retry_on differs on purpose (the Gateway API's retry): egctl %s, gwretry %s", path, strings.Join(e.RetryOn, ","), strings.Join(g.RetryOn, ","))
	}
}

// routeRetryReported: for every route egctl retries whose gwretry rule has
// its own retry (not a BackendTrafficPolicy's), where gwretry writes the
// Gateway API's retry_on and Envoy Gateway its default triggers (and code
// 503 when the rule lists none), gwretry's retry.connectionErrors finding
// of the rule carries the caveat EnvoyGatewayRouteRetry whose triggers
// and codes are egctl's retry_on and retriable_status_codes.
func routeRetryReported(t *testing.T, eg, gw map[string]egRoute, m *translate.Model, out *translate.Output) {
	t.Helper()
	for path, e := range eg {
		g, ok := gw[path]
		if !ok || e.NumRetries == nil || *e.NumRetries == 0 {
			continue
		}
		i := slices.IndexFunc(m.Rules, func(r *translate.Rule) bool { return r.Name == g.Name })
		if i < 0 || m.Rules[i].Retry == nil || m.Rules[i].Retry.On != nil {
			continue
		}
		r := m.Rules[i]
		var params report.Params
		for _, f := range out.Findings {
			if f.Route != r.Route || f.Rule != r.Index || f.Feature != translate.FeatureRetryConnectionErrors {
				continue
			}
			for _, c := range f.Caveats {
				if c.Reason == report.CaveatEnvoyGatewayRouteRetry {
					params = c.Params
				}
			}
		}
		if params == nil {
			t.Errorf("%s: the route's own retry, written otherwise by Envoy Gateway (retry_on %s, codes %v), has no %s caveat", path, strings.Join(e.RetryOn, ","), e.Codes, report.CaveatEnvoyGatewayRouteRetry)
			continue
		}
		triggers := strings.Split(params["triggers"], ",")
		slices.Sort(triggers)
		if !slices.Equal(triggers, e.RetryOn) || params["codes"] != codesText(e.Codes) {
			t.Errorf("%s: caveat %s %v, egctl writes retry_on %s, retriable_status_codes %v", path, report.CaveatEnvoyGatewayRouteRetry, params, strings.Join(e.RetryOn, ","), e.Codes)
		}
	}
}
