package envoy

import (
	"fmt"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gwretry/gwretry/translate"
)

// routes returns the Envoy routes for one match of a rule, in order. A
// retrying rule whose match accepts any method gets a first route for the
// non-idempotent methods without retries, unless the user opted in to
// retrying them.
func (g *generator) routes(rm *translate.RouteMatch) ([]*routev3.Route, error) {
	r := rm.Rule
	if r == nil {
		return nil, fmt.Errorf("a route match has no rule")
	}
	action, err := g.action(r)
	if err != nil {
		return nil, fmt.Errorf("rule %s: %w", r.Name, err)
	}
	retrying := retries(r)
	if retrying && !g.retryNonIdempotent && isNonIdempotent(rm.Match.Method) {
		retrying = false
	}
	var out []*routev3.Route
	if retrying && !g.retryNonIdempotent && rm.Match.Method == "" {
		m := buildMatch(rm.Match)
		m.Headers = append(m.Headers, &routev3.HeaderMatcher{
			Name: ":method",
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{
					Regex: strings.Join(nonIdempotentMethods(), "|"),
				}},
			}},
		})
		twin, err := g.route(r.Name+"-no-retry", m, action, r, false)
		if err != nil {
			return nil, err
		}
		out = append(out, twin)
	}
	primary, err := g.route(r.Name, buildMatch(rm.Match), action, r, retrying)
	if err != nil {
		return nil, err
	}
	return append(out, primary), nil
}

// retries reports whether the rule asks for at least one retry.
func retries(r *translate.Rule) bool { return r.Retry != nil && r.Retry.Attempts > 0 }

// route builds one route; action is a template whose timeouts and retry
// policy are filled in here.
func (g *generator) route(name string, m *routev3.RouteMatch, action routeAction, r *translate.Rule, retrying bool) (*routev3.Route, error) {
	if action.directStatus != 0 {
		return &routev3.Route{Name: name, Match: m, Action: &routev3.Route_DirectResponse{
			DirectResponse: &routev3.DirectResponseAction{Status: action.directStatus},
		}}, nil
	}
	ra := &routev3.RouteAction{}
	action.clusterSpecifier(ra)
	p := g.plan(r, retrying)
	if p.timeout != nil {
		ra.Timeout = durationpb.New(*p.timeout)
		if *p.timeout == 0 || *p.timeout > g.cap.streamIdleTimeout {
			// The connection manager's stream idle timeout would
			// otherwise end a quiet request first.
			ra.IdleTimeout = durationpb.New(*p.timeout)
		}
	}
	if retrying {
		rp, err := g.retryPolicy(r, p)
		if err != nil {
			return nil, err
		}
		ra.RetryPolicy = rp
	}
	return &routev3.Route{Name: name, Match: m, Action: &routev3.Route_Route{Route: ra}}, nil
}

// plan is how a route carries out a rule's timeouts.
type plan struct {
	// timeout is the route timeout; nil keeps Envoy's default.
	timeout *time.Duration
	// perTry is the retry policy's per_try_timeout; nil leaves it unset.
	perTry *time.Duration
}

// plan maps the rule's timeouts. With retries, request is the route timeout
// (all tries) and backendRequest the per-try timeout. With a single try,
// the route timeout is the shorter of the two (trap 8: backendRequest alone
// becomes the route timeout). backendRequest "0s" without request disables
// the route timeout, since Envoy's 15 s default would otherwise still cut
// the try.
func (g *generator) plan(r *translate.Rule, retrying bool) plan {
	req, be := r.Timeouts.Request, r.Timeouts.BackendRequest
	var p plan
	if retrying {
		if be != nil && !be.IsZero() {
			p.perTry = ptr(be.Value)
		}
		switch {
		case req != nil:
			p.timeout = ptr(req.Value)
		case be.IsZero():
			p.timeout = ptr(time.Duration(0))
		}
		return p
	}
	switch {
	case req != nil && be != nil:
		switch {
		case req.IsZero():
			p.timeout = ptr(be.Value)
		case be.IsZero():
			p.timeout = ptr(req.Value)
		default:
			p.timeout = ptr(min(req.Value, be.Value))
		}
	case req != nil:
		p.timeout = ptr(req.Value)
	case be != nil:
		p.timeout = ptr(be.Value)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// retryPolicy builds the policy of a retrying route.
func (g *generator) retryPolicy(r *translate.Rule, p plan) (*routev3.RetryPolicy, error) {
	rt := r.Retry
	tokens := append([]string(nil), g.cap.retryOn...)
	var codes []uint32
	if len(rt.Codes) > 0 {
		tokens = append(tokens, g.cap.statusCodesToken)
		for _, c := range rt.Codes {
			codes = append(codes, uint32(c))
		}
	}
	predicate, err := marshalAny(&previoushostsv3.PreviousHostsPredicate{})
	if err != nil {
		return nil, err
	}
	rp := &routev3.RetryPolicy{
		RetryOn:              joinTokens(tokens),
		NumRetries:           wrapperspb.UInt32(uint32(rt.Attempts)),
		RetriableStatusCodes: codes,
		RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{
			Name:       previousHostsName,
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: predicate},
		}},
		HostSelectionRetryMaxAttempts: g.cap.hostSelectionRetryMaxAttempts,
	}
	if p.perTry != nil {
		rp.PerTryTimeout = durationpb.New(*p.perTry)
	}
	if rt.Backoff != nil {
		rp.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(backoffBase(rt.Backoff))}
	}
	return rp, nil
}

// backoffBase is the base_interval for a backoff: Envoy requires it to be
// positive, so "0s" (no wait) becomes 1 ms, Envoy's own floor.
func backoffBase(d *translate.Duration) time.Duration {
	return max(d.Value, time.Millisecond)
}

// routeAction is where a rule's traffic goes: weighted clusters, or a
// direct response when every backend has weight 0.
type routeAction struct {
	backends     []weightedCluster
	directStatus uint32
}

type weightedCluster struct {
	name   string
	weight uint32
}

// action resolves a rule's backends. Backends with weight 0 get no traffic;
// the same backend listed twice gets the sum of its weights. When no weight
// is positive the Gateway API asks for a 500 answer.
func (g *generator) action(r *translate.Rule) (routeAction, error) {
	var a routeAction
	index := map[string]int{}
	for _, b := range r.Backends {
		if b.Weight < 0 {
			return a, fmt.Errorf("backend %s has negative weight %d", b.Name, b.Weight)
		}
		if b.Weight == 0 {
			continue
		}
		if err := g.useCluster(b); err != nil {
			return a, err
		}
		if i, ok := index[b.Name]; ok {
			a.backends[i].weight += uint32(b.Weight)
			continue
		}
		index[b.Name] = len(a.backends)
		a.backends = append(a.backends, weightedCluster{name: b.Name, weight: uint32(b.Weight)})
	}
	if len(a.backends) == 0 {
		a.directStatus = 500
	}
	return a, nil
}

// clusterSpecifier writes the action into ra: one cluster, or weighted
// clusters in the rule's order.
func (a routeAction) clusterSpecifier(ra *routev3.RouteAction) {
	if len(a.backends) == 1 {
		ra.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: a.backends[0].name}
		return
	}
	wc := &routev3.WeightedCluster{}
	for _, b := range a.backends {
		wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{Name: b.name, Weight: wrapperspb.UInt32(b.weight)})
	}
	ra.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}
}
