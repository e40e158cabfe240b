package linkerd

import "github.com/gwretry/gwretry/translate"

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway): Linkerd gets none of them from gwretry, and each
// message names the nearest setting where there is one.
func connFindings(m *translate.Model) []translate.Finding {
	return translate.UnsupportedConnections(m, "Linkerd's route annotations act on meshed clients' requests: the generated file configures clients' calls, not a proxy that accepts connections, so a Gateway's proxy-wide connection timeouts have no place in it")
}
