//gwretry:format
package envoy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

// The reader of a generated envoy.yaml: the one way gwretry reads an Envoy
// bootstrap back, used by this target's judge (Observe) and by `gwretry
// prove`'s check of the configuration without a binary (package prove).
// It reads the file, never the planner.

// ReadBootstrap reads envoy.yaml strictly (duplicate keys and unknown
// fields are errors) into a bootstrap and runs go-control-plane's
// validation over it and over every typed config packed inside it.
func ReadBootstrap(data []byte) (*bootstrapv3.Bootstrap, error) {
	bs, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", OutputPath, err)
	}
	if err := validate(bs); err != nil {
		return nil, fmt.Errorf("%s fails validation: %w", OutputPath, err)
	}
	return bs, nil
}

// Clusters returns the bootstrap's static clusters by name.
func Clusters(bs *bootstrapv3.Bootstrap) map[string]*clusterv3.Cluster {
	out := map[string]*clusterv3.Cluster{}
	for _, c := range bs.GetStaticResources().GetClusters() {
		out[c.GetName()] = c
	}
	return out
}

// RequestRoute is where a bootstrap sends one request: the first route
// that matches it (as Envoy picks), with what surrounds it.
type RequestRoute struct {
	Route       *routev3.Route
	VirtualHost *routev3.VirtualHost
	Table       *routev3.RouteConfiguration
	Manager     *hcmv3.HttpConnectionManager
	Listener    *listenerv3.Listener
	// Clusters are the clusters the route sends to (none for a
	// direct_response route).
	Clusters []*clusterv3.Cluster
	// Missing are weighted_clusters entries that name no cluster: Envoy
	// answers their share with cluster_not_found_response_code.
	Missing []string
}

// FindRoute returns where a request with this path and method, and a Host
// that only a catch-all ("*") virtual host takes, goes: the listeners'
// filter chains in order, their connection managers' inline route tables,
// the first matching route of a virtual host with domain "*". A route
// that proxies must name clusters that exist, except weighted entries
// answered by cluster_not_found_response_code 500 in a table that Envoy
// loads (validate_clusters false); anything else is an error, as is a
// match gwretry does not write (query, grpc, runtime, other headers than
// :method).
func FindRoute(bs *bootstrapv3.Bootstrap, path, method string) (*RequestRoute, error) {
	res := regexps{}
	clusters := Clusters(bs)
	for _, l := range bs.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				m, err := f.GetTypedConfig().UnmarshalNew()
				if err != nil {
					return nil, err
				}
				hcm, ok := m.(*hcmv3.HttpConnectionManager)
				if !ok {
					continue
				}
				for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
					if !slices.Contains(vh.GetDomains(), "*") {
						continue
					}
					for _, r := range vh.GetRoutes() {
						ok, err := routeMatches(r.GetMatch(), path, method, res)
						if err != nil {
							return nil, fmt.Errorf("route %s: %w", r.GetName(), err)
						}
						if ok {
							t := &RequestRoute{Route: r, VirtualHost: vh, Table: hcm.GetRouteConfig(), Manager: hcm, Listener: l}
							return t, t.resolve(clusters)
						}
					}
				}
			}
		}
	}
	return nil, fmt.Errorf("no route for %s %s", method, path)
}

// resolve finds the clusters of the route.
func (t *RequestRoute) resolve(clusters map[string]*clusterv3.Cluster) error {
	r := t.Route
	switch a := r.GetAction().(type) {
	case *routev3.Route_DirectResponse:
		return nil
	case *routev3.Route_Route:
		var names []string
		switch cs := a.Route.GetClusterSpecifier().(type) {
		case *routev3.RouteAction_Cluster:
			names = []string{cs.Cluster}
		case *routev3.RouteAction_WeightedClusters:
			for _, w := range cs.WeightedClusters.GetClusters() {
				if w.GetWeight().GetValue() > 0 {
					names = append(names, w.GetName())
				}
			}
		default:
			return fmt.Errorf("route %s: unsupported cluster specifier %T", r.GetName(), cs)
		}
		for _, n := range names {
			if c := clusters[n]; c != nil {
				t.Clusters = append(t.Clusters, c)
			} else {
				t.Missing = append(t.Missing, n)
			}
		}
		switch {
		case len(t.Missing) == 0:
		case a.Route.GetClusterNotFoundResponseCode() != routev3.RouteAction_INTERNAL_SERVER_ERROR:
			return fmt.Errorf("route %s: no cluster %q, and cluster_not_found_response_code is %s (not 500)", r.GetName(), t.Missing, a.Route.GetClusterNotFoundResponseCode())
		case t.Table.GetValidateClusters() == nil || t.Table.GetValidateClusters().GetValue():
			return fmt.Errorf("route %s: no cluster %q, and route table %s validates clusters (Envoy would refuse to load it)", r.GetName(), t.Missing, t.Table.GetName())
		}
		if len(t.Clusters) == 0 {
			return fmt.Errorf("route %s: no cluster of %q exists", r.GetName(), names)
		}
		return nil
	}
	return fmt.Errorf("route %s: unsupported action %T", r.GetName(), r.GetAction())
}

// routeMatches evaluates the subset of route matching that gwretry
// generates; anything else is an error rather than a guess. Headers are
// evaluated as the judge evaluates them (headerMatches).
func routeMatches(m *routev3.RouteMatch, path, method string, res regexps) (bool, error) {
	if len(m.GetQueryParameters()) > 0 || m.GetGrpc() != nil || m.GetRuntimeFraction() != nil {
		return false, errors.New("unsupported match (query, grpc or runtime)")
	}
	var ok bool
	switch p := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		ok = strings.HasPrefix(path, p.Prefix)
	case *routev3.RouteMatch_Path:
		ok = path == p.Path
	case *routev3.RouteMatch_PathSeparatedPrefix:
		ok = path == p.PathSeparatedPrefix || strings.HasPrefix(path, strings.TrimSuffix(p.PathSeparatedPrefix, "/")+"/")
	case *routev3.RouteMatch_SafeRegex:
		re, err := res.whole(p.SafeRegex.GetRegex())
		if err != nil {
			return false, err
		}
		ok = re.MatchString(path)
	default:
		return false, fmt.Errorf("unsupported path match %T", p)
	}
	for _, h := range m.GetHeaders() {
		if h.GetName() != ":method" {
			return false, fmt.Errorf("unsupported header match on %s", h.GetName())
		}
		hit, err := headerMatches(h, method, res)
		if err != nil {
			return false, err
		}
		ok = ok && hit
	}
	return ok, nil
}
