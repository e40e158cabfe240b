package envoy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"

	"github.com/gwretry/gwretry/translate"
)

// chainsOf returns the filter chains of l, its default_filter_chain last.
func chainsOf(l *listenerv3.Listener) []*listenerv3.FilterChain {
	out := slices.Clone(l.GetFilterChains())
	if d := l.GetDefaultFilterChain(); d != nil {
		out = append(out, d)
	}
	return out
}

// certFiles are the certificate and key files a filter chain presents.
type certFiles struct{ cert, key string }

// chainCertificate reads the certificate of a filter chain that
// terminates TLS: one TLS certificate from files, ALPN http/1.1 only, and
// nothing gwretry does not evaluate (client certificates, SDS).
func chainCertificate(fc *listenerv3.FilterChain) (certFiles, error) {
	ts := fc.GetTransportSocket()
	if ts.GetName() != tlsTransportSocket {
		return certFiles{}, fmt.Errorf("transport socket %q is not %s", ts.GetName(), tlsTransportSocket)
	}
	ctx := &tlsv3.DownstreamTlsContext{}
	if err := ts.GetTypedConfig().UnmarshalTo(ctx); err != nil {
		return certFiles{}, fmt.Errorf("transport socket: %w", err)
	}
	common := ctx.GetCommonTlsContext()
	bare := &tlsv3.DownstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
		TlsCertificates: common.GetTlsCertificates(), AlpnProtocols: common.GetAlpnProtocols()}}
	if !proto.Equal(ctx, bare) {
		return certFiles{}, errors.New("the DownstreamTlsContext sets more than tls_certificates and alpn_protocols, which is not evaluated")
	}
	if !slices.Equal(common.GetAlpnProtocols(), alpnHTTP11) {
		return certFiles{}, fmt.Errorf("alpn_protocols %q, not only http/1.1", common.GetAlpnProtocols())
	}
	certs := common.GetTlsCertificates()
	if len(certs) != 1 {
		return certFiles{}, fmt.Errorf("%d TLS certificates, not one", len(certs))
	}
	c := certs[0]
	bareCert := &tlsv3.TlsCertificate{CertificateChain: c.GetCertificateChain(), PrivateKey: c.GetPrivateKey()}
	if !proto.Equal(c, bareCert) || c.GetCertificateChain().GetFilename() == "" || c.GetPrivateKey().GetFilename() == "" {
		return certFiles{}, errors.New("the TLS certificate is not a certificate_chain and a private_key read from files")
	}
	return certFiles{cert: c.GetCertificateChain().GetFilename(), key: c.GetPrivateKey().GetFilename()}, nil
}

// hasTLSInspector reports whether l reads the SNI of its connections.
func hasTLSInspector(l *listenerv3.Listener) bool {
	return slices.ContainsFunc(l.GetListenerFilters(), func(f *listenerv3.ListenerFilter) bool {
		return f.GetName() == tlsInspectorName
	})
}

// envoyChainFor returns the filter chain Envoy picks for a TLS connection
// with SNI sni ("" for none): an exact server_names entry, else the most
// specific "*.suffix" entry, else a chain without server_names, else the
// default_filter_chain. Without the tls_inspector Envoy knows no SNI.
func envoyChainFor(l *listenerv3.Listener, sni string) (*listenerv3.FilterChain, error) {
	if !hasTLSInspector(l) {
		sni = ""
	}
	sni = strings.ToLower(sni)
	var anyChain *listenerv3.FilterChain
	byName := map[string]*listenerv3.FilterChain{}
	for _, fc := range l.GetFilterChains() {
		m := fc.GetFilterChainMatch()
		if !proto.Equal(m, &listenerv3.FilterChainMatch{ServerNames: m.GetServerNames()}) && m != nil {
			return nil, fmt.Errorf("filter chain %s matches on more than server_names, which is not evaluated", fc.GetName())
		}
		if len(m.GetServerNames()) == 0 {
			if anyChain != nil {
				return nil, fmt.Errorf("filter chains %s and %s both match every connection", anyChain.GetName(), fc.GetName())
			}
			anyChain = fc
		}
		for _, n := range m.GetServerNames() {
			if _, dup := byName[n]; dup {
				return nil, fmt.Errorf("server name %q is in two filter chains", n)
			}
			byName[n] = fc
		}
	}
	if sni != "" {
		if fc := byName[sni]; fc != nil {
			return fc, nil
		}
		for i := strings.Index(sni, "."); i >= 0; {
			if fc := byName["*"+sni[i:]]; fc != nil {
				return fc, nil
			}
			next := strings.Index(sni[i+1:], ".")
			if next < 0 {
				break
			}
			i += next + 1
		}
	}
	if anyChain != nil {
		return anyChain, nil
	}
	return l.GetDefaultFilterChain(), nil
}

// envoyVirtualHost returns the virtual host Envoy picks in rc for Host
// host (without port): an exact domain, else the longest "*suffix"
// domain, else "*"; nil when none matches (404).
func envoyVirtualHost(rc *routev3.RouteConfiguration, host string) (*routev3.VirtualHost, error) {
	host = strings.ToLower(host)
	var best *routev3.VirtualHost
	bestLen := -1
	var deflt *routev3.VirtualHost
	for _, vh := range rc.GetVirtualHosts() {
		for _, d := range vh.GetDomains() {
			d = strings.ToLower(d)
			switch {
			case d == "*":
				deflt = vh
			case strings.HasSuffix(d, "*"):
				return nil, fmt.Errorf("virtual host %s: prefix wildcard domain %q is not evaluated", vh.GetName(), d)
			case d == host:
				return vh, nil
			case strings.HasPrefix(d, "*") && strings.HasSuffix(host, d[1:]) && len(host) > len(d)-1 && len(d) > bestLen:
				best, bestLen = vh, len(d)
			}
		}
	}
	if best != nil {
		return best, nil
	}
	return deflt, nil
}

// chainRoutes returns the route table of the connection manager of fc.
func chainRoutes(fc *listenerv3.FilterChain) (*routev3.RouteConfiguration, error) {
	var out *routev3.RouteConfiguration
	for _, f := range fc.GetFilters() {
		hcm := &hcmv3.HttpConnectionManager{}
		if f.GetName() != hcmFilterName {
			return nil, fmt.Errorf("network filter %s is not evaluated", f.GetName())
		}
		if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
			return nil, err
		}
		if out != nil {
			return nil, errors.New("two connection managers")
		}
		out = hcm.GetRouteConfig()
	}
	if out == nil {
		return nil, errors.New("no connection manager with an inline route_config")
	}
	return out, nil
}

// isMisdirected reports whether every request to vh is answered 421.
func isMisdirected(vh *routev3.VirtualHost) bool {
	rs := vh.GetRoutes()
	return len(rs) > 0 && rs[0].GetMatch().GetPrefix() == "/" && len(rs[0].GetMatch().GetHeaders()) == 0 &&
		len(rs[0].GetMatch().GetQueryParameters()) == 0 && rs[0].GetDirectResponse().GetStatus() == misdirectedStatus
}

// modelVirtualHost is the virtual host of l the Gateway API gives name
// (an SNI or a Host): the exact hostname, else the longest wildcard that
// covers it, else the catch-all; nil when none.
func modelVirtualHost(l *translate.Listener, name string) *translate.VirtualHost {
	var best, catchAll *translate.VirtualHost
	for _, vh := range l.VirtualHosts {
		h := vh.Hostname
		switch {
		case h == "":
			catchAll = vh
		case h == name:
			return vh
		case strings.HasPrefix(h, "*.") && strings.HasSuffix(name, h[1:]) && len(name) > len(h)-1 &&
			(best == nil || len(h) > len(best.Hostname)):
			best = vh
		}
	}
	if best != nil {
		return best
	}
	return catchAll
}

// probeName is a name that vh's hostname covers and no more specific
// hostname does, as an SNI and a Host ("" stays "": no SNI).
func probeName(hostname string) string {
	if rest, ok := strings.CutPrefix(hostname, "*."); ok {
		return "gwretry-probe." + rest
	}
	return hostname
}

// tlsProbe is what the judge sends to a TLS listener: an SNI (and the
// same Host), and the virtual host of the model that it belongs to.
type tlsProbe struct {
	name string
	vh   *translate.VirtualHost
}

// checkTLS reads back which listeners terminate TLS and with which
// certificate per SNI name, and how each filter chain routes the Hosts of
// the listener, and compares them with the model: a plain listener has no
// TLS; on a TLS listener a connection whose SNI is a hostname's (or none,
// or one no hostname covers) gets that hostname's certificate, its
// requests with that Host reach the hostname's virtual host, a Host of a
// hostname with another certificate is answered 421, and a Host no
// hostname covers 404. translate.Behaviour has no field for this, so the
// judge compares here and fails Observe on a difference.
func checkTLS(m *translate.Model, bs *bootstrapv3.Bootstrap) error {
	files := map[string]*listenerv3.Listener{}
	for _, l := range bs.GetStaticResources().GetListeners() {
		files[l.GetName()] = l
	}
	for _, l := range m.Listeners {
		lis := files[l.Name]
		if lis == nil {
			// Its rules have no behaviour: their claims fail.
			continue
		}
		for _, fc := range chainsOf(lis) {
			if tls := fc.GetTransportSocket() != nil; tls != l.TLS {
				return fmt.Errorf("listener %s filter chain %q: terminates TLS %v, but the listener is HTTPS %v", l.Name, fc.GetName(), tls, l.TLS)
			}
		}
		if !l.TLS {
			continue
		}
		if err := checkTLSListener(l, lis); err != nil {
			return fmt.Errorf("listener %s: %w", l.Name, err)
		}
	}
	return nil
}

func checkTLSListener(l *translate.Listener, lis *listenerv3.Listener) error {
	var probes []tlsProbe
	for _, vh := range l.VirtualHosts {
		names := []string{probeName(vh.Hostname)}
		if vh.Hostname == "" {
			names = append(names, "gwretry-probe.invalid")
		}
		for _, n := range names {
			// The hostname the Gateway API gives the probe (a more
			// specific one may cover it).
			if want := modelVirtualHost(l, n); want != nil {
				probes = append(probes, tlsProbe{name: n, vh: want})
			}
		}
	}
	// A Host that no hostname covers, unless the catch-all does.
	stranger := "gwretry-stranger.invalid"
	for _, sni := range probes {
		fc, err := envoyChainFor(lis, sni.name)
		if err != nil {
			return err
		}
		if fc == nil {
			return fmt.Errorf("SNI %q: no filter chain, so Envoy closes the connection; hostname %q asks for Secret %s", sni.name, sni.vh.Hostname, sni.vh.Certificate.Secret)
		}
		got, err := chainCertificate(fc)
		if err != nil {
			return fmt.Errorf("filter chain %s: %w", fc.GetName(), err)
		}
		if want := (certFiles{cert: sni.vh.Certificate.CertFile, key: sni.vh.Certificate.KeyFile}); got != want {
			return fmt.Errorf("SNI %q: filter chain %s presents %s and %s, but hostname %q asks for Secret %s (%s, %s)",
				sni.name, fc.GetName(), got.cert, got.key, sni.vh.Hostname, sni.vh.Certificate.Secret, want.cert, want.key)
		}
		rc, err := chainRoutes(fc)
		if err != nil {
			return fmt.Errorf("filter chain %s: %w", fc.GetName(), err)
		}
		for _, host := range probes {
			vh, err := envoyVirtualHost(rc, host.name)
			if err != nil {
				return fmt.Errorf("filter chain %s: %w", fc.GetName(), err)
			}
			same := *host.vh.Certificate == *sni.vh.Certificate
			switch {
			case vh == nil:
				return fmt.Errorf("SNI %q, Host %q: filter chain %s answers 404, but hostname %q serves that Host", sni.name, host.name, fc.GetName(), host.vh.Hostname)
			case same && vh.GetName() != host.vh.Name:
				return fmt.Errorf("SNI %q, Host %q: filter chain %s routes to virtual host %s, not %s", sni.name, host.name, fc.GetName(), vh.GetName(), host.vh.Name)
			case !same && !isMisdirected(vh):
				return fmt.Errorf("SNI %q, Host %q: filter chain %s routes to virtual host %s, but the Host belongs to another certificate's hostname %q, which the Gateway API answers 421", sni.name, host.name, fc.GetName(), vh.GetName(), host.vh.Hostname)
			}
		}
		if modelVirtualHost(l, stranger) == nil {
			vh, err := envoyVirtualHost(rc, stranger)
			if err != nil {
				return err
			}
			if vh != nil {
				return fmt.Errorf("SNI %q, Host %q: filter chain %s routes to virtual host %s, but no hostname serves that Host (404)", sni.name, stranger, fc.GetName(), vh.GetName())
			}
		}
	}
	return nil
}

// observeTLS fills Behaviour.TLS of every rule from the file: for every
// listener that terminates TLS (by its address's port) and every hostname
// one of its route tables names (a domain, "*" being the catch-all ""),
// Envoy gives a connection with that hostname's SNI (none for "") a filter
// chain (envoyChainFor), and a request with that Host the virtual host of
// the chain's route table (envoyVirtualHost); each rule routed there gets,
// under translate.TLSKey(port, hostname), the certificate files of that
// chain. A hostname whose SNI gets no chain, or whose Host the chain
// answers 421 or 404, serves no rule under that key. It runs after the
// behaviours are derived (j.out).
func (j *judge) observeTLS(bs *bootstrapv3.Bootstrap) error {
	tls := map[string]map[string]translate.Certificate{}
	for _, lis := range bs.GetStaticResources().GetListeners() {
		chains := chainsOf(lis)
		if !slices.ContainsFunc(chains, func(fc *listenerv3.FilterChain) bool { return fc.GetTransportSocket() != nil }) {
			continue
		}
		port := int(lis.GetAddress().GetSocketAddress().GetPortValue())
		var hostnames []string
		for _, fc := range chains {
			if fc.GetTransportSocket() == nil {
				return fmt.Errorf("listener %s: filter chain %q is plain HTTP beside TLS ones, which is not evaluated", lis.GetName(), fc.GetName())
			}
			rc, err := chainRoutes(fc)
			if err != nil {
				return fmt.Errorf("listener %s filter chain %s: %w", lis.GetName(), fc.GetName(), err)
			}
			for _, vh := range rc.GetVirtualHosts() {
				for _, d := range vh.GetDomains() {
					h := strings.ToLower(d)
					if h == "*" {
						h = ""
					}
					if !slices.Contains(hostnames, h) {
						hostnames = append(hostnames, h)
					}
				}
			}
		}
		for _, h := range hostnames {
			sni, host := probeName(h), probeName(h)
			if h == "" {
				host = "gwretry-probe.invalid"
			}
			fc, err := envoyChainFor(lis, sni)
			if err != nil {
				return fmt.Errorf("listener %s: %w", lis.GetName(), err)
			}
			if fc == nil {
				continue // no handshake
			}
			files, err := chainCertificate(fc)
			if err != nil {
				return fmt.Errorf("listener %s filter chain %s: %w", lis.GetName(), fc.GetName(), err)
			}
			rc, err := chainRoutes(fc)
			if err != nil {
				return fmt.Errorf("listener %s filter chain %s: %w", lis.GetName(), fc.GetName(), err)
			}
			vh, err := envoyVirtualHost(rc, host)
			if err != nil {
				return fmt.Errorf("listener %s filter chain %s: %w", lis.GetName(), fc.GetName(), err)
			}
			if vh == nil {
				continue // 404
			}
			key := translate.TLSKey(port, h)
			cert := translate.Certificate{CertFile: files.cert, KeyFile: files.key}
			for _, rt := range vh.GetRoutes() {
				if rt.GetName() == misdirectedRoute {
					continue
				}
				r, err := j.ruleOf(rt.GetName())
				if err != nil {
					return err
				}
				if tls[r.Name] == nil {
					tls[r.Name] = map[string]translate.Certificate{}
				}
				if prev, ok := tls[r.Name][key]; ok && prev != cert {
					return fmt.Errorf("two listeners on port %d present %s and %s for %q to rule %s", port, prev.CertFile, cert.CertFile, h, r.Name)
				}
				tls[r.Name][key] = cert
			}
		}
	}
	for name, certs := range tls {
		for c, b := range j.out[name] {
			b.TLS = certs
			j.out[name][c] = b
		}
	}
	return nil
}
