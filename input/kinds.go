package input

import (
	"fmt"
	"slices"
	"strings"
)

// groupKinds are the kinds each API group gwretry knows serves. A kind
// that its group does not have is a typo the API server refuses (kubectl:
// `no matches for kind "HttpRoute" in version ...`): it is an input error,
// never a skipped kind, since skipping it drops the object without a word
// about the mistake.
//
// gateway.networking.k8s.io and gateway.networking.x-k8s.io are the CRDs of
// sigs.k8s.io/gateway-api v1.6 (config/crd/standard and experimental);
// gwretry.io is config/crd; gateway.envoyproxy.io is Envoy Gateway's CRDs
// (charts/gateway-crds-helm) and its EnvoyGateway configuration kind.
var groupKinds = map[string][]string{
	"gateway.networking.k8s.io": {"BackendTLSPolicy", "GRPCRoute", "Gateway", "GatewayClass", "HTTPRoute",
		"ListenerSet", "ReferenceGrant", "TCPRoute", "TLSRoute", "UDPRoute"},
	"gateway.networking.x-k8s.io": {"XBackend", "XBackendTrafficPolicy", "XListenerSet", "XMesh"},
	"gwretry.io":                  {"ConnectionTimeoutPolicy", "RetryPolicy"},
	"gateway.envoyproxy.io": {"Backend", "BackendPolicy", "BackendTrafficPolicy", "ClientTrafficPolicy",
		"EnvoyExtensionPolicy", "EnvoyGateway", "EnvoyPatchPolicy", "EnvoyProxy", "HTTPRouteFilter", "SecurityPolicy"},
}

// apiGroup is the group of an apiVersion ("" for the core group).
func apiGroup(apiVersion string) string {
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return group
}

// groupListKind reports whether kind is the list of a kind of group
// ("GRPCRouteList").
func groupListKind(group, kind string) bool {
	base, ok := strings.CutSuffix(kind, "List")
	return ok && slices.Contains(groupKinds[group], base)
}

// unknownKind is the error for a kind its group does not have, or nil.
func unknownKind(pos Position, tm typeMeta) *InputError {
	group := apiGroup(tm.APIVersion)
	kinds, known := groupKinds[group]
	if !known || slices.Contains(kinds, tm.Kind) || groupListKind(group, tm.Kind) {
		return nil
	}
	msg := fmt.Sprintf("%s has no kind %q (kubectl: no matches for kind %q in version %q): its kinds are %s",
		group, tm.Kind, tm.Kind, tm.APIVersion, strings.Join(kinds, ", "))
	for _, k := range kinds {
		plural := k + "s"
		if y, ok := strings.CutSuffix(k, "y"); ok {
			plural = y + "ies"
		}
		if strings.EqualFold(k, tm.Kind) || strings.EqualFold(plural, tm.Kind) {
			msg += fmt.Sprintf("; did you mean %s? (kinds are case-sensitive)", k)
			break
		}
	}
	return &InputError{Pos: pos, Object: ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name), Field: "kind", Msg: msg}
}
