package nginx

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// The nginx settings of a ConnectionTimeoutPolicy (HAProxy's semantics are
// the reference, as gwretry's HAProxy configuration has them: its defaults
// set timeout http-request, so timeout client times neither the request
// head nor the keep-alive wait):
//
//   - clientTimeout: client_body_timeout and send_timeout in every server
//     block of the Gateway's listeners. Both are inactivity timers, between
//     two reads of the request body and between two writes to the client,
//     which is what HAProxy's timeout client times ("the client is
//     expected to acknowledge or send data"). The request head keeps
//     client_header_timeout, as HAProxy's keeps timeout http-request.
//   - serverTimeout: proxy_send_timeout and proxy_read_timeout in the named
//     location of every rule served there without timeouts of its own:
//     inactivity between two writes to and two reads from the backend, as
//     HAProxy's timeout server ("the server is expected to acknowledge or
//     send data"). proxy_connect_timeout keeps its default, as HAProxy's
//     timeout connect is a timer of its own.
//   - the others have no nginx setting (connFindings).
func listenerConnDirectives() []string { return []string{"client_body_timeout", "send_timeout"} }

func ruleConnDirectives() []string { return []string{"proxy_send_timeout", "proxy_read_timeout"} }

// connTime is what gwretry writes as an nginx connection timeout: whole
// milliseconds, at most 2147483647 (translate.MaxHAProxyTimeout).
var connTime = regexp.MustCompile(`^[1-9][0-9]{0,9}ms$`)

// connMillis is c's value in nginx's granularity, whole milliseconds,
// rounded up (a value in microseconds would otherwise become 0, which
// nginx reads as "expire at once").
func connMillis(c translate.ConnectionTimeout) time.Duration {
	return (c.Value + time.Millisecond - 1).Truncate(time.Millisecond)
}

// connArg is the checked nginx text of c.
func connArg(c translate.ConnectionTimeout) (string, error) {
	s := strconv.FormatInt(connMillis(c).Milliseconds(), 10) + "ms"
	if !connTime.MatchString(s) || connMillis(c) > translate.MaxHAProxyTimeout {
		return "", fmt.Errorf("%s %q: not a time gwretry writes for nginx", c.Feature, s)
	}
	return s, nil
}

// connDirectives are the directives names get, each set to c's value.
func connDirectives(c translate.ConnectionTimeout, names []string) (crossplane.Directives, error) {
	arg, err := connArg(c)
	if err != nil {
		return nil, err
	}
	var ds crossplane.Directives
	for _, n := range names {
		ds = append(ds, directive(n, arg))
	}
	return ds, nil
}

// listenerConn is what every server block of listener l gets from the
// Gateways' connection timeouts.
func listenerConn(m *translate.Model, l *translate.Listener) (crossplane.Directives, error) {
	c, ok := m.ListenerConnection(l, translate.FeatureConnClientTimeout)
	if !ok {
		return nil, nil
	}
	return connDirectives(c, listenerConnDirectives())
}

// ruleConn is what the named location of rule r gets from the Gateways'
// connection timeouts (nothing for a rule with timeouts of its own, which
// win).
func ruleConn(m *translate.Model, r *translate.Rule) (crossplane.Directives, error) {
	c, ok := m.RuleConnection(r, translate.FeatureConnServerTimeout)
	if !ok {
		return nil, nil
	}
	return connDirectives(c, ruleConnDirectives())
}

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway). The fields nginx has no setting for are not
// expressible: clientFinTimeout (lingering_timeout waits only during a
// lingering close, so gwretry does not write it), serverFinTimeout
// (proxy_read_timeout keeps timing a half-closed upstream connection),
// tunnelTimeout (an upgraded connection keeps its rule's proxy_read_timeout)
// and tlsInspectDelay (the TLS handshake and request head are read within
// client_header_timeout, left at its default).
func connFindings(m *translate.Model) []translate.Finding {
	return translate.ConnectionDecisions(m, func(g *translate.GatewayTimeouts, c translate.ConnectionTimeout) report.Decision {
		arg, err := connArg(c)
		if err != nil {
			return report.Decide(report.ReasonTimeNotWritable, "value", c.Text)
		}
		var cs []report.Caveat
		if connMillis(c) != c.Value {
			cs = append(cs, report.NewCaveat(report.CaveatRoundedUp, "value", c.Text, "rounded", arg))
		}
		configured := report.Decide(report.ReasonConfigured)
		switch c.Feature {
		case translate.FeatureConnClientTimeout:
			// client_body_timeout and send_timeout in every server block
			// of the Gateway's listeners; the request head keeps
			// client_header_timeout (60s). Not honoured: HAProxy (the
			// router, whose timer the field is) answers a client that
			// stalls its body while the backend has not answered (2.6:
			// 504 at timeout server; 3.0: 400 at timeout client; both
			// proven live in the HAProxy backend's
			// TestLiveConnectionTimeouts); nginx closes the connection
			// without an answer.
			cs = append(cs, report.NewCaveat(report.CaveatStalledBodyClosesConnection))
			if slices.ContainsFunc(g.Listeners, func(l *translate.Listener) bool { return l.TLS }) {
				cs = append(cs, report.NewCaveat(report.CaveatHandshakeTimedApart, "timer", "client_header_timeout"))
			}
			return configured.Set("client_body_timeout and send_timeout " + arg).With(cs...)
		case translate.FeatureConnServerTimeout:
			// In the named location of each rule served on the Gateway's
			// listeners that sets no timeouts of its own;
			// proxy_connect_timeout keeps its default (60s), as HAProxy's
			// timeout connect is a timer of its own.
			return configured.Set("proxy_send_timeout and proxy_read_timeout " + arg).With(cs...)
		}
		return report.Decide(report.ReasonNotExpressible)
	})
}
