package traefik

import (
	"fmt"
	"net"
	"strconv"

	"github.com/gwretry/gwretry/translate"
)

// buildStatic builds traefik.yaml: one entry point per listener.
func buildStatic(m *translate.Model) (*staticConfig, error) {
	st := &staticConfig{
		Global:      globalConfig{CheckNewVersion: false, SendAnonymousUsage: false},
		Log:         logConfig{Level: "INFO"},
		EntryPoints: map[string]entryPoint{},
		Providers:   providersConfig{File: fileProvider{Filename: DynamicFile}},
	}
	for _, l := range m.Listeners {
		if _, dup := st.EntryPoints[l.Name]; dup {
			return nil, fmt.Errorf("two listeners are named %q", l.Name)
		}
		st.EntryPoints[l.Name] = entryPoint{Address: net.JoinHostPort(l.Address, strconv.Itoa(l.Port))}
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
	}
	rules, err := addRouters(&h, m, known)
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
	return &dynamicConfig{HTTP: h}, rules, nil
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
				if retries(rm.Rule) {
					rt.Middlewares = []string{retryName(rm.Rule)}
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

// addRule adds the service, Retry middleware and servers transport of r.
func addRule(h *httpConfig, r *translate.Rule, sup support, opts translate.Options) error {
	transport := ""
	if d := r.Timeouts.BackendRequest; d != nil && !d.IsZero() {
		if d.Value < 0 {
			return fmt.Errorf("rule %s: negative backendRequest %s", r.Name, d.Text)
		}
		transport = r.Name + "-timeouts"
		t := &serversTransport{ForwardingTimeouts: forwardingTimeouts{
			DialTimeout:           traefikDuration(d.Value),
			ResponseHeaderTimeout: traefikDuration(d.Value),
		}}
		if err := put(h.ServersTransports, "serversTransport", transport, t); err != nil {
			return err
		}
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
	if len(r.Backends) == 1 && r.Backends[0].Weight > 0 {
		return put(h.Services, "service", r.Name, &service{LoadBalancer: loadBalancerOf(r.Backends[0], transport)})
	}
	w := &weighted{Services: []weightedService{}}
	for i, b := range r.Backends {
		name := r.Name + "-backend" + strconv.Itoa(i)
		if err := put(h.Services, "service", name, &service{LoadBalancer: loadBalancerOf(b, transport)}); err != nil {
			return err
		}
		w.Services = append(w.Services, weightedService{Name: name, Weight: max(b.Weight, 0)})
	}
	return put(h.Services, "service", r.Name, &service{Weighted: w})
}

func loadBalancerOf(b *translate.BackendRef, transport string) *loadBalancer {
	lb := &loadBalancer{Servers: []server{}, ServersTransport: transport}
	for _, e := range b.Endpoints {
		lb.Servers = append(lb.Servers, server{URL: "http://" + net.JoinHostPort(e.Host, strconv.Itoa(e.Port))})
	}
	return lb
}

// retryMiddleware maps a rule's retry intent onto Traefik's Retry
// middleware, writing only the fields that sup's version knows.
func retryMiddleware(r *translate.Rule, sup support, opts translate.Options) (*middleware, error) {
	rt := r.Retry
	if rt.Attempts >= 1<<30 {
		return nil, fmt.Errorf("rule %s: %d attempts is too many", r.Name, rt.Attempts)
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
	mr := &retry{Attempts: rt.Attempts + 1} // Traefik counts the first try
	if rt.Backoff != nil && !rt.Backoff.IsZero() {
		// Traefik's waits are initialInterval x [0.5, 1.5]: twice the
		// backoff keeps every wait at or above it.
		mr.InitialInterval = traefikDuration(2 * rt.Backoff.Value)
	}
	if sup.StatusRetry && len(rt.Codes) > 0 {
		mr.Status = statusCodes(rt.Codes)
		mr.RetryNonIdempotentMethod = opts.RetryNonIdempotent
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
