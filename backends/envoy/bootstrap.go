package envoy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Extension names used in the bootstrap.
const (
	hcmFilterName     = "envoy.filters.network.http_connection_manager"
	routerFilterName  = "envoy.filters.http.router"
	previousHostsName = "envoy.retry_host_predicates.previous_hosts"
)

// clusterConnectTimeout bounds a TCP connect to a backend; a failed connect
// is retried (connect-failure).
const clusterConnectTimeout = 10 * time.Second

// generator builds one bootstrap. It is used once, by one Generate call.
type generator struct {
	cap                capability
	retryNonIdempotent bool
	// shared shares the findings' decisions (translate.Options.Shared).
	shared *report.Interner
	// model is the model being generated (its connection timeouts).
	model *translate.Model
	// clusters are the backends referenced by routes, by cluster name.
	clusters map[string]*translate.BackendRef
	// placed holds the rules that have at least one route.
	placed map[string]bool
	// invalidShareUsed: the route configuration being built sends some
	// share to invalidCluster.
	invalidShareUsed bool
	// validateClustersOff: some route table has validate_clusters false.
	validateClustersOff bool
	// side is the port and protocol of the listener whose routes are
	// being built (a redirect's Location may name them).
	side listenerSide
	// stripHostPort: a redirect on the listener being built takes the
	// request's host and names no port, so the connection manager drops
	// the port from Host (strip_any_host_port).
	stripHostPort bool
	// strippedListeners are the listeners that strip the Host port.
	strippedListeners []string
	// tlsHosts are, by rule name, the hostnames of TLS listeners that
	// serve the rule, with their certificates.
	tlsHosts map[string][]tlsHost
	// tlsGateways are, by TLS listener name, the Gateway listeners whose
	// routes it may serve (gatewaysOfTLSListeners).
	tlsGateways map[string][]string
}

// bootstrap builds the static bootstrap for m.
func (g *generator) bootstrap(m *translate.Model) (*bootstrapv3.Bootstrap, error) {
	g.model = m
	g.clusters = map[string]*translate.BackendRef{}
	g.placed = map[string]bool{}
	g.tlsHosts = map[string][]tlsHost{}
	g.tlsGateways = gatewaysOfTLSListeners(m)
	sr := &bootstrapv3.Bootstrap_StaticResources{}
	names := map[string]bool{}
	for _, l := range m.Listeners {
		if names[l.Name] {
			return nil, fmt.Errorf("two listeners are named %q", l.Name)
		}
		names[l.Name] = true
		lis, err := g.listener(l)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		sr.Listeners = append(sr.Listeners, lis)
	}
	clusterNames := make([]string, 0, len(g.clusters))
	for name := range g.clusters {
		clusterNames = append(clusterNames, name)
	}
	slices.Sort(clusterNames)
	if _, ok := g.clusters[invalidCluster]; ok {
		return nil, fmt.Errorf("a backend is named %q, the name reserved for invalid backendRefs", invalidCluster)
	}
	for _, name := range clusterNames {
		sr.Clusters = append(sr.Clusters, g.cluster(g.clusters[name]))
	}
	return &bootstrapv3.Bootstrap{StaticResources: sr}, nil
}

func (g *generator) listener(l *translate.Listener) (*listenerv3.Listener, error) {
	if _, err := netip.ParseAddr(l.Address); err != nil {
		return nil, fmt.Errorf("Envoy listens on IP addresses only, not %q", l.Address)
	}
	if l.TLS {
		return g.tlsListener(l)
	}
	rc, err := g.routeConfiguration(l.Name, l, l.VirtualHosts, nil)
	if err != nil {
		return nil, err
	}
	fc, err := g.filterChain("", l, rc, nil)
	if err != nil {
		return nil, err
	}
	return &listenerv3.Listener{
		Name:         l.Name,
		Address:      socketAddress(l.Address, l.Port),
		FilterChains: []*listenerv3.FilterChain{fc},
	}, nil
}

// filterChain is a filter chain named name (none when "") whose HTTP
// connection manager serves rc, terminating TLS with cert when it is set.
func (g *generator) filterChain(name string, l *translate.Listener, rc *routev3.RouteConfiguration, cert *translate.Certificate) (*listenerv3.FilterChain, error) {
	router, err := marshalAny(&routerv3.Router{})
	if err != nil {
		return nil, err
	}
	cm := &hcmv3.HttpConnectionManager{
		StatPrefix:     l.Name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       routerFilterName,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router},
		}},
		// No client is internal: the connection manager then removes
		// x-envoy-retry-on, x-envoy-max-retries,
		// x-envoy-upstream-rq-(per-try-)timeout-ms and the other retry and
		// timeout headers of every request
		// (ConnectionManagerUtility::mutateRequestHeaders), so no client
		// can change a rule's retries or timeouts. Explicit, because with
		// use_remote_address false "internal" is read from the client's own
		// X-Forwarded-For, and Envoy before 1.33 trusted RFC 1918 there.
		InternalAddressConfig: &hcmv3.HttpConnectionManager_InternalAddressConfig{},
	}
	if g.stripHostPort {
		cm.StripPortMode = &hcmv3.HttpConnectionManager_StripAnyHostPort{StripAnyHostPort: true}
		if !slices.Contains(g.strippedListeners, l.Name) {
			g.strippedListeners = append(g.strippedListeners, l.Name)
		}
	}
	hcm, err := marshalAny(cm)
	if err != nil {
		return nil, err
	}
	fc := &listenerv3.FilterChain{
		Name: name,
		Filters: []*listenerv3.Filter{{
			Name:       hcmFilterName,
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}},
	}
	if cert != nil {
		if fc.TransportSocket, err = downstreamTLS(cert); err != nil {
			return nil, err
		}
	}
	return fc, nil
}

// routeConfiguration is the route table name of vhs, virtual hosts of
// listener l, with a virtual host that answers 421 for the Hosts in
// misdirected (none when empty). It leaves g.stripHostPort set when a
// redirect in it needs the connection manager to strip the Host port.
func (g *generator) routeConfiguration(name string, l *translate.Listener, vhs []*translate.VirtualHost, misdirected []string) (*routev3.RouteConfiguration, error) {
	rc := &routev3.RouteConfiguration{Name: name, IgnorePortInHostMatching: true}
	g.invalidShareUsed = false
	g.side, g.stripHostPort = listenerSide{port: l.Port, tls: l.TLS}, false
	vhNames := map[string]bool{}
	domains := map[string]string{}
	for _, vh := range vhs {
		if vhNames[vh.Name] {
			return nil, fmt.Errorf("two virtual hosts are named %q", vh.Name)
		}
		vhNames[vh.Name] = true
		domain := vh.Hostname
		if domain == "" {
			domain = "*"
		}
		if other, ok := domains[domain]; ok {
			return nil, fmt.Errorf("virtual hosts %s and %s both serve %q", other, vh.Name, domain)
		}
		domains[domain] = vh.Name
		v := &routev3.VirtualHost{Name: vh.Name, Domains: []string{domain}}
		for _, rm := range vh.Routes {
			routes, err := g.routes(rm)
			if err != nil {
				return nil, fmt.Errorf("virtual host %s: %w", vh.Name, err)
			}
			v.Routes = append(v.Routes, routes...)
		}
		rc.VirtualHosts = append(rc.VirtualHosts, v)
	}
	if len(misdirected) > 0 {
		v := misdirectedVirtualHost(name, misdirected)
		for _, d := range misdirected {
			if other, ok := domains[d]; ok {
				return nil, fmt.Errorf("virtual hosts %s and %s both serve %q", other, v.Name, d)
			}
		}
		rc.VirtualHosts = append(rc.VirtualHosts, v)
	}
	if g.invalidShareUsed {
		// Envoy refuses a static route table that names a cluster it
		// does not have, unless told not to check: invalidCluster must
		// stay unknown so that its share is answered 500. bootstrap()
		// checks every other name itself.
		rc.ValidateClusters = wrapperspb.Bool(false)
		g.validateClustersOff = true
	}
	return rc, nil
}

func (g *generator) cluster(b *translate.BackendRef) *clusterv3.Cluster {
	discovery := clusterv3.Cluster_STATIC
	var lbEndpoints []*endpointv3.LbEndpoint
	for _, e := range b.Endpoints {
		if _, err := netip.ParseAddr(e.Host); err != nil {
			discovery = clusterv3.Cluster_STRICT_DNS
		}
		lbEndpoints = append(lbEndpoints, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: socketAddress(e.Host, e.Port),
			}},
		})
	}
	c := &clusterv3.Cluster{
		Name:                 b.Name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: discovery},
		ConnectTimeout:       durationpb.New(clusterConnectTimeout),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: b.Name,
			Endpoints:   []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbEndpoints}},
		},
		CircuitBreakers: &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			Priority:   corev3.RoutingPriority_DEFAULT,
			MaxRetries: wrapperspb.UInt32(g.cap.maxRetries),
		}}},
	}
	if discovery == clusterv3.Cluster_STRICT_DNS {
		c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
	}
	return c
}

func socketAddress(host string, port int) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
}

// marshalAny packs m deterministically, so that the bootstrap compares
// equal with its parsed-back copy.
func marshalAny(m proto.Message) (*anypb.Any, error) {
	a := &anypb.Any{}
	if err := anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}); err != nil {
		return nil, fmt.Errorf("packing %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return a, nil
}

// useCluster records that a route sends traffic to b.
func (g *generator) useCluster(b *translate.BackendRef) error {
	if prev, ok := g.clusters[b.Name]; ok {
		if !slices.Equal(prev.Endpoints, b.Endpoints) {
			return fmt.Errorf("backend %s appears with two different endpoint lists", b.Name)
		}
		return nil
	}
	g.clusters[b.Name] = b
	return nil
}

// joinTokens writes a retry_on value.
func joinTokens(tokens []string) string { return strings.Join(tokens, ",") }
