package nginx

import (
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// tlsDecision is the listener.https decision of rule r, whose HTTPS
// listeners nginx all generates: nginx terminates TLS on each generated
// TLS listener that routes to the rule, with the certificate (from
// --tls-dir) its server_name selects by SNI, and serves HTTP/1.1 inside; a
// listener without a catch-all host refuses the handshake of an unknown
// SNI name (ssl_reject_handshake on). It is approximated, not honoured:
// nginx routes by the Host header without comparing it with the SNI name,
// so a request whose Host names another hostname of the listener is
// served by that hostname's routes, not answered 421 (and translate's
// judge cannot read TLS back yet, so an honoured claim would not be
// checked).
func tlsDecision(m *translate.Model, r *translate.Rule) report.Decision {
	for _, pl := range m.PlacementsOf(r) {
		if pl.Listener.TLS && pl.VirtualHost.Certificate != nil {
			return report.Decide(report.ReasonConfigured).Set("listen ssl, ssl_certificate per server_name").With(report.NewCaveat(report.CaveatHostNotCheckedAgainstSNI))
		}
	}
	return report.Decide(report.ReasonNotServedOverHTTPS)
}
