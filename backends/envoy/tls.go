package envoy

import (
	"fmt"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Extension names of TLS termination.
const (
	tlsInspectorName   = "envoy.filters.listener.tls_inspector"
	tlsTransportSocket = "envoy.transport_sockets.tls"
)

// misdirectedRoute names the route that answers 421 for a Host that
// belongs to another certificate's filter chain. Rule names cannot hold ':'.
const misdirectedRoute = "gwretry:misdirected"

// misdirectedStatus is the Gateway API's answer to a request whose Host
// another listener on the same port serves (RFC 9110 421 Misdirected
// Request).
const misdirectedStatus = 421

// alpnHTTP11 is the only protocol the TLS listeners offer by ALPN. The
// connection manager's codec_type is AUTO: without ALPN it reads the first
// bytes, so a client that opens with the HTTP/2 preface still gets HTTP/2
// (ConnectionManagerUtility::determineNextProtocol).
var alpnHTTP11 = []string{"http/1.1"}

// certGroup is the virtual hosts of a TLS listener that present one
// certificate: one filter chain whose route table routes their Hosts.
type certGroup struct {
	cert *translate.Certificate
	vhs  []*translate.VirtualHost
	// names are the SNI names (the hostnames but "").
	names []string
	// catchAll: the group holds the virtual host of any hostname ("").
	catchAll bool
}

// certGroups groups the virtual hosts of a TLS listener by certificate,
// in the order of their first virtual host.
func certGroups(l *translate.Listener) ([]*certGroup, error) {
	var out []*certGroup
	byFiles := map[translate.Certificate]*certGroup{}
	for _, vh := range l.VirtualHosts {
		if vh.Certificate == nil {
			return nil, fmt.Errorf("virtual host %s of TLS listener %s has no certificate", vh.Name, l.Name)
		}
		g := byFiles[*vh.Certificate]
		if g == nil {
			g = &certGroup{cert: vh.Certificate}
			byFiles[*vh.Certificate] = g
			out = append(out, g)
		}
		g.vhs = append(g.vhs, vh)
		if vh.Hostname == "" {
			g.catchAll = true
		} else {
			g.names = append(g.names, vh.Hostname)
		}
	}
	return out, nil
}

// misdirectedDomains are the Hosts that group i must answer 421: the
// hostnames of every other group, and "*" when another group is the
// catch-all (its own names stay more specific than "*").
func misdirectedDomains(groups []*certGroup, i int) []string {
	var out []string
	catchAll := false
	for j, g := range groups {
		if j == i {
			continue
		}
		catchAll = catchAll || g.catchAll
		out = append(out, g.names...)
	}
	if catchAll {
		out = append(out, "*")
	}
	return out
}

// tlsListener builds a listener that terminates TLS: the tls_inspector
// reads the SNI, a filter chain per certificate matches its hostnames
// (server_names, exact and "*.suffix"), the certificate of the catch-all
// host is the default_filter_chain, and each chain's route table serves
// the Hosts of its certificate and answers 421 for those of the others.
func (g *generator) tlsListener(l *translate.Listener) (*listenerv3.Listener, error) {
	groups, err := certGroups(l)
	if err != nil {
		return nil, err
	}
	inspector, err := marshalAny(&tlsinspectorv3.TlsInspector{})
	if err != nil {
		return nil, err
	}
	lis := &listenerv3.Listener{
		Name:    l.Name,
		Address: socketAddress(l.Address, l.Port),
		ListenerFilters: []*listenerv3.ListenerFilter{{
			Name:       tlsInspectorName,
			ConfigType: &listenerv3.ListenerFilter_TypedConfig{TypedConfig: inspector},
		}},
	}
	if err := g.listenerConn(l, lis); err != nil {
		return nil, err
	}
	for i, grp := range groups {
		name := fmt.Sprintf("%s_cert%d", l.Name, i)
		rc, err := g.routeConfiguration(name, l, grp.vhs, misdirectedDomains(groups, i))
		if err != nil {
			return nil, err
		}
		for _, vh := range grp.vhs {
			g.recordTLS(l, vh)
		}
		if len(grp.names) > 0 {
			fc, err := g.filterChain(name, l, rc, grp.cert)
			if err != nil {
				return nil, err
			}
			fc.FilterChainMatch = &listenerv3.FilterChainMatch{ServerNames: slices.Clone(grp.names)}
			lis.FilterChains = append(lis.FilterChains, fc)
		}
		if grp.catchAll {
			fc, err := g.filterChain(l.Name+"_default", l, rc, grp.cert)
			if err != nil {
				return nil, err
			}
			lis.DefaultFilterChain = fc
		}
	}
	return lis, nil
}

// gatewaysOfTLSListeners returns, by TLS listener of m, the Gateway
// listeners whose routes it may serve, sorted. A rule names its HTTPS
// Gateway listeners (Rule.TLSListeners) but not their ports: a Gateway
// listener is placed on a TLS listener when a rule on that one listener
// only names it, or when it is the one unplaced listener of a rule with
// one TLS listener left that its placed ones do not cover (every TLS
// listener of a rule serves it for one of its Gateway listeners). A
// Gateway listener that stays unplaced counts on every TLS listener of
// its rules, so the result may hold too many, never too few.
func gatewaysOfTLSListeners(m *translate.Model) map[string][]string {
	on := map[*translate.Rule][]string{}
	for _, l := range m.Listeners {
		if !l.TLS {
			continue
		}
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				if rm.Rule != nil && !slices.Contains(on[rm.Rule], l.Name) {
					on[rm.Rule] = append(on[rm.Rule], l.Name)
				}
			}
		}
	}
	home := map[string]string{}
	for changed := true; changed; {
		changed = false
		for _, r := range m.Rules {
			ls := on[r]
			if len(ls) == 0 {
				continue
			}
			var unplaced []string
			left := slices.Clone(ls)
			for _, gl := range r.TLSListeners {
				if h, ok := home[gl]; ok {
					left = slices.DeleteFunc(left, func(l string) bool { return l == h })
				} else {
					unplaced = append(unplaced, gl)
				}
			}
			switch {
			case len(ls) == 1:
				for _, gl := range unplaced {
					home[gl], changed = ls[0], true
				}
			case len(unplaced) == 1 && len(left) == 1:
				home[unplaced[0]], changed = left[0], true
			}
		}
	}
	out := map[string][]string{}
	for _, r := range m.Rules {
		for _, l := range on[r] {
			for _, gl := range r.TLSListeners {
				if h, ok := home[gl]; (!ok || h == l) && !slices.Contains(out[l], gl) {
					out[l] = append(out[l], gl)
				}
			}
		}
	}
	for _, gls := range out {
		slices.Sort(gls)
	}
	return out
}

// downstreamTLS is the transport socket that terminates TLS with cert.
func downstreamTLS(cert *translate.Certificate) (*corev3.TransportSocket, error) {
	ctx, err := marshalAny(&tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificates: []*tlsv3.TlsCertificate{{
			CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: cert.CertFile}},
			PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: cert.KeyFile}},
		}},
		AlpnProtocols: slices.Clone(alpnHTTP11),
	}})
	if err != nil {
		return nil, err
	}
	return &corev3.TransportSocket{Name: tlsTransportSocket, ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: ctx}}, nil
}

// misdirectedVirtualHost answers 421 for every request whose Host is one
// of domains.
func misdirectedVirtualHost(listener string, domains []string) *routev3.VirtualHost {
	return &routev3.VirtualHost{
		Name:    listener + "_misdirected",
		Domains: slices.Clone(domains),
		Routes: []*routev3.Route{{
			Name:   misdirectedRoute,
			Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: misdirectedStatus}},
		}},
	}
}

// tlsHost is one hostname of a rule on a TLS listener, with the Secret
// whose certificate Envoy presents for it.
type tlsHost struct {
	listener, hostname, secret string
}

// recordTLS notes that the rules of vh are served on TLS listener l with
// vh's certificate.
func (g *generator) recordTLS(l *translate.Listener, vh *translate.VirtualHost) {
	h := tlsHost{listener: l.Name, hostname: vh.Hostname, secret: vh.Certificate.Secret}
	for _, rm := range vh.Routes {
		if rm.Rule == nil {
			continue
		}
		if !slices.Contains(g.tlsHosts[rm.Rule.Name], h) {
			g.tlsHosts[rm.Rule.Name] = append(g.tlsHosts[rm.Rule.Name], h)
		}
	}
}

// sharedJudgeReadsTLS is whether translate's judge checks an honoured
// listener.https claim: the Envoy judge fills Behaviour.TLS (observeTLS)
// with the certificate each HTTPS virtual host serving a rule presents,
// and translate compares it with the model's. checkTLS still fails Observe
// on any difference in the certificates per SNI and the 421/404 answers.
const sharedJudgeReadsTLS = true

// httpsDecision decides how Envoy serves r on its HTTPS listeners, when
// every HTTPS listener the rule is attached to is generated. Envoy
// terminates TLS (tls_inspector reads the SNI; one filter chain per
// certificate, matched by server_names; ALPN offers http/1.1, and the
// codec_type AUTO serves HTTP/2 to a client that negotiates no ALPN and
// sends the preface); each chain's route table serves the Hosts of its own
// certificate: another certificate's Host on the port is answered 421, a
// Host no hostname covers 404. Envoy's SNI names are the hostnames the
// routes serve, and one Secret is one filter chain: where a port serves
// the routes of one Gateway listener, that is exactly the Gateway API's
// choice; where the rules of a port come from several Gateway listeners
// (CertificateByRouteHostname), or a listener of the rule's is not
// generated (UnroutedListenerNotServed), the finding is approximated.
func (g *generator) httpsDecision(r *translate.Rule) report.Decision {
	hosts := g.tlsHosts[r.Name]
	if len(hosts) == 0 {
		return report.Decide(report.ReasonRuleOnNoListener)
	}
	var shared, secrets []string
	for _, h := range hosts {
		if !slices.Contains(secrets, h.secret) {
			secrets = append(secrets, h.secret)
		}
		if gws := g.tlsGateways[h.listener]; len(gws) > 1 && !slices.Contains(shared, h.listener) {
			shared = append(shared, h.listener)
		}
	}
	terminated := report.Decide(report.ReasonConfigured).Set("TLS filter chains with Secret " + strings.Join(secrets, ", "))
	if len(shared) > 0 || !sharedJudgeReadsTLS {
		return terminated.With(report.NewCaveat(report.CaveatCertificateByRouteHostname, "listeners", strings.Join(shared, ", ")))
	}
	if len(r.TLSUnrouted) > 0 {
		return terminated.With(report.NewCaveat(report.CaveatUnroutedListenerNotServed, "listeners", strings.Join(r.TLSUnrouted, ", ")))
	}
	return terminated
}

// tlsNotes are the facts of the TLS listeners a user of the file needs.
func tlsNotes(m *translate.Model) []string {
	var names []string
	for _, l := range m.Listeners {
		if l.TLS {
			names = append(names, l.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("listener(s) %s terminate TLS: Envoy reads the certificate and key files when it starts (restart it to load new ones); a connection whose SNI no hostname covers gets the certificate of the listener without hostname, or no handshake when there is none; "+
		"a redirect without a scheme takes the request's scheme, which Envoy takes from an X-Forwarded-Proto header the client sent (use_remote_address is not set) before the connection's https", strings.Join(names, ", "))}
}
