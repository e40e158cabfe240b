package translate

// Service parents (GAMMA) in the model; resolve/mesh.go resolves them.

import (
	"fmt"
	"slices"
	"strings"

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
	slices.SortFunc(out, CompareRules)
	return out
}

func CompareRules(a, b *Rule) int {
	if c := strings.Compare(a.Route, b.Route); c != 0 {
		return c
	}
	return a.Index - b.Index
}

// IsServiceParent reports whether p refers to a core Service: group ""
// (the Gateway API's name for the core group) or "core" (what Linkerd's
// documentation writes, and its policy controller accepts). A parentRef of
// kind Service without a group is not one: the group defaults to
// gateway.networking.k8s.io.
func IsServiceParent(p gwv1.ParentReference) bool {
	return p.Group != nil && (*p.Group == "" || *p.Group == "core") && p.Kind != nil && *p.Kind == "Service"
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
