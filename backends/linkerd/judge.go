package linkerd

import (
	"fmt"
	"slices"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// Observe reads linkerd/httproutes.yaml back as Linkerd's policy
// controller does (parse_http_retry, parse_timeouts, convert_gateway_rule)
// and says, for every rule of m, what Linkerd does with its requests. It
// finds each rule through the gwretry.io/source-route and source-rules
// annotations of the route that holds it, and reads the route's parentRefs,
// filters and annotations, not the generator's plan.
func (b *Backend) Observe(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	sup, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	routes, err := translate.FileParsed(files, routesPath, decode)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", routesPath, err)
	}
	type place struct {
		route *gwv1.HTTPRoute
		rule  int // index in route.Spec.Rules
	}
	where := map[string]place{}
	for _, rt := range routes {
		idx, err := parseIndices(rt.Annotations[annRules])
		if err != nil {
			return nil, fmt.Errorf("%s: HTTPRoute %s/%s: %w", routesPath, rt.Namespace, rt.Name, err)
		}
		if len(idx) != len(rt.Spec.Rules) {
			return nil, fmt.Errorf("%s: HTTPRoute %s/%s: %d rules, %s lists %d", routesPath, rt.Namespace, rt.Name, len(rt.Spec.Rules), annRules, len(idx))
		}
		for j, i := range idx {
			k := fmt.Sprintf("%s#%d", rt.Annotations[annSource], i)
			if _, dup := where[k]; dup {
				return nil, fmt.Errorf("%s: rule %s is written twice", routesPath, k)
			}
			where[k] = place{route: rt, rule: j}
		}
	}
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	for _, r := range slices.Concat(m.Rules, m.MeshRules) {
		p, ok := where[fmt.Sprintf("%s#%d", r.Route, r.Index)]
		if !ok {
			continue // the rule says nothing: its honoured claims fail
		}
		bh, err := behaviour(p.route, p.route.Spec.Rules[p.rule], sup, r.MeshParents)
		if err != nil {
			return nil, fmt.Errorf("%s: HTTPRoute %s/%s: %w", routesPath, p.route.Namespace, p.route.Name, err)
		}
		out[r.Name] = map[translate.MethodClass]translate.Behaviour{}
		for _, c := range r.MethodClasses() {
			out[r.Name][c] = bh
		}
	}
	return out, nil
}

// none is what a route Linkerd does not apply does: nothing.
func none() translate.Behaviour {
	return translate.Behaviour{ConnErrors: translate.ConnRetryNone, MaxRetriedBody: -1,
		TryTimeout: translate.Timer{Kind: translate.TimerNone}, RequestTimeout: translate.Timer{Kind: translate.TimerNone}}
}

// behaviour is what Linkerd does with the requests of rule of route rt.
//
// parents are the rule's Service parents (Rule.MeshParents), whose own
// annotations Linkerd applies where the route sets none (fromServices).
func behaviour(rt *gwv1.HTTPRoute, rule gwv1.HTTPRouteRule, sup support, parents []translate.MeshParent) (translate.Behaviour, error) {
	b := none()
	if !translate.HasMeshParentRef(rt) {
		return b, nil
	}
	// The Gateway API CRDs bundled with the version refuse a route of an
	// apiVersion they do not serve, or with a rule field they lack
	// (kubectl apply validates fields strictly): Linkerd never sees it.
	if !sup.serves(rt.APIVersion) {
		return b, nil
	}
	for _, r := range rt.Spec.Rules {
		if !sup.accepts(r) {
			return b, nil
		}
	}
	for _, r := range rt.Spec.Rules {
		if !converts(r.Filters) {
			return b, nil // Linkerd drops the whole route
		}
	}
	ann := rt.Annotations
	retry, err := parseRetry(ann)
	if err != nil {
		return b, err
	}
	timers, err := parseTimeouts(ann)
	if err != nil {
		return b, err
	}
	// convert_gateway_rule (2.20 on): timeouts.request, when Linkerd's
	// parser reads it and it is not zero, fills a request timeout the
	// annotations leave unset.
	if timers.request == nil && sup.ReadsRequestField && rule.Timeouts != nil && rule.Timeouts.Request != nil {
		if d, err := parseDuration(string(*rule.Timeouts.Request)); err == nil && d != 0 {
			timers.request = &d
		}
	}
	// A rule with no retry policy or no timeout of its own gets the
	// Service parent's (the first that gives one: the findings of a rule
	// some Service parent reaches claim nothing honoured that it
	// changes).
	if in := fromServices(parents, retry != nil, timers.set()); len(in) > 0 {
		for _, x := range in {
			if retry == nil && x.retry != nil {
				retry = x.retry
			}
		}
		for _, x := range in {
			if !timers.set() && x.timers.set() {
				timers = x.timers
			}
		}
	}
	// The proxy's try timers (linkerd2-proxy, route/extensions.rs,
	// route/retry.rs, stream-timeouts): retry.linkerd.io/timeout is a
	// response-headers timer, whose cut is retried, removed on the last
	// try; timeout.linkerd.io/response an end-of-response timer on every
	// try, whose cut is not retried. Both start when the request body has
	// been sent; before the headers the headers timer, when set, is the
	// only deadline.
	var response time.Duration
	if d := timers.response; d != nil {
		response = *d
	}
	if retry != nil {
		b.Retries = retry.limit
		b.RetriesSource = fmt.Sprintf("%s %d", annRetryLimit, retry.limit)
		b.Codes = retry.codes
		b.MaxRetriedBody = maxRetriedBody
		// 25 ms doubling to 250 ms, plus up to as much again at random,
		// each pause at most 250 ms (the policy controller's backoff,
		// jitter_ratio 1, in the proxy's exp-backoff).
		b.Backoff = translate.Backoff{Base: minBackoff, Multiplier: 2, Max: maxBackoff, JitterMin: 1, JitterMax: 2, MaxPause: maxBackoff}
		b.MinGap = b.Backoff.MinGap(b.Retries)
	}
	switch {
	case retry != nil && retry.timeout != 0:
		b.TimeoutRetried = true
		b.TryTimeout = translate.Timer{Kind: translate.TimerHeaders, Value: retry.timeout}
		// The last try has the response timer alone, or none.
		b.LastTryTimeout = translate.Timer{Kind: translate.TimerNone}
		if response != 0 {
			b.LastTryTimeout = translate.Timer{Kind: translate.TimerTotal, Value: response}
			if response == retry.timeout {
				// Every try is cut once the time has passed, before
				// or after its headers.
				b.TryTimeout, b.LastTryTimeout = b.LastTryTimeout, translate.Timer{}
			}
		}
	case response != 0:
		b.TryTimeout = translate.Timer{Kind: translate.TimerTotal, Value: response}
	}
	if d := timers.request; d != nil && *d != 0 {
		b.RequestTimeout = translate.Timer{Kind: translate.TimerTotal, Value: *d}
	}
	// The Linkerd proxy answers a request its timers end with 504.
	b.TimeoutStatus = 504
	b.Filters = readFilters(rule.Filters)
	return b, nil
}

// converts reports whether Linkerd's policy controller converts every
// rule-level filter of a route rule it reads: it knows
// RequestHeaderModifier, ResponseHeaderModifier and RequestRedirect
// (convert_gateway_filter), and fails the whole route on any other
// ("Failed to convert route"). The judge's own reading, not the planner's
// rejectedFilter.
func converts(fs []gwv1.HTTPRouteFilter) bool {
	for _, f := range fs {
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier, gwv1.HTTPRouteFilterRequestRedirect:
		default:
			return false
		}
	}
	return true
}

// readFilters reads the filters Linkerd applies back into the model's
// terms: the header modifiers and the redirect.
func readFilters(fs []gwv1.HTTPRouteFilter) translate.Filters {
	var out translate.Filters
	hm := func(m *gwv1.HTTPHeaderFilter) *translate.HeaderModifier {
		if m == nil {
			return nil
		}
		h := &translate.HeaderModifier{Remove: append([]string(nil), m.Remove...)}
		for _, x := range m.Set {
			h.Set = append(h.Set, translate.Header{Name: string(x.Name), Value: x.Value})
		}
		for _, x := range m.Add {
			h.Add = append(h.Add, translate.Header{Name: string(x.Name), Value: x.Value})
		}
		return h
	}
	for _, f := range fs {
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			out.RequestHeaders = hm(f.RequestHeaderModifier)
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			out.ResponseHeaders = hm(f.ResponseHeaderModifier)
		case gwv1.HTTPRouteFilterRequestRedirect:
			rr := f.RequestRedirect
			if rr == nil {
				continue
			}
			red := &translate.Redirect{StatusCode: 302}
			if rr.Scheme != nil {
				red.Scheme = *rr.Scheme
			}
			if rr.Hostname != nil {
				red.Hostname = string(*rr.Hostname)
			}
			if rr.Port != nil {
				red.Port = int(*rr.Port)
			}
			if rr.StatusCode != nil {
				red.StatusCode = *rr.StatusCode
			}
			if rr.Path != nil {
				pm := &translate.PathModifier{Type: translate.PathModifierType(rr.Path.Type)}
				if rr.Path.ReplaceFullPath != nil {
					pm.Value = *rr.Path.ReplaceFullPath
				}
				if rr.Path.ReplacePrefixMatch != nil {
					pm.Value = *rr.Path.ReplacePrefixMatch
				}
				red.Path = pm
			}
			out.Redirect = red
		}
	}
	return out
}
