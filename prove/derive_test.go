package prove

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

func deriveFrom(t *testing.T, manifest string, opts DeriveOptions) ([]Scenario, []Unexercised) {
	t.Helper()
	in, err := input.Load([]string{"-"}, strings.NewReader(manifest), input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := resolve.Build(in, translate.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return Derive(m, opts)
}

const deriveManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  hostnames: ["*.example.com"]
  rules:
  - name: api
    matches: [{path: {type: Exact, value: /api}, method: PUT, headers: [{name: X-Tenant, value: blue}], queryParams: [{name: v, value: "2"}]}]
    retry: {codes: [502], attempts: 2, backoff: 50ms}
    timeouts: {backendRequest: 300ms}
    backendRefs: [{name: api, port: 80}]
  - matches: [{path: {type: RegularExpression, value: "/re.*"}}]
    retry: {attempts: 1}
    backendRefs: [{name: api, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /slow}}]
    timeouts: {request: 90s}
    backendRefs: [{name: other, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: ns}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: ns}
spec: {ports: [{port: 80}]}
`

// Derive makes requests the rule selects (path, method, headers, query,
// hostname), one scenario per claim where the values allow, and names the
// features it cannot exercise with the reason.
func TestDerive(t *testing.T) {
	scs, skipped := deriveFrom(t, deriveManifest, DeriveOptions{Longest: 20 * time.Second})
	var names []string
	for _, sc := range scs {
		names = append(names, sc.Name)
		if sc.User == nil || sc.User.Route != "ns/r" {
			t.Fatalf("%s: not placed on the user's route: %+v", sc.Name, sc.User)
		}
		if sc.User.Rule != 0 {
			t.Errorf("%s: rule %d, want only rule 0 exercised", sc.Name, sc.User.Rule)
			continue
		}
		u := sc.User
		if u.Path != "/api?v=2" || u.Host != "prove.example.com" || u.Header["X-Tenant"] != "blue" {
			t.Errorf("%s: request %q host %q headers %v", sc.Name, u.Path, u.Host, u.Header)
		}
		if sc.method() != "PUT" && sc.method() != "POST" {
			t.Errorf("%s: method %s", sc.Name, sc.method())
		}
		if len(u.Services) != 1 || u.Services[0] != "api.ns:80" || len(u.Others) != 1 || u.Others[0] != "other.ns:80" {
			t.Errorf("%s: services %v others %v", sc.Name, u.Services, u.Others)
		}
		if len(sc.Claims) == 0 {
			t.Errorf("%s: no claim", sc.Name)
		}
	}
	for _, want := range []string{
		"ns/r rule 0 (api): code 502 retried",
		"ns/r rule 0 (api): unlisted code 503 not retried",
		"ns/r rule 0 (api): code 502 every time: 2 retries",
		"ns/r rule 0 (api): connection closed retried",
		"ns/r rule 0 (api): connection refused retried on another endpoint",
		"ns/r rule 0 (api): backoff of 50ms between tries",
		"ns/r rule 0 (api): slow first try cut after 300ms and retried",
		"ns/r rule 0 (api): kept-alive connection closed, retried",
	} {
		if !strings.Contains(strings.Join(names, "\n"), want) {
			t.Errorf("no scenario %q in\n%s", want, strings.Join(names, "\n"))
		}
	}
	whys := map[string]string{}
	for _, u := range skipped {
		whys[u.Route+" "+string(rune('0'+u.Rule))+" "+string(u.Feature)] = u.Why
	}
	for key, want := range map[string]string{
		"ns/r 1 retry.attempts":         "regular expression",
		"ns/r 2 timeouts.request":       "longer than prove waits",
		"ns/r 1 retry.connectionErrors": "regular expression",
	} {
		if !strings.Contains(whys[key], want) {
			t.Errorf("%s: why %q, want %q (all: %v)", key, whys[key], want, whys)
		}
	}
}

// With --retry-non-idempotent a rule for any method gets a POST with a
// body that must be retried; without it, one that must not be.
func TestDerivePost(t *testing.T) {
	manifest := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
  - retry: {codes: [500], attempts: 1}
    backendRefs: [{name: api, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: ns}
spec: {ports: [{port: 80}]}
`
	for _, tc := range []struct {
		optIn bool
		name  string
		hits  int
	}{{false, "POST with a 4 KiB body, code 500 not retried", 1}, {true, "POST with a 4 KiB body, code 500 retried", 2}} {
		scs, _ := deriveFrom(t, manifest, DeriveOptions{RetryNonIdempotent: tc.optIn})
		found := false
		for _, sc := range scs {
			if strings.HasSuffix(sc.Name, tc.name) {
				found = true
				if sc.method() != "POST" || sc.BodyBytes != 4<<10 || sc.Spec.Hits.Min != tc.hits || sc.RetryNonIdempotent != tc.optIn {
					t.Errorf("%s: %s %d bytes, spec %v", sc.Name, sc.method(), sc.BodyBytes, sc.Spec)
				}
			}
		}
		if !found {
			t.Errorf("opt-in %v: no scenario %q", tc.optIn, tc.name)
		}
	}
}

// Derive never proves a rule on a request that another rule answers: a
// request that an earlier rule (in precedence order) also selects is not
// sent for this one, and a rule's requests use the method of the match
// they are made from, not another match's.
func TestDerivePrecedence(t *testing.T) {
	const head = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
`
	const tail = `---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec: {ports: [{port: 80}]}
`
	const retry = "    retry: {attempts: 1, codes: [500]}\n    backendRefs: [{name: svc, port: 80}]\n"
	for _, tc := range []struct {
		name  string
		rules string
		// rule is the index of the rule under test.
		rule int
		// method is the method of its scenarios ("" when it has none);
		// noPost says the POST scenario must be left out.
		method string
		noPost bool
		why    string
	}{
		{"exact shadows the prefix's request",
			"  - matches: [{path: {type: Exact, value: /x}}]\n" + retry + "  - matches: [{path: {type: PathPrefix, value: /x}}]\n" + retry,
			1, "", false, "is taken by ns/r rule 0"},
		{"the exact rule itself is proven",
			"  - matches: [{path: {type: Exact, value: /x}}]\n" + retry + "  - matches: [{path: {type: PathPrefix, value: /x}}]\n" + retry,
			0, "GET", false, ""},
		{"a header match takes the request of a rule without",
			"  - matches: [{path: {type: PathPrefix, value: /x}, headers: [{name: X-A, value: \"1\"}]}]\n" + retry + "  - matches: [{path: {type: PathPrefix, value: /x}, headers: [{name: X-A, value: \"1\"}]}]\n" + retry,
			1, "", false, "is taken by ns/r rule 0"},
		{"the method of the first match, not the smallest of all",
			"  - matches: [{path: {type: PathPrefix, value: /a}, method: POST}, {path: {type: PathPrefix, value: /b}, method: GET}]\n" + retry + "  - matches: [{path: {type: PathPrefix, value: /}}]\n" + retry,
			0, "POST", false, ""},
		{"a POST taken by a method match leaves the POST scenario out",
			"  - matches: [{path: {type: PathPrefix, value: /a}, method: POST}]\n" + retry + "  - matches: [{path: {type: PathPrefix, value: /a}}]\n" + retry,
			1, "GET", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scs, skipped := deriveFrom(t, head+tc.rules+tail, DeriveOptions{Longest: 20 * time.Second})
			var mine []Scenario
			for _, sc := range scs {
				if sc.RuleIndex() == tc.rule {
					mine = append(mine, sc)
				}
			}
			if tc.why != "" {
				if len(mine) > 0 {
					t.Fatalf("rule %d got %d scenario(s), want none: %s", tc.rule, len(mine), mine[0].Name)
				}
				n := 0
				for _, u := range skipped {
					if u.Rule == tc.rule && strings.Contains(u.Why, tc.why) {
						n++
					}
				}
				if n == 0 {
					t.Errorf("no unexercised feature of rule %d says %q: %+v", tc.rule, tc.why, skipped)
				}
				return
			}
			if len(mine) == 0 {
				t.Fatalf("rule %d got no scenario: %+v", tc.rule, skipped)
			}
			for _, sc := range mine {
				if sc.Method == "POST" && tc.method != "POST" {
					if tc.noPost {
						t.Errorf("%s: a POST that another rule takes", sc.Name)
					}
					continue
				}
				if sc.Method != tc.method {
					t.Errorf("%s: method %s, want %s", sc.Name, sc.Method, tc.method)
				}
			}
		})
	}
}

const filterManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: f, namespace: ns}
spec:
  rules:
  - matches: [{path: {type: PathPrefix, value: /all}, headers: [{name: X-A, value: blue}]}]
    filters:
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: a}], remove: [X-B]}}
    - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-C, value: c}]}}
    - {type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /x}}}
    - {type: RequestMirror, requestMirror: {backendRef: {name: shadow, port: 80}}}
    retry: {codes: [503], attempts: 1}
    backendRefs: [{name: api, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /half}}]
    filters:
    - {type: RequestMirror, requestMirror: {backendRef: {name: shadow, port: 80}, percent: 50}}
    backendRefs: [{name: api, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]
    retry: {attempts: 1}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: ns}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: shadow, namespace: ns}
spec: {ports: [{port: 80}]}
`

// TestDeriveFilters: a rule's filters get one scenario of checks, with
// the old values of the headers it touches (a matched header keeps the
// match's value), the rewritten path for the scripts and the mirror's
// Service on an endpoint of its own; a share below 100% is not
// exercised; a redirect rule is exercised for its redirect only.
func TestDeriveFilters(t *testing.T) {
	scs, skipped := deriveFrom(t, filterManifest, DeriveOptions{Longest: 20 * time.Second, NoHTTPS: "none"})
	byName := map[string]Scenario{}
	for _, sc := range scs {
		byName[sc.Name] = sc
	}
	all, ok := byName["ns/f rule 0: filters requestHeaderModifier, responseHeaderModifier, urlRewrite, requestMirror"]
	if !ok {
		t.Fatalf("no filter scenario of rule 0 in %v", keys(byName))
	}
	if all.Header["X-B"] != oldValue || all.Header["X-A"] != "" || all.User.Header["X-A"] != "blue" {
		t.Errorf("request headers %v, match headers %v; want X-B old, X-A the match's", all.Header, all.User.Header)
	}
	if all.User.BackendPath != "/x" || len(all.User.Mirrors) != 1 || all.User.Mirrors[0] != "shadow.ns:80" || len(all.User.Services) != 1 {
		t.Errorf("user rule %+v; want backend path /x, mirror shadow.ns:80 apart from the Services", *all.User)
	}
	if got := all.Endpoints[0].Script.Then.Header["X-C"]; got != oldValue {
		t.Errorf("the backend answers X-C %q, want %q", got, oldValue)
	}
	if _, ok := byName["ns/f rule 2: filters requestRedirect"]; !ok {
		t.Errorf("no redirect scenario in %v", keys(byName))
	}
	for _, sc := range scs {
		if sc.User.Rule == 2 && len(sc.Claims) > 0 {
			t.Errorf("redirect rule got a retry scenario: %s", sc.Name)
		}
	}
	why := map[string]string{}
	for _, u := range skipped {
		why[fmt.Sprintf("%d %s", u.Rule, u.Feature)] = u.Why
	}
	for _, k := range []string{"1 filters.requestMirror", "2 retry.attempts"} {
		if why[k] == "" {
			t.Errorf("%s: not listed as unexercised; skipped %v", k, why)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
