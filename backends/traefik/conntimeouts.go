package traefik

import "github.com/gwretry/gwretry/translate"

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway): Traefik gets none of them from gwretry, and each
// message names the nearest setting where there is one.
func connFindings(m *translate.Model) []translate.Finding {
	why := map[translate.Feature]string{
		translate.FeatureConnClientTimeout:    "not written: Traefik's nearest settings are the entryPoint's transport.respondingTimeouts (readTimeout, writeTimeout, idleTimeout), which are static configuration and totals rather than inactivity timers; gwretry does not write them for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnClientFinTimeout: "Traefik has no timer for a half-closed client connection",
		translate.FeatureConnServerTimeout:    "not written: Traefik's nearest setting is a serversTransport's forwardingTimeouts.responseHeaderTimeout (time to the response headers, not inactivity; its readTimeout is not configurable from files); gwretry does not write it for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnServerFinTimeout: "Traefik has no timer for a half-closed upstream connection",
		translate.FeatureConnTunnelTimeout:    "Traefik has no separate timer for upgraded (WebSocket) connections",
		translate.FeatureConnTLSInspectDelay:  "Traefik has no setting for how long an HTTP entryPoint may wait for data before routing",
	}
	return translate.ConnectionFindings(m, func(_ *translate.GatewayTimeouts, c translate.ConnectionTimeout) (translate.Status, string) {
		return translate.Unsupported, why[c.Feature]
	})
}
