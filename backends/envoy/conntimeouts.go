package envoy

import (
	"fmt"
	"slices"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// The Envoy settings of a ConnectionTimeoutPolicy. HAProxy's semantics are
// the reference (inactivity timers on one side; gwretry's HAProxy times the
// request head and the keep-alive wait with timeout http-request). Envoy's
// HTTP timers are per stream and count both directions, so:
//
//   - serverTimeout: the route's idle_timeout on every route of each rule
//     without timeouts of its own (approximated);
//   - tlsInspectDelay: the listener_filters_timeout of HTTPS listeners,
//     which bounds the tls_inspector's wait for the ClientHello
//     (approximated; HTTP listeners have no listener filter to time);
//   - clientTimeout, clientFinTimeout, serverFinTimeout and tunnelTimeout
//     have no Envoy timer that means what they mean (connNotWritten).

// defaultListenerFiltersTimeout is Envoy's listener_filters_timeout when
// unset.
const defaultListenerFiltersTimeout = 15 * time.Second

// connValue is the checked Envoy duration of c.
func connValue(c translate.ConnectionTimeout) (*durationpb.Duration, error) {
	if c.Value <= 0 || c.Value > translate.MaxHAProxyTimeout {
		return nil, fmt.Errorf("%s %s: not a duration gwretry writes for Envoy", c.Feature, c.Value)
	}
	d := durationpb.New(c.Value)
	if err := d.CheckValid(); err != nil || d.AsDuration() != c.Value {
		return nil, fmt.Errorf("%s %s: %v", c.Feature, c.Value, err)
	}
	return d, nil
}

// ruleConn sets the idle_timeout of a route of rule r from the Gateways'
// serverTimeout (nothing for a rule with timeouts of its own, which win).
func (g *generator) ruleConn(ra *routev3.RouteAction, r *translate.Rule) error {
	if g.model == nil {
		return nil
	}
	c, ok := g.model.RuleConnection(r, translate.FeatureConnServerTimeout)
	if !ok {
		return nil
	}
	if ra.IdleTimeout != nil {
		return fmt.Errorf("rule %s: its route has an idle_timeout already", r.Name)
	}
	d, err := connValue(c)
	if err != nil {
		return fmt.Errorf("rule %s: %w", r.Name, err)
	}
	ra.IdleTimeout = d
	return nil
}

// listenerConn sets the listener_filters_timeout of HTTPS listener lis
// (listener l) from the Gateways' tlsInspectDelay.
func (g *generator) listenerConn(l *translate.Listener, lis *listenerv3.Listener) error {
	if g.model == nil || len(lis.ListenerFilters) == 0 {
		return nil
	}
	c, ok := g.model.ListenerConnection(l, translate.FeatureConnTLSInspectDelay)
	if !ok {
		return nil
	}
	d, err := connValue(c)
	if err != nil {
		return fmt.Errorf("listener %s: %w", l.Name, err)
	}
	lis.ListenerFiltersTimeout = d
	return nil
}

// connNotWritten are the fields Envoy has no setting for, with the nearest.
func connNotWritten(f translate.Feature) string {
	return map[translate.Feature]string{
		translate.FeatureConnClientTimeout:    "Envoy has no timer for the client side alone (HAProxy's timeout client: the client stalls sending the body or reading the response): the connection manager's common_http_protocol_options.idle_timeout closes a connection with no request in progress (HAProxy's timeout http-keep-alive), request_headers_timeout bounds the request head (timeout http-request), and stream_idle_timeout and the route's idle_timeout reset a request quiet in both directions, so they also cut a slow backend, which HAProxy leaves to timeout server; gwretry writes none of them for clientTimeout",
		translate.FeatureConnClientFinTimeout: "HAProxy's timeout client-fin replaces timeout client once HAProxy has shut its own side of the connection to the client (the client is silent after HAProxy's FIN); Envoy's nearest setting, the connection manager's delayed_close_timeout (1s when unset), also waits for the client to close after Envoy decided to close, but only on connections the connection manager closes itself, restarted by every write still flushing, and it then closes the socket rather than timing the client's silence, so gwretry does not write it and Envoy keeps its default",
		translate.FeatureConnServerFinTimeout: "HAProxy's timeout server-fin replaces timeout server once HAProxy has shut its own side of the connection to the backend; Envoy has no timer for an upstream connection it has half-closed, and gwretry's configuration proxies plain HTTP requests only (no upgrade_configs, no TCP proxy), where the route's and the connection manager's stream timers keep timing the request",
		translate.FeatureConnTunnelTimeout:    "gwretry's Envoy configuration enables no upgrade_configs, so Envoy opens no WebSocket or CONNECT tunnel; if it did, a tunnel would be timed by the same stream idle timers as any request (the route's idle_timeout, which carries serverTimeout), with no timer of its own",
	}[f]
}

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway).
func connFindings(m *translate.Model, c capability) []translate.Finding {
	return translate.ConnectionFindings(m, func(g *translate.GatewayTimeouts, ct translate.ConnectionTimeout) (report.Decision, string) {
		if _, err := connValue(ct); err != nil {
			return report.Decide(report.ReasonPolicyBlocked), err.Error()
		}
		v := formatDuration(ct.Value)
		switch ct.Feature {
		case translate.FeatureConnServerTimeout:
			return report.Decide(report.ReasonConfigured).Set("route idle_timeout "+v).With(
					report.NewCaveat(report.CaveatAnswers408WhileReceiving),
					report.NewCaveat(report.CaveatDefaultRouteTimeout, "timeout", formatDuration(c.defaultRouteTimeout)),
					report.NewCaveat(report.CaveatIdleTimerSpansRequest),
					report.NewCaveat(report.CaveatNoAnswerAfterHeaders)),
				fmt.Sprintf("the route's idle_timeout %s on every route of each rule served on the Gateway's listeners that sets no timeouts of its own (those keep theirs): Envoy ends a request whose stream has been quiet in both directions for %s, answering 504 when it had received the whole request and no response has started, as HAProxy's timeout server does, but 408 while the client is still sending it, and resetting the stream once the response has started (the client gets the headers and a truncated body); unlike timeout server it also counts the client's silence and spans all tries of the request, not one connection to a backend; and these rules keep Envoy's default route timeout of %s, a total HAProxy does not have, which ends a request first when it is shorter (504 while no response headers went to the client, a stream reset once they did)",
					v, v, formatDuration(c.defaultRouteTimeout))
		case translate.FeatureConnTLSInspectDelay:
			if slices.ContainsFunc(g.Listeners, func(l *translate.Listener) bool { return l.TLS }) {
				d := report.Decide(report.ReasonConfigured).Set("listener_filters_timeout " + v).With(report.NewCaveat(report.CaveatClosesWithoutClientHello))
				if slices.ContainsFunc(g.Listeners, func(l *translate.Listener) bool { return !l.TLS }) {
					d = d.With(report.NewCaveat(report.CaveatHTTPListenersNotDelayed))
				}
				return d, "listener_filters_timeout " + v + " on the Gateway's HTTPS listeners: how long the tls_inspector waits for the ClientHello (its SNI picks the certificate), as the OpenShift router's TLS frontend (public_ssl, which reads the SNI of every HTTPS connection, passthrough or terminated) waits with tcp-request inspect-delay, not for the HTTP request as its HTTP frontend does; Envoy closes a connection whose ClientHello has not arrived by then (continue_on_listener_filters_timeout false), where HAProxy goes on without an SNI (to its no-SNI backend); the TLS handshake after the ClientHello and the HTTP request are not timed by it; the Gateway's HTTP listeners have no listener filter, so the delay applies nowhere there"
			}
			return report.Decide(report.ReasonNotExpressible), "Envoy's nearest setting, listener_filters_timeout, bounds the listener filters, and the Gateway's listeners are HTTP, which gwretry gives none (the tls_inspector runs on HTTPS listeners only): Envoy has no delay for waiting on a plain HTTP request before routing (HAProxy's tcp-request inspect-delay)"
		case translate.FeatureConnTunnelTimeout:
			return report.Decide(report.ReasonNoTunnels), connNotWritten(ct.Feature)
		}
		return report.Decide(report.ReasonNotExpressible), connNotWritten(ct.Feature)
	})
}

// ObserveConnections implements translate.ConnectionJudge: it decodes the
// bootstrap and reads, for serverTimeout, the idle timeout of every route
// of each of the Gateway's rules (its idle_timeout, else its connection
// manager's stream_idle_timeout, else Envoy's default), and for
// tlsInspectDelay the listener_filters_timeout of each of its HTTPS
// listeners (Envoy's default when unset).
func (b *Backend) ObserveConnections(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.Feature][]time.Duration, error) {
	c, bs, err := readBack(opts, files)
	if err != nil {
		return nil, err
	}
	listeners := map[string]*listenerv3.Listener{}
	routeIdle := map[string][]time.Duration{}
	for _, l := range bs.GetStaticResources().GetListeners() {
		listeners[l.GetName()] = l
		for _, fc := range chainsOf(l) {
			for _, f := range fc.GetFilters() {
				msg, err := f.GetTypedConfig().UnmarshalNew()
				if err != nil {
					return nil, fmt.Errorf("listener %s filter %s: %w", l.GetName(), f.GetName(), err)
				}
				hcm, ok := msg.(*hcmv3.HttpConnectionManager)
				if !ok {
					continue
				}
				streamIdle := c.streamIdleTimeout
				if d := hcm.GetStreamIdleTimeout(); d != nil {
					streamIdle = d.AsDuration()
				}
				for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
					for _, rt := range vh.GetRoutes() {
						idle := streamIdle
						if d := rt.GetRoute().GetIdleTimeout(); d != nil {
							idle = d.AsDuration()
						}
						routeIdle[rt.GetName()] = append(routeIdle[rt.GetName()], idle)
					}
				}
			}
		}
	}
	out := map[string]map[translate.Feature][]time.Duration{}
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, ct := range g.Timeouts {
			f := ct.Feature
			switch f {
			case translate.FeatureConnServerTimeout:
				g.ConnectionSites(f, nil, func(r *translate.Rule) {
					out[g.Gateway][f] = append(out[g.Gateway][f], routeIdle[r.Name]...)
					out[g.Gateway][f] = append(out[g.Gateway][f], routeIdle[r.Name+twinSuffix]...)
				})
			case translate.FeatureConnTLSInspectDelay:
				g.ConnectionSites(f, func(l *translate.Listener) {
					lis := listeners[l.Name]
					if !l.TLS || lis == nil || len(lis.GetListenerFilters()) == 0 {
						return
					}
					d := defaultListenerFiltersTimeout
					if v := lis.GetListenerFiltersTimeout(); v != nil {
						d = v.AsDuration()
					}
					out[g.Gateway][f] = append(out[g.Gateway][f], d)
				}, nil)
			}
		}
	}
	return out, nil
}
