//gwretry:format
package linkerd

import (
	"slices"

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

// bundledFilters are the filter types both bundled CRDs know, on rules and
// on backendRefs (v0.7.1 and v1.1.1 alike).
var bundledFilters = []gwv1.HTTPRouteFilterType{
	gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier,
	gwv1.HTTPRouteFilterRequestMirror, gwv1.HTTPRouteFilterRequestRedirect,
	gwv1.HTTPRouteFilterURLRewrite, gwv1.HTTPRouteFilterExtensionRef,
}

// accepts reports whether the bundled CRDs know every field of rule:
// lacks(rule) is "".
func (s support) accepts(rule gwv1.HTTPRouteRule) bool { return s.lacks(rule) == "" }

// lacks names the first field of rule the bundled CRDs lack, which makes
// the API server refuse its route (kubectl apply validates fields
// strictly), or "": retry, name and sessionPersistence as the input
// writes it (neither CRD); timeouts (v0.7.1); a filter type newer than both (CORS,
// ExternalAuth) and requestMirror's percent and fraction, on the rule or a
// backendRef.
func (s support) lacks(rule gwv1.HTTPRouteRule) string {
	switch {
	case rule.Retry != nil:
		return "retry"
	case rule.Name != nil:
		return "name"
	case !s.RuleTimeouts && rule.Timeouts != nil:
		return "timeouts"
	case rule.SessionPersistence != nil:
		// v0.7.1 lacks it; v1.1.1's lacks the cookie and header of
		// the input's (gwretry does not compare them field by field).
		return "sessionPersistence"
	}
	filters := func(at string, fs []gwv1.HTTPRouteFilter) string {
		for _, f := range fs {
			switch {
			case !slices.Contains(bundledFilters, f.Type):
				return at + "filters type " + string(f.Type)
			case f.RequestMirror != nil && f.RequestMirror.Percent != nil:
				return at + "filters requestMirror.percent"
			case f.RequestMirror != nil && f.RequestMirror.Fraction != nil:
				return at + "filters requestMirror.fraction"
			}
		}
		return ""
	}
	if l := filters("", rule.Filters); l != "" {
		return l
	}
	for _, b := range rule.BackendRefs {
		if l := filters("backendRefs ", b.Filters); l != "" {
			return l
		}
	}
	return ""
}

func lookupVersion(v string) (support, error) {
	return translate.LookupVersion(versionTable(), func(s support) string { return s.Version }, v)
}
