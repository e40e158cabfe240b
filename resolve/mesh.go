package resolve

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// meshParents resolves the Service parentRefs of a route: those that
// attach, and why each of the others does not.
func (r *resolver) meshParents(rt *gwv1.HTTPRoute) (out []translate.MeshParent, why []string) {
	key := routeKey(rt)
	routeNS := nsOrDefault(rt.Namespace)
	for i, p := range rt.Spec.ParentRefs {
		if !translate.IsServiceParent(p) {
			continue
		}
		ns := routeNS
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		mp := translate.MeshParent{Index: i, Service: ns + "/" + string(p.Name), Consumer: ns != routeNS}
		if p.Port != nil {
			mp.Port = int(*p.Port)
		}
		if p.SectionName != nil {
			mp.SectionName = string(*p.SectionName)
		}
		port, whyNot := r.checkMeshParent(mp)
		if whyNot != "" {
			r.warn("HTTPRoute "+key, "parentRefs[%d]: not attached to %s: %s", i, mp, whyNot)
			why = append(why, fmt.Sprintf("parentRefs[%d] to %s: %s", i, mp, whyNot))
			continue
		}
		mp.Port = port
		if svc, ok := r.services[mp.Service]; ok && len(svc.Annotations) > 0 {
			mp.Annotations = svc.Annotations
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
// (NoMatchingParent), or returns the port it attaches to: its port, the
// number of the port its sectionName names, or 0 for every port. Without
// the Service in the input, which then holds no Service at all, it is
// assumed to exist.
func (r *resolver) checkMeshParent(mp translate.MeshParent) (port int, why string) {
	svc, ok := r.services[mp.Service]
	if !ok {
		if len(r.services) > 0 {
			return 0, fmt.Sprintf("Service %s is not in the input, which holds other Services", mp.Service)
		}
		return mp.Port, ""
	}
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		return 0, "it is an ExternalName Service, which has no cluster IP for a mesh to match requests by"
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		return 0, "it is a headless Service (clusterIP: None), which has no cluster IP for a mesh to match requests by"
	}
	if mp.Port == 0 && mp.SectionName == "" {
		return 0, ""
	}
	for _, sp := range svc.Spec.Ports {
		if (mp.Port == 0 || int(sp.Port) == mp.Port) && (mp.SectionName == "" || sp.Name == mp.SectionName) {
			return int(sp.Port), ""
		}
	}
	switch {
	case mp.SectionName == "":
		return 0, fmt.Sprintf("Service %s has no port %d", mp.Service, mp.Port)
	case mp.Port == 0:
		return 0, fmt.Sprintf("Service %s has no port named %s", mp.Service, mp.SectionName)
	}
	return 0, fmt.Sprintf("Service %s has no port %d named %s", mp.Service, mp.Port, mp.SectionName)
}

// meshKey identifies a MeshAttachment while resolving.
type meshKey struct {
	service, section string
	port             int
	consumer         string
}

// placeMesh records the matches of rule out under each of its Service
// parents.
func (r *resolver) placeMesh(rt *gwv1.HTTPRoute, out *translate.Rule, matches []gwv1.HTTPRouteMatch) {
	if len(matches) == 0 {
		matches = []gwv1.HTTPRouteMatch{{}}
	}
	for _, p := range out.MeshParents {
		k := meshKey{service: p.Service, port: p.Port}
		if p.Port == 0 {
			k.section = p.SectionName
		}
		if p.Consumer {
			k.consumer = nsOrDefault(rt.Namespace)
		}
		for j, m := range matches {
			r.meshPlaced[k] = append(r.meshPlaced[k], &placed{rm: &translate.RouteMatch{Match: toMatch(m), Rule: out}, route: rt, matchIndex: j})
		}
	}
}

// meshAttachments returns the Service parents with their matches in
// precedence order.
func (r *resolver) meshAttachments() []*translate.MeshAttachment {
	keys := make([]meshKey, 0, len(r.meshPlaced))
	for k := range r.meshPlaced {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b meshKey) int {
		return cmp.Or(cmp.Compare(a.service, b.service), cmp.Compare(a.port, b.port), cmp.Compare(a.section, b.section), cmp.Compare(a.consumer, b.consumer))
	})
	var out []*translate.MeshAttachment
	for _, k := range keys {
		group := slices.Clone(r.meshPlaced[k])
		slices.SortStableFunc(group, comparePlaced)
		a := &translate.MeshAttachment{Service: k.service, Port: k.port, SectionName: k.section, Consumer: k.consumer}
		for _, p := range group {
			a.Routes = append(a.Routes, p.rm)
		}
		out = append(out, a)
	}
	return out
}
