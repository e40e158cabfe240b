package nginx

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// ObserveConnections implements translate.ConnectionJudge: it parses the
// file back and reads, in every server block of the Gateway's listeners,
// client_body_timeout and send_timeout (clientTimeout), and in every copy
// of the named location of each of its rules proxy_send_timeout and
// proxy_read_timeout (serverTimeout), inherited from the enclosing blocks
// and nginx's 60s default when unset. Each directive is one value, so a
// claim fails when either differs.
func (b *Backend) ObserveConnections(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.Feature][]time.Duration, error) {
	_, http, err := b.readBack(opts, files)
	if err != nil {
		return nil, err
	}
	httpLeaves := leaves(http)
	read := func(scopes []crossplane.Directives, names []string) ([]time.Duration, error) {
		var out []time.Duration
		for _, n := range names {
			d := defaultProxyTimeout // every one of them defaults to 60s
			if args, ok := lookup(scopes, n); ok {
				if len(args) != 1 {
					return nil, fmt.Errorf("%s has %d arguments", n, len(args))
				}
				if d, err = parseNginxTime(args[0]); err != nil {
					return nil, fmt.Errorf("%s %q: %w", n, args[0], err)
				}
			}
			out = append(out, d)
		}
		return out, nil
	}
	// Server blocks by listen address, and the named locations of rules.
	type scope struct{ server, location crossplane.Directives }
	servers := map[string][]crossplane.Directives{}
	locations := map[string][]scope{}
	for _, d := range http {
		if d.Directive != "server" {
			continue
		}
		for _, x := range d.Block {
			switch {
			case x.Directive == "listen" && len(x.Args) > 0:
				servers[x.Args[0]] = append(servers[x.Args[0]], d.Block)
			case x.Directive == "location" && len(x.Args) == 1 && strings.HasPrefix(x.Args[0], "@"):
				locations[x.Args[0]] = append(locations[x.Args[0]], scope{d.Block, x.Block})
			}
		}
	}
	out := map[string]map[translate.Feature][]time.Duration{}
	var rerr error
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, c := range g.Timeouts {
			var names []string
			switch c.Feature {
			case translate.FeatureConnClientTimeout:
				names = listenerConnDirectives()
			case translate.FeatureConnServerTimeout:
				names = ruleConnDirectives()
			default:
				continue
			}
			add := func(where string, scopes []crossplane.Directives) {
				ds, err := read(scopes, names)
				if err != nil && rerr == nil {
					rerr = fmt.Errorf("%s: %w", where, err)
				}
				out[g.Gateway][c.Feature] = append(out[g.Gateway][c.Feature], ds...)
			}
			g.ConnectionSites(c.Feature,
				func(l *translate.Listener) {
					listen := hostPort(l.Address, l.Port)
					for _, s := range servers[listen] {
						add("server "+listen, []crossplane.Directives{leaves(s), httpLeaves})
					}
				},
				func(r *translate.Rule) {
					for _, sc := range locations["@"+locationName(r)] {
						add("location @"+locationName(r), []crossplane.Directives{sc.location, leaves(sc.server), httpLeaves})
					}
				})
		}
	}
	return out, rerr
}
