//gwretry:format
package traefik

import (
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// buildStatic builds traefik.yaml: one entry point per listener.
func buildStatic(m *translate.Model, dynamicFile string) (*staticConfig, error) {
	if err := checkDynamicFile(dynamicFile); err != nil {
		return nil, err
	}
	st := &staticConfig{
		Global:      globalConfig{CheckNewVersion: false, SendAnonymousUsage: false},
		Log:         logConfig{Level: "INFO"},
		EntryPoints: map[string]entryPoint{},
		Providers:   providersConfig{File: fileProvider{Filename: dynamicFile}},
	}
	for _, l := range m.Listeners {
		if _, dup := st.EntryPoints[l.Name]; dup {
			return nil, fmt.Errorf("two listeners are named %q", l.Name)
		}
		ep := entryPoint{Address: net.JoinHostPort(l.Address, strconv.Itoa(l.Port))}
		if err := listenerConn(m, l, &ep); err != nil {
			return nil, err
		}
		st.EntryPoints[l.Name] = ep
	}
	return st, nil
}

// buildDynamic builds dynamic.yaml. It also returns the intended rule of
// every router, to compare with what the encoded file holds.
func buildDynamic(m *translate.Model, sup support, opts translate.Options) (*dynamicConfig, map[string]expr, error) {
	h := httpConfig{
		Routers:           map[string]*router{},
		Middlewares:       map[string]*middleware{},
		Services:          map[string]*service{},
		ServersTransports: map[string]*serversTransport{},
	}
	known := map[*translate.Rule]bool{}
	for _, r := range m.Rules {
		if known[r] {
			return nil, nil, fmt.Errorf("rule %s is listed twice", r.Name)
		}
		known[r] = true
		if err := addRule(&h, r, sup, opts); err != nil {
			return nil, nil, err
		}
		if err := ruleConn(&h, m, r); err != nil {
			return nil, nil, err
		}
	}
	rules, err := addRouters(&h, m, known)
	if err != nil {
		return nil, nil, err
	}
	tc, err := buildTLS(m)
	if err != nil {
		return nil, nil, err
	}
	// Empty maps are left out of the file; nil keeps the decoded copy equal.
	if len(h.Routers) == 0 {
		h.Routers = nil
	}
	if len(h.Middlewares) == 0 {
		h.Middlewares = nil
	}
	if len(h.ServersTransports) == 0 {
		h.ServersTransports = nil
	}
	if len(h.Services) == 0 {
		h.Services = nil
	}
	return &dynamicConfig{HTTP: h, TLS: tc}, rules, nil
}

// addRouters adds one router per route match, with priorities that make
// Traefik try them in the Model's order.
func addRouters(h *httpConfig, m *translate.Model, known map[*translate.Rule]bool) (map[string]expr, error) {
	total := 0
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			total += len(vh.Routes)
		}
	}
	rules := map[string]expr{}
	seq := 0
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				if !known[rm.Rule] {
					return nil, fmt.Errorf("listener %s host %s: route match of rule %s, which is not in the model's rules",
						l.Name, vh.Name, rm.Rule.Name)
				}
				x, err := matchExpr(vh.Hostname, rm.Match)
				if err != nil {
					return nil, fmt.Errorf("listener %s host %s rule %s: %w", l.Name, vh.Name, rm.Rule.Name, err)
				}
				if err := checkExpr(x); err != nil {
					return nil, fmt.Errorf("listener %s host %s rule %s: %w", l.Name, vh.Name, rm.Rule.Name, err)
				}
				name := fmt.Sprintf("m%04d-%s", seq, rm.Rule.Name)
				rt := &router{
					EntryPoints: []string{l.Name},
					Rule:        render(x),
					Priority:    total - seq,
					Service:     rm.Rule.Name,
				}
				if l.TLS {
					rt.TLS = &routerTLS{}
				}
				if !rm.Rule.Forwards() {
					rt.Service = noopService
				}
				if answers500(rm.Rule) {
					rt.Middlewares = append(rt.Middlewares, answerName(rm.Rule))
				}
				fms, err := routerFilters(h, name, listenerScheme(l), l.Port, rm)
				if err != nil {
					return nil, err
				}
				rt.Middlewares = append(rt.Middlewares, fms...)
				if rm.Rule.Forwards() && retries(rm.Rule) {
					rt.Middlewares = append(rt.Middlewares, retryName(rm.Rule))
				}
				if err := put(h.Routers, "router", name, rt); err != nil {
					return nil, err
				}
				rules[name] = x
				seq++
			}
		}
	}
	return rules, nil
}

func retries(r *translate.Rule) bool { return r.Retry != nil && r.Retry.Attempts > 0 }

func retryName(r *translate.Rule) string { return r.Name + "-retry" }

func transportName(r *translate.Rule) string { return r.Name + "-transport" }

func answerName(r *translate.Rule) string { return r.Name + "-answer500" }

// noopService is Traefik's built-in service that answers 418 to every
// request without contacting anything (pkg/server/service/internalhandler.go).
// Traefik has no direct-response service or middleware that the file
// provider can configure (WRRService.Status is tagged file:"-"), so a rule
// with no usable backend is routed to noopService, and the errors
// middleware answerName rewrites its 418 into the Gateway API's 500.
const noopService = "noop@internal"

// noopStatus is what noopService answers.
const noopStatus = 418

// answers500 reports whether r's routers carry the errors middleware that
// turns noopService's 418 into 500: r is dead, or some invalid backendRef
// has a share of its traffic.
func answers500(r *translate.Rule) bool { return !r.Forwards() || r.InvalidWeight() > 0 }

func answerMiddleware() *middleware {
	code := strconv.Itoa(noopStatus)
	return &middleware{Errors: &errorPage{Status: []string{code}, StatusRewrites: map[string]int{code: 500},
		Service: noopService, Query: "/"}}
}

// addRule adds the service, Retry middleware, errors middleware and
// servers transport of r. A dead rule gets only the errors middleware: its
// routers send every request to noopService.
func addRule(h *httpConfig, r *translate.Rule, sup support, opts translate.Options) error {
	if answers500(r) {
		if err := put(h.Middlewares, "middleware", answerName(r), answerMiddleware()); err != nil {
			return err
		}
	}
	if err := addRuleFilters(h, r); err != nil {
		return err
	}
	if !r.Forwards() {
		return nil
	}
	// Every proxied rule gets its own transport with upstream keep-alive
	// off, so that Go's transport never re-sends a request by itself.
	transport := transportName(r)
	t := &serversTransport{MaxIdleConnsPerHost: -1}
	if d := r.Timeouts.BackendRequest; d != nil {
		if d.Value < 0 {
			return fmt.Errorf("rule %s: negative backendRequest %s", r.Name, d.Text)
		}
		// 0s turns both timers off; Traefik's dialTimeout is 30s otherwise.
		t.ForwardingTimeouts = &forwardingTimeouts{
			DialTimeout:           traefikDuration(d.Value),
			ResponseHeaderTimeout: traefikDuration(d.Value),
		}
	}
	if err := put(h.ServersTransports, "serversTransport", transport, t); err != nil {
		return err
	}
	if retries(r) {
		mw, err := retryMiddleware(r, sup, opts)
		if err != nil {
			return err
		}
		if err := put(h.Middlewares, "middleware", retryName(r), mw); err != nil {
			return err
		}
	}
	if len(r.Backends) == 1 && r.Backends[0].Weight > 0 && r.InvalidWeight() == 0 {
		return wrapMirrors(h, r, &service{LoadBalancer: loadBalancerOf(r.Backends[0], transport)}, transport)
	}
	w := &weighted{Services: []weightedService{}}
	for i, b := range r.Backends {
		name := r.Name + "-backend" + strconv.Itoa(i)
		if err := put(h.Services, "service", name, &service{LoadBalancer: loadBalancerOf(b, transport)}); err != nil {
			return err
		}
		w.Services = append(w.Services, weightedService{Name: name, Weight: max(b.Weight, 0)})
	}
	if iw := r.InvalidWeight(); iw > 0 {
		// The invalid backendRefs' share goes to noopService, answered 500.
		w.Services = append(w.Services, weightedService{Name: noopService, Weight: iw})
	}
	return wrapMirrors(h, r, &service{Weighted: w}, transport)
}

func loadBalancerOf(b *translate.BackendRef, transport string) *loadBalancer {
	lb := &loadBalancer{Servers: []server{}, ServersTransport: transport}
	for _, e := range b.Endpoints {
		lb.Servers = append(lb.Servers, server{URL: "http://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))})
	}
	return lb
}

// configuredAttempts is the number of retries gwretry writes for rt: its
// attempts, clamped at the version's MaxAttempts.
func configuredAttempts(rt *translate.Retry, sup support) int {
	return min(rt.Attempts, sup.MaxAttempts)
}

// retryMiddleware maps a rule's retry intent onto Traefik's Retry
// middleware, writing only the fields that sup's version knows.
func retryMiddleware(r *translate.Rule, sup support, opts translate.Options) (*middleware, error) {
	rt := r.Retry
	if rt.Attempts < 0 {
		return nil, fmt.Errorf("rule %s: negative attempts %d", r.Name, rt.Attempts)
	}
	for _, c := range rt.Codes {
		if c < 400 || c > 599 {
			return nil, fmt.Errorf("rule %s: retry code %d is outside 400-599", r.Name, c)
		}
	}
	for _, d := range []*translate.Duration{rt.Backoff, r.Timeouts.Request} {
		if d != nil && d.Value < 0 {
			return nil, fmt.Errorf("rule %s: negative duration %s", r.Name, d.Text)
		}
	}
	mr := &retry{Attempts: configuredAttempts(rt, sup) + 1} // Traefik counts the first try
	if rt.Backoff != nil && !rt.Backoff.IsZero() {
		// Traefik's waits are initialInterval x [0.5, 1.5]: twice the
		// backoff keeps every wait at or above it.
		mr.InitialInterval = traefikDuration(2 * rt.Backoff.Value)
	}
	if sup.StatusRetry && len(rt.Codes) > 0 {
		mr.Status = statusCodes(rt.Codes)
		mr.RetryNonIdempotentMethod = opts.RetryNonIdempotent
		limit := sup.StatusBodyLimit
		mr.MaxRequestBodyBytes = &limit
	}
	if d := r.Timeouts.Request; sup.RetryTimeout && d != nil && !d.IsZero() {
		mr.Timeout = traefikDuration(d.Value)
	}
	return &middleware{Retry: mr}, nil
}

// put adds v under name, refusing to overwrite: two objects with one name
// would silently merge into one.
func put[V any](m map[string]V, kind, name string, v V) error {
	if _, dup := m[name]; dup {
		return fmt.Errorf("two %ss are named %q", kind, name)
	}
	if err := translate.CheckValue(translate.KindName, name); err != nil {
		return fmt.Errorf("%s name: %w", kind, err)
	}
	m[name] = v
	return nil
}

// checkDynamicFile allowlists the path traefik.yaml gives the file
// provider: absolute, clean, of letters, digits and ._-/ only, ending in
// .yaml or .yml (Traefik picks the decoder by extension).
func checkDynamicFile(p string) error {
	bad := func(why string) error {
		return fmt.Errorf("dynamic file path %q: %s (want an absolute path of letters, digits and ._-/ ending in .yaml or .yml)", short(p), why)
	}
	switch {
	case len(p) == 0 || len(p) > 1024:
		return bad("empty or longer than 1024 bytes")
	case p[0] != '/':
		return bad("not absolute")
	case path.Clean(p) != p || strings.Contains(p, ".."):
		return bad("not clean or contains '..'")
	case !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml"):
		return bad("does not end in .yaml or .yml")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return bad(fmt.Sprintf("character %q is not allowed", c))
		}
	}
	return nil
}
