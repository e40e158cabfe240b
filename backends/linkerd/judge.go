package linkerd

import (
	"fmt"
	"slices"
	"strings"
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
		bh, err := behaviour(p.route, p.route.Spec.Rules[p.rule], sup)
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
func behaviour(rt *gwv1.HTTPRoute, rule gwv1.HTTPRouteRule, sup support) (translate.Behaviour, error) {
	b := none()
	if !meshed(rt) {
		return b, nil
	}
	for _, r := range rt.Spec.Rules {
		if rejectedFilter(r.Filters) != "" {
			return b, nil // Linkerd drops the whole route
		}
	}
	ann := rt.Annotations
	// parse_http_retry: a limit of 0 and a timeout of 0 are unset; with
	// any of the three set, the limit defaults to 1.
	var limit int
	if v, ok := ann[annRetryLimit]; ok {
		var n uint16
		if _, err := fmt.Sscanf(v, "%d", &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(v) {
			return b, fmt.Errorf("%s %q is not a 16-bit unsigned integer", annRetryLimit, v)
		}
		limit = int(n)
	}
	var tryTimeout time.Duration
	if v, ok := ann[annRetryTimeout]; ok {
		d, err := parseDuration(v)
		if err != nil {
			return b, fmt.Errorf("%s: %w", annRetryTimeout, err)
		}
		tryTimeout = d
	}
	var codes []int
	hasCodes := false
	if v, ok := ann[annRetryHTTP]; ok {
		c, err := parseCodes(v)
		if err != nil {
			return b, fmt.Errorf("%s: %w", annRetryHTTP, err)
		}
		codes, hasCodes = c, true
	}
	if limit != 0 || tryTimeout != 0 || hasCodes {
		if limit == 0 {
			limit = 1
		}
		b.Retries = limit
		b.RetriesSource = fmt.Sprintf("%s %d", annRetryLimit, limit)
		b.Codes = codes
		b.MaxRetriedBody = maxRetriedBody
		if tryTimeout != 0 {
			b.TryTimeout = translate.Timer{Kind: translate.TimerTotal, Value: tryTimeout}
			b.TimeoutRetried = true
		}
	}
	if v, ok := ann[annResponseTimeout]; ok && b.TryTimeout.Kind == translate.TimerNone {
		d, err := parseDuration(v)
		if err != nil {
			return b, fmt.Errorf("%s: %w", annResponseTimeout, err)
		}
		if d != 0 {
			b.TryTimeout = translate.Timer{Kind: translate.TimerHeaders, Value: d}
		}
	}
	if v, ok := ann[annRequestTimeout]; ok {
		d, err := parseDuration(v)
		if err != nil {
			return b, fmt.Errorf("%s: %w", annRequestTimeout, err)
		}
		if d != 0 {
			b.RequestTimeout = translate.Timer{Kind: translate.TimerTotal, Value: d}
		}
	} else if sup.ReadsRequestField && rule.Timeouts != nil && rule.Timeouts.Request != nil {
		if d, err := parseDuration(string(*rule.Timeouts.Request)); err == nil && d != 0 {
			b.RequestTimeout = translate.Timer{Kind: translate.TimerTotal, Value: d}
		}
	}
	// The Linkerd proxy answers a request its timers end with 504.
	b.TimeoutStatus = 504
	b.Filters = readFilters(rule.Filters)
	return b, nil
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
