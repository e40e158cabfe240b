package input

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	upstreamcel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/translate"
)

// celDiff runs the API server's own CEL validator (k8s.io/apiextensions-
// apiserver's schema/cel, version of go.mod) beside gwretry's fork
// (internal/thirdparty/crdcel) on every object validated through it, and
// records every object where their field.ErrorLists differ.
type celDiff struct {
	mu       sync.Mutex
	calls    int
	withErrs int
	diffs    []string
}

// wrap returns a copy of v whose CEL step runs both validators, records the
// comparison and returns the fork's errors.
func (d *celDiff) wrap(v *crdValidator) *crdValidator {
	up := upstreamcel.NewValidator(v.structural, true, celconfig.PerCallLimit)
	w := *v
	w.cel = func(u map[string]any) field.ErrorList {
		got := v.cel(u)
		want, _ := up.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
		d.mu.Lock()
		defer d.mu.Unlock()
		d.calls++
		if len(want) > 0 {
			d.withErrs++
		}
		// The validators range over Go maps, so several errors of one
		// object come in either order; compare them as sets.
		if g, w := sortedErrs(got), sortedErrs(want); !reflect.DeepEqual(g, w) {
			d.diffs = append(d.diffs, fmt.Sprintf("fork: %v\nupstream: %v", g, w))
		}
		return got
	}
	return &w
}

func sortedErrs(errs field.ErrorList) field.ErrorList {
	out := append(field.ErrorList(nil), errs...)
	sort.SliceStable(out, func(i, j int) bool { return fmt.Sprintf("%#v", *out[i]) < fmt.Sprintf("%#v", *out[j]) })
	if len(out) == 0 {
		return nil
	}
	return out
}

func (d *celDiff) check(t *testing.T, what string, minCalls, minErrs int) {
	t.Helper()
	for _, s := range d.diffs {
		t.Errorf("%s: the fork and upstream disagree:\n%s", what, s)
	}
	if d.calls < minCalls || d.withErrs < minErrs {
		t.Errorf("%s: %d CEL validations, %d with errors; want at least %d and %d", what, d.calls, d.withErrs, minCalls, minErrs)
	}
	t.Logf("%s: %d CEL validations agree, %d of them with errors", what, d.calls, d.withErrs)
}

// diffValidators wraps every Gateway API and policy validator.
func diffValidators(t *testing.T, d *celDiff) map[string]*crdValidator {
	t.Helper()
	vs, err := crdValidators()
	if err != nil {
		t.Fatal(err)
	}
	ps, err := policyValidators()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*crdValidator{}
	for k, v := range vs {
		out[k] = d.wrap(v)
	}
	for k, v := range ps {
		out["policy/"+k] = d.wrap(v)
	}
	return out
}

// validateInputDiff validates every object of in as Validate does, with
// the wrapped validators.
func validateInputDiff(t *testing.T, vs map[string]*crdValidator, in *translate.Input, ch translate.Channel) ErrorList {
	t.Helper()
	var errs ErrorList
	for _, r := range in.Routes {
		errs = append(errs, validateWith(vs[string(ch)+"/HTTPRoute"], r.Pos, "HTTPRoute", r.Obj.Namespace, r.Obj.Name, r.Obj, ch, "")...)
	}
	for _, g := range in.Gateways {
		errs = append(errs, validateWith(vs[string(ch)+"/Gateway"], g.Pos, "Gateway", g.Obj.Namespace, g.Obj.Name, g.Obj, ch, "")...)
	}
	for _, c := range in.GatewayClasses {
		errs = append(errs, validateWith(vs[string(ch)+"/GatewayClass"], c.Pos, "GatewayClass", c.Obj.Namespace, c.Obj.Name, c.Obj, ch, "")...)
	}
	for _, p := range in.Policies.Retry {
		errs = append(errs, validateWith(vs["policy/gwretry.io/v1alpha1/RetryPolicy"], p.Pos, "RetryPolicy", p.Obj.Namespace, p.Obj.Name, p.Obj, ch, "")...)
	}
	return errs
}

// TestCELForkAgreesCases runs upstream's CEL validator and the fork on
// every case of testdata/cel: each object as Load decodes it, and as its
// raw JSON form (so that objects Load rejects reach CEL too).
func TestCELForkAgreesCases(t *testing.T) {
	d := &celDiff{}
	vs := diffValidators(t, d)
	checks := 0
	for _, file := range []string{"../testdata/cel/upstream.yaml", "../testdata/cel/schema.yaml"} {
		for _, c := range loadCELCases(t, file) {
			doc, err := yaml.Marshal(c.Object)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range c.Channels {
				checks++
				if in, err := Load([]string{"-"}, strings.NewReader(string(doc)), DefaultLimits()); err == nil {
					validateInputDiff(t, vs, in, translate.Channel(ch))
				}
				jsonDoc, err := yaml.YAMLToJSON(doc)
				if err != nil {
					t.Fatal(err)
				}
				var u map[string]any
				if err := json.Unmarshal(jsonDoc, &u); err != nil {
					t.Fatal(err)
				}
				kind, _ := u["kind"].(string)
				key := ch + "/" + kind
				if kind == "RetryPolicy" {
					key = "policy/gwretry.io/v1alpha1/RetryPolicy"
				}
				v := vs[key]
				if v == nil {
					continue
				}
				md, _ := u["metadata"].(map[string]any)
				ns, _ := md["namespace"].(string)
				name, _ := md["name"].(string)
				validateUnstructured(v, translate.Position{File: file}, kind, ns, name, u, translate.Channel(ch), "")
			}
		}
	}
	if checks < 460 {
		t.Errorf("%d checks, want at least 460", checks)
	}
	d.check(t, "testdata/cel", checks, 100)
}

// routeMutation breaks a route so that a CEL rule of the HTTPRoute CRD
// (crds/) rejects it.
type routeMutation struct {
	name string
	// experimental: only the experimental channel's CRD has the rule.
	experimental bool
	f            func(r *gwv1.HTTPRoute)
}

var pathPrefix = ptr.To(gwv1.PathMatchPathPrefix)

func firstRule(r *gwv1.HTTPRoute) *gwv1.HTTPRouteRule {
	if len(r.Spec.Rules) == 0 {
		r.Spec.Rules = append(r.Spec.Rules, gwv1.HTTPRouteRule{})
	}
	return &r.Spec.Rules[0]
}

func backend(name string) gwv1.BackendObjectReference {
	return gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(80))}
}

var routeMutations = []routeMutation{
	{"redirect and rewrite", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.BackendRefs = nil
		rule.Filters = append(rule.Filters,
			gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Hostname: ptr.To(gwv1.PreciseHostname("a.example.com"))}},
			gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To(gwv1.PreciseHostname("b.example.com"))}})
	}},
	{"redirect with backendRefs", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.BackendRefs = append(rule.BackendRefs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: backend("svc")}})
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{StatusCode: ptr.To(301)}})
	}},
	{"duplicate rule names", true, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.Name = ptr.To(gwv1.SectionName("same"))
		dup := *rule.DeepCopy()
		r.Spec.Rules = append(r.Spec.Rules, dup)
	}},
	{"relative and unclean paths", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.Matches = append(rule.Matches,
			gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("foo")}},
			gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: pathPrefix, Value: ptr.To("/a//b/../c/.")}},
			gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: pathPrefix, Value: ptr.To("/x%2Fy#z")}})
	}},
	{"repeated header modifier", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		f := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"x-a"}}}
		rule.Filters = append(rule.Filters, f, f)
	}},
	{"filter type and field differ", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: ptr.To(gwv1.PreciseHostname("b.example.com"))}})
	}},
	{"replacePrefixMatch with an exact match", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.Matches = []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("/x")}}}
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/y"), ReplaceFullPath: ptr.To("/z")}}})
	}},
	{"backendRequest longer than request", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.Timeouts = &gwv1.HTTPRouteTimeouts{Request: ptr.To(gwv1.Duration("1s")), BackendRequest: ptr.To(gwv1.Duration("10s"))}
	}},
	{"mirror percent and fraction", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.Filters = append(rule.Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
			BackendRef: backend("m"), Percent: ptr.To(int32(10)), Fraction: &gwv1.Fraction{Numerator: 5, Denominator: ptr.To(int32(2))}}})
	}},
	{"service without port", false, func(r *gwv1.HTTPRoute) {
		rule := firstRule(r)
		rule.BackendRefs = append(rule.BackendRefs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: "noport"}}})
	}},
	{"duplicate parents", false, func(r *gwv1.HTTPRoute) {
		p := gwv1.ParentReference{Name: "gw", Namespace: ptr.To(gwv1.Namespace("infra"))}
		r.Spec.ParentRefs = append(r.Spec.ParentRefs, p, p)
	}},
	{"too many matches", false, func(r *gwv1.HTTPRoute) {
		r.Spec.Rules = nil
		for i := range 3 {
			rule := gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: backend("svc")}}}}
			for j := range 50 {
				rule.Matches = append(rule.Matches, gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: pathPrefix, Value: ptr.To(fmt.Sprintf("/r%d/m%d", i, j))}})
			}
			r.Spec.Rules = append(r.Spec.Rules, rule)
		}
	}},
}

// gatewayMutations break a Gateway so that a CEL rule of the Gateway CRD
// rejects it.
var gatewayMutations = []struct {
	name string
	f    func(g *gwv1.Gateway)
}{
	{"tls on HTTP, hostname on TCP, HTTPS without tls", func(g *gwv1.Gateway) {
		g.Spec.Listeners = append(g.Spec.Listeners,
			gwv1.Listener{Name: "plain-tls", Port: 9001, Protocol: gwv1.HTTPProtocolType, TLS: &gwv1.ListenerTLSConfig{Mode: ptr.To(gwv1.TLSModeTerminate)}},
			gwv1.Listener{Name: "tcp-host", Port: 9002, Protocol: gwv1.TCPProtocolType, Hostname: ptr.To(gwv1.Hostname("a.example.com"))},
			gwv1.Listener{Name: "https-bare", Port: 9003, Protocol: gwv1.HTTPSProtocolType})
	}},
	{"same port, protocol and hostname", func(g *gwv1.Gateway) {
		l := gwv1.Listener{Name: "one", Port: 9100, Protocol: gwv1.HTTPProtocolType, Hostname: ptr.To(gwv1.Hostname("dup.example.com"))}
		l2 := l
		l2.Name = "two"
		g.Spec.Listeners = append(g.Spec.Listeners, l, l2)
	}},
}

// TestCELForkAgreesCorpus runs upstream's CEL validator and the fork on
// every route and Gateway of a generated corpus, and on variants of them
// broken in the ways the CRDs' CEL rules catch.
func TestCELForkAgreesCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("every route and Gateway of a 300-route corpus through both validators: in the full tier (make test), not the fast one")
	}
	data, err := corpus.Generate(corpus.Defaults(300))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{"-"}, strings.NewReader(string(data)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []translate.Channel{translate.ChannelStandard, translate.ChannelExperimental} {
		d := &celDiff{}
		vs := diffValidators(t, d)
		if errs := validateInputDiff(t, vs, in, ch); len(errs) > 0 {
			t.Errorf("%s: the corpus is invalid: %v", ch, errs)
		}
		d.check(t, string(ch)+" corpus", len(in.Routes), 0)

		for _, m := range routeMutations {
			d := &celDiff{}
			vs := diffValidators(t, d)
			for i, r := range in.Routes {
				if i%10 != 0 { // a tenth of the routes is plenty
					continue
				}
				obj := r.Obj.DeepCopy()
				m.f(obj)
				validateWith(vs[string(ch)+"/HTTPRoute"], r.Pos, "HTTPRoute", obj.Namespace, obj.Name, obj, ch, "")
			}
			minErrs := len(in.Routes) / 10
			if m.experimental && ch == translate.ChannelStandard {
				minErrs = 0
			}
			d.check(t, string(ch)+" routes: "+m.name, len(in.Routes)/10, minErrs)
		}
		for _, m := range gatewayMutations {
			d := &celDiff{}
			vs := diffValidators(t, d)
			for _, g := range in.Gateways {
				obj := g.Obj.DeepCopy()
				m.f(obj)
				validateWith(vs[string(ch)+"/Gateway"], g.Pos, "Gateway", obj.Namespace, obj.Name, obj, ch, "")
			}
			d.check(t, string(ch)+" gateways: "+m.name, len(in.Gateways), len(in.Gateways))
		}
	}
}

// TestCELForkConcurrent validates routes concurrently with fresh
// validators, whose memoized schema adaptors are then built by concurrent
// validations (run it with -race), and requires the results of a
// sequential run.
func TestCELForkConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("the fork under concurrency: in the full tier (make test), not the fast one")
	}
	data, err := corpus.Generate(corpus.Defaults(100))
	if err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{"-"}, strings.NewReader(string(data)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	routes := make([]*gwv1.HTTPRoute, 0, 2*len(in.Routes))
	for _, r := range in.Routes {
		routes = append(routes, r.Obj)
		broken := r.Obj.DeepCopy()
		routeMutations[0].f(broken)
		routeMutations[4].f(broken)
		routes = append(routes, broken)
	}
	run := func(parallel bool) []string {
		v, err := newCRDValidator("crds/experimental-httproutes.yaml")
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(routes))
		one := func(i int) {
			r := routes[i]
			errs := validateWith(v, translate.Position{}, "HTTPRoute", r.Namespace, r.Name, r, translate.ChannelExperimental, "")
			s := make([]string, 0, len(errs))
			for _, e := range errs {
				s = append(s, e.Error())
			}
			sort.Strings(s)
			out[i] = strings.Join(s, "\n")
		}
		if parallel {
			translate.Parallel(len(routes), one)
		} else {
			for i := range routes {
				one(i)
			}
		}
		return out
	}
	want, got := run(false), run(true)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("route %d: concurrent:\n%s\nsequential:\n%s", i, got[i], want[i])
		}
	}
}
