package envoy

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/gwretry/gwretry/translate"
)

// Observe implements translate.Judge: it reads envoy/envoy.yaml back into
// the bootstrap proto and says, for every rule and method class, what
// Envoy does with the rule's requests. It knows Envoy's semantics, not
// gwretry's plan: route names tie routes to rules (the rule's name, or the
// name and "-no-retry" for the POST/PATCH/LOCK route), the :method header
// matchers decide which method class a route serves, and the behaviour
// comes from the route's fields and Envoy's defaults.
func (*Backend) Observe(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	c, err := lookup(opts.Version)
	if err != nil {
		return nil, err
	}
	// Generate's parse-back equals the bootstrap it validated before
	// writing it; a file decoded here is validated here (ReadBootstrap).
	bs, err := translate.FileParsed(files, OutputPath, ReadBootstrap)
	if err != nil {
		return nil, err
	}
	j := &judge{cap: c, clusters: Clusters(bs), rules: map[string]*translate.Rule{},
		backends: map[string]*translate.BackendRef{}, matches: map[string][]translate.Match{},
		out: map[string]map[translate.MethodClass]translate.Behaviour{}, regexps: regexps{}}
	for _, r := range m.Rules {
		j.rules[r.Name] = r
		for _, b := range r.Backends {
			j.backends[b.Name] = b
		}
		for _, mi := range r.Filters.Mirrors {
			if mi.Backend != nil {
				j.backends[mi.Backend.Name] = mi.Backend
			}
		}
	}
	// The rule's own matches (as the model places them), for the prefix
	// that ReplacePrefixMatch replaces.
	seen := map[string]bool{}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				if rm.Rule == nil {
					continue
				}
				k := rm.Rule.Name + "\x00" + fmt.Sprintf("%+v", rm.Match)
				if !seen[k] {
					seen[k] = true
					j.matches[rm.Rule.Name] = append(j.matches[rm.Rule.Name], rm.Match)
				}
			}
		}
	}
	if err := checkTLS(m, bs); err != nil {
		return nil, err
	}
	for _, l := range bs.GetStaticResources().GetListeners() {
		if err := j.listener(l); err != nil {
			return nil, fmt.Errorf("listener %s: %w", l.GetName(), err)
		}
	}
	if err := j.observeTLS(bs); err != nil {
		return nil, err
	}
	return j.out, nil
}

// judge walks one bootstrap.
type judge struct {
	cap      capability
	clusters map[string]*clusterv3.Cluster
	rules    map[string]*translate.Rule
	// backends are the model's backends (of rules and mirrors) by name.
	backends map[string]*translate.BackendRef
	// matches are each rule's distinct matches.
	matches map[string][]translate.Match
	out     map[string]map[translate.MethodClass]translate.Behaviour
	// regexps are the :method header regexes compiled so far: every route
	// of a rule repeats the same few.
	regexps regexps
}

// regexps compiles each anchored header regex once.
type regexps map[string]*regexp.Regexp

// whole returns the regexp that matches a whole value with the RE2
// pattern p, as Envoy's safe_regex does.
func (rs regexps) whole(p string) (*regexp.Regexp, error) {
	if re, ok := rs[p]; ok {
		return re, nil
	}
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, err
	}
	rs[p] = re
	return re, nil
}

// routeEnv is what a route inherits from its listener, connection manager,
// route table and virtual host.
type routeEnv struct {
	connectionBufferLimit uint64
	streamIdle            time.Duration // 0: off
	validateClusters      bool
	vh                    *routev3.VirtualHost
	rc                    *routev3.RouteConfiguration
	// port is the listener's port; stripAnyHostPort: the connection
	// manager drops the port of every Host header.
	port             int
	stripAnyHostPort bool
	// tls: the filter chain terminates TLS, so requests have scheme https.
	tls bool
}

func (j *judge) listener(l *listenerv3.Listener) error {
	env := routeEnv{connectionBufferLimit: uint64(j.cap.connectionBufferLimit),
		port: int(l.GetAddress().GetSocketAddress().GetPortValue())}
	if v := l.GetPerConnectionBufferLimitBytes(); v != nil {
		env.connectionBufferLimit = uint64(v.GetValue())
	}
	for _, fc := range chainsOf(l) {
		env.tls = fc.GetTransportSocket() != nil
		if env.tls {
			if _, err := chainCertificate(fc); err != nil {
				return fmt.Errorf("filter chain %s: %w", fc.GetName(), err)
			}
		}
		for _, f := range fc.GetFilters() {
			if f.GetTypedConfig().GetTypeUrl() != hcmTypeURL {
				continue
			}
			// The virtual hosts are unpacked one at a time: a
			// listener's connection manager can hold every route of
			// its port (issue 22).
			rest, vhosts, err := splitVirtualHosts(f.GetTypedConfig().GetValue())
			if err != nil {
				return fmt.Errorf("filter %s: %w", f.GetName(), err)
			}
			hcm := &hcmv3.HttpConnectionManager{}
			if err := proto.Unmarshal(rest, hcm); err != nil {
				return fmt.Errorf("filter %s: %w", f.GetName(), err)
			}
			rc := hcm.GetRouteConfig()
			if rc == nil {
				return errors.New("the connection manager has no inline route_config")
			}
			env.streamIdle = j.cap.streamIdleTimeout
			if d := hcm.GetStreamIdleTimeout(); d != nil {
				env.streamIdle = d.AsDuration()
			}
			// Static route tables check their cluster names unless told
			// not to.
			env.validateClusters = rc.GetValidateClusters() == nil || rc.GetValidateClusters().GetValue()
			env.rc = rc
			env.stripAnyHostPort = hcm.GetStripAnyHostPort()
			for _, b := range vhosts {
				vh := &routev3.VirtualHost{}
				if err := proto.Unmarshal(b, vh); err != nil {
					return fmt.Errorf("filter %s: %w", f.GetName(), err)
				}
				env.vh = vh
				if err := j.virtualHost(env); err != nil {
					return fmt.Errorf("virtual host %s: %w", vh.GetName(), err)
				}
			}
		}
	}
	return nil
}

// probeMethods are the methods whose routing decides which class a route
// serves; the rule's own methods and every exact :method value are added.
var probeMethods = []string{"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE", "CONNECT", "POST", "PATCH", "LOCK"}

// virtualHost derives the behaviour of every route in a virtual host. A
// route serves a method class when it accepts some method of the class
// that no earlier route of the same rule with the same match (but for
// :method) already took.
func (j *judge) virtualHost(env routeEnv) error {
	// earlier holds, by rule and match without methods, the methods that
	// routes before this one already take: a map, so that a virtual host
	// of n routes is judged in linear time.
	earlier := map[string]map[string]bool{}
	for _, rt := range env.vh.GetRoutes() {
		if rt.GetName() == misdirectedRoute {
			// Serves no rule: checkTLS reads it back.
			continue
		}
		r, err := j.ruleOf(rt.GetName())
		if err != nil {
			return err
		}
		key, methods, err := methodsOf(rt.GetMatch(), r, j.regexps)
		if err != nil {
			return fmt.Errorf("route %s: %w", rt.GetName(), err)
		}
		var reach []string
		k := r.Name + "\x00" + key
		taken := earlier[k]
		for _, meth := range methods {
			if !taken[meth] {
				reach = append(reach, meth)
			}
		}
		if taken == nil {
			taken = map[string]bool{}
			earlier[k] = taken
		}
		for _, meth := range methods {
			taken[meth] = true
		}
		b, err := j.behaviour(r, rt, env)
		if err != nil {
			return fmt.Errorf("route %s: %w", rt.GetName(), err)
		}
		for _, c := range classesOf(reach) {
			if !slices.Contains(r.MethodClasses(), c) {
				continue
			}
			if j.out[r.Name] == nil {
				j.out[r.Name] = map[translate.MethodClass]translate.Behaviour{}
			}
			if prev, ok := j.out[r.Name][c]; ok && !reflect.DeepEqual(prev, b) {
				return fmt.Errorf("route %s configures %s requests of rule %s unlike another route of the rule (%+v, %+v)", rt.GetName(), c, r.Name, prev, b)
			}
			j.out[r.Name][c] = b
		}
	}
	return nil
}

// ruleOf maps a route name to its rule: the rule's name, or the name of
// the route for non-idempotent methods.
func (j *judge) ruleOf(name string) (*translate.Rule, error) {
	r, ok := j.rules[name]
	twin, okTwin := j.rules[strings.TrimSuffix(name, twinSuffix)]
	okTwin = okTwin && strings.HasSuffix(name, twinSuffix)
	switch {
	case ok && okTwin:
		return nil, fmt.Errorf("route name %q is ambiguous: two rules could own it", name)
	case ok:
		return r, nil
	case okTwin:
		return twin, nil
	}
	return nil, fmt.Errorf("route %q belongs to no rule", name)
}

// classesOf returns the method classes of methods.
func classesOf(methods []string) []translate.MethodClass {
	var out []translate.MethodClass
	if slices.ContainsFunc(methods, func(m string) bool { return !translate.IsNonIdempotent(m) }) {
		out = append(out, translate.Idempotent)
	}
	if slices.ContainsFunc(methods, translate.IsNonIdempotent) {
		out = append(out, translate.NonIdempotent)
	}
	return out
}

// methodsOf returns the route's match without its :method headers (as a
// comparable key) and the probe methods it accepts.
func methodsOf(m *routev3.RouteMatch, r *translate.Rule, res regexps) (string, []string, error) {
	rest := proto.Clone(m).(*routev3.RouteMatch)
	rest.Headers = nil
	var method []*routev3.HeaderMatcher
	for _, h := range m.GetHeaders() {
		if h.GetName() == ":method" {
			method = append(method, h)
		} else {
			rest.Headers = append(rest.Headers, h)
		}
	}
	key, err := proto.MarshalOptions{Deterministic: true}.Marshal(rest)
	if err != nil {
		return "", nil, err
	}
	probes := slices.Clone(probeMethods)
	probes = append(probes, r.Methods...)
	for _, h := range method {
		if e := h.GetStringMatch().GetExact(); e != "" {
			probes = append(probes, e)
		}
	}
	slices.Sort(probes)
	probes = slices.Compact(probes)
	var accepted []string
	for _, p := range probes {
		ok := true
		for _, h := range method {
			hit, err := headerMatches(h, p, res)
			if err != nil {
				return "", nil, err
			}
			ok = ok && hit
		}
		if ok {
			accepted = append(accepted, p)
		}
	}
	return string(key), accepted, nil
}

// headerMatches evaluates a header matcher on a present header value, as
// Envoy does for the kinds gwretry can meet; others are an error.
func headerMatches(h *routev3.HeaderMatcher, v string, res regexps) (bool, error) {
	var hit bool
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case *routev3.HeaderMatcher_StringMatch:
		sm := s.StringMatch
		if sm.GetIgnoreCase() {
			return false, fmt.Errorf("header %s: ignore_case is not evaluated", h.GetName())
		}
		switch p := sm.GetMatchPattern().(type) {
		case *matcherv3.StringMatcher_Exact:
			hit = v == p.Exact
		case *matcherv3.StringMatcher_SafeRegex:
			// RE2 in Envoy and in Go; Envoy matches the whole value.
			re, err := res.whole(p.SafeRegex.GetRegex())
			if err != nil {
				return false, fmt.Errorf("header %s: %w", h.GetName(), err)
			}
			hit = re.MatchString(v)
		case *matcherv3.StringMatcher_Prefix:
			hit = strings.HasPrefix(v, p.Prefix)
		default:
			return false, fmt.Errorf("header %s: string match %T is not evaluated", h.GetName(), p)
		}
	case *routev3.HeaderMatcher_PresentMatch:
		hit = s.PresentMatch
	default:
		return false, fmt.Errorf("header %s: match %T is not evaluated", h.GetName(), s)
	}
	return hit != h.GetInvertMatch(), nil
}

// clusterNotFoundStatus is the status Envoy answers for a cluster it does
// not have.
func clusterNotFoundStatus(c routev3.RouteAction_ClusterNotFoundResponseCode) int {
	switch c {
	case routev3.RouteAction_NOT_FOUND:
		return 404
	case routev3.RouteAction_INTERNAL_SERVER_ERROR:
		return 500
	}
	return 503
}

// retry_on tokens by what they retry (Envoy's retry_state_impl.cc).
var (
	// resetTokens retry every reset, after the request was sent too, and a
	// try cut by per_try_timeout.
	resetTokens = []string{"reset", "5xx", "gateway-error"}
	// unsentTokens retry only failures before the request was sent.
	unsentTokens = []string{"connect-failure", "refused-stream", "reset-before-request"}
	// codeTokens retry responses.
	codeTokens = []string{"retriable-status-codes", "retriable-4xx", "retriable-headers", "envoy-ratelimited"}
	// grpcTokens retry a gRPC status (grpc-status of the response).
	grpcTokens = []string{"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}
)

// behaviour derives what Envoy does with one route's requests.
func (j *judge) behaviour(r *translate.Rule, rt *routev3.Route, env routeEnv) (translate.Behaviour, error) {
	var b translate.Behaviour
	fl, err := j.readFilters(r, rt, env)
	if err != nil {
		return b, err
	}
	b.Filters = fl
	if rd := rt.GetRedirect(); rd != nil {
		b.Answer = b.Filters.Redirect.StatusCode
		return b, nil
	}
	if dr := rt.GetDirectResponse(); dr != nil {
		b.Answer = int(dr.GetStatus())
		return b, nil
	}
	ra := rt.GetRoute()
	if ra == nil {
		return b, fmt.Errorf("neither a route nor a direct_response action")
	}

	// Where the traffic goes.
	type entry struct {
		name   string
		weight uint64
	}
	var entries []entry
	switch cs := ra.GetClusterSpecifier().(type) {
	case *routev3.RouteAction_Cluster:
		entries = append(entries, entry{cs.Cluster, 1})
	case *routev3.RouteAction_WeightedClusters:
		for _, w := range cs.WeightedClusters.GetClusters() {
			if w.GetName() == "" {
				return b, fmt.Errorf("a weighted cluster without a name is not evaluated")
			}
			entries = append(entries, entry{w.GetName(), uint64(w.GetWeight().GetValue())})
		}
	default:
		return b, fmt.Errorf("cluster specifier %T is not evaluated", cs)
	}
	var defined, undefined uint64
	for _, e := range entries {
		if j.clusters[e.name] != nil {
			defined += e.weight
			continue
		}
		if env.validateClusters {
			return b, fmt.Errorf("names cluster %q, which does not exist, and the route table has validate_clusters on: Envoy would refuse to load it", e.name)
		}
		undefined += e.weight
	}
	notFound := clusterNotFoundStatus(ra.GetClusterNotFoundResponseCode())
	if defined == 0 {
		b.Answer = notFound
		return b, nil
	}
	var valid uint64
	for _, be := range r.Backends {
		valid += uint64(max(be.Weight, 0))
	}
	switch {
	case undefined == 0:
		b.InvalidShareAnswered = r.InvalidWeight() == 0
	default:
		b.InvalidShareAnswered = notFound == 500 && undefined == uint64(r.InvalidWeight()) && defined == valid
	}

	// Retries. A route's policy replaces the virtual host's.
	policy := ra.GetRetryPolicy()
	if policy == nil {
		policy = env.vh.GetRetryPolicy()
	}
	if ra.GetRetryPolicyTypedConfig() != nil || env.vh.GetRetryPolicyTypedConfig() != nil {
		return b, fmt.Errorf("retry_policy_typed_config is not evaluated")
	}
	var tokens []string
	for _, t := range strings.Split(policy.GetRetryOn(), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	has := func(set []string) bool {
		return slices.ContainsFunc(tokens, func(t string) bool { return slices.Contains(set, t) })
	}
	known := slices.Concat(resetTokens, unsentTokens, codeTokens, grpcTokens)
	if policy != nil && has(known) {
		b.Retries = 1 // Envoy's default num_retries
		if n := policy.GetNumRetries(); n != nil {
			b.Retries = int(n.GetValue())
		}
	}
	b.ConnErrors = translate.ConnRetryNone
	if b.Retries > 0 {
		var codes []int
		if slices.Contains(tokens, "retriable-status-codes") {
			for _, c := range policy.GetRetriableStatusCodes() {
				codes = append(codes, int(c))
			}
		}
		if slices.Contains(tokens, "5xx") {
			for c := 500; c <= 599; c++ {
				codes = append(codes, c)
			}
		}
		if slices.Contains(tokens, "gateway-error") {
			codes = append(codes, 502, 503, 504)
		}
		if slices.Contains(tokens, "retriable-4xx") {
			codes = append(codes, 409)
		}
		slices.Sort(codes)
		b.Codes = slices.Compact(codes)
		switch {
		case has(resetTokens):
			b.ConnErrors = translate.ConnRetryAll
		case has(unsentTokens):
			b.ConnErrors = translate.ConnRetryUnsent
		}
		// Envoy stops retrying a request whose body outgrows the buffer.
		b.MaxRetriedBody = int64(j.bufferLimit(rt, env))
	}
	// Back-off is random in [0, interval), the interval doubling from
	// base_interval (25ms by default) up to max_interval (10× the base by
	// default): no pause is guaranteed.
	if b.Retries > 0 {
		base, most := 25*time.Millisecond, time.Duration(0)
		if bo := policy.GetRetryBackOff(); bo != nil {
			if d := bo.GetBaseInterval(); d != nil {
				base = d.AsDuration()
			}
			if d := bo.GetMaxInterval(); d != nil {
				most = d.AsDuration()
			}
		}
		if most == 0 {
			most = 10 * base
		}
		b.Backoff = translate.Backoff{Base: min(base, most), Multiplier: 2, Max: most, JitterMin: 0, JitterMax: 1}
		b.RetriesSource = fmt.Sprintf("num_retries %d", b.Retries)
	}
	b.MinGap = b.Backoff.MinGap(b.Retries)

	// Timers.
	route := translate.Timer{Kind: translate.TimerTotal, Value: j.cap.defaultRouteTimeout}
	if d := ra.GetTimeout(); d != nil {
		route = totalOrNone(d)
	}
	idle := env.streamIdle
	if d := ra.GetIdleTimeout(); d != nil {
		idle = d.AsDuration()
	}
	b.RequestTimeout = withIdle(route, idle)
	perTry := policy.GetPerTryTimeout()
	switch {
	case policy != nil && perTry != nil && perTry.AsDuration() > 0:
		// Envoy ignores per_try_timeout once the response headers went
		// downstream (UpstreamRequest::onPerTryTimeout): it bounds the
		// wait for the headers, not the whole response.
		t := translate.Timer{Kind: translate.TimerHeaders, Value: perTry.AsDuration()}
		if route.Kind == translate.TimerTotal && route.Value < t.Value {
			t = route // the route timeout ends the try first
		}
		b.TryTimeout = withIdle(t, idle)
		b.TimeoutRetried = b.Retries > 0 && has(resetTokens)
	case b.Retries == 0:
		// A single try ends with the request: one timer cuts both. It is
		// the request's alone when it is exactly the rule's request
		// timeout and backendRequest asks for none, and the try's alone
		// when it is exactly backendRequest and request asks for none.
		b.TryTimeout = b.RequestTimeout
		req, be := r.Timeouts.Request, r.Timeouts.BackendRequest
		is := func(d *translate.Duration) bool {
			return d != nil && !d.IsZero() && b.RequestTimeout == (translate.Timer{Kind: translate.TimerTotal, Value: d.Value})
		}
		switch {
		case (be == nil || be.IsZero()) && is(req):
			b.TryTimeout = translate.Timer{Kind: translate.TimerNone}
		case req.IsZero() && is(be):
			b.RequestTimeout = translate.Timer{Kind: translate.TimerNone}
		}
	default:
		// Retried tries without per_try_timeout are cut only by the
		// request's timer.
		b.TryTimeout = translate.Timer{Kind: translate.TimerNone}
	}
	switch {
	case b.TryTimeout.Kind == translate.TimerTotal || b.RequestTimeout.Kind == translate.TimerTotal,
		b.TryTimeout.Kind == translate.TimerHeaders:
		// Route and per-try timeouts answer 504 while no response
		// headers went downstream; after them the route timeout resets
		// the stream (Filter::onUpstreamAbort), which no status can say.
		b.TimeoutStatus = 504
	case b.TryTimeout.Kind == translate.TimerIdle || b.RequestTimeout.Kind == translate.TimerIdle:
		// The stream idle timeout answers 504 only when the whole
		// request had arrived, 408 while it was still arriving
		// (ActiveStream::onIdleTimeout, Utility::maybeRequestTimeoutCode,
		// envoyproxy/envoy#20026; the proto comment still says 408):
		// not always the Gateway API's 504, so the judge keeps 408.
		b.TimeoutStatus = 408
	}
	return b, nil
}

// bufferLimit is how much request body Envoy buffers for retries on rt
// (request_body_buffer_limit, else the smaller of per_request_buffer_limit_bytes
// and the listener's per_connection_buffer_limit_bytes).
func (j *judge) bufferLimit(rt *routev3.Route, env routeEnv) uint64 {
	if v := rt.GetRequestBodyBufferLimit(); v != nil {
		return v.GetValue()
	}
	if v := env.vh.GetRequestBodyBufferLimit(); v != nil {
		return v.GetValue()
	}
	if v := rt.GetPerRequestBufferLimitBytes(); v != nil { //nolint:staticcheck // read as Envoy does
		return min(uint64(v.GetValue()), env.connectionBufferLimit)
	}
	if v := env.vh.GetPerRequestBufferLimitBytes(); v != nil { //nolint:staticcheck // read as Envoy does
		return min(uint64(v.GetValue()), env.connectionBufferLimit)
	}
	return env.connectionBufferLimit
}

// totalOrNone is a route timeout: 0 disables it.
func totalOrNone(d *durationpb.Duration) translate.Timer {
	if d.AsDuration() == 0 {
		return translate.Timer{Kind: translate.TimerNone}
	}
	return translate.Timer{Kind: translate.TimerTotal, Value: d.AsDuration()}
}

// withIdle is timer t when no idle timer (idle, 0 off) can end a quiet
// stream sooner; otherwise the idle timer.
func withIdle(t translate.Timer, idle time.Duration) translate.Timer {
	if idle > 0 && (t.Kind == translate.TimerNone || t.Value > idle) {
		return translate.Timer{Kind: translate.TimerIdle, Value: idle}
	}
	return t
}

// checkClusterRefs checks that every cluster a route names exists, but for
// invalidCluster, which must not exist and must be answered 500 in a route
// table that Envoy loads without checking names.
func checkClusterRefs(bs *bootstrapv3.Bootstrap) error {
	defined := map[string]bool{}
	for _, c := range bs.GetStaticResources().GetClusters() {
		defined[c.GetName()] = true
	}
	if defined[invalidCluster] {
		return fmt.Errorf("a cluster is named %q", invalidCluster)
	}
	for _, l := range bs.GetStaticResources().GetListeners() {
		for _, fc := range chainsOf(l) {
			for _, f := range fc.GetFilters() {
				msg, err := f.GetTypedConfig().UnmarshalNew()
				if err != nil {
					return err
				}
				hcm, ok := msg.(*hcmv3.HttpConnectionManager)
				if !ok {
					continue
				}
				rc := hcm.GetRouteConfig()
				unchecked := rc.GetValidateClusters() != nil && !rc.GetValidateClusters().GetValue()
				for _, vh := range rc.GetVirtualHosts() {
					for _, rt := range vh.GetRoutes() {
						ra := rt.GetRoute()
						names := []string{}
						if c := ra.GetCluster(); c != "" {
							names = append(names, c)
						}
						for _, w := range ra.GetWeightedClusters().GetClusters() {
							names = append(names, w.GetName())
						}
						for _, mp := range ra.GetRequestMirrorPolicies() {
							if !defined[mp.GetCluster()] {
								return fmt.Errorf("route %s mirrors to cluster %q, which does not exist", rt.GetName(), mp.GetCluster())
							}
						}
						for _, n := range names {
							switch {
							case defined[n]:
							case n != invalidCluster:
								return fmt.Errorf("route %s names cluster %q, which does not exist", rt.GetName(), n)
							case !unchecked || ra.GetClusterNotFoundResponseCode() != routev3.RouteAction_INTERNAL_SERVER_ERROR:
								return fmt.Errorf("route %s: the invalid backendRefs' share is not answered 500 in a table Envoy loads", rt.GetName())
							}
						}
					}
				}
			}
		}
	}
	return nil
}

// readBack decodes the generated envoy.yaml strictly (or takes the
// bootstrap Generate decoded from it: translate.FileParsed), with the
// capability row of opts' version.
func readBack(opts translate.Options, files []translate.File) (capability, *bootstrapv3.Bootstrap, error) {
	c, err := lookup(opts.Version)
	if err != nil {
		return c, nil, err
	}
	bs, err := translate.FileParsed(files, OutputPath, decode)
	return c, bs, err
}
