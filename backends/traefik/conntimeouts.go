package traefik

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// The Traefik settings of a ConnectionTimeoutPolicy. HAProxy's semantics
// are the reference (inactivity timers; gwretry's HAProxy times the request
// head and the keep-alive wait with timeout http-request, not timeout
// client). Traefik has no inactivity timer on either side, so both
// mappings are approximations:
//
//   - clientTimeout: the entry point's transport.respondingTimeouts
//     .readTimeout in traefik.yaml (static configuration), Go's
//     http.Server ReadTimeout: a total for reading the whole request.
//     writeTimeout is left alone: it runs from the end of the request head
//     to the end of the response, so it would also count the backend's time.
//   - serverTimeout: the rule's serversTransport forwardingTimeouts
//     .responseHeaderTimeout (every proxied rule has its own transport):
//     from the end of writing the request to the response headers. The
//     transport's readTimeout, which would time the body, cannot be set from
//     files.

// entryPointTransport is the transport of a static entry point
// (pkg/config/static EntryPointsTransport), with only what gwretry writes.
type entryPointTransport struct {
	RespondingTimeouts *respondingTimeouts `json:"respondingTimeouts,omitempty" yaml:"respondingTimeouts,omitempty"`
}

// respondingTimeouts is pkg/config/static RespondingTimeouts.
type respondingTimeouts struct {
	ReadTimeout string `json:"readTimeout,omitempty" yaml:"readTimeout,omitempty"`
}

// defaultEntryPointReadTimeout is Traefik 3's respondingTimeouts.readTimeout
// default (pkg/config/static/entrypoints.go).
const defaultEntryPointReadTimeout = 60 * time.Second

// readTimeouts lists, sorted and once each, the respondingTimeouts
// .readTimeout in effect on the entry points of sites ss (a rule's): the
// ConnectionTimeoutPolicy's clientTimeout where one sets it, else Traefik's
// default.
func readTimeouts(m *translate.Model, ss []site) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		v := defaultEntryPointReadTimeout
		if c, ok := m.ListenerConnection(s.listener, translate.FeatureConnClientTimeout); ok {
			v = c.Value
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// connTime is what gwretry writes as a Traefik connection timeout: a Go
// duration as time.Duration.String writes it, at most
// translate.MaxHAProxyTimeout.
var connTime = regexp.MustCompile(`^([0-9]+h)?([0-9]+m)?[0-9]+(\.[0-9]+)?(s|ms|µs)$`)

// connArg is the checked Traefik text of c, parsed back as Traefik would.
func connArg(c translate.ConnectionTimeout) (string, error) {
	s := traefikDuration(c.Value)
	if !connTime.MatchString(s) || c.Value <= 0 || c.Value > translate.MaxHAProxyTimeout {
		return "", fmt.Errorf("%s %q: not a duration gwretry writes for Traefik", c.Feature, s)
	}
	if d, err := traefikDurationValue(s); err != nil || d != c.Value {
		return "", fmt.Errorf("%s %q reads back as %v (%v)", c.Feature, s, d, err)
	}
	return s, nil
}

// listenerConn sets the entry point of listener l from the Gateways'
// connection timeouts.
func listenerConn(m *translate.Model, l *translate.Listener, ep *entryPoint) error {
	c, ok := m.ListenerConnection(l, translate.FeatureConnClientTimeout)
	if !ok {
		return nil
	}
	s, err := connArg(c)
	if err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	ep.Transport = &entryPointTransport{RespondingTimeouts: &respondingTimeouts{ReadTimeout: s}}
	return nil
}

// ruleConn sets the servers transport of rule r from the Gateways'
// connection timeouts (nothing for a rule with timeouts of its own, which
// win, or that forwards nothing).
func ruleConn(h *httpConfig, m *translate.Model, r *translate.Rule) error {
	c, ok := m.RuleConnection(r, translate.FeatureConnServerTimeout)
	if !ok {
		return nil
	}
	s, err := connArg(c)
	if err != nil {
		return fmt.Errorf("rule %s: %w", r.Name, err)
	}
	t := h.ServersTransports[transportName(r)]
	if t == nil {
		return fmt.Errorf("rule %s has no servers transport", r.Name)
	}
	if t.ForwardingTimeouts != nil {
		return fmt.Errorf("rule %s: its servers transport has timeouts already", r.Name)
	}
	t.ForwardingTimeouts = &forwardingTimeouts{ResponseHeaderTimeout: s}
	return nil
}

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway). Traefik has no timer for a half-closed client or
// upstream connection (HAProxy's timeout client-fin and server-fin), none
// for upgraded (WebSocket) connections (Go's reverse proxy copies both
// ways until one side closes), and no inspect delay (the nearest, the
// entry point's readTimeout, already carries clientTimeout).
func connFindings(m *translate.Model) []translate.Finding {
	return translate.ConnectionDecisions(m, func(g *translate.GatewayTimeouts, c translate.ConnectionTimeout) report.Decision {
		s, err := connArg(c)
		if err != nil {
			return report.Decide(report.ReasonNotTranslated)
		}
		switch c.Feature {
		case translate.FeatureConnClientTimeout:
			// Go's http.Server ReadTimeout in traefik.yaml, for each of the
			// Gateway's listeners: a total for reading the whole request,
			// head and body; writeTimeout would also count the backend's
			// time, so gwretry leaves it unset.
			return report.Decide(report.ReasonConfigured).Set("respondingTimeouts.readTimeout "+s).
				With(report.NewCaveat(report.CaveatTotalInsteadOfIdle), report.NewCaveat(report.CaveatResponseReadNotTimed),
					report.NewCaveat(report.CaveatRestartToApply))
		case translate.FeatureConnServerTimeout:
			// For each rule without timeouts of its own: the time from the
			// end of writing the request to the response headers (the
			// serversTransport's readTimeout cannot be set from files); a
			// try it cuts answers 504.
			return report.Decide(report.ReasonConfigured).Set("forwardingTimeouts.responseHeaderTimeout "+s).
				With(report.NewCaveat(report.CaveatTotalInsteadOfIdle), report.NewCaveat(report.CaveatTimerEndsAtResponseHeaders))
		}
		return report.Decide(report.ReasonNotExpressible)
	})
}

// ObserveConnections implements translate.ConnectionJudge: it decodes both
// files strictly and reads, for clientTimeout, the readTimeout of each of
// the Gateway's entry points (Traefik's default when unset) and, for
// serverTimeout, the responseHeaderTimeout of every servers transport the
// routers of each of its rules reach (0 when unset: none).
func (*Backend) ObserveConnections(m *translate.Model, _ translate.Options, files []translate.File) (map[string]map[translate.Feature][]time.Duration, error) {
	st, err := translate.FileParsed(files, staticPath, parseStatic)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", staticPath, err)
	}
	d, err := translate.FileParsed(files, dynamicPath, parseDynamic)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dynamicPath, err)
	}
	j := &judge{d: d, st: st}
	routers := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(d.HTTP.Routers)) {
		if sm := routerNameRE.FindStringSubmatch(name); sm != nil {
			routers[sm[1]] = append(routers[sm[1]], name)
		}
	}
	out := map[string]map[translate.Feature][]time.Duration{}
	var rerr error
	fail := func(err error) {
		if rerr == nil {
			rerr = err
		}
	}
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, c := range g.Timeouts {
			if c.Feature != translate.FeatureConnClientTimeout && c.Feature != translate.FeatureConnServerTimeout {
				continue
			}
			add := func(v time.Duration) { out[g.Gateway][c.Feature] = append(out[g.Gateway][c.Feature], v) }
			g.ConnectionSites(c.Feature,
				func(l *translate.Listener) {
					ep, ok := st.EntryPoints[l.Name]
					if !ok {
						fail(fmt.Errorf("entry point %s is not defined", l.Name))
						return
					}
					v := defaultEntryPointReadTimeout
					if t := ep.Transport; t != nil && t.RespondingTimeouts != nil && t.RespondingTimeouts.ReadTimeout != "" {
						var err error
						if v, err = traefikDurationValue(t.RespondingTimeouts.ReadTimeout); err != nil {
							fail(fmt.Errorf("entry point %s readTimeout: %w", l.Name, err))
							return
						}
					}
					add(v)
				},
				func(r *translate.Rule) {
					for _, rn := range routers[r.Name] {
						t := &target{answers: map[int]int{}}
						if err := j.service(d.HTTP.Routers[rn].Service, 1, t, 0); err != nil {
							fail(fmt.Errorf("router %s: %w", rn, err))
							return
						}
						for _, tn := range t.transports {
							var v time.Duration
							if st := d.HTTP.ServersTransports[tn]; st != nil && st.ForwardingTimeouts != nil && st.ForwardingTimeouts.ResponseHeaderTimeout != "" {
								var err error
								if v, err = traefikDurationValue(st.ForwardingTimeouts.ResponseHeaderTimeout); err != nil {
									fail(fmt.Errorf("servers transport %s responseHeaderTimeout: %w", tn, err))
									return
								}
							}
							add(v)
						}
					}
				})
		}
	}
	return out, rerr
}
