package translate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// MeshParent is a route's parentRef to a Service (group "", kind
// Service): a GAMMA mesh attachment (GEP-1426). The route applies to the
// requests meshed clients send to the Service (its name and cluster IP),
// not to what a Gateway listener receives; its hostnames are ignored.
type MeshParent struct {
	// Index is the parentRef's index in the route's parentRefs.
	Index int
	// Service is "namespace/name".
	Service string
	// Port is the Service port the route applies to; 0 for every port.
	Port int
	// SectionName is the name of the Service port the parentRef selects,
	// "" when it names none.
	SectionName string
	// Consumer is true when the Service is in another namespace than the
	// route: a consumer route, which applies only to the requests of
	// clients in the route's namespace. A producer route (same namespace)
	// applies to every client.
	Consumer bool
}

// String names the parent in messages: "Service shop/cart port 80".
func (p MeshParent) String() string {
	s := "Service " + p.Service
	if p.Port != 0 {
		s += fmt.Sprintf(" port %d", p.Port)
	}
	if p.SectionName != "" {
		s += fmt.Sprintf(" (port name %s)", p.SectionName)
	}
	return s
}

// MeshBackend is a Backend for a service mesh, which applies the routes
// attached to Services: it gives the rules of Model.MeshRules findings as
// well, one per feature, and its Judge observes them. For every other
// backend (a gateway data plane), Run reports those rules itself with
// MeshOnlyFindings.
type MeshBackend interface {
	Backend
	// ServesMesh marks the backend; it does nothing.
	ServesMesh()
}

// MeshOnlyFindings returns the findings of a gateway target (target is its
// name in messages) for rule r of Model.MeshRules: every feature
// unsupported, because the route is attached to Services only, which a
// mesh implements, and to no listener the target generates. When the
// route's other parentRefs failed to attach, route.attachment comes first
// and the message says why.
func MeshOnlyFindings(r *Rule, target string) []Finding {
	fs := r.Features()
	if len(r.GatewayUnattached) > 0 {
		fs = append([]Feature{FeatureRouteAttachment}, fs...)
	}
	parents := make([]string, len(r.MeshParents))
	for i, p := range r.MeshParents {
		parents[i] = p.String()
	}
	msg := fmt.Sprintf("the route is attached to %s, a GAMMA mesh attachment that a service mesh applies to its clients' requests to the Service (--target linkerd); %s configures a gateway data plane for Gateway listeners only, so it does not serve this rule",
		strings.Join(parents, ", "), target)
	if len(r.GatewayUnattached) > 0 {
		msg += "; the route's other parentRefs give no listener that gwretry generates (" + strings.Join(r.GatewayUnattached, "; ") + ")"
	}
	out := make([]Finding, len(fs))
	for i, f := range fs {
		out[i] = NewFinding(r, f, Unsupported, "%s", msg)
	}
	return out
}

// MeshAttached returns every rule attached to a Service, those also
// attached to a generated listener (in Rules) and the others
// (MeshRules), sorted by route and rule index.
func (m *Model) MeshAttached() []*Rule {
	var out []*Rule
	for _, r := range slices.Concat(m.Rules, m.MeshRules) {
		if len(r.MeshParents) > 0 {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, compareRules)
	return out
}

func compareRules(a, b *Rule) int {
	if c := strings.Compare(a.Route, b.Route); c != 0 {
		return c
	}
	return a.Index - b.Index
}

// isServiceParent reports whether p refers to a core Service. A parentRef
// of kind Service without a group is not one: the group defaults to
// gateway.networking.k8s.io.
func isServiceParent(p gwv1.ParentReference) bool {
	return p.Group != nil && *p.Group == "" && p.Kind != nil && *p.Kind == "Service"
}

// meshParents resolves the Service parentRefs of a route: those that
// attach, and why each of the others does not.
func (r *resolver) meshParents(rt *gwv1.HTTPRoute) (out []MeshParent, why []string) {
	key := routeKey(rt)
	routeNS := nsOrDefault(rt.Namespace)
	for i, p := range rt.Spec.ParentRefs {
		if !isServiceParent(p) {
			continue
		}
		ns := routeNS
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		mp := MeshParent{Index: i, Service: ns + "/" + string(p.Name), Consumer: ns != routeNS}
		if p.Port != nil {
			mp.Port = int(*p.Port)
		}
		if p.SectionName != nil {
			mp.SectionName = string(*p.SectionName)
		}
		if whyNot := r.checkMeshParent(mp); whyNot != "" {
			r.warn("HTTPRoute "+key, "parentRefs[%d]: not attached to %s: %s", i, mp, whyNot)
			why = append(why, fmt.Sprintf("parentRefs[%d] to %s: %s", i, mp, whyNot))
			continue
		}
		scope := "a producer route: it applies to the requests of every meshed client"
		if mp.Consumer {
			scope = fmt.Sprintf("a consumer route (the Service is in another namespace; no ReferenceGrant is needed): it applies only to the requests of meshed clients in namespace %s", routeNS)
		}
		r.info("HTTPRoute "+key, "parentRefs[%d]: attached to %s, a GAMMA mesh attachment, %s; only mesh targets (linkerd) apply it, gateway targets serve only the route's Gateway listeners", i, mp, scope)
		out = append(out, mp)
	}
	if len(out) > 0 && len(rt.Spec.Hostnames) > 0 {
		r.info("HTTPRoute "+key, "hostnames do not restrict the route on its Service parents: a mesh does not infer anything from them (GEP-1426); match the Host header to select requests by host")
	}
	return out, why
}

// checkMeshParent says why a Service parentRef does not attach
// (NoMatchingParent), or "". Without the Service in the input, which then
// holds no Service at all, it is assumed to exist.
func (r *resolver) checkMeshParent(mp MeshParent) string {
	svc, ok := r.services[mp.Service]
	if !ok {
		if len(r.services) > 0 {
			return fmt.Sprintf("Service %s is not in the input, which holds other Services", mp.Service)
		}
		return ""
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return "it is an ExternalName Service, which has no cluster IP for a mesh to match requests by"
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return "it is a headless Service (clusterIP: None), which has no cluster IP for a mesh to match requests by"
	}
	if mp.Port == 0 && mp.SectionName == "" {
		return ""
	}
	for _, sp := range svc.Spec.Ports {
		if (mp.Port == 0 || int(sp.Port) == mp.Port) && (mp.SectionName == "" || sp.Name == mp.SectionName) {
			return ""
		}
	}
	switch {
	case mp.SectionName == "":
		return fmt.Sprintf("Service %s has no port %d", mp.Service, mp.Port)
	case mp.Port == 0:
		return fmt.Sprintf("Service %s has no port named %s", mp.Service, mp.SectionName)
	}
	return fmt.Sprintf("Service %s has no port %d named %s", mp.Service, mp.Port, mp.SectionName)
}
