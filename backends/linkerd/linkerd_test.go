package linkerd

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// build loads and resolves input as gwretry does.
func build(t *testing.T, input string) (*translate.Input, *translate.Model) {
	t.Helper()
	in, m := testmodel.FromYAML(t, input, translate.ResolveOptions{})
	// Every Linkerd output of every test input is what the Gateway API
	// CRDs bundled with each version accept.
	checkBundledCRDs(t, m)
	return in, m
}

const base = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec:
  gatewayClassName: any
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: cart-1, namespace: shop, labels: {kubernetes.io/service-name: cart}}
addressType: IPv4
ports: [{name: http, port: 80}]
endpoints: [{addresses: [10.0.0.1]}]
`

func route(name string, rules ...string) string {
	return fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: shop}
spec:
  parentRefs: [{name: gw}, {name: cart, kind: Service, group: "", port: 80}]
  hostnames: [cart.example.com]
  rules:
%s`, name, strings.Join(rules, ""))
}

// gammaRoute is route attached to the Service only (GAMMA), as Linkerd's
// users write them: no hostnames, which would restrict it to requests
// whose host matches (TestHostnamesRestrict).
func gammaRoute(name string, rules ...string) string {
	return strings.Replace(strings.Replace(route(name, rules...), "{name: gw}, ", "", 1), "  hostnames: [cart.example.com]\n", "", 1)
}

func rule(path, extra string) string {
	return fmt.Sprintf("  - matches: [{path: {type: PathPrefix, value: %s}}]\n    backendRefs: [{name: cart, port: 80}]\n%s", path, extra)
}

const retry2 = "    retry: {attempts: 2, codes: [502, 503]}\n"

// TestSplit: a route is split only when its rules need different
// annotations, and the output decodes strictly as HTTPRoutes.
func TestSplit(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		version string
		want    []string // output routes, "name: rule indices"
	}{
		{"no retry nor timeout: not split", route("a", rule("/x", ""), rule("/y", "")), "", []string{"a: 0,1"}},
		{"same retry: not split", route("a", rule("/x", retry2), rule("/y", retry2)), "", []string{"a: 0,1"}},
		{"request field Linkerd reads (2.20): not split", route("a", rule("/x", "    timeouts: {request: 5s}\n"), rule("/y", "")), "2.20", []string{"a: 0,1"}},
		{"request field before 2.20: split", route("a", rule("/x", "    timeouts: {request: 5s}\n"), rule("/y", "")), "2.19", []string{"a: 0", "a-rule-1: 1"}},
		{"request Linkerd cannot parse: split", route("a", rule("/x", "    timeouts: {request: 1m30s}\n"), rule("/y", "")), "2.20", []string{"a: 0", "a-rule-1: 1"}},
		{"different retries: split, groups keep rule order", route("a", rule("/x", retry2), rule("/y", ""), rule("/z", retry2)), "", []string{"a: 0,2", "a-rule-1: 1"}},
		{"split name taken by an input route", route("a", rule("/x", retry2), rule("/y", "")) + route("a-rule-1", rule("/q", "")), "", []string{"a: 0", "a-rule-1-2: 1", "a-rule-1: 0"}},
		{"a refused filter isolates its rule", route("a", rule("/x", ""), rule("/y", "    filters: [{type: URLRewrite, urlRewrite: {hostname: b.example.com}}]\n")), "", []string{"a: 0", "a-rule-1: 1"}},
		{"GAMMA: same retry, not split", gammaRoute("a", rule("/x", retry2), rule("/y", retry2)), "", []string{"a: 0,1"}},
		{"GAMMA: different retries, split", gammaRoute("a", rule("/x", retry2), rule("/y", ""), rule("/z", retry2)), "", []string{"a: 0,2", "a-rule-1: 1"}},
		{"GAMMA and Gateway routes together", gammaRoute("a", rule("/x", retry2), rule("/y", "")) + route("b", rule("/q", retry2)), "", []string{"a: 0", "a-rule-1: 1", "b: 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := build(t, base+tt.input)
			out, err := New().Generate(m, translate.Options{Version: tt.version})
			if err != nil {
				t.Fatal(err)
			}
			routes, err := decode(out.Files[0].Data)
			if err != nil {
				t.Fatalf("strict decoding: %v", err)
			}
			var got []string
			for _, rt := range routes {
				got = append(got, rt.Name+": "+rt.Annotations[annRules])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("routes %q, want %q", got, tt.want)
			}
			// Run checks one finding per feature and the honoured claims.
			if _, err := translate.Run(m, []translate.Target{{Backend: New(), Version: out0(tt.version)}}, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSplitNames: the name of a split route is a valid object name of at
// most 253 characters, unique in the namespace, whatever the lengths of
// the route's and the rule's names (both may be 253 characters), and
// routes whose names collide once cut get distinct suffixes.
func TestSplitNames(t *testing.T) {
	named := func(name, path string) string {
		return "  - name: " + name + "\n    " + strings.TrimPrefix(rule(path, ""), "  - ")
	}
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	tests := []struct {
		name  string
		input string
		want  []string // names of the split routes, in order
	}{
		{"rule name", route("a", rule("/x", retry2), named("b.c", "/y")), []string{"a-b.c"}},
		{"long route, short rule name", route(long('r', 253), rule("/x", retry2), named("b", "/y")), []string{long('r', 251) + "-b"}},
		{"long rule name", route("a", rule("/x", retry2), named(long('b', 251), "/y")), []string{"a-" + long('b', 251)}},
		{"rule name of 252", route("a", rule("/x", retry2), named(long('b', 252), "/y")), []string{"a-rule-1"}},
		{"rule name of 253", route(long('r', 253), rule("/x", retry2), named(long('b', 253), "/y")), []string{long('r', 246) + "-rule-1"}},
		{"cut at a dot", route(long('r', 200)+"."+long('s', 52), rule("/x", retry2), named("b", "/y")), []string{long('r', 200) + "." + long('s', 50) + "-b"}},
		{"cut names collide", route(long('r', 252)+"x", rule("/x", retry2), named("b", "/y")) +
			route(long('r', 252)+"y", rule("/x", retry2), named("b", "/y")) +
			route(long('r', 252)+"z", rule("/x", retry2), named("b", "/y")),
			[]string{long('r', 251) + "-b", long('r', 251) + "-2", long('r', 251) + "-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := build(t, base+tt.input)
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "2.20"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			routes, err := decode(res.Files[0].Data)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			seen := map[string]bool{}
			for _, rt := range routes {
				if seen[rt.Name] || !validName(rt.Name) {
					t.Errorf("name %q: duplicate or not a valid object name", rt.Name)
				}
				seen[rt.Name] = true
				if rt.Annotations[annRules] != "0" {
					got = append(got, rt.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("split routes %q, want %q", got, tt.want)
			}
		})
	}
}

func out0(v string) string {
	if v == "" {
		return "2.20"
	}
	return v
}

// TestReread feeds the generated routes back through gwretry's own load,
// validation and resolution, with the rest of the input: the rules,
// matches, backends and filters come out the same, in the same
// precedence, and so do the retries and timeouts once each re-read rule
// takes them from its route's Linkerd annotations (withAnnotations), as
// Linkerd does. The routes themselves carry no rules[].retry (no CRD
// Linkerd bundles knows it) and, on 2.16 and 2.17, no rules[].timeouts.
func TestReread(t *testing.T) {
	rules := []string{rule("/x", retry2+"    timeouts: {request: 10s, backendRequest: 1s}\n"), rule("/y", "    timeouts: {request: 1m30s}\n"), rule("/x", ""), rule("/z", retry2)}
	for _, input := range []string{base + route("a", rules...), base + gammaRoute("a", rules...), base + gammaRoute("a", rules...) + gammaRoute("b", rule("/x/y", retry2), rule("/x", ""))} {
		reread(t, input)
	}
}

func reread(t *testing.T, manifest string) {
	t.Helper()
	in, m := build(t, manifest)
	if len(m.Mesh) == 0 {
		t.Fatal("no mesh attachment")
	}
	for _, v := range []string{"2.16", "2.18", "2.20"} {
		out, err := New().Generate(m, translate.Options{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "routes.yaml")
		if err := os.WriteFile(p, out.Files[0].Data, 0o644); err != nil {
			t.Fatal(err)
		}
		again, err := input.Load([]string{p}, nil, translate.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		in2 := *in
		in2.Routes = again.Routes
		m2, err := resolve.Build(&in2, translate.ResolveOptions{})
		if err != nil {
			t.Fatalf("%s: re-reading: %v", v, err)
		}
		sup, _ := lookupVersion(v)
		withAnnotations(t, m2, sup)
		if a, b := routing(m), routing(m2); !slices.Equal(a, b) {
			t.Errorf("%s: routing differs after re-reading:\n%s\nwant\n%s", v, strings.Join(b, "\n"), strings.Join(a, "\n"))
		}
	}
}

// withAnnotations gives every rule of the re-read model m the retry policy
// and timeouts its route's Linkerd annotations set (retry.linkerd.io/limit
// and http; timeout.linkerd.io/response for backendRequest,
// timeout.linkerd.io/request for request, or else timeouts.request where
// sup reads it), in place of the route's rules[].retry and timeouts,
// which must be absent (or, for timeouts, absent on 2.16 and 2.17).
func withAnnotations(t *testing.T, m *translate.Model, sup support) {
	t.Helper()
	for _, r := range slices.Concat(m.Rules, m.MeshRules) {
		rt := m.HTTPRoutes[r.Route]
		if rt == nil {
			t.Fatalf("%s: no route %s", sup.Version, r.Route)
		}
		if rt.APIVersion != sup.APIVersion {
			t.Errorf("%s: route %s is %s", sup.Version, r.Route, rt.APIVersion)
		}
		src := rt.Spec.Rules[r.Index]
		if src.Retry != nil || src.Name != nil || (!sup.RuleTimeouts && src.Timeouts != nil) {
			t.Errorf("%s: rule %s#%d has a field the bundled CRDs lack: %+v", sup.Version, r.Route, r.Index, src)
		}
		retry, err := parseRetry(rt.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		timers, err := parseTimeouts(rt.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		r.Retry = nil
		if retry != nil {
			r.Retry = &translate.Retry{Attempts: retry.limit, Codes: retry.codes}
		}
		dur := func(d *time.Duration) *translate.Duration {
			if d == nil {
				return nil
			}
			return &translate.Duration{Text: d.String(), Value: *d}
		}
		r.Timeouts.BackendRequest = dur(timers.response)
		if timers.request != nil || !sup.ReadsRequestField {
			r.Timeouts.Request = dur(timers.request)
		}
	}
}

// routing describes every virtual host's matches in precedence order with
// what each rule does, without rule or route names.
func routing(m *translate.Model) []string {
	var out []string
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				out = append(out, fmt.Sprintf("%s %s %+v %s", l.Name, vh.Hostname, rm.Match, does(rm.Rule)))
			}
		}
	}
	for _, a := range m.Mesh {
		for _, rm := range a.Routes {
			out = append(out, fmt.Sprintf("%s %+v %s", a, rm.Match, does(rm.Rule)))
		}
	}
	return out
}

// does says what a rule does, without its names.
func does(r *translate.Rule) string {
	dur := func(d *translate.Duration) string {
		if d == nil {
			return "-"
		}
		return d.Value.String()
	}
	var bs []string
	for _, b := range r.Backends {
		bs = append(bs, fmt.Sprintf("%s:%d w%d %v", b.Service, b.Port, b.Weight, b.Endpoints))
	}
	rt := "-"
	if r.Retry != nil {
		rt = fmt.Sprintf("%d %v %v", r.Retry.Attempts, r.Retry.Codes, dur(r.Retry.Backoff))
	}
	var ps []string
	for _, p := range r.MeshParents {
		ps = append(ps, fmt.Sprintf("%s consumer=%v", p, p.Consumer))
	}
	return fmt.Sprintf("backends %v retry %s timeouts %s/%s filters %v mesh parents %v", bs, rt,
		dur(r.Timeouts.Request), dur(r.Timeouts.BackendRequest), r.Filters.Features(), ps)
}

// TestGatewayOnlyIgnored: a route whose parents are Gateways only is
// outside Linkerd's scope: Linkerd reports nothing of it, and Run makes
// every feature not applicable (GatewayAttachmentOnly), which no gate
// counts.
func TestGatewayOnlyIgnored(t *testing.T) {
	in := base + strings.Replace(route("a", rule("/x", retry2)), `, {name: cart, kind: Service, group: "", port: 80}`, "", 1)
	_, m := build(t, in)
	out, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Findings) != 0 {
		t.Errorf("Linkerd reported a route outside its scope: %+v", out.Findings)
	}
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "2.20"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Findings) == 0 {
		t.Fatal("no findings")
	}
	for _, f := range res.Report.Findings {
		if f.Status != translate.NotApplicable || f.Reason != report.ReasonGatewayAttachmentOnly {
			t.Errorf("%s: %s %s", f.Feature, f.Status, f.Reason)
		}
	}
}

func TestSyntax(t *testing.T) {
	tests := []struct {
		codes []int
		want  string
	}{
		{[]int{500}, "500"},
		{[]int{500, 502, 503, 504}, "500,502-504"},
		{[]int{429, 500, 501}, "429,500-501"},
	}
	for _, tt := range tests {
		got := codesText(tt.codes)
		if got != tt.want {
			t.Errorf("codesText(%v) = %q, want %q", tt.codes, got, tt.want)
		}
		back, err := parseCodes(got)
		if err != nil || !slices.Equal(back, tt.codes) {
			t.Errorf("parseCodes(%q) = %v, %v", got, back, err)
		}
	}
	for _, s := range []string{"0s", "1500ms", "2s", "3m", "4h"} {
		d, err := parseDuration(s)
		if err != nil || durationText(d) != s {
			t.Errorf("%s: parsed %v %v, written %q", s, d, err, durationText(d))
		}
	}
	for _, s := range []string{"1m30s", "1.5s", "5", "s"} {
		if _, err := parseDuration(s); err == nil {
			t.Errorf("parseDuration(%q) accepted", s)
		}
	}
}

// TestGammaFindings: a route attached to its Service only (GAMMA) is what
// Linkerd applies: its findings are real, and Run's judge checks the
// honoured ones. A route whose Service parent does not attach (no such
// port) is not applied, and its findings say why.
func TestGammaFindings(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  map[translate.Feature]translate.Status
		// reason is every finding's reason, when given.
		reason report.Reason
	}{
		{"GAMMA route", gammaRoute("a", rule("/x", "    retry: {attempts: 2, codes: [503], backoff: 1s}\n    timeouts: {request: 10s, backendRequest: 1s}\n")),
			map[translate.Feature]translate.Status{
				translate.FeatureRetryAttempts: translate.Approximated, translate.FeatureRetryCodes: translate.Approximated,
				translate.FeatureRetryBackoff: translate.Unsupported, translate.FeatureRetryConnectionErrors: translate.Unsupported,
				translate.FeatureRetryBackendTimeout: translate.Approximated, translate.FeatureBackendRequestTimeout: translate.Approximated,
				translate.FeatureRequestTimeout: translate.Honoured,
			}, ""},
		{"Service parent without that port", strings.Replace(route("a", rule("/x", retry2)), "port: 80}]", "port: 81}]", 1),
			map[translate.Feature]translate.Status{
				translate.FeatureRetryAttempts: translate.Unsupported, translate.FeatureRetryCodes: translate.Unsupported,
				translate.FeatureRetryConnectionErrors: translate.Unsupported,
			}, report.ReasonNoServiceParentAttaches},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := build(t, base+tt.input)
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "2.20"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 1 {
				t.Errorf("%d files", len(res.Files))
			}
			got := map[translate.Feature]translate.Status{}
			for _, f := range res.Report.Findings {
				got[f.Feature] = f.Status
				if tt.reason != "" && f.Reason != tt.reason {
					t.Errorf("%s: reason %s, want %s", f.Feature, f.Reason, tt.reason)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("findings %v, want %v", got, tt.want)
			}
		})
	}
}

// TestServiceAnnotations: Linkerd's policy controller gives a rule whose
// route sets no retry annotation the Service parent's retry policy, and a
// rule with no timeout of its own the Service's timeouts
// (convert_outbound_route, policy-controller/grpc/src/outbound/http.rs):
// attempts 0, backendRequest 0s and request 0s are not honoured when the
// Service in the input has annotations that reach them, and the judge
// reads them as Linkerd does (the honoured claims that remain are checked
// by Run).
func TestServiceAnnotations(t *testing.T) {
	const svc = `apiVersion: v1
kind: Service
metadata:
  name: cart
  namespace: shop
  annotations: {%s}
spec:
  clusterIP: 10.0.0.5
  ports: [{name: http, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: shop}
spec:
  parentRefs: [{group: "", kind: Service, name: cart, port: 80}]
  rules:
  - backendRefs: [{name: cart, port: 80}]
%s`
	const zeros = "    retry: {attempts: 0}\n    timeouts: {request: 0s, backendRequest: 0s}\n"
	H, A := translate.Honoured, translate.Approximated
	all := func(s translate.Status) map[translate.Feature]translate.Status {
		return map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: s, translate.FeatureRetryBackendTimeout: s,
			translate.FeatureRetryConnectionErrors: s, translate.FeatureBackendRequestTimeout: s, translate.FeatureRequestTimeout: s}
	}
	tests := []struct {
		name, ann, rule string
		want            map[translate.Feature]translate.Status
	}{
		{"no annotations", "", zeros, all(H)},
		{"other annotations only", `example.com/x: "1"`, zeros, all(H)},
		{"retry and request timeout", `retry.linkerd.io/http: 5xx, retry.linkerd.io/limit: "+3", timeout.linkerd.io/request: 2s`, zeros, all(A)},
		{"retry only", `retry.linkerd.io/limit: "2"`, zeros, map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: A, translate.FeatureRetryBackendTimeout: A,
			translate.FeatureRetryConnectionErrors: A, translate.FeatureBackendRequestTimeout: H, translate.FeatureRequestTimeout: H}},
		{"retry timeout only", `retry.linkerd.io/timeout: 1s`, zeros, all(A)},
		{"response timeout only", `timeout.linkerd.io/response: 1s`, zeros, map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: H, translate.FeatureRetryBackendTimeout: A,
			translate.FeatureRetryConnectionErrors: H, translate.FeatureBackendRequestTimeout: A, translate.FeatureRequestTimeout: A}},
		{"idle timeout only", `timeout.linkerd.io/idle: 1m`, zeros, map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: H, translate.FeatureRetryBackendTimeout: A,
			translate.FeatureRetryConnectionErrors: H, translate.FeatureBackendRequestTimeout: A, translate.FeatureRequestTimeout: A}},
		{"unparsable Service annotations are ignored by Linkerd", `retry.linkerd.io/limit: " 3", timeout.linkerd.io/request: "2"`, zeros, all(H)},
		{"the route's own request timeout keeps the Service's timeouts out", `timeout.linkerd.io/request: 2s`,
			"    timeouts: {request: 10s, backendRequest: 0s}\n", map[translate.Feature]translate.Status{translate.FeatureBackendRequestTimeout: H, translate.FeatureRequestTimeout: H}},
		{"a response timeout the rule asks for keeps the Service's timeouts out", `timeout.linkerd.io/request: 2s`,
			"    timeouts: {request: 0s, backendRequest: 1s}\n", map[translate.Feature]translate.Status{translate.FeatureBackendRequestTimeout: A, translate.FeatureRequestTimeout: H}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := build(t, fmt.Sprintf(svc, tt.ann, tt.rule))
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "2.20"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			got := map[translate.Feature]translate.Status{}
			for _, f := range res.Report.Findings {
				got[f.Feature] = f.Status
				if f.Status == A && tt.want[f.Feature] == A && strings.HasPrefix(tt.ann, "retry") && !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool {
					return c.Reason == report.CaveatServiceAnnotationsApply && c.Params["services"] == "Service shop/cart port 80"
				}) {
					t.Errorf("%s: caveats %v do not name the Service's annotations", f.Feature, f.Caveats)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("findings %v, want %v", got, tt.want)
			}
		})
	}
}
