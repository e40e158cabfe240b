package grpc

import "github.com/gwretry/gwretry/translate"

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway): gRPC gets none of them from gwretry, and each
// message names the nearest setting where there is one.
func connFindings(m *translate.Model) []translate.Finding {
	return translate.UnsupportedConnections(m, "a gRPC service config: the generated file configures clients' calls, not a proxy that accepts connections, so a Gateway's proxy-wide connection timeouts have no place in it")
}
