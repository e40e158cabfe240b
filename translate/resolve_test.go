package translate

import (
	"reflect"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// build loads YAML and builds the model.
func build(t *testing.T, yaml string, opts ResolveOptions) *Model {
	t.Helper()
	in, err := Load([]string{writeInput(t, "in.yaml", yaml)}, nil, DefaultLimits)
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
	m := build(t, routeWithRule("    retry:\n      codes: [503, 500]\n      backoff: 0s\n    timeouts:\n      request: 0s\n"), ResolveOptions{})
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
	if got := r.Features(); !reflect.DeepEqual(got, []Feature{FeatureRetryAttempts, FeatureRetryCodes, FeatureRetryConnectionErrors, FeatureRequestTimeout}) {
		t.Errorf("features %v", got)
	}
	l := m.Listeners[0]
	if l.Address != "0.0.0.0" || l.Port != DefaultPort || l.VirtualHosts[0].Hostname != "" {
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
	m := build(t, gateway+route, ResolveOptions{})
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
	if !strings.Contains(strings.Join(m.Notes, "\n"), "protocol HTTPS is not generated") {
		t.Errorf("notes %q lack the HTTPS listener", m.Notes)
	}

	m = build(t, gateway+strings.Replace(route, "{name: gw}", "{name: gw, sectionName: web}", 1), ResolveOptions{Listen: &Bind{Address: "127.0.0.1", Port: 9000}})
	if len(m.Listeners) != 1 || m.Listeners[0].Address != "127.0.0.1" || m.Listeners[0].Port != 9000 || len(m.Listeners[0].VirtualHosts) != 1 {
		t.Errorf("--listen with sectionName: %+v", m.Listeners[0])
	}

	m = build(t, gateway+strings.Replace(route, "[a.example.com, other.org]", "[other.org]", 1)+"    retry: {}\n", ResolveOptions{})
	if len(m.Listeners) != 1 {
		t.Errorf("route attached to %d listeners, want 1 (no intersection with *.example.com)", len(m.Listeners))
	}

	m = build(t, gateway+strings.Replace(route, "{name: gw}", "{name: gw, sectionName: https}", 1)+"    retry: {}\n", ResolveOptions{})
	if len(m.Rules) != 0 || len(m.Skipped) != 1 || len(m.Skipped[0].Features) != 2 {
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
	m := build(t, route, ResolveOptions{})
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
	m := build(t, routeWithRule("")+svc, ResolveOptions{})
	want := []Endpoint{{"10.0.0.1", 3000}, {"10.0.0.2", 3000}}
	if got := m.Rules[0].Backends[0].Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("EndpointSlice endpoints %v, want %v (ready only, sorted)", got, want)
	}
	ov, err := ParseEndpoint("svc:8080=127.0.0.1:9000,[::1]:9001")
	if err != nil {
		t.Fatal(err)
	}
	m = build(t, routeWithRule("")+svc, ResolveOptions{Endpoints: []EndpointOverride{ov}})
	want = []Endpoint{{"127.0.0.1", 9000}, {"::1", 9001}}
	if got := m.Rules[0].Backends[0].Endpoints; !reflect.DeepEqual(got, want) {
		t.Errorf("--endpoint endpoints %v, want %v", got, want)
	}
	m = build(t, routeWithRule("  - backendRefs: [{name: svc, port: 9999}]\n    retry: {}\n")+svc, ResolveOptions{})
	if len(m.Skipped) != 1 || !strings.Contains(m.Skipped[0].Reason, "has no port 9999") {
		t.Errorf("skipped %+v, want the rule with a missing Service port", m.Skipped)
	}
	m = build(t, routeWithRule("  - backendRefs: [{name: svc, port: 8080, weight: 0}]\n  - backendRefs: [{name: x, kind: Bucket, group: example.com, port: 1}]\n"), ResolveOptions{})
	if len(m.Rules) != 1 || len(m.Skipped) != 2 {
		t.Errorf("rules %d skipped %+v; want weight-0 and non-Service rules skipped", len(m.Rules), m.Skipped)
	}
}

func TestParseFlags(t *testing.T) {
	for _, bad := range []string{"svc=1.2.3.4:80", "svc:80", "svc:0=1.2.3.4:80", "Svc:80=1.2.3.4:80", "svc:80=1.2.3.4", "svc:80=:80", "svc:80=a;b:80"} {
		if _, err := ParseEndpoint(bad); err == nil {
			t.Errorf("ParseEndpoint(%q) succeeded", bad)
		}
	}
	o, err := ParseEndpoint("svc.other:80=backend.local:8080")
	if err != nil || o.Service != "svc" || o.Namespace != "other" || o.Endpoints[0].Host != "backend.local" {
		t.Errorf("ParseEndpoint: %+v, %v", o, err)
	}
	if b, err := ParseListen(":8081"); err != nil || b.Address != "0.0.0.0" || b.Port != 8081 {
		t.Errorf("ParseListen(:8081) = %+v, %v", b, err)
	}
	for _, bad := range []string{"8080", "127.0.0.1:99999", "a b:80"} {
		if _, err := ParseListen(bad); err == nil {
			t.Errorf("ParseListen(%q) succeeded", bad)
		}
	}
}
