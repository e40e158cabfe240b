package envoy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gwretry/gwretry/translate"
)

// retryMode is which retry policy a route gets.
type retryMode int

const (
	// noRetry: no retry policy (attempts 0, no retry stanza).
	noRetry retryMode = iota
	// safeRetry: retries only a request that was never sent (connection
	// refused or failed, stream refused, reset before the request went
	// out); the policy of POST, PATCH and LOCK without the opt-in.
	safeRetry
	// fullRetry: the rule's codes, resets and per-try timeouts.
	fullRetry
)

// modeFor is the retry mode of a route of r whose match selects method
// ("" for any).
func (g *generator) modeFor(r *translate.Rule, method string) retryMode {
	switch {
	case !retries(r):
		return noRetry
	case !g.retryNonIdempotent && isNonIdempotent(method):
		if len(g.safeTokens(r.Retry)) == 0 {
			// The policy's retry condition retries no failure before
			// the request was sent: nothing to retry safely.
			return noRetry
		}
		return safeRetry
	}
	return fullRetry
}

// twinSuffix names the route for POST, PATCH and LOCK that precedes a
// retrying route whose match accepts any method.
const twinSuffix = "-no-retry"

// routes returns the Envoy routes for one match of a rule, in order. A
// retrying rule whose match accepts any method gets a first route for the
// non-idempotent methods that retries only requests never sent, unless the
// user opted in to retrying them like any other.
func (g *generator) routes(rm *translate.RouteMatch) ([]*routev3.Route, error) {
	r := rm.Rule
	if r == nil {
		return nil, fmt.Errorf("a route match has no rule")
	}
	if rd := r.Filters.Redirect; !r.Forwards() && rd != nil {
		g.placed[r.Name] = true
		// A redirect rule: every request it matches, of any method, is
		// answered with the redirect.
		ra, strip, err := redirectAction(rd, rm.Match, g.side)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.Name, err)
		}
		g.stripHostPort = g.stripHostPort || strip
		rt := &routev3.Route{Name: r.Name, Match: buildMatch(rm.Match), Action: &routev3.Route_Redirect{Redirect: ra}}
		applyHeaderFilters(rt, &r.Filters)
		return []*routev3.Route{rt}, nil
	}
	action, err := g.action(r)
	if err != nil {
		return nil, fmt.Errorf("rule %s: %w", r.Name, err)
	}
	g.placed[r.Name] = true
	if action.directStatus != 0 {
		// A dead rule: every request it matches, of any method, is
		// answered here.
		return []*routev3.Route{{Name: r.Name, Match: buildMatch(rm.Match), Action: &routev3.Route_DirectResponse{
			DirectResponse: &routev3.DirectResponseAction{Status: action.directStatus},
		}}}, nil
	}
	if action.invalidShare {
		g.invalidShareUsed = true
	}
	mode := g.modeFor(r, rm.Match.Method)
	var out []*routev3.Route
	if mode == fullRetry && !g.retryNonIdempotent && rm.Match.Method == "" {
		m := buildMatch(rm.Match)
		m.Headers = append(m.Headers, &routev3.HeaderMatcher{
			Name: ":method",
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{
					Regex: strings.Join(nonIdempotentMethods(), "|"),
				}},
			}},
		})
		twin, err := g.route(r.Name+twinSuffix, m, rm.Match, action, r, g.modeFor(r, nonIdempotentMethods()[0]))
		if err != nil {
			return nil, err
		}
		out = append(out, twin)
	}
	primary, err := g.route(r.Name, buildMatch(rm.Match), rm.Match, action, r, mode)
	if err != nil {
		return nil, err
	}
	return append(out, primary), nil
}

// retries reports whether the rule asks for at least one retry.
func retries(r *translate.Rule) bool { return r.Retry != nil && r.Retry.Attempts > 0 }

// route builds one proxying route for match mt (m is its Envoy match);
// action is a template whose timeouts, retry policy and filters are filled
// in here.
func (g *generator) route(name string, m *routev3.RouteMatch, mt translate.Match, action routeAction, r *translate.Rule, mode retryMode) (*routev3.Route, error) {
	ra := &routev3.RouteAction{}
	action.clusterSpecifier(ra)
	if err := applyRewrite(ra, r.Filters.Rewrite, mt); err != nil {
		return nil, fmt.Errorf("rule %s: %w", r.Name, err)
	}
	mirrors, err := g.mirrorPolicies(r.Filters.Mirrors)
	if err != nil {
		return nil, err
	}
	ra.RequestMirrorPolicies = mirrors
	if action.invalidShare {
		ra.ClusterNotFoundResponseCode = routev3.RouteAction_INTERNAL_SERVER_ERROR
	}
	p := g.plan(r, mode != noRetry)
	if p.timeout != nil {
		ra.Timeout = durationpb.New(*p.timeout)
		if *p.timeout == 0 || *p.timeout > g.cap.streamIdleTimeout {
			// The connection manager's stream idle timeout would
			// otherwise end a quiet request first.
			ra.IdleTimeout = durationpb.New(*p.timeout)
		}
	}
	if err := g.ruleConn(ra, r); err != nil {
		return nil, err
	}
	rt := &routev3.Route{Name: name, Match: m, Action: &routev3.Route_Route{Route: ra}}
	applyHeaderFilters(rt, &r.Filters)
	if mode != noRetry {
		rp, err := g.retryPolicy(r, p, mode)
		if err != nil {
			return nil, err
		}
		ra.RetryPolicy = rp
		// Explicit, so that the file says which bodies are retried.
		rt.PerRequestBufferLimitBytes = wrapperspb.UInt32(g.cap.retryBufferLimit) //nolint:staticcheck // the field every Envoy 1.x reads
	}
	return rt, nil
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

// numRetries is num_retries for attempts, clamped to what Envoy accepts.
func (g *generator) numRetries(attempts int) uint32 {
	if attempts < 0 {
		return 0
	}
	if uint64(attempts) > uint64(g.cap.maxNumRetries) {
		return g.cap.maxNumRetries
	}
	return uint32(attempts)
}

// retryPolicy builds the policy of a retrying route.
func (g *generator) retryPolicy(r *translate.Rule, p plan, mode retryMode) (*routev3.RetryPolicy, error) {
	rt := r.Retry
	tokens := g.fullTokens(rt)
	if mode == safeRetry {
		tokens = g.safeTokens(rt)
	}
	var codes []uint32
	switch {
	case mode != fullRetry:
	case rt.On != nil:
		// A BackendTrafficPolicy's retry: its codes as Envoy Gateway
		// writes them, listed even without retriable-status-codes.
		codes = []uint32{}
		for _, c := range rt.On.StatusCodes {
			codes = append(codes, uint32(c))
		}
	default:
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
		NumRetries:           wrapperspb.UInt32(g.numRetries(rt.Attempts)),
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
		if rt.On != nil && rt.On.MaxInterval != nil {
			// The policy's maxInterval, as Envoy Gateway writes it.
			rp.RetryBackOff.MaxInterval = durationpb.New(rt.On.MaxInterval.Value)
		}
	}
	return rp, nil
}

// fullTokens are the retry_on tokens of a rule's retrying route: those of
// a BackendTrafficPolicy's retry as Envoy Gateway writes them, else the
// Gateway API's retry (every connection failure and reset, a try the
// per-try timeout cut, with the status codes token when it lists codes).
func (g *generator) fullTokens(rt *translate.Retry) []string {
	if rt.On != nil {
		return slices.Clone(rt.On.Triggers)
	}
	tokens := slices.Clone(g.cap.retryOn)
	if len(rt.Codes) > 0 {
		tokens = append(tokens, g.cap.statusCodesToken)
	}
	return tokens
}

// safeTokens are the retry_on tokens of the route for POST, PATCH and
// LOCK: failures before the request was sent, as far as the rule's retry
// retries them (a BackendTrafficPolicy's triggers may name fewer, or none).
func (g *generator) safeTokens(rt *translate.Retry) []string {
	if rt == nil || rt.On == nil || rt.On.ConnErrors == translate.ConnRetryAll {
		return slices.Clone(g.cap.safeRetryOn)
	}
	var out []string
	for _, t := range rt.On.Triggers {
		if slices.Contains(g.cap.safeRetryOn, t) {
			out = append(out, t)
		}
	}
	return out
}

// backoffBase is the base_interval for a backoff: Envoy requires it to be
// positive, so "0s" (no wait) becomes 1 ms, Envoy's own floor.
func backoffBase(d *translate.Duration) time.Duration {
	return max(d.Value, time.Millisecond)
}

// invalidCluster is the weighted-cluster entry that carries the share of a
// rule's invalid backendRefs. No cluster has this name (the ':' is outside
// the names gwretry allows), so Envoy answers the requests it draws with the
// route's cluster_not_found_response_code, 500.
const invalidCluster = "gwretry:invalid-backendRefs"

// routeAction is where a rule's traffic goes: weighted clusters, or a
// direct response when no backend can receive traffic.
type routeAction struct {
	backends     []weightedCluster
	directStatus uint32
	// invalidShare: one entry of backends is invalidCluster.
	invalidShare bool
}

type weightedCluster struct {
	name   string
	weight uint32
}

// action resolves a rule's backends. Backends with weight 0 get no traffic;
// the same backend listed twice gets the sum of its weights. A dead rule
// (no usable backend) is answered 500, as the Gateway API asks; the share
// of invalid backendRefs beside valid ones goes to invalidCluster, which
// answers 500 too.
func (g *generator) action(r *translate.Rule) (routeAction, error) {
	var a routeAction
	if !r.Forwards() {
		a.directStatus = 500
		return a, nil
	}
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
	if w := r.InvalidWeight(); w > 0 {
		a.backends = append(a.backends, weightedCluster{name: invalidCluster, weight: uint32(w)})
		a.invalidShare = true
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
