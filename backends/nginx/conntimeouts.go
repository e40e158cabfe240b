package nginx

import "github.com/gwretry/gwretry/translate"

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway): nginx gets none of them from gwretry, and each
// message names the nearest setting where there is one.
func connFindings(m *translate.Model) []translate.Finding {
	why := map[translate.Feature]string{
		translate.FeatureConnClientTimeout:    "not written: nginx's nearest settings are client_header_timeout, client_body_timeout and send_timeout (inactivity while reading the request and writing the response); gwretry does not write them for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnClientFinTimeout: "not written: nginx's nearest setting is lingering_timeout (how long it waits for more client data after deciding to close); gwretry does not write it for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnServerTimeout:    "not written: nginx's nearest settings are proxy_read_timeout and proxy_send_timeout (inactivity between two reads or writes on the upstream connection); gwretry does not write them for a ConnectionTimeoutPolicy yet",
		translate.FeatureConnServerFinTimeout: "nginx has no timer for a half-closed upstream connection",
		translate.FeatureConnTunnelTimeout:    "nginx has no separate tunnel timer: an upgraded connection is timed by proxy_read_timeout and proxy_send_timeout, and gwretry's nginx configuration does not pass Upgrade requests through",
		translate.FeatureConnTLSInspectDelay:  "nginx has no equivalent: it reads the ClientHello within client_header_timeout and has no delay for inspecting data before routing",
	}
	return translate.ConnectionFindings(m, func(_ *translate.GatewayTimeouts, c translate.ConnectionTimeout) (translate.Status, string) {
		return translate.Unsupported, why[c.Feature]
	})
}
