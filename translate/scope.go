package translate

import (
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/report"
)

// Scope is what a target serves. A rule or Gateway outside it is not a gap
// of the target: Run gives each of its features one not-applicable
// finding, decided here alike for every target, and the target reports
// only what is in its scope (its judge observes only that too).
type Scope struct {
	// GatewayRoutes: the rules of routes attached to the Gateway
	// listeners gwretry generates (Model.Rules).
	GatewayRoutes bool
	// MeshRoutes: the rules of routes with a mesh parentRef (a Service,
	// GEP-1426), whether or not they are also attached to a listener.
	MeshRoutes bool
	// Connections: a Gateway's proxy-wide connection timeouts
	// (Model.ConnectionTimeouts).
	Connections bool
}

// GatewayScope is the scope of a gateway data plane: the routes on its
// listeners and their connection timeouts.
func GatewayScope() Scope { return Scope{GatewayRoutes: true, Connections: true} }

// rules returns the rules in scope s: those the target reports and its
// judge observes.
func (s Scope) rules(m *Model) []*Rule {
	var out []*Rule
	for _, r := range m.Rules {
		if s.GatewayRoutes || (s.MeshRoutes && meshSide(m, r)) {
			out = append(out, r)
		}
	}
	if s.MeshRoutes {
		out = append(out, m.MeshRules...)
	}
	return out
}

// ReadsRouteObjects reports whether backend b reads the input HTTPRoutes
// that the Model keeps (Model.HTTPRoutes): a target that serves mesh
// routes writes them back out (Linkerd), and tells a rule of a route with
// a mesh parentRef from one without (meshSide). No other reads them, so a
// run of other targets may let them go.
func ReadsRouteObjects(b Backend) bool { return b.Scope().MeshRoutes }

// meshSide reports whether rule r of Model.Rules is also a mesh's: its
// route has a mesh parentRef, attached or not (a mesh target reports why
// one does not attach).
func meshSide(m *Model, r *Rule) bool {
	if len(r.MeshParents) > 0 {
		return true
	}
	rt := m.HTTPRoutes[r.Route]
	return rt != nil && HasMeshParentRef(rt)
}

// HasMeshParentRef reports whether a parentRef of rt names a mesh parent
// rather than a Gateway: a core Service (GEP-1426) or a Linkerd
// EgressNetwork.
func HasMeshParentRef(rt *gwv1.HTTPRoute) bool {
	for _, p := range rt.Spec.ParentRefs {
		if IsServiceParent(p) || (p.Group != nil && *p.Group == "policy.linkerd.io" && p.Kind != nil && *p.Kind == "EgressNetwork") {
			return true
		}
	}
	return false
}

// outOfScope returns the not-applicable findings of target name for what
// is outside scope s: the rules it does not serve and the connection
// timeouts it has no place for. A rule of Model.MeshRules whose route's
// Gateway parentRefs gave no listener also gets route.attachment,
// unsupported, on a gateway target: that is a failure of the route, not
// a matter of scope.
func (s Scope) outOfScope(m *Model, emit func(Finding)) {
	na := func(r *Rule, f Feature, reason report.Reason) { emit(Record(r, f, report.Decide(reason))) }
	for _, r := range m.Rules {
		if s.GatewayRoutes || (s.MeshRoutes && meshSide(m, r)) {
			continue
		}
		reason := report.ReasonGatewayAttachmentOnly
		if !s.MeshRoutes {
			reason = report.ReasonRoutesNotServed
		}
		for _, f := range r.Features() {
			na(r, f, reason)
		}
	}
	if !s.MeshRoutes {
		for _, r := range m.MeshRules {
			if len(r.GatewayUnattached) > 0 && s.GatewayRoutes {
				emit(Record(r, FeatureRouteAttachment, report.Decide(report.ReasonListenerNotGenerated)))
			}
			for _, f := range r.Features() {
				na(r, f, report.ReasonMeshAttachmentOnly)
			}
		}
	}
	if !s.Connections {
		for _, g := range m.ConnectionTimeouts {
			for _, c := range g.Timeouts {
				f := Finding{Gateway: g.Gateway, Feature: c.Feature, Source: ConnectionTimeoutPolicyKind + " " + c.Policy}
				f.Decide(report.Decide(report.ReasonNoProxyConnections))
				emit(f)
			}
		}
	}
}

// String names the scope for messages: "gateway routes, connections".
func (s Scope) String() string {
	var parts []string
	if s.GatewayRoutes {
		parts = append(parts, "gateway routes")
	}
	if s.MeshRoutes {
		parts = append(parts, "mesh routes")
	}
	if s.Connections {
		parts = append(parts, "connection timeouts")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}
