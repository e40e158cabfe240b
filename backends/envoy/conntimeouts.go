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
//     have no Envoy timer that means what they mean (connFindings).

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

// connFindings are the connection.* findings (a ConnectionTimeoutPolicy's
// fields, per Gateway). Envoy has no timer for the client side alone
// (clientTimeout), none for a connection it half-closed (clientFinTimeout:
// delayed_close_timeout only waits on connections the connection manager
// closes itself and closes the socket then; serverFinTimeout), and opens
// no tunnel (tunnelTimeout).
func connFindings(m *translate.Model, c capability) []translate.Finding {
	return translate.ConnectionDecisions(m, func(g *translate.GatewayTimeouts, ct translate.ConnectionTimeout) report.Decision {
		if _, err := connValue(ct); err != nil {
			return report.Decide(report.ReasonPolicyBlocked)
		}
		v := formatDuration(ct.Value)
		switch ct.Feature {
		case translate.FeatureConnServerTimeout:
			// The route's idle_timeout on every route of each rule without
			// timeouts of its own: 504 once the whole request arrived and
			// no response started, as HAProxy's timeout server, but 408
			// while the client is still sending
			// (Utility::maybeRequestTimeoutCode, envoyproxy/envoy#20026),
			// a stream reset once the response started; the default route
			// timeout stays.
			return report.Decide(report.ReasonConfigured).Set("route idle_timeout "+v).With(
				report.NewCaveat(report.CaveatAnswers408WhileReceiving),
				report.NewCaveat(report.CaveatDefaultRouteTimeout, "timeout", formatDuration(c.defaultRouteTimeout)),
				report.NewCaveat(report.CaveatIdleTimerSpansRequest),
				report.NewCaveat(report.CaveatNoAnswerAfterHeaders))
		case translate.FeatureConnTLSInspectDelay:
			// listener_filters_timeout bounds the tls_inspector's wait for
			// the ClientHello, as the OpenShift router's public_ssl
			// frontend waits with tcp-request inspect-delay; HTTP
			// listeners have no listener filter.
			if slices.ContainsFunc(g.Listeners, func(l *translate.Listener) bool { return l.TLS }) {
				d := report.Decide(report.ReasonConfigured).Set("listener_filters_timeout " + v).With(report.NewCaveat(report.CaveatClosesWithoutClientHello))
				if slices.ContainsFunc(g.Listeners, func(l *translate.Listener) bool { return !l.TLS }) {
					d = d.With(report.NewCaveat(report.CaveatHTTPListenersNotDelayed))
				}
				return d
			}
			return report.Decide(report.ReasonNotExpressible)
		case translate.FeatureConnTunnelTimeout:
			return report.Decide(report.ReasonNoTunnels)
		}
		return report.Decide(report.ReasonNotExpressible)
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
