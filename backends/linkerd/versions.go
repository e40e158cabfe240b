//gwretry:format
package linkerd

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// support is what one Linkerd version's policy controller reads from a
// gateway.networking.k8s.io HTTPRoute (linkerd/linkerd2
// policy-controller/k8s/index/src/outbound/index/http.rs at each
// version-2.X tag).
type support struct {
	// Version is "MAJOR.MINOR".
	Version string
	// ReadsRequestField: rules[].timeouts.request is read when the route
	// has no timeout.linkerd.io/request annotation, with Linkerd's own
	// duration parser (one integer and one unit), a value it cannot parse
	// being ignored. linkerd2 #14750 (edge-25.11.3, first stable 2.20);
	// 2.16 to 2.19 read the field only on policy.linkerd.io HTTPRoutes.
	ReadsRequestField bool
	// APIVersion is the gateway.networking.k8s.io version written: one the
	// Gateway API CRDs bundled with this version serve. 2.16 and 2.17
	// bundle Gateway API v0.7.1 experimental (v1alpha2 and v1beta1
	// served), 2.18 to 2.20 v1.1.1 experimental (v1 and v1beta1).
	APIVersion string
	// RuleTimeouts: the bundled CRDs know rules[].timeouts (v1.1.1; not
	// v0.7.1). Neither knows rules[].retry or rules[].name, which are
	// never written: Linkerd takes retries from the annotations.
	RuleTimeouts bool
}

// versionTable lists the Linkerd versions gwretry knows, oldest first; the
// last is the default. 2.16 is the first with the retry and timeout
// annotations (linkerd2 #12888).
func versionTable() []support {
	return []support{
		{Version: "2.16", APIVersion: apiV1beta1},
		{Version: "2.17", APIVersion: apiV1beta1},
		{Version: "2.18", APIVersion: apiV1, RuleTimeouts: true},
		{Version: "2.19", APIVersion: apiV1, RuleTimeouts: true},
		{Version: "2.20", APIVersion: apiV1, RuleTimeouts: true, ReadsRequestField: true},
	}
}

// The HTTPRoute API versions written.
const (
	apiV1      = "gateway.networking.k8s.io/v1"
	apiV1beta1 = "gateway.networking.k8s.io/v1beta1"
)

// serves reports whether the CRDs bundled with version s serve HTTPRoute
// apiVersion v (v0.7.1 serves v1alpha2 and v1beta1, v1.1.1 v1 and
// v1beta1).
func (s support) serves(v string) bool {
	if s.RuleTimeouts {
		return v == apiV1 || v == apiV1beta1
	}
	return v == apiV1beta1 || v == "gateway.networking.k8s.io/v1alpha2"
}

// accepts reports whether the bundled CRDs know every field of rule (the
// fields the other versions' CRDs lack: retry and name for all, timeouts
// for 2.16 and 2.17).
func (s support) accepts(rule gwv1.HTTPRouteRule) bool {
	return rule.Retry == nil && rule.Name == nil && (s.RuleTimeouts || rule.Timeouts == nil)
}

func lookupVersion(v string) (support, error) {
	return translate.LookupVersion(versionTable(), func(s support) string { return s.Version }, v)
}
