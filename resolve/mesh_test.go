package resolve

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// meshServices are the Services of the mesh tests: cart (ports 80 "http"
// and 9090 "admin") and a headless one in ns, pay in ns2.
const meshServices = `apiVersion: v1
kind: Service
metadata: {name: cart, namespace: ns}
spec:
  ports: [{name: http, port: 80}, {name: admin, port: 9090}]
---
apiVersion: v1
kind: Service
metadata: {name: headless, namespace: ns}
spec:
  clusterIP: None
  ports: [{name: http, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: pay, namespace: ns2}
spec:
  ports: [{name: http, port: 80}]
---
`

// meshRoute is a route in namespace ns with the given parentRefs and two
// rules, one with a retry, sending to backend (a Service of ns or ns2).
func meshRoute(parents, backend string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [%s]
  hostnames: [cart.example.com]
  rules:
  - backendRefs: [{%s}]
  - matches: [{path: {type: PathPrefix, value: /pay}}]
    backendRefs: [{%s}]
    retry: {attempts: 2, codes: [503]}
`, parents, backend, backend)
}

// TestResolveMeshParents: Service parentRefs (GAMMA) attach when the
// Service (and port) exist; a route attached to Services only goes to
// MeshRules, outside every listener; one also attached to a Gateway stays
// in Rules with its MeshParents.
func TestResolveMeshParents(t *testing.T) {
	const cart80 = "name: cart, port: 80"
	tests := []struct {
		name     string
		input    string
		mesh     []translate.MeshParent // of every rule; nil: not attached to a Service
		where    string                 // "mesh", "gateway" or "skipped"
		invalid  bool                   // the rules' backendRef is invalid
		reason   string                 // in the Skipped reason, or the GatewayUnattached reasons
		noteWant string                 // in the notes
	}{
		{name: "producer route", input: meshServices + meshRoute(`{name: cart, kind: Service, group: ""}`, cart80),
			mesh: []translate.MeshParent{{Service: "ns/cart"}}, where: "mesh", noteWant: "a producer route"},
		{name: "port and sectionName", input: meshServices + meshRoute(`{name: cart, kind: Service, group: "", port: 9090, sectionName: admin}`, cart80),
			mesh: []translate.MeshParent{{Service: "ns/cart", Port: 9090, SectionName: "admin"}}, where: "mesh"},
		{name: "sectionName alone", input: meshServices + meshRoute(`{name: cart, kind: Service, group: "", sectionName: admin}`, cart80),
			mesh: []translate.MeshParent{{Service: "ns/cart", Port: 9090, SectionName: "admin"}}, where: "mesh"},
		{name: "no such port", input: meshServices + meshRoute(`{name: cart, kind: Service, group: "", port: 81}`, cart80),
			where: "skipped", reason: "parentRefs[0] to Service ns/cart port 81: Service ns/cart has no port 81"},
		{name: "port and sectionName of two ports", input: meshServices + meshRoute(`{name: cart, kind: Service, group: "", port: 80, sectionName: admin}`, cart80),
			where: "skipped", reason: "has no port 80 named admin"},
		{name: "Service not in the input", input: meshServices + meshRoute(`{name: nope, kind: Service, group: ""}`, cart80),
			where: "skipped", reason: "Service ns/nope is not in the input"},
		{name: "no Services in the input: assumed", input: meshRoute(`{name: nope, kind: Service, group: ""}`, cart80),
			mesh: []translate.MeshParent{{Service: "ns/nope"}}, where: "mesh"},
		{name: "headless", input: meshServices + meshRoute(`{name: headless, kind: Service, group: ""}`, cart80),
			where: "skipped", reason: "headless Service"},
		{name: "without group it is not a Service", input: meshServices + meshRoute(`{name: cart, kind: Service}`, cart80),
			where: "skipped", reason: `needs group: ""`},
		{name: "consumer route", input: meshServices + meshRoute(`{name: pay, namespace: ns2, kind: Service, group: ""}`, "name: pay, namespace: ns2, port: 80"),
			mesh: []translate.MeshParent{{Service: "ns2/pay", Consumer: true}}, where: "mesh", noteWant: "a consumer route"},
		{name: "mixed Gateway and Service", input: gateway + meshServices + meshRoute(`{name: gw, sectionName: http}, {name: cart, kind: Service, group: ""}`, cart80),
			mesh: []translate.MeshParent{{Index: 1, Service: "ns/cart"}}, where: "gateway"},
		{name: "Service and a broken Gateway parent", input: gateway + meshServices + meshRoute(`{name: gw, sectionName: nope}, {name: cart, kind: Service, group: ""}`, cart80),
			mesh: []translate.MeshParent{{Index: 1, Service: "ns/cart"}}, where: "mesh", reason: "parentRefs[0] to Gateway ns/gw"},
		// GEP-1426: a mesh route sends to any namespace without a
		// ReferenceGrant; a route a Gateway serves still needs one.
		{name: "cross-namespace backend of a mesh route", input: meshServices + meshRoute(`{name: cart, kind: Service, group: ""}`, "name: pay, namespace: ns2, port: 80"),
			mesh: []translate.MeshParent{{Service: "ns/cart"}}, where: "mesh", noteWant: "needs no ReferenceGrant"},
		{name: "cross-namespace backend of a mixed route", input: gateway + meshServices + meshRoute(`{name: gw, sectionName: http}, {name: cart, kind: Service, group: ""}`, "name: pay, namespace: ns2, port: 80"),
			mesh: []translate.MeshParent{{Index: 1, Service: "ns/cart"}}, where: "gateway", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := build(t, tt.input, translate.ResolveOptions{})
			var rules []*translate.Rule
			switch tt.where {
			case "mesh":
				rules = m.MeshRules
				if len(m.Rules) != 0 || len(m.Listeners) != 0 {
					t.Errorf("a route attached to Services only is in Rules (%d) or a listener (%d)", len(m.Rules), len(m.Listeners))
				}
			case "gateway":
				rules = m.Rules
				if len(m.MeshRules) != 0 || len(m.PlacementsOf(m.Rules[0])) == 0 {
					t.Errorf("mixed route: %d mesh rules, placements %v", len(m.MeshRules), m.PlacementsOf(m.Rules[0]))
				}
			case "skipped":
				if len(m.Rules)+len(m.MeshRules) != 0 || len(m.Skipped) != 2 {
					t.Fatalf("rules %d mesh %d skipped %d", len(m.Rules), len(m.MeshRules), len(m.Skipped))
				}
				if !strings.Contains(m.Skipped[0].Reason, tt.reason) || m.Skipped[0].Features[0] != translate.FeatureRouteAttachment {
					t.Errorf("skipped %+v, want reason with %q", m.Skipped[0], tt.reason)
				}
				return
			}
			if len(rules) != 2 {
				t.Fatalf("%d rules", len(rules))
			}
			for _, r := range rules {
				if !reflect.DeepEqual(r.MeshParents, tt.mesh) {
					t.Errorf("rule %d: mesh parents %+v, want %+v", r.Index, r.MeshParents, tt.mesh)
				}
				if got := strings.Join(r.GatewayUnattached, "; "); !strings.Contains(got, tt.reason) || (tt.reason == "") != (got == "") {
					t.Errorf("rule %d: gateway reasons %q, want %q", r.Index, got, tt.reason)
				}
				if (len(r.Invalid) > 0) != tt.invalid {
					t.Errorf("rule %d: invalid backends %+v", r.Index, r.Invalid)
				}
			}
			if !strings.Contains(translate.NotesText(m.Notes), tt.noteWant) {
				t.Errorf("notes lack %q:\n%s", tt.noteWant, translate.NotesText(m.Notes))
			}
			if got := m.MeshAttached(); len(got) != 2 || got[0].Index != 0 {
				t.Errorf("MeshAttached %v", got)
			}
		})
	}
}

// meshBackend is a fakeBackend that translates mesh rules too.
type meshBackend struct{ fakeBackend }

func (meshBackend) Scope() translate.Scope {
	return translate.Scope{GatewayRoutes: true, MeshRoutes: true}
}

// TestRunMeshRules: Run reports every feature of a rule attached to
// Services only not applicable for a gateway backend (MeshAttachmentOnly),
// with route.attachment unsupported when a Gateway parent failed; a mesh backend
// must report those rules itself and gets its files written without any
// listener.
func TestRunMeshRules(t *testing.T) {
	m := build(t, gateway+meshServices+meshRoute(`{name: gw, sectionName: nope}, {name: cart, kind: Service, group: ""}`, "name: cart, port: 80"), translate.ResolveOptions{})
	res, err := translate.Run(m, []translate.Target{{Backend: fakeBackend{name: "gw", out: honourAll}, Version: "1.0"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Report.Findings {
		switch {
		case f.Target != "gw":
			t.Errorf("finding %+v", f)
		case f.Feature == translate.FeatureRouteAttachment:
			// The Gateway parent failed: that is the route's failure
			// (the warning names the parentRef).
			if f.Status != translate.Unsupported || f.Reason != report.ReasonListenerNotGenerated {
				t.Errorf("finding %+v", f)
			}
		case f.Status != translate.NotApplicable || f.Reason != report.ReasonMeshAttachmentOnly:
			// The Service parent is a mesh's: outside a gateway's scope.
			t.Errorf("finding %+v", f)
		}
		got = append(got, fmt.Sprintf("%d %s", f.Rule, f.Feature))
	}
	want := []string{"0 route.attachment", "1 retry.attempts", "1 retry.codes", "1 retry.connectionErrors", "1 route.attachment"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	if len(res.Files) != 0 {
		t.Errorf("a gateway backend wrote %d files without a listener", len(res.Files))
	}

	// A mesh backend that reports only Rules breaks the contract.
	mb := meshBackend{fakeBackend{name: "mesh", out: honourAll}}
	if _, err := translate.Run(m, []translate.Target{{Backend: mb, Version: "1.0"}}, false); err == nil || !strings.Contains(err.Error(), "no finding for ns/r rule") {
		t.Errorf("mesh backend without mesh findings: %v", err)
	}
	mb.out = func(m *translate.Model) *translate.Output {
		out := &translate.Output{Files: []translate.File{{Path: "mesh/routes.yaml", Data: []byte("x")}}}
		for _, r := range m.MeshRules {
			for _, f := range r.Features() {
				out.Findings = append(out.Findings, statusFinding(r, f, translate.Unsupported, "no"))
			}
		}
		return out
	}
	res, err = translate.Run(m, []translate.Target{{Backend: mb, Version: "1.0"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || len(res.Report.Findings) != 3 {
		t.Errorf("mesh backend: files %d, findings %+v", len(res.Files), res.Report.Findings)
	}
}

// TestMeshAttachments: the matches attached to each Service parent, per
// port and consumer namespace, in precedence order.
func TestMeshAttachments(t *testing.T) {
	other := strings.NewReplacer("name: r,", "name: r2,", "namespace: ns}", "namespace: ns2}", "/pay", "/pay/x").Replace(
		meshRoute(`{name: cart, namespace: ns, kind: Service, group: ""}`, "name: cart, namespace: ns, port: 80"))
	m := build(t, meshServices+meshRoute(`{name: cart, kind: Service, group: "", sectionName: admin}, {name: cart, kind: Service, group: "", port: 80, sectionName: http}`, "name: cart, port: 80")+"---\n"+other, translate.ResolveOptions{})
	var got []string
	for _, a := range m.Mesh {
		for _, rm := range a.Routes {
			got = append(got, fmt.Sprintf("%s: %s %s %s", a, translate.RuleObject(rm.Rule), rm.Match.PathType, rm.Match.Path))
		}
	}
	want := []string{
		"Service ns/cart (consumer routes of namespace ns2): HTTPRoute ns2/r2 rule 1 PathPrefix /pay/x",
		"Service ns/cart (consumer routes of namespace ns2): HTTPRoute ns2/r2 rule 0 PathPrefix /",
		"Service ns/cart port 80: HTTPRoute ns/r rule 1 PathPrefix /pay",
		"Service ns/cart port 80: HTTPRoute ns/r rule 0 PathPrefix /",
		"Service ns/cart port 9090: HTTPRoute ns/r rule 1 PathPrefix /pay",
		"Service ns/cart port 9090: HTTPRoute ns/r rule 0 PathPrefix /",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mesh attachments:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
