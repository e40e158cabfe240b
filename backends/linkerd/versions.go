//gwretry:format
package linkerd

import "github.com/gwretry/gwretry/translate"

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
}

// versionTable lists the Linkerd versions gwretry knows, oldest first; the
// last is the default. 2.16 is the first with the retry and timeout
// annotations (linkerd2 #12888).
func versionTable() []support {
	return []support{
		{Version: "2.16"},
		{Version: "2.17"},
		{Version: "2.18"},
		{Version: "2.19"},
		{Version: "2.20", ReadsRequestField: true},
	}
}

func lookupVersion(v string) (support, error) {
	return translate.LookupVersion(versionTable(), func(s support) string { return s.Version }, v)
}
