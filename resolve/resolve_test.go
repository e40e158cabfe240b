package resolve

import (
	"reflect"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// build loads YAML and builds the model.
func build(t *testing.T, yaml string, opts translate.ResolveOptions) *translate.Model {
	t.Helper()
	in, err := input.Load([]string{writeInput(t, "in.yaml", yaml)}, nil, input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const gateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: web, port: 8000, protocol: HTTP, hostname: "*.example.com"}
  - {name: https, port: 443, protocol: HTTPS}
---
`

func TestResolveIntentDefaults(t *testing.T) {
	m := build(t, routeWithRule("    retry:\n      codes: [503, 500]\n      backoff: 0s\n    timeouts:\n      request: 0s\n"), translate.ResolveOptions{})
	r := m.Rules[0]
	if r.Name != "ns_r_r0" || r.Route != "ns/r" || r.Index != 0 {
		t.Errorf("rule identity %q %q %d", r.Name, r.Route, r.Index)
	}
	if r.Retry.Attempts != 1 || !reflect.DeepEqual(r.Retry.Codes, []int{500, 503}) || r.Retry.Backoff != nil {
		t.Errorf("retry %+v, want attempts 1 (the default), sorted codes, backoff 0s treated as unset", r.Retry)
	}
	if !r.Timeouts.Request.IsZero() || r.Timeouts.BackendRequest != nil {
		t.Errorf("timeouts %+v", r.Timeouts)
	}
	if got := r.Features(); !reflect.DeepEqual(got, []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryCodes, translate.FeatureRetryConnectionErrors, translate.FeatureRequestTimeout}) {
		t.Errorf("features %v", got)
	}
	l := m.Listeners[0]
	if l.Address != "0.0.0.0" || l.Port != translate.DefaultPort || l.VirtualHosts[0].Hostname != "" {
		t.Errorf("default listener %+v", l)
	}
	if ep := r.Backends[0].Endpoints[0]; ep.Host != "svc.ns.svc.cluster.local" || ep.Port != 8080 {
		t.Errorf("endpoint %+v, want cluster DNS", ep)
	}
}

func TestResolveListenersAndHostnames(t *testing.T) {
	route := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com, other.org]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
`
	m := build(t, gateway+route, translate.ResolveOptions{})
	var got []string
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			got = append(got, l.Name+" "+vh.Hostname)
		}
	}
	// 80 has no hostname: both route hostnames; 8000 (*.example.com) keeps
	// a.example.com only; 443 (HTTPS) is not generated.
	want := []string{"http-80 a.example.com", "http-80 other.org", "http-8000 a.example.com"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("virtual hosts %q, want %q", got, want)
	}
	if !strings.Contains(translate.NotesText(m.Notes), "listener https (HTTPS) is not generated") {
		t.Errorf("notes %q lack the HTTPS listener", m.Notes)
	}

	m = build(t, gateway+strings.Replace(route, "{name: gw}", "{name: gw, sectionName: web}", 1), translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: 9000}})
	if len(m.Listeners) != 1 || m.Listeners[0].Address != "127.0.0.1" || m.Listeners[0].Port != 9000 || len(m.Listeners[0].VirtualHosts) != 1 {
		t.Errorf("--listen with sectionName: %+v", m.Listeners[0])
	}

	m = build(t, gateway+strings.Replace(route, "[a.example.com, other.org]", "[other.org]", 1)+"    retry: {}\n", translate.ResolveOptions{})
	if len(m.Listeners) != 1 {
		t.Errorf("route attached to %d listeners, want 1 (no intersection with *.example.com)", len(m.Listeners))
	}

	m = build(t, gateway+strings.Replace(route, "{name: gw}", "{name: gw, sectionName: https}", 1)+"    retry: {}\n", translate.ResolveOptions{})
	wantFeatures := []translate.Feature{translate.FeatureRouteAttachment, translate.FeatureRetryAttempts, translate.FeatureRetryConnectionErrors, translate.FeatureListenerHTTPS}
	if len(m.Rules) != 0 || len(m.Skipped) != 1 || !reflect.DeepEqual(m.Skipped[0].Features, wantFeatures) {
		t.Errorf("unattached rule: rules %d, skipped %+v; want it skipped with its features", len(m.Rules), m.Skipped)
	}
}

func TestIntersectHostnames(t *testing.T) {
	h := func(s string) *gwv1.Hostname { v := gwv1.Hostname(s); return &v }
	tests := []struct {
		listener *gwv1.Hostname
		route    []gwv1.Hostname
		want     []string
	}{
		{nil, nil, []string{""}},
		{nil, []gwv1.Hostname{"a.com"}, []string{"a.com"}},
		{h("a.com"), nil, []string{"a.com"}},
		{h("*.a.com"), []gwv1.Hostname{"x.a.com", "a.com", "y.b.com"}, []string{"x.a.com"}},
		{h("x.a.com"), []gwv1.Hostname{"*.a.com"}, []string{"x.a.com"}},
		{h("*.a.com"), []gwv1.Hostname{"*.x.a.com"}, []string{"*.x.a.com"}},
		{h("*.x.a.com"), []gwv1.Hostname{"*.a.com"}, []string{"*.x.a.com"}},
		{h("a.com"), []gwv1.Hostname{"b.com"}, nil},
	}
	for _, tt := range tests {
		if got := intersectHostnames(tt.listener, tt.route); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("intersect(%v, %v) = %q, want %q", tt.listener, tt.route, got, tt.want)
		}
	}
}

func TestResolvePrecedence(t *testing.T) {
	route := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b, namespace: ns}
spec:
  rules:
  - matches:
    - path: {value: /a}
    - path: {value: /a/b/}
    - path: {type: Exact, value: /a}
    - path: {type: RegularExpression, value: "^/r.*"}
    - path: {value: /a}
      method: GET
    - path: {value: /a}
      headers: [{name: x, value: "1"}]
    backendRefs: [{name: svc, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: a, namespace: ns, creationTimestamp: "2020-01-01T00:00:00Z"}
spec:
  hostnames: [h.example.com]
  rules:
  - matches: [{path: {value: /a}}]
    backendRefs: [{name: svc, port: 8080}]
`
	m := build(t, route, translate.ResolveOptions{})
	var got []string
	for _, vh := range m.Listeners[0].VirtualHosts {
		for _, rm := range vh.Routes {
			got = append(got, vh.Hostname+"|"+string(rm.Match.PathType)+" "+rm.Match.Path+" "+rm.Match.Method+" "+rm.Rule.Route)
		}
	}
	want := []string{
		// h.example.com has its own route first, then every catch-all route.
		"h.example.com|PathPrefix /a  ns/a",
		"h.example.com|Exact /a  ns/b",
		"h.example.com|RegularExpression ^/r.*  ns/b",
		"h.example.com|PathPrefix /a/b  ns/b",
		"h.example.com|PathPrefix /a GET ns/b",
		"h.example.com|PathPrefix /a  ns/b",
		"h.example.com|PathPrefix /a  ns/b",
		"|Exact /a  ns/b",
		"|RegularExpression ^/r.*  ns/b",
		"|PathPrefix /a/b  ns/b",
		"|PathPrefix /a GET ns/b",
		"|PathPrefix /a  ns/b",
		"|PathPrefix /a  ns/b",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The header match (more headers) comes before the plain /a prefix.
	vh := m.Listeners[0].VirtualHosts[1]
	if len(vh.Routes[4].Match.Headers) != 1 {
		t.Errorf("header match not ahead of the plain prefix: %+v", vh.Routes[4].Match)
	}
}

func TestResolveEndpoints(t *testing.T) {
	svc := `---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  ports: [{name: http, port: 8080, targetPort: 3000}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: svc-1
  namespace: ns
  labels: {kubernetes.io/service-name: svc}
addressType: IPv4
ports: [{name: http, port: 3000}]
endpoints:
- addresses: [10.0.0.2]
- addresses: [10.0.0.1]
- addresses: [10.0.0.3]
  conditions: {ready: false}
`
	m := build(t, routeWithRule("")+svc, translate.ResolveOptions{})
	want := []translate.Endpoint{{Host: "10.0.0.1", Port: 3000}, {Host: "10.0.0.2", Port: 3000}}
	if got := m.Rules[0].Backends[0].Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("EndpointSlice endpoints %v, want %v (ready only, sorted)", got, want)
	}
	ov, err := translate.ParseEndpoint("svc:8080=127.0.0.1:9000,[::1]:9001")
	if err != nil {
		t.Fatal(err)
	}
	m = build(t, routeWithRule("")+svc, translate.ResolveOptions{Endpoints: []translate.EndpointOverride{ov}})
	want = []translate.Endpoint{{Host: "127.0.0.1", Port: 9000}, {Host: "::1", Port: 9001}}
	if got := m.Rules[0].Backends[0].Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("--endpoint endpoints %v, want %v", got, want)
	}
	m = build(t, routeWithRule("  - backendRefs: [{name: svc, port: 9999}]\n    retry: {}\n")+svc, translate.ResolveOptions{})
	if dead := m.Rules[1]; !dead.Dead() || len(dead.Invalid) != 1 || !strings.Contains(dead.DeadReason(), "has no port 9999") {
		t.Errorf("rule %+v, want a dead rule with a missing Service port", dead)
	}
}

// TestResolveDeadRules: a rule with no backend that can receive traffic is
// routed (every target answers 500), never skipped, so its requests cannot
// fall through to the next matching rule.
func TestResolveDeadRules(t *testing.T) {
	svc := "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\nspec:\n  ports: [{port: 8080}]\n"
	tests := []struct {
		name, rule string
		services   bool
		reason     string
		invalid    int
	}{
		{"no backendRefs", "  - matches: [{path: {type: PathPrefix, value: /dead}}]\n", false, "no backendRefs", 0},
		{"all weights zero", "  - backendRefs: [{name: svc, port: 8080, weight: 0}]\n", false, "weight 0", 0},
		{"not a Service", "  - backendRefs: [{name: b, group: example.com, kind: Bucket, port: 1}]\n", false, "only core Services", 1},
		{"Service not in the input", "  - backendRefs: [{name: gone, port: 8080}]\n", true, "BackendNotFound", 1},
		{"no ReferenceGrant", "  - backendRefs: [{name: svc, namespace: other, port: 8080}]\n", false, "RefNotPermitted", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := routeWithRule(tt.rule)
			if tt.services {
				in += svc
			}
			m := build(t, in, translate.ResolveOptions{})
			if len(m.Rules) != 2 || len(m.Skipped) != 0 {
				t.Fatalf("rules %d skipped %d, want both rules routed", len(m.Rules), len(m.Skipped))
			}
			r := m.Rules[1]
			if !r.Dead() || len(r.Invalid) != tt.invalid || !strings.Contains(r.DeadReason(), tt.reason) {
				t.Errorf("rule dead=%v invalid=%+v reason %q, want dead with %q", r.Dead(), r.Invalid, r.DeadReason(), tt.reason)
			}
			if r.Features()[0] != translate.FeatureBackendRefs {
				t.Errorf("features %v, want backendRefs first", r.Features())
			}
			found := false
			for _, l := range m.Listeners {
				for _, vh := range l.VirtualHosts {
					for _, rm := range vh.Routes {
						found = found || rm.Rule == r
					}
				}
			}
			if !found {
				t.Error("the dead rule is not routed")
			}
		})
	}
	// Some backends valid, some not: the valid ones are kept.
	m := build(t, routeWithRule("  - backendRefs: [{name: svc, port: 8080, weight: 3}, {name: b, kind: Bucket, group: x.io, port: 1, weight: 1}]\n"), translate.ResolveOptions{})
	if r := m.Rules[1]; r.Dead() || len(r.Backends) != 1 || r.InvalidWeight() != 1 {
		t.Errorf("partially invalid rule %+v", r)
	}
}

func TestResolveReferenceGrants(t *testing.T) {
	route := routeWithRule("  - backendRefs: [{name: svc, namespace: other, port: 8080}]\n")
	grant := func(apiVersion, fromNS, toName string) string {
		return "---\napiVersion: gateway.networking.k8s.io/" + apiVersion + "\nkind: ReferenceGrant\nmetadata: {name: g, namespace: other}\nspec:\n" +
			"  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: " + fromNS + "}]\n" +
			"  to: [{group: \"\", kind: Service" + toName + "}]\n"
	}
	tests := []struct {
		name, extra string
		opts        translate.ResolveOptions
		dead        bool
	}{
		{"none", "", translate.ResolveOptions{}, true},
		{"v1beta1 grant", grant("v1beta1", "ns", ""), translate.ResolveOptions{}, false},
		{"v1 grant", grant("v1", "ns", ""), translate.ResolveOptions{}, false},
		{"grant for the named Service", grant("v1", "ns", ", name: svc"), translate.ResolveOptions{}, false},
		{"grant for another Service", grant("v1", "ns", ", name: other"), translate.ResolveOptions{}, true},
		{"grant for another namespace", grant("v1", "elsewhere", ""), translate.ResolveOptions{}, true},
		{"assumed", "", translate.ResolveOptions{AssumeReferenceGrants: true}, false},
	}
	for _, tt := range tests {
		m := build(t, route+tt.extra, tt.opts)
		if got := m.Rules[1].Dead(); got != tt.dead {
			t.Errorf("%s: dead = %v, want %v (%s)", tt.name, got, tt.dead, m.Rules[1].DeadReason())
		}
	}
}

func TestResolveNamespaceSelector(t *testing.T) {
	gw := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: x
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {shared: "yes"}}}}
---
`
	route := strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw, namespace: infra}]\n", 1)
	ns := func(labels string) string {
		return "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns, labels: {" + labels + "}}\n"
	}
	tests := []struct {
		name, extra string
		attached    bool
	}{
		{"selected", ns("shared: \"yes\""), true},
		{"not selected", ns("shared: \"no\""), false},
		{"no Namespace object", "", false},
	}
	for _, tt := range tests {
		m := build(t, gw+route+tt.extra, translate.ResolveOptions{})
		if got := len(m.Rules) == 1 && len(m.Skipped) == 0; got != tt.attached {
			t.Errorf("%s: attached = %v, want %v; notes %q", tt.name, got, tt.attached, m.Notes)
		}
	}
}

func TestResolveRuleMethods(t *testing.T) {
	tests := []struct {
		matches string
		want    []translate.MethodClass
	}{
		{"", []translate.MethodClass{translate.Idempotent, translate.NonIdempotent}},
		{"    matches: [{method: POST}]\n", []translate.MethodClass{translate.NonIdempotent}},
		{"    matches: [{method: POST}, {method: PATCH}]\n", []translate.MethodClass{translate.NonIdempotent}},
		{"    matches: [{method: GET}, {method: POST}]\n", []translate.MethodClass{translate.Idempotent, translate.NonIdempotent}},
		{"    matches: [{method: GET}]\n", []translate.MethodClass{translate.Idempotent}},
		{"    matches: [{method: GET}, {path: {value: /x}}]\n", []translate.MethodClass{translate.Idempotent, translate.NonIdempotent}},
	}
	for _, tt := range tests {
		m := build(t, routeWithRule(tt.matches), translate.ResolveOptions{})
		if got := m.Rules[0].MethodClasses(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: classes %v, want %v", tt.matches, got, tt.want)
		}
	}
}

// TestVirtualHostNamesUnique: valid hostnames used to give colliding names
// ("" and "any"; "*.example.com" and "wildcard.example.com").
func TestVirtualHostNamesUnique(t *testing.T) {
	in := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: a, port: 80, protocol: HTTP}
  - {name: b, port: 80, protocol: HTTP, hostname: any}
  - {name: c, port: 80, protocol: HTTP, hostname: "*.example.com"}
  - {name: d, port: 80, protocol: HTTP, hostname: wildcard.example.com}
---
` + strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw}]\n", 1)
	m := build(t, in, translate.ResolveOptions{})
	names := map[string]bool{}
	for _, vh := range m.Listeners[0].VirtualHosts {
		if names[vh.Name] {
			t.Errorf("virtual host name %q twice", vh.Name)
		}
		names[vh.Name] = true
	}
	if len(names) != 4 {
		t.Errorf("virtual hosts %v, want 4", names)
	}
	m.Listeners[0].VirtualHosts[1].Name = m.Listeners[0].VirtualHosts[0].Name
	if err := m.Check(); err == nil || !strings.Contains(err.Error(), "same name") {
		t.Errorf("Check() = %v, want a duplicate name error", err)
	}
}

func TestParseFlags(t *testing.T) {
	for _, bad := range []string{"svc=1.2.3.4:80", "svc:80", "svc:0=1.2.3.4:80", "Svc:80=1.2.3.4:80", "svc:80=1.2.3.4", "svc:80=:80", "svc:80=a;b:80"} {
		if _, err := translate.ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) succeeded", bad)
		}
	}
	o, err := translate.ParseEndpoint("svc.other:80=backend.local:8080")
	if err != nil || o.Service != "svc" || o.Namespace != "other" || o.Endpoints[0].Host != "backend.local" {
		t.Errorf("ParseEndpoint: %+v, %v", o, err)
	}
	if b, err := translate.ParseListen(":8081"); err != nil || b.Address != "0.0.0.0" || b.Port != 8081 {
		t.Errorf("ParseListen(:8081) = %+v, %v", b, err)
	}
	for _, bad := range []string{"8080", "127.0.0.1:99999", "a b:80"} {
		if _, err := translate.ParseListen(bad); err == nil {
			t.Errorf("ParseListen(%q) succeeded", bad)
		}
	}
}

// TestNotesHaveSeverityAndObject: what the input loses is a warning naming
// the object; facts are info.
func TestNotesHaveSeverityAndObject(t *testing.T) {
	m := build(t, gateway+strings.Replace(routeWithRule("  - backendRefs: [{name: b, kind: Bucket, group: x.io, port: 1}]\n"), "spec:\n", "spec:\n  parentRefs: [{name: gw}]\n", 1), translate.ResolveOptions{})
	var https, dead bool
	for _, n := range m.Notes {
		switch {
		case strings.Contains(n.Text, "(HTTPS) is not generated"):
			https = n.Severity == translate.SeverityWarning && n.Object == "Gateway ns/gw"
		case strings.Contains(n.Text, "answers its requests with 500"):
			dead = n.Severity == translate.SeverityWarning && n.Object == "HTTPRoute ns/r rule 1"
		}
	}
	if !https || !dead {
		t.Errorf("notes lack a warning for the HTTPS listener (%v) or the dead rule (%v):\n%s", https, dead, translate.NotesText(m.Notes))
	}
	if got := (translate.Note{Severity: translate.SeverityWarning, Target: "nginx", Object: "HTTPRoute a/b", Text: "x"}).String(); got != "warning: nginx: HTTPRoute a/b: x" {
		t.Errorf("Note.String() = %q", got)
	}
}

// TestCoveringMatchesTheDefinition: covering looks candidates up by suffix;
// it must give what scanning every hostname in precedence order gives.
func TestCoveringMatchesTheDefinition(t *testing.T) {
	hosts := map[string][]*placed{}
	for _, h := range []string{"", "a.b.example.com", "b.example.com", "*.b.example.com", "*.example.com", "*.com", "x.org", "*.org", "*.a.b.example.com"} {
		hosts[h] = nil
	}
	for h := range hosts {
		want := []string{h}
		for _, other := range sortedHostnames(hosts) {
			if other != h && (other == "" || wildcardCovers(other, h)) {
				want = append(want, other)
			}
		}
		if got := covering(h, hosts); !reflect.DeepEqual(got, want) {
			t.Errorf("covering(%q) = %q, want %q", h, got, want)
		}
	}
}
