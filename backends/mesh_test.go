package backends

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// meshManifest has a route attached to a Service only (GAMMA), with a
// retry, timeouts and a filter, and a route attached to a Gateway and to
// the Service.
const meshManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: ns}
spec:
  ports: [{name: http, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: gamma, namespace: ns}
spec:
  parentRefs: [{name: cart, kind: Service, group: "", port: 80}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: a}]}}]
    backendRefs: [{name: cart, port: 80}]
    retry: {codes: [503], attempts: 2}
    timeouts: {request: 5s, backendRequest: 1s}
  - backendRefs: [{name: cart, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: mixed, namespace: ns}
spec:
  parentRefs: [{name: gw}, {name: cart, kind: Service, group: ""}]
  rules:
  - backendRefs: [{name: cart, port: 80}]
    retry: {codes: [503], attempts: 2}
`

// TestEveryBackendReportsMeshRules: every gateway backend, at every
// version, gives each feature of a rule attached to a Service only exactly
// one finding, unsupported because it is a mesh attachment, and translates
// the rule of a route also attached to a Gateway as any other; Linkerd, a
// mesh, translates both. The contract and the judges hold.
func TestEveryBackendReportsMeshRules(t *testing.T) {
	_, m := testmodel.FromYAML(t, meshManifest, translate.ResolveOptions{})
	if len(m.MeshRules) != 2 || len(m.Rules) != 1 {
		t.Fatalf("mesh rules %d, rules %d", len(m.MeshRules), len(m.Rules))
	}
	want := len(m.MeshRules[0].Features())
	for _, be := range All() {
		mesh := be.Scope().MeshRoutes
		if mesh != (be.Name() == "linkerd") {
			t.Errorf("%s: scope %v", be.Name(), be.Scope())
		}
		for _, v := range be.Versions() {
			res, err := translate.Run(m, []translate.Target{{Backend: be, Version: v}}, false)
			if err != nil {
				t.Fatalf("%s@%s: %v", be.Name(), v, err)
			}
			seen := map[translate.Feature]int{}
			for _, f := range res.Report.Findings {
				switch {
				case f.Route == "ns/gamma" && f.Rule == 0:
					seen[f.Feature]++
					meshOnly := f.Reason == report.ReasonMeshAttachmentOnly
					if !mesh && (f.Status != translate.NotApplicable || !meshOnly) {
						t.Errorf("%s@%s %s: %s %s, want notApplicable MeshAttachmentOnly", be.Name(), v, f.Feature, f.Status, f.Reason)
					}
					if mesh && meshOnly {
						t.Errorf("%s@%s %s: the mesh target calls itself a gateway", be.Name(), v, f.Feature)
					}
				case f.Route == "ns/gamma":
					t.Errorf("%s@%s: finding for rule %d, which sets nothing: %+v", be.Name(), v, f.Rule, f)
				case f.Route == "ns/mixed" && f.Reason == report.ReasonMeshAttachmentOnly:
					t.Errorf("%s@%s: the Gateway part of a mixed route is reported as a mesh attachment: %s", be.Name(), v, f.Reason)
				}
			}
			if len(seen) != want {
				t.Errorf("%s@%s: findings for %v, want %d features", be.Name(), v, seen, want)
			}
			for f, n := range seen {
				if n != 1 {
					t.Errorf("%s@%s: %d findings for %s", be.Name(), v, n, f)
				}
			}
			if mesh && !strings.Contains(string(res.Files[0].Data), "name: gamma") {
				t.Errorf("%s@%s: the GAMMA route is not written", be.Name(), v)
			}
		}
	}
}
