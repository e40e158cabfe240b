package envoy

import "github.com/gwretry/gwretry/translate"

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway): Envoy gets none of them from gwretry, and each
// message names the nearest setting where there is one.
func connFindings(m *translate.Model) []translate.Finding {
	why := map[translate.Feature]string{
		translate.FeatureConnClientTimeout:    "not written: Envoy's nearest settings are the connection manager's common_http_protocol_options.idle_timeout (closes a downstream connection with no active stream) and stream_idle_timeout (resets a stream idle in either direction), neither is HAProxy's timeout client (a client that stops sending or reading mid-request); gwretry does not write them for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnClientFinTimeout: "not written: Envoy's nearest setting is the connection manager's delayed_close_timeout (how long Envoy waits for the client to close after Envoy closes); gwretry does not write it for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnServerTimeout:    "not written: Envoy's nearest settings are the route's idle_timeout and the connection manager's stream_idle_timeout (a stream idle in either direction), not an inactivity timer on the upstream side alone; gwretry does not write them for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnServerFinTimeout: "Envoy has no timer for a half-closed upstream connection",
		translate.FeatureConnTunnelTimeout:    "not written: Envoy times upgraded (WebSocket) streams with the same stream idle timers as other streams, so a tunnel cannot get its own timeout apart from them",
		translate.FeatureConnTLSInspectDelay:  "not written: Envoy's nearest setting is the listener's listener_filters_timeout (how long the TLS inspector waits for the ClientHello); gwretry does not write it for a ConnectionTimeoutPolicy yet",
	}
	return translate.ConnectionFindings(m, func(_ *translate.GatewayTimeouts, c translate.ConnectionTimeout) (translate.Status, string) {
		return translate.Unsupported, why[c.Feature]
	})
}
