package resolve

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

func TestParseHAProxyTime(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    time.Duration
		clamped bool
		err     string
	}{
		{in: "45s", want: 45 * time.Second},
		{in: "3000", want: 3 * time.Second}, // no unit: milliseconds
		{in: "1500us", want: 1500 * time.Microsecond},
		{in: "30m", want: 30 * time.Minute},
		{in: "2h", want: 2 * time.Hour},
		{in: "1d", want: 24 * time.Hour},
		{in: "2147483647ms", want: translate.MaxHAProxyTimeout},
		{in: "2147483648", want: translate.MaxHAProxyTimeout, clamped: true},
		{in: "30d", want: translate.MaxHAProxyTimeout, clamped: true},
		{in: "99999999999999999999d", want: translate.MaxHAProxyTimeout, clamped: true},
		{in: "0", err: "zero"},
		{in: "0s", err: "zero"},
		{in: "1.5s", err: "not an HAProxy time"},
		{in: "5 s", err: "not an HAProxy time"},
		{in: "1h30m", err: "not an HAProxy time"},
		{in: "-1s", err: "not an HAProxy time"},
		{in: "5S", err: "not an HAProxy time"},
		{in: "", err: "not an HAProxy time"},
		{in: strings.Repeat("9", 40), err: "longer than 32"},
	} {
		got, clamped, err := translate.ParseHAProxyTime(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
		case err != nil || got != c.want || clamped != c.clamped:
			t.Errorf("%q = %v, %v, %v; want %v, %v", c.in, got, clamped, err, c.want, c.clamped)
		}
	}
}

const ctGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: c
  listeners: [{name: http, protocol: HTTP, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: svc, port: 80}]}]
---
`

func ctBuild(t *testing.T, policies string) (*translate.Model, error) {
	t.Helper()
	in, err := input.Load([]string{"-"}, strings.NewReader(ctGateway+policies), input.DefaultLimits())
	if err != nil {
		return nil, err
	}
	ep, err := translate.ParseEndpoint("svc:80=127.0.0.1:9000")
	if err != nil {
		t.Fatal(err)
	}
	return Build(in, translate.ResolveOptions{Endpoints: []translate.EndpointOverride{ep}})
}

func TestConnectionTimeoutPolicyErrors(t *testing.T) {
	head := "apiVersion: gwretry.io/v1alpha1\nkind: ConnectionTimeoutPolicy\nmetadata: {name: p, namespace: ns}\n"
	gw := "  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]\n"
	for _, c := range []struct{ name, spec, want string }{
		{"bad unit", "spec:\n" + gw + "  clientTimeout: 5sec\n", `document 3: ConnectionTimeoutPolicy ns/p: spec.clientTimeout: "5sec" is not an HAProxy time`},
		{"zero", "spec:\n" + gw + "  tunnelTimeout: \"0\"\n", "spec.tunnelTimeout: \"0\" is zero"},
		{"number not string", "spec:\n" + gw + "  serverTimeout: 5\n", "spec.serverTimeout"},
		{"unknown field", "spec:\n" + gw + "  connectTimeout: 5s\n", "unknown field"},
		{"route target", "spec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}]\n  clientTimeout: 5s\n", "spec.targetRefs[0]: targets group"},
		{"no target", "spec:\n  clientTimeout: 5s\n", "spec.targetRefs: invalid per the ConnectionTimeoutPolicy CRD: Required value"},
		{"nothing set", "spec:\n" + gw, "sets no timeout"},
		{"a Gateway twice", "spec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}, {group: gateway.networking.k8s.io, kind: Gateway, name: gw}]\n  serverTimeout: 5s\n", "spec.targetRefs[1]: repeats spec.targetRefs[0]: each targetRef must be unique"},
	} {
		_, err := ctBuild(t, head+c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || !input.IsInputError(err) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

func TestConnectionTimeoutsModel(t *testing.T) {
	pol := func(name, ts, spec string) string {
		return "apiVersion: gwretry.io/v1alpha1\nkind: ConnectionTimeoutPolicy\nmetadata: {name: " + name + ", namespace: ns, creationTimestamp: \"" + ts + "\"}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]\n" + spec + "---\n"
	}
	m, err := ctBuild(t, pol("new", "2024-02-01T00:00:00Z", "  clientTimeout: 10s\n  serverTimeout: 40d\n")+pol("old", "2024-01-01T00:00:00Z", "  clientTimeout: 45s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ConnectionTimeouts) != 1 {
		t.Fatalf("%d gateways, want 1", len(m.ConnectionTimeouts))
	}
	g := m.ConnectionTimeouts[0]
	if g.Gateway != "ns/gw" || len(g.Listeners) != 1 || len(g.Rules) != 1 || len(g.Timeouts) != 2 {
		t.Fatalf("gateway %+v", g)
	}
	if c := g.Timeouts[0]; c.Feature != translate.FeatureConnClientTimeout || c.Policy != "ns/old" || c.Value != 45*time.Second {
		t.Errorf("clientTimeout %+v: the older policy wins", c)
	}
	if c := g.Timeouts[1]; c.Feature != translate.FeatureConnServerTimeout || !c.Clamped || c.Value != translate.MaxHAProxyTimeout {
		t.Errorf("serverTimeout %+v: want clamped", c)
	}
	// The policies' statuses, as the RetryPolicies' are reported.
	var got []string
	for _, p := range m.Policies {
		got = append(got, fmt.Sprintf("%s %s/%s %s targets=%v notFound=%v reached=%v lost=%v", p.Kind, p.Namespace, p.Name, p.Status, p.Targets, p.NotFound, p.Reached, p.Lost))
	}
	want := []string{
		"ConnectionTimeoutPolicy ns/new Conflicted targets=[Gateway ns/gw] notFound=[] reached=[ns/r rule 0] lost=[clientTimeout of Gateway ns/gw: lost to ConnectionTimeoutPolicy ns/old (45s), which is older or has the same creationTimestamp and comes first by namespace/name]",
		"ConnectionTimeoutPolicy ns/old Accepted targets=[Gateway ns/gw] notFound=[] reached=[ns/r rule 0] lost=[]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policies\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	m2, err := ctBuild(t, strings.Replace(pol("far", "2024-01-01T00:00:00Z", "  clientTimeout: 45s\n"), "name: gw}", "name: elsewhere}", 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Policies) != 1 || m2.Policies[0].Status != translate.PolicyTargetNotFound || fmt.Sprint(m2.Policies[0].NotFound) != "[Gateway ns/elsewhere]" {
		t.Errorf("a policy of a Gateway not in the input: %+v", m2.Policies)
	}
	// The report contract: one finding per (gateway, target, field).
	fs := translate.UnsupportedConnections(m)
	if err := runFindings(m, fs); err != nil {
		t.Errorf("one per field: %v", err)
	}
	if err := runFindings(m, append(fs, fs[0])); err == nil || !strings.Contains(err.Error(), "two findings") {
		t.Errorf("duplicate: %v", err)
	}
	if err := runFindings(m, fs[1:]); err == nil || !strings.Contains(err.Error(), "no finding for Gateway ns/gw") {
		t.Errorf("missing: %v", err)
	}
	bad := fs[0]
	bad.Gateway = "ns/other"
	if err := runFindings(m, append(fs, bad)); err == nil {
		t.Error("a finding for a Gateway without policy passed")
	}
}

// TestConnectionFindingsSource: each connection.* finding names the
// ConnectionTimeoutPolicy its value comes from, the one that won the field
// (the text report's SOURCE column printed "HTTPRoute" for them).
func TestConnectionFindingsSource(t *testing.T) {
	pol := func(name, ts, spec string) string {
		return "apiVersion: gwretry.io/v1alpha1\nkind: ConnectionTimeoutPolicy\nmetadata: {name: " + name + ", namespace: ns, creationTimestamp: \"" + ts + "\"}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]\n" + spec + "---\n"
	}
	m, err := ctBuild(t, pol("new", "2024-02-01T00:00:00Z", "  clientTimeout: 10s\n  serverTimeout: 40s\n")+pol("old", "2024-01-01T00:00:00Z", "  clientTimeout: 45s\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[translate.Feature]string{}
	for _, f := range translate.UnsupportedConnections(m) {
		got[f.Feature] = f.Source
	}
	for _, tc := range []struct {
		feature translate.Feature
		want    string
	}{
		{translate.FeatureConnClientTimeout, "ConnectionTimeoutPolicy ns/old"},
		{translate.FeatureConnServerTimeout, "ConnectionTimeoutPolicy ns/new"},
	} {
		if got[tc.feature] != tc.want {
			t.Errorf("%s: source %q, want %q", tc.feature, got[tc.feature], tc.want)
		}
	}
}

// runFindings runs a target that reports every rule honoured and the
// connection findings fs, so that Run checks them against the contract.
func runFindings(m *translate.Model, fs []translate.Finding) error {
	b := fakeBackend{name: "x", out: func(m *translate.Model) *translate.Output {
		o := honourAll(m)
		o.Findings = append(o.Findings, fs...)
		return o
	}}
	_, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.0"}}, false)
	return err
}

// A policy whose target is not in the input changes nothing: a warning
// names the target. The ConnectionTimeoutPolicy's said nothing when no
// policy found its Gateway (the notes were dropped by an early return);
// the RetryPolicy's was an info line, which -q hides.
func TestPolicyTargetNotInTheInputWarns(t *testing.T) {
	ctp := "apiVersion: gwretry.io/v1alpha1\nkind: ConnectionTimeoutPolicy\nmetadata: {name: p, namespace: ns}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: missing}]\n  clientTimeout: 45s\n---\n"
	rp := "apiVersion: gwretry.io/v1alpha1\nkind: RetryPolicy\nmetadata: {name: rp, namespace: ns}\nspec:\n  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: nothere}]\n  override: {retry: {attempts: 3}}\n---\n"
	m, err := ctBuild(t, ctp+rp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ConnectionTimeoutPolicy ns/p": "Gateway ns/missing",
		"RetryPolicy ns/rp":            "HTTPRoute ns/nothere",
	}
	for _, n := range m.Notes {
		if target, ok := want[n.Object]; ok && n.Severity == translate.SeverityWarning && strings.Contains(n.Text, target) {
			delete(want, n.Object)
		}
	}
	if len(want) > 0 {
		t.Errorf("no warning naming the target for %v; notes:\n%s", want, translate.NotesText(m.Notes))
	}
	for _, p := range m.Policies {
		if p.Status != translate.PolicyTargetNotFound {
			t.Errorf("%s %s/%s: status %s, want TargetNotFound", p.Kind, p.Namespace, p.Name, p.Status)
		}
	}
}
