package translate

// What the input layer (package input) hands the resolution layer (package
// resolve): the objects read and where each came from. The types live here,
// where every layer can name them; package input reads them and has the
// same names for them.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// Limits bound what Load reads, so that a hostile or mistaken input cannot
// exhaust memory.
type Limits struct {
	// MaxInputBytes caps the bytes read from all inputs together.
	MaxInputBytes int64
	// MaxDocumentBytes caps one YAML or JSON document.
	MaxDocumentBytes int
	// MaxDocuments caps the number of documents (List items count).
	MaxDocuments int
	// Exclude are globs (path.Match) of files and directories that a
	// directory's walk does not read (--exclude): each is matched against
	// the path relative to the directory given, its base name and the path
	// as given.
	Exclude []string
}

// DefaultLimits are generous for real manifests: a whole cluster's routes
// with their Gateways, Services and EndpointSlices fit. The byte caps bound
// memory; the document cap only bounds the per-document overhead.
func DefaultLimits() Limits {
	return Limits{MaxInputBytes: 64 << 20, MaxDocumentBytes: 4 << 20, MaxDocuments: 200000}
}

// Position locates an object in the input.
type Position struct {
	File string
	// Doc is the 1-based index of the document in the file.
	Doc int
	// Item is the List item path ("items[3]"), or "".
	Item string
	// Line is the 1-based line of File where the object starts, 0 when
	// unknown.
	Line int
	// RuleLines are the lines of File where each of the object's
	// spec.rules items starts (an HTTPRoute's rules), nil when unknown.
	RuleLines []int
	// Cluster is where an object read from a cluster was read (package
	// cluster: "cluster CONTEXT"), which has no file, document or line:
	// the object is named by its kind, namespace and name.
	Cluster string
}

func (p Position) String() string {
	if p.Cluster != "" {
		return p.Cluster
	}
	s := fmt.Sprintf("%s: document %d", p.File, p.Doc)
	if p.Item != "" {
		s += ": " + p.Item
	}
	return s
}

// Object is one decoded input object and where it came from.
type Object[T any] struct {
	Pos Position
	Obj *T
}

// Input is everything Load read that gwretry uses.
type Input struct {
	Routes         []Object[gwv1.HTTPRoute]
	Gateways       []Object[gwv1.Gateway]
	GatewayClasses []Object[gwv1.GatewayClass]
	Services       []Object[corev1.Service]
	EndpointSlices []Object[discoveryv1.EndpointSlice]
	// ReferenceGrants holds v1 and v1beta1 ReferenceGrants, both decoded
	// into the v1beta1 type (the two are identical).
	ReferenceGrants []Object[gwv1b1.ReferenceGrant]
	Namespaces      []Object[corev1.Namespace]
	// ConnectionTimeoutPolicies are gwretry.io/v1alpha1 policies.
	ConnectionTimeoutPolicies []Object[ConnectionTimeoutPolicy]
	// Policies are the policy objects (RetryPolicy, BackendTrafficPolicy).
	Policies Policies
	// Skipped counts the objects of kinds gwretry does not read, by
	// "Kind (apiVersion)".
	Skipped map[string]int
	// Notes say which kinds were skipped and which objects were read twice.
	Notes []Note
}
