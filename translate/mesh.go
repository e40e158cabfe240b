package translate

import (
	"cmp"
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
	// Port is the Service port the route applies to (the one SectionName
	// names when the Service is in the input); 0 for every port.
	Port int
	// SectionName is the name of the Service port the parentRef selects,
	// "" when it names none.
	SectionName string
	// Consumer is true when the Service is in another namespace than the
	// route: a consumer route, which applies only to the requests of
	// clients in the route's namespace. A producer route (same namespace)
	// applies to every client.
	Consumer bool
	// Annotations are the Service's metadata.annotations when the Service
	// is in the input (nil otherwise or when it has none): a mesh reads
	// some of its own settings there (Linkerd's retry.linkerd.io/ and
	// timeout.linkerd.io/). Backends must not modify them.
	Annotations map[string]string
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

// isServiceParent reports whether p refers to a core Service: group ""
// (the Gateway API's name for the core group) or "core" (what Linkerd's
// documentation writes, and its policy controller accepts). A parentRef of
// kind Service without a group is not one: the group defaults to
// gateway.networking.k8s.io.
func isServiceParent(p gwv1.ParentReference) bool {
	return p.Group != nil && (*p.Group == "" || *p.Group == "core") && p.Kind != nil && *p.Kind == "Service"
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
func (r *resolver) checkMeshParent(mp MeshParent) (port int, why string) {
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

// MeshAttachment is a Service parent with the rules attached to it: what
// a mesh applies to the requests its clients send to the Service.
type MeshAttachment struct {
	// Service is "namespace/name"; Port the Service port, 0 for every
	// port (a port's requests get the routes of both attachments).
	Service string
	Port    int
	// SectionName is the port name of parentRefs that name one and no
	// port, to a Service not in the input; "" otherwise.
	SectionName string
	// Consumer is the namespace of consumer routes, whose rules apply
	// only to the requests of clients in that namespace; "" for producer
	// routes (in the Service's namespace), which apply to every client
	// (GEP-1426). Each is its own attachment: a client with consumer
	// routes for the Service uses those, and not the producer's.
	Consumer string
	// Routes are the matches of the attached rules in Gateway API
	// precedence order; the first that matches a request wins.
	Routes []*RouteMatch
}

// String names the attachment in messages.
func (a *MeshAttachment) String() string {
	s := "Service " + a.Service
	if a.Port != 0 {
		s += fmt.Sprintf(" port %d", a.Port)
	}
	if a.SectionName != "" {
		s += " port " + a.SectionName
	}
	if a.Consumer != "" {
		s += " (consumer routes of namespace " + a.Consumer + ")"
	}
	return s
}

// meshKey identifies a MeshAttachment while resolving.
type meshKey struct {
	service, section string
	port             int
	consumer         string
}

// placeMesh records the matches of rule out under each of its Service
// parents.
func (r *resolver) placeMesh(rt *gwv1.HTTPRoute, out *Rule, matches []gwv1.HTTPRouteMatch) {
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
			r.meshPlaced[k] = append(r.meshPlaced[k], &placed{rm: &RouteMatch{Match: toMatch(m), Rule: out}, route: rt, matchIndex: j})
		}
	}
}

// meshAttachments returns the Service parents with their matches in
// precedence order.
func (r *resolver) meshAttachments() []*MeshAttachment {
	keys := make([]meshKey, 0, len(r.meshPlaced))
	for k := range r.meshPlaced {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b meshKey) int {
		return cmp.Or(cmp.Compare(a.service, b.service), cmp.Compare(a.port, b.port), cmp.Compare(a.section, b.section), cmp.Compare(a.consumer, b.consumer))
	})
	var out []*MeshAttachment
	for _, k := range keys {
		group := slices.Clone(r.meshPlaced[k])
		slices.SortStableFunc(group, comparePlaced)
		a := &MeshAttachment{Service: k.service, Port: k.port, SectionName: k.section, Consumer: k.consumer}
		for _, p := range group {
			a.Routes = append(a.Routes, p.rm)
		}
		out = append(out, a)
	}
	return out
}
