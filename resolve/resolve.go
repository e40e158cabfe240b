package resolve

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1b1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// Build validates the input and resolves it into a Model: every error in
// the input is reported (as an ErrorList), not only the first.
func Build(in *input.Input, opts translate.ResolveOptions) (*translate.Model, error) {
	if errs := input.Check(in, opts.Channel); len(errs) > 0 {
		return nil, errs
	}
	r := newResolver(in, opts)
	for _, o := range sortedRoutes(in.Routes) {
		r.route(o)
	}
	r.errs = append(r.errs, input.CheckConnectionPolicies(in)...)
	if len(r.errs) > 0 {
		return nil, r.errs
	}
	m := r.model()
	r.connectionTimeouts(m)
	if err := m.Check(); err != nil {
		return nil, &translate.InternalError{Err: err}
	}
	return m, nil
}

func sortedRoutes(rs []input.Object[gwv1.HTTPRoute]) []input.Object[gwv1.HTTPRoute] {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b input.Object[gwv1.HTTPRoute]) int {
		return cmp.Compare(routeKey(a.Obj), routeKey(b.Obj))
	})
	return out
}

func routeKey(rt *gwv1.HTTPRoute) string { return nsOrDefault(rt.Namespace) + "/" + rt.Name }

func nsOrDefault(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

type resolver struct {
	in       *input.Input
	opts     translate.ResolveOptions
	gateways map[string]*gwv1.Gateway
	services map[string]*corev1.Service
	slices   map[string][]*discoveryv1.EndpointSlice
	// grants are the ReferenceGrants by namespace.
	grants map[string][]*gwv1b1.ReferenceGrant
	// namespaces are the Namespace objects' labels by name.
	namespaces map[string]map[string]string
	binds      map[translate.Bind]map[string][]*placed // bind → hostname → routes
	// bindTLS is the protocol of every Gateway listener's bind; certs
	// the certificate of each hostname of an HTTPS bind.
	bindTLS map[translate.Bind]bindProto
	certs   map[translate.Bind]map[string]*translate.Certificate
	warned  map[string]bool
	// certSources map the certificate paths the configurations name to
	// the files read (Model.CertSources).
	certSources map[string]string
	// bindListeners are the Gateway listeners with a hostname on each
	// bind; attached those that some route attaches to; ruleTLSBinds
	// the HTTPS binds that serve each rule.
	bindListeners map[translate.Bind][]string
	attached      map[string]bool
	ruleTLSBinds  map[*translate.Rule][]translate.Bind
	sources       map[string]input.Position
	routeObjs     map[string]*gwv1.HTTPRoute
	// pol holds the policies and what happens to them; effective the
	// provenance of every rule's values.
	pol       *policyState
	effective []translate.RuleEffective
	rules     []*translate.Rule
	skipped   []translate.SkippedRule
	notes     []translate.Note
	routes    int
	nrules    int
	errs      input.ErrorList

	// meshRules are the rules of routes attached to Services only;
	// meshOnly holds those routes' keys.
	meshRules []*translate.Rule
	meshOnly  map[string]bool
	// meshPlaced are the matches attached to each Service parent.
	meshPlaced map[meshKey][]*placed
}

// placed is a route match with what precedence needs beyond the match.
type placed struct {
	rm         *translate.RouteMatch
	route      *gwv1.HTTPRoute
	matchIndex int
}

func newResolver(in *input.Input, opts translate.ResolveOptions) *resolver {
	r := &resolver{in: in, opts: opts, gateways: map[string]*gwv1.Gateway{},
		services: map[string]*corev1.Service{}, slices: map[string][]*discoveryv1.EndpointSlice{},
		grants: map[string][]*gwv1b1.ReferenceGrant{}, namespaces: map[string]map[string]string{},
		binds: map[translate.Bind]map[string][]*placed{}, sources: map[string]input.Position{}, routeObjs: map[string]*gwv1.HTTPRoute{},
		bindTLS: map[translate.Bind]bindProto{}, certs: map[translate.Bind]map[string]*translate.Certificate{}, warned: map[string]bool{},
		bindListeners: map[translate.Bind][]string{}, attached: map[string]bool{}, ruleTLSBinds: map[*translate.Rule][]translate.Bind{}, meshOnly: map[string]bool{}, meshPlaced: map[meshKey][]*placed{},
		pol: newPolicyState(in)}
	for _, g := range in.ReferenceGrants {
		ns := nsOrDefault(g.Obj.Namespace)
		r.grants[ns] = append(r.grants[ns], g.Obj)
	}
	for _, n := range in.Namespaces {
		r.namespaces[n.Obj.Name] = n.Obj.Labels
	}
	for _, g := range in.Gateways {
		key := nsOrDefault(g.Obj.Namespace) + "/" + g.Obj.Name
		r.gateways[key] = g.Obj
		for _, l := range g.Obj.Spec.Listeners {
			p := bindHTTP
			switch {
			case l.Protocol == gwv1.HTTPSProtocolType && opts.TLSDir != "" && (opts.Listen == nil || opts.ListenTLS != nil):
				p = bindHTTPS
			case l.Protocol != gwv1.HTTPProtocolType:
				continue
			}
			b := r.listenerBind(key, l)
			if l.Hostname != nil && *l.Hostname != "" {
				r.bindListeners[b] = append(r.bindListeners[b], listenerLabel(key, l))
			}
			if old, ok := r.bindTLS[b]; ok && old != p {
				p = bindConflict
			}
			r.bindTLS[b] = p
		}
	}
	for _, s := range in.Services {
		r.services[nsOrDefault(s.Obj.Namespace)+"/"+s.Obj.Name] = s.Obj
	}
	for _, s := range in.EndpointSlices {
		if name := s.Obj.Labels[discoveryv1.LabelServiceName]; name != "" {
			k := nsOrDefault(s.Obj.Namespace) + "/" + name
			r.slices[k] = append(r.slices[k], s.Obj)
		}
	}
	return r
}

// bindProto is what a bind serves: HTTP, HTTPS, or both (a conflict that
// the Gateway API resolves by generating neither).
type bindProto int

const (
	bindHTTP bindProto = iota
	bindHTTPS
	bindConflict
)

// listenerBind is where the listener of Gateway gwKey is generated: its
// port on 0.0.0.0, or --listen (HTTP) and --listen-https (HTTPS).
func (r *resolver) listenerBind(gwKey string, l gwv1.Listener) translate.Bind {
	switch {
	case l.Protocol == gwv1.HTTPSProtocolType && r.opts.ListenTLS != nil:
		return *r.opts.ListenTLS
	case r.opts.Listen != nil:
		return *r.opts.Listen
	}
	return translate.Bind{Address: "0.0.0.0", Port: int(l.Port)}
}

// listenerLabel names a Gateway listener in notes and findings.
func listenerLabel(gwKey string, l gwv1.Listener) string {
	h := ""
	if l.Hostname != nil {
		h = string(*l.Hostname)
	}
	return fmt.Sprintf("Gateway %s listener %s (hostname %s)", gwKey, l.Name, h)
}

// warnOnce records a warning the first time it is given.
func (r *resolver) warnOnce(object, text string) {
	if k := object + "\x00" + text; !r.warned[k] {
		r.warned[k] = true
		r.warn(object, "%s", text)
	}
}

func (r *resolver) info(object, format string, args ...any) {
	r.notes = append(r.notes, translate.Info(object, format, args...))
}

func (r *resolver) warn(object, format string, args ...any) {
	r.notes = append(r.notes, translate.Warning(object, format, args...))
}

// attachment is where a route is served: a bind address and the hostnames
// it answers there ("" for any).
type attachment struct {
	bind      translate.Bind
	hostnames []string
	// cert is the certificate of an HTTPS listener; nil for HTTP.
	cert *translate.Certificate
	// tls names the HTTPS listener ("Gateway ns/gw listener l").
	tls string
	// gateway ("ns/name") and listener name the Gateway listener, when
	// the Gateway is in the input, for the policies that target them.
	gateway, listener string
}

func (r *resolver) defaultBind(port *gwv1.PortNumber) translate.Bind {
	if r.opts.Listen != nil {
		return *r.opts.Listen
	}
	if port != nil {
		return translate.Bind{Address: "0.0.0.0", Port: int(*port)}
	}
	return translate.Bind{Address: "0.0.0.0", Port: translate.DefaultPort}
}

func routeHostnames(rt *gwv1.HTTPRoute) []string {
	if len(rt.Spec.Hostnames) == 0 {
		return []string{""}
	}
	var hs []string
	for _, h := range rt.Spec.Hostnames {
		hs = append(hs, string(h))
	}
	return hs
}

// attachments resolves a route's parentRefs to listeners: the generated
// ones, the HTTPS listeners the route is attached to, which gwretry does
// not generate, and why each parentRef that gives no generated listener
// does not.
func (r *resolver) attachments(rt *gwv1.HTTPRoute) (out []attachment, ungenerated []translate.UngeneratedListener, why []string) {
	ungenerate := func(u translate.UngeneratedListener) {
		if !slices.Contains(ungenerated, u) {
			ungenerated = append(ungenerated, u)
		}
	}
	key := routeKey(rt)
	if len(rt.Spec.ParentRefs) == 0 {
		r.info("HTTPRoute "+key, "no parentRefs: served on the default listener")
		return []attachment{{bind: r.defaultBind(nil), hostnames: routeHostnames(rt)}}, nil, nil
	}
	for i, p := range rt.Spec.ParentRefs {
		if translate.IsServiceParent(p) {
			continue // a mesh attachment: see meshParents
		}
		if (p.Group != nil && *p.Group != gwv1.GroupName) || (p.Kind != nil && *p.Kind != "Gateway") {
			text := fmt.Sprintf("parentRefs[%d]: parents of kind %s are not translated", i, derefKind(p.Kind))
			if derefKind(p.Kind) == "Service" {
				text += ` (a Service parent, GAMMA, needs group: ""; without it the group is gateway.networking.k8s.io)`
			}
			r.warn("HTTPRoute "+key, "%s", text)
			why = append(why, text)
			continue
		}
		ns := nsOrDefault(rt.Namespace)
		if p.Namespace != nil {
			ns = string(*p.Namespace)
		}
		gw, ok := r.gateways[ns+"/"+string(p.Name)]
		if !ok {
			b := r.defaultBind(p.Port)
			r.info("HTTPRoute "+key, "parentRefs[%d]: Gateway %s/%s is not in the input: serving the route on %s", i, ns, p.Name, net.JoinHostPort(b.Address, strconv.Itoa(b.Port)))
			out = append(out, attachment{bind: b, hostnames: routeHostnames(rt)})
			continue
		}
		found := false
		var reasons []string
		for _, l := range gw.Spec.Listeners {
			if p.SectionName != nil && *p.SectionName != l.Name {
				continue
			}
			if p.Port != nil && *p.Port != l.Port {
				continue
			}
			if l.Protocol != gwv1.HTTPProtocolType && l.Protocol != gwv1.HTTPSProtocolType {
				r.warn("Gateway "+ns+"/"+gw.Name, "listener %s: protocol %s is not generated (only HTTP listeners are)", l.Name, l.Protocol)
				reasons = append(reasons, fmt.Sprintf("listener %s has protocol %s, which serves no HTTPRoute", l.Name, l.Protocol))
				continue
			}
			if ok, whyNot := r.allowsRoute(l, ns, nsOrDefault(rt.Namespace)); !ok {
				r.warn("HTTPRoute "+key, "not attached to listener %s of Gateway %s/%s: %s", l.Name, ns, gw.Name, whyNot)
				reasons = append(reasons, fmt.Sprintf("listener %s: %s", l.Name, whyNot))
				continue
			}
			hs := intersectHostnames(l.Hostname, rt.Spec.Hostnames)
			if len(hs) == 0 {
				r.info("HTTPRoute "+key, "no hostname intersects listener %s of Gateway %s/%s: not attached there", l.Name, ns, gw.Name)
				reasons = append(reasons, fmt.Sprintf("no hostname of the route intersects listener %s", l.Name))
				continue
			}
			b := r.listenerBind(ns+"/"+gw.Name, l)
			if l.Protocol == gwv1.HTTPSProtocolType {
				cert, whyNot := r.certificate(gw, ns, l)
				if whyNot == "" && r.bindTLS[b] != bindHTTPS {
					whyNot = fmt.Sprintf("port %d is also an HTTP listener's", b.Port)
					if r.opts.Listen != nil && r.opts.ListenTLS == nil {
						whyNot = "--listen puts every listener on one address: give --listen-https for HTTPS listeners"
					}
				}
				if whyNot != "" {
					// Attached, as the Gateway API defines it, to a
					// listener gwretry does not generate: a finding on
					// every rule.
					r.warnOnce("Gateway "+ns+"/"+gw.Name, fmt.Sprintf("listener %s (HTTPS) is not generated: %s; routes attached to it get a listener.https finding", l.Name, whyNot))
					ungenerate(translate.UngeneratedListener{Gateway: ns + "/" + gw.Name, Listener: string(l.Name), Protocol: string(l.Protocol)})
					reasons = append(reasons, fmt.Sprintf("listener %s is HTTPS and not generated: %s", l.Name, whyNot))
					continue
				}
				out = append(out, attachment{bind: b, hostnames: hs, cert: cert, tls: fmt.Sprintf("Gateway %s/%s listener %s", ns, gw.Name, l.Name),
					gateway: ns + "/" + gw.Name, listener: string(l.Name)})
				r.attached[listenerLabel(ns+"/"+gw.Name, l)] = true
				found = true
				continue
			}
			if r.bindTLS[b] != bindHTTP {
				r.warnOnce("Gateway "+ns+"/"+gw.Name, fmt.Sprintf("listener %s (HTTP) is not generated: port %d is also an HTTPS listener's", l.Name, b.Port))
				reasons = append(reasons, fmt.Sprintf("listener %s shares port %d with an HTTPS listener", l.Name, b.Port))
				continue
			}
			out = append(out, attachment{bind: b, hostnames: hs, gateway: ns + "/" + gw.Name, listener: string(l.Name)})
			r.attached[listenerLabel(ns+"/"+gw.Name, l)] = true
			found = true
		}
		if !found {
			if len(reasons) == 0 {
				reasons = append(reasons, noListenerMatches(p, gw))
			}
			r.warn("HTTPRoute "+key, "parentRefs[%d]: no usable listener on Gateway %s/%s: %s", i, ns, p.Name, strings.Join(reasons, "; "))
			why = append(why, fmt.Sprintf("parentRefs[%d] to Gateway %s/%s: %s", i, ns, p.Name, strings.Join(reasons, "; ")))
		}
	}
	slices.SortFunc(ungenerated, func(a, b translate.UngeneratedListener) int {
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Listener, b.Listener))
	})
	return out, ungenerated, why
}

// noListenerMatches says that the sectionName or port of parentRef p
// matches no listener of gw, and lists the listeners that exist (a
// typo in a sectionName otherwise looks like any other unattached
// route).
func noListenerMatches(p gwv1.ParentReference, gw *gwv1.Gateway) string {
	var what []string
	if p.SectionName != nil {
		what = append(what, fmt.Sprintf("sectionName %q", *p.SectionName))
	}
	if p.Port != nil {
		what = append(what, fmt.Sprintf("port %d", *p.Port))
	}
	verb := "matches"
	if len(what) > 1 {
		verb = "match"
	}
	var ls []string
	for _, l := range gw.Spec.Listeners {
		ls = append(ls, fmt.Sprintf("%s (%s, port %d)", l.Name, l.Protocol, l.Port))
	}
	if len(what) == 0 {
		return "the Gateway has no listener"
	}
	return fmt.Sprintf("its %s %s no listener; the Gateway's listeners are %s", strings.Join(what, " and "), verb, strings.Join(ls, ", "))
}

func derefKind(k *gwv1.Kind) string {
	if k == nil {
		return "Gateway"
	}
	return string(*k)
}

// allowsRoute reports whether listener l of a Gateway in gwNS accepts an
// HTTPRoute from routeNS; when it does not, why says so.
func (r *resolver) allowsRoute(l gwv1.Listener, gwNS, routeNS string) (ok bool, why string) {
	ar := l.AllowedRoutes
	if ar != nil && len(ar.Kinds) > 0 {
		found := false
		for _, k := range ar.Kinds {
			if k.Kind == "HTTPRoute" && (k.Group == nil || *k.Group == gwv1.GroupName) {
				found = true
			}
		}
		if !found {
			return false, "its allowedRoutes.kinds do not include HTTPRoute"
		}
	}
	from := gwv1.NamespacesFromSame
	if ar != nil && ar.Namespaces != nil && ar.Namespaces.From != nil {
		from = *ar.Namespaces.From
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true, ""
	case gwv1.NamespacesFromSelector:
		if ar.Namespaces.Selector == nil {
			return false, "allowedRoutes.namespaces.from is Selector but no selector is given"
		}
		sel, err := metav1.LabelSelectorAsSelector(ar.Namespaces.Selector)
		if err != nil {
			return false, fmt.Sprintf("its allowedRoutes.namespaces.selector is invalid: %v", err)
		}
		nsLabels, known := r.namespaces[routeNS]
		if !known {
			return false, fmt.Sprintf("it selects namespaces by label and the input has no Namespace %s to read the labels of (add the Namespace objects)", routeNS)
		}
		if !sel.Matches(labels.Set(nsLabels)) {
			return false, fmt.Sprintf("its allowedRoutes.namespaces.selector (%s) does not select namespace %s", sel, routeNS)
		}
		return true, ""
	}
	if gwNS != routeNS {
		return false, fmt.Sprintf("it allows routes from its own namespace %s only", gwNS)
	}
	return true, ""
}

// intersectHostnames returns the hostnames a route answers on a listener, as
// the Gateway API defines their intersection; [""] means any host.
func intersectHostnames(listener *gwv1.Hostname, route []gwv1.Hostname) []string {
	if listener == nil || *listener == "" {
		if len(route) == 0 {
			return []string{""}
		}
		var out []string
		for _, h := range route {
			out = append(out, string(h))
		}
		return out
	}
	l := string(*listener)
	if len(route) == 0 {
		return []string{l}
	}
	var out []string
	for _, h := range route {
		rh := string(h)
		switch {
		case rh == l:
			out = append(out, rh)
		case wildcardCovers(l, rh):
			out = append(out, rh)
		case wildcardCovers(rh, l):
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// wildcardCovers reports whether the wildcard w ("*.example.com") matches
// host h (an exact name or a narrower wildcard).
func wildcardCovers(w, h string) bool {
	if !strings.HasPrefix(w, "*.") {
		return false
	}
	suffix := w[1:] // ".example.com"
	return strings.HasSuffix(h, suffix) && len(strings.TrimPrefix(h, "*.")) > len(suffix)-1 && h != w
}

func (r *resolver) route(o input.Object[gwv1.HTTPRoute]) {
	rt := o.Obj
	key := routeKey(rt)
	r.sources[key] = o.Pos
	r.routeObjs[key] = rt
	r.routes++
	r.nrules += len(rt.Spec.Rules)
	atts, ungenerated, why := r.attachments(rt)
	mesh, meshWhy := r.meshParents(rt)
	if len(atts) == 0 && len(mesh) > 0 {
		r.meshOnly[key] = true
	}
	for i, rule := range rt.Spec.Rules {
		f := &input.FieldErrors{Pos: o.Pos, Object: input.ObjectName("HTTPRoute", rt.Namespace, rt.Name)}
		field := fmt.Sprintf("spec.rules[%d]", i)
		ruleName := ""
		if rule.Name != nil {
			ruleName = string(*rule.Name)
		}
		redirectWithBackends(f, field, rule)
		filters := r.filters(f, field+".filters", rt, rule.Filters)
		backends, invalid := r.backends(f, field, rt, rule)
		// The policies' values merge with the rule's own before its
		// intent is read (policy_merge.go).
		merged := r.mergePolicies(key, i, ruleName, atts, backends, rule)
		retry, timeouts := r.intent(f, field, merged.mergedRule(rule), key, i)
		if w, ok := merged.values[fieldRetryOn]; ok && retry != nil {
			// The BackendTrafficPolicy's retry: its retryOn decides which
			// failures are retried.
			on := *w.value.(*translate.RetryOn)
			on.Policy = w.layer.source
			retry.On = &on
		}
		merged.checkTimeouts(f, field, timeouts)
		r.bakePolicies(key, rt, i, merged, rule)
		r.errs = append(r.errs, f.Errs...)
		if len(f.Errs) > 0 {
			continue
		}
		r.effective = append(r.effective, merged.effective(key, i, ruleName, retry, timeouts))
		out := &translate.Rule{Name: safeName(nsOrDefault(rt.Namespace), rt.Name, "r"+strconv.Itoa(i)), Route: key,
			Index: i, RuleName: ruleName, Retry: retry, Timeouts: timeouts, Backends: backends,
			Invalid: invalid, NoBackendRefs: len(rule.BackendRefs) == 0, Methods: ruleMethods(rule.Matches),
			Filters: filters, Ungenerated: ungenerated, MeshParents: mesh, PolicyConflicts: merged.conflicts}
		r.placeMesh(rt, out, rule.Matches)
		if len(atts) == 0 && len(mesh) > 0 {
			// Attached to Services only: a mesh's rule, outside every
			// listener (Model.MeshRules).
			out.GatewayUnattached = why
			if out.Dead() {
				r.warn(translate.RuleObject(out), "%s: no backend can receive its requests", out.DeadReason())
			}
			r.meshRules = append(r.meshRules, out)
			continue
		}
		if len(atts) == 0 {
			reason := "the route is attached to no listener that gwretry generates"
			if all := slices.Concat(why, meshWhy); len(all) > 0 {
				reason += " (" + strings.Join(all, "; ") + ")"
			}
			r.skipped = append(r.skipped, translate.SkippedRule{Route: key, Index: i, RuleName: ruleName,
				Features: append([]translate.Feature{translate.FeatureRouteAttachment}, out.Features()...), Reason: reason})
			r.warn(fmt.Sprintf("HTTPRoute %s rule %d", key, i), "not translated: %s", reason)
			continue
		}
		if out.Dead() {
			r.warn(translate.RuleObject(out), "%s; every target answers its requests with 500", out.DeadReason())
		}
		r.rules = append(r.rules, out)
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{{}}
		}
		for _, a := range atts {
			hosts := r.binds[a.bind]
			if hosts == nil {
				hosts = map[string][]*placed{}
				r.binds[a.bind] = hosts
			}
			if a.cert != nil {
				if !slices.Contains(r.ruleTLSBinds[out], a.bind) {
					r.ruleTLSBinds[out] = append(r.ruleTLSBinds[out], a.bind)
				}
				if !slices.Contains(out.TLSListeners, a.tls) {
					out.TLSListeners = append(out.TLSListeners, a.tls)
					slices.Sort(out.TLSListeners)
				}
				certs := r.certs[a.bind]
				if certs == nil {
					certs = map[string]*translate.Certificate{}
					r.certs[a.bind] = certs
				}
				for _, h := range a.hostnames {
					if c, ok := certs[h]; !ok {
						certs[h] = a.cert
					} else if c.Secret != a.cert.Secret {
						r.warnOnce(a.tls, fmt.Sprintf("hostname %q already has the certificate of Secret %s on port %d; Secret %s is not used for it", h, c.Secret, a.bind.Port, a.cert.Secret))
						shadow := fmt.Sprintf("%s (hostname %s gets Secret %s, not its Secret %s)", a.tls, hostOrAny(h), c.Secret, a.cert.Secret)
						if !slices.Contains(out.TLSCertShadowed, shadow) {
							out.TLSCertShadowed = append(out.TLSCertShadowed, shadow)
							slices.Sort(out.TLSCertShadowed)
						}
					}
				}
			}
			for j, m := range matches {
				for _, h := range a.hostnames {
					hosts[h] = append(hosts[h], &placed{rm: &translate.RouteMatch{Match: toMatch(m), Rule: out}, route: rt, matchIndex: j})
				}
			}
		}
	}
}

// intent turns a rule's retry and timeouts into the model, with the v1.7.0
// defaults applied.
func (r *resolver) intent(f *input.FieldErrors, field string, rule gwv1.HTTPRouteRule, key string, i int) (*translate.Retry, translate.Timeouts) {
	var t translate.Timeouts
	if rule.Timeouts != nil {
		t.Request = f.DurationField(field+".timeouts.request", rule.Timeouts.Request)
		t.BackendRequest = f.DurationField(field+".timeouts.backendRequest", rule.Timeouts.BackendRequest)
	}
	rt := rule.Retry
	if rt == nil {
		return nil, t
	}
	out := &translate.Retry{Attempts: 1}
	if rt.Attempts != nil {
		out.Attempts = *rt.Attempts
	}
	for _, c := range rt.Codes {
		out.Codes = append(out.Codes, int(c))
	}
	slices.Sort(out.Codes)
	out.Codes = slices.Compact(out.Codes)
	if b := f.DurationField(field+".retry.backoff", rt.Backoff); b != nil {
		if b.Value == 0 {
			r.info(fmt.Sprintf("HTTPRoute %s rule %d", key, i), "retry.backoff is 0s, which asks for no pause: treated as unset")
		} else {
			out.Backoff = b
		}
	}
	return out, t
}

func toMatch(m gwv1.HTTPRouteMatch) translate.Match {
	out := translate.Match{PathType: translate.PathPrefix, Path: "/"}
	if m.Path != nil {
		if m.Path.Type != nil {
			out.PathType = translate.PathMatchType(*m.Path.Type)
		}
		if m.Path.Value != nil {
			out.Path = *m.Path.Value
		}
	}
	if out.PathType == translate.PathPrefix && len(out.Path) > 1 {
		// "/a/" and "/a" match the same paths element-wise.
		out.Path = strings.TrimSuffix(out.Path, "/")
	}
	if m.Method != nil {
		out.Method = string(*m.Method)
	}
	for _, h := range m.Headers {
		t := translate.StringExact
		if h.Type != nil && *h.Type == gwv1.HeaderMatchRegularExpression {
			t = translate.StringRegex
		}
		name := strings.ToLower(string(h.Name))
		// "If multiple entries specify equivalent header names, only the
		// first entry with an equivalent name MUST be considered for a
		// match" (v1.7.0): the others are dropped.
		if slices.ContainsFunc(out.Headers, func(v translate.ValueMatch) bool { return v.Name == name }) {
			continue
		}
		out.Headers = append(out.Headers, translate.ValueMatch{Type: t, Name: name, Value: h.Value})
	}
	for _, q := range m.QueryParams {
		t := translate.StringExact
		if q.Type != nil && *q.Type == gwv1.QueryParamMatchRegularExpression {
			t = translate.StringRegex
		}
		// As for headers, the first of one name only (names compare
		// exactly: query parameter names are case-sensitive).
		if slices.ContainsFunc(out.Query, func(v translate.ValueMatch) bool { return v.Name == string(q.Name) }) {
			continue
		}
		out.Query = append(out.Query, translate.ValueMatch{Type: t, Name: string(q.Name), Value: q.Value})
	}
	return out
}

// backends resolves a rule's backendRefs into the valid ones with a
// positive weight and the invalid ones, which the Gateway API answers with
// 500. Errors in the input go to f.
func (r *resolver) backends(f *input.FieldErrors, field string, rt *gwv1.HTTPRoute, rule gwv1.HTTPRouteRule) ([]*translate.BackendRef, []translate.InvalidBackend) {
	var out []*translate.BackendRef
	var invalid []translate.InvalidBackend
	for j, b := range rule.BackendRefs {
		bf := fmt.Sprintf("%s.backendRefs[%d]", field, j)
		weight := 1
		if b.Weight != nil {
			weight = int(*b.Weight)
		}
		ref, reason := r.resolveRef(f, bf, rt, b.BackendObjectReference, weight)
		switch {
		case reason != "":
			invalid = append(invalid, translate.InvalidBackend{Index: j, Weight: weight, Reason: reason})
		case ref != nil:
			ref.Filters = r.filters(f, bf+".filters", rt, b.Filters)
			out = append(out, ref)
		}
	}
	return out, invalid
}

// resolveRef resolves one reference to a Service port. It returns the
// backend, or why it cannot receive traffic, or neither: an error in the
// input (reported to f) or a weight of 0, which takes no traffic.
func (r *resolver) resolveRef(f *input.FieldErrors, bf string, rt *gwv1.HTTPRoute, b gwv1.BackendObjectReference, weight int) (*translate.BackendRef, string) {
	routeNS := nsOrDefault(rt.Namespace)
	if (b.Group != nil && *b.Group != "") || (b.Kind != nil && *b.Kind != "Service") {
		group := ""
		if b.Group != nil {
			group = string(*b.Group)
		}
		return nil, fmt.Sprintf("a %s of group %q, and only core Services are translated", derefKind(b.Kind), group)
	}
	if b.Port == nil {
		f.Add(bf+".port", "required when the backend is a Service")
		return nil, ""
	}
	ns := routeNS
	if b.Namespace != nil {
		ns = string(*b.Namespace)
	}
	if ns != routeNS {
		switch {
		case r.opts.AssumeReferenceGrants:
			r.info("HTTPRoute "+routeKey(rt), "%s: the reference to namespace %s is assumed permitted (--assume-reference-grants)", bf, ns)
		case r.meshOnly[routeKey(rt)]:
			r.info("HTTPRoute "+routeKey(rt), "%s: the reference to namespace %s needs no ReferenceGrant: the route is attached to Services only, and a mesh route may send to any namespace (GEP-1426)", bf, ns)
		case !r.granted(routeNS, ns, string(b.Name)):
			return nil, fmt.Sprintf("no ReferenceGrant in namespace %s permits HTTPRoutes from %s to refer to Service %s (RefNotPermitted; --assume-reference-grants permits it)", ns, routeNS, b.Name)
		}
	}
	if weight == 0 {
		return nil, ""
	}
	eps, reason := r.endpoints(ns, string(b.Name), int(*b.Port))
	if reason != "" {
		return nil, reason
	}
	return &translate.BackendRef{Name: safeName(ns, string(b.Name), strconv.Itoa(int(*b.Port))),
		Service: ns + "/" + string(b.Name), Port: int(*b.Port), Weight: weight, Endpoints: eps}, ""
}

// granted reports whether a ReferenceGrant in toNS lets HTTPRoutes in fromNS
// refer to the Service named name.
func (r *resolver) granted(fromNS, toNS, name string) bool {
	return r.grantedTo(gwv1.GroupName, "HTTPRoute", fromNS, "", "Service", toNS, name)
}

// grantedTo reports whether a ReferenceGrant in toNS lets objects of
// fromGroup/fromKind in fromNS refer to the toGroup/toKind object named
// name.
func (r *resolver) grantedTo(fromGroup, fromKind, fromNS, toGroup, toKind, toNS, name string) bool {
	for _, g := range r.grants[toNS] {
		from, to := false, false
		for _, f := range g.Spec.From {
			if string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNS {
				from = true
			}
		}
		for _, t := range g.Spec.To {
			if string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || string(*t.Name) == name) {
				to = true
			}
		}
		if from && to {
			return true
		}
	}
	return false
}

// ruleMethods returns the methods a rule's matches select, sorted, or nil
// when some match (or the absence of matches) accepts any method.
func ruleMethods(matches []gwv1.HTTPRouteMatch) []string {
	if len(matches) == 0 {
		return nil
	}
	var out []string
	for _, m := range matches {
		if m.Method == nil {
			return nil
		}
		out = append(out, string(*m.Method))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// endpoints finds the addresses of a Service port: --endpoint, then the
// Service and its EndpointSlices in the input, then cluster DNS.
func (r *resolver) endpoints(ns, name string, port int) ([]translate.Endpoint, string) {
	for _, o := range r.opts.Endpoints {
		if o.Service == name && (o.Namespace == "" || o.Namespace == ns) && o.Port == port {
			return o.Endpoints, ""
		}
	}
	dns := []translate.Endpoint{{Host: name + "." + ns + ".svc.cluster.local", Port: port}}
	svc, ok := r.services[ns+"/"+name]
	if !ok {
		if len(r.services) > 0 {
			// The input describes the cluster's Services: one it lacks
			// does not exist (BackendNotFound).
			return nil, fmt.Sprintf("Service %s/%s is not in the input, which holds other Services (BackendNotFound; give it with --endpoint if it exists)", ns, name)
		}
		return dns, ""
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if int(svc.Spec.Ports[i].Port) == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil, fmt.Sprintf("Service %s/%s has no port %d", ns, name, port)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		if err := translate.CheckValue(translate.KindHost, svc.Spec.ExternalName); err != nil {
			return nil, fmt.Sprintf("Service %s/%s externalName: %v", ns, name, err)
		}
		return []translate.Endpoint{{Host: svc.Spec.ExternalName, Port: port}}, ""
	}
	slicesFor := r.slices[ns+"/"+name]
	if len(slicesFor) == 0 {
		return dns, ""
	}
	var eps []translate.Endpoint
	for _, s := range slicesFor {
		target := 0
		for _, p := range s.Ports {
			if p.Port != nil && ptrString(p.Name) == sp.Name {
				target = int(*p.Port)
			}
		}
		if target == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if err := translate.CheckValue(translate.KindHost, a); err != nil {
					return nil, fmt.Sprintf("EndpointSlice %s/%s: %v", ns, s.Name, err)
				}
				eps = append(eps, translate.Endpoint{Host: a, Port: target})
			}
		}
	}
	if len(eps) == 0 {
		return nil, fmt.Sprintf("the EndpointSlices of Service %s/%s have no ready endpoint for port %d", ns, name, port)
	}
	slices.SortFunc(eps, func(a, b translate.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(eps), ""
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// safeName joins parts with "_" into a name that passes the KindName
// allowlist; overlong names are shortened with a hash so they stay unique.
func safeName(parts ...string) string {
	s := strings.Join(parts, "_")
	if len(s) <= 200 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:180] + "_" + hex.EncodeToString(sum[:])[:16]
}

func (r *resolver) model() *translate.Model {
	m := &translate.Model{Rules: r.rules, MeshRules: r.meshRules, Skipped: r.skipped, RouteCount: r.routes, RuleCount: r.nrules, Notes: r.notes,
		Sources: r.sources, HTTPRoutes: r.routeObjs, CertSources: r.certSources}
	binds := make([]translate.Bind, 0, len(r.binds))
	for b := range r.binds {
		binds = append(binds, b)
	}
	slices.SortFunc(binds, func(a, b translate.Bind) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	unrouted := map[translate.Bind][]string{}
	for _, b := range binds {
		for _, l := range r.bindListeners[b] {
			if !r.attached[l] {
				unrouted[b] = append(unrouted[b], l)
			}
		}
		slices.Sort(unrouted[b])
		for _, l := range unrouted[b] {
			r.warnOnce(l, fmt.Sprintf("no route attaches to it, so gwretry generates nothing for its hostname on port %d: requests for it are served by the routes of less specific hostnames on that port, not answered 404 (and on HTTPS its SNI gets another listener's certificate)", b.Port))
		}
	}
	for rule, bs := range r.ruleTLSBinds {
		// A listener is at one bind, so the binds' lists are disjoint;
		// sorting and compacting keeps this linear in what is listed.
		for _, b := range bs {
			rule.TLSUnrouted = append(rule.TLSUnrouted, unrouted[b]...)
		}
		slices.Sort(rule.TLSUnrouted)
		rule.TLSUnrouted = slices.Compact(rule.TLSUnrouted)
	}
	m.Policies, m.Effective = r.finishPolicies()
	m.Notes = r.notes // the warnings above came after m was made
	names := map[string]bool{}
	for _, b := range binds {
		tls := r.bindTLS[b] == bindHTTPS && r.certs[b] != nil
		scheme := "http-"
		if tls {
			scheme = "https-"
		}
		name := scheme + strconv.Itoa(b.Port)
		if names[name] {
			name = scheme + strings.NewReplacer(".", "-", ":", "-").Replace(b.Address) + "-" + strconv.Itoa(b.Port)
		}
		names[name] = true
		l := &translate.Listener{Name: name, Address: b.Address, Port: b.Port, TLS: tls}
		hosts := r.binds[b]
		for _, h := range sortedHostnames(hosts) {
			vh := &translate.VirtualHost{Name: name + "_" + hostLabel(h), Hostname: h}
			if tls {
				vh.Certificate = r.certs[b][h]
			}
			// The routes of this hostname first, then those of every less
			// specific hostname that also covers it, down to the catch-all.
			for _, cover := range covering(h, hosts) {
				group := slices.Clone(hosts[cover])
				slices.SortStableFunc(group, comparePlaced)
				for _, p := range group {
					vh.Routes = append(vh.Routes, p.rm)
				}
			}
			l.VirtualHosts = append(l.VirtualHosts, vh)
		}
		m.Listeners = append(m.Listeners, l)
	}
	slices.SortFunc(m.Rules, func(a, b *translate.Rule) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Index, b.Index))
	})
	slices.SortFunc(m.MeshRules, translate.CompareRules)
	m.Mesh = r.meshAttachments()
	slices.SortFunc(m.Skipped, func(a, b translate.SkippedRule) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Index, b.Index))
	})
	return m
}

// hostLabel names a hostname inside a virtual host name. Hostnames never
// contain '_', so the labels of the catch-all ("any_") and of wildcards
// ("wildcard_.example.com") cannot collide with an exact hostname.
func hostLabel(h string) string {
	switch {
	case h == "":
		return "any_"
	case strings.HasPrefix(h, "*."):
		return "wildcard_" + h[1:]
	}
	return h
}

// sortedHostnames orders hostnames as VirtualHosts are: exact names
// alphabetically, then wildcards longest first, then "".
func sortedHostnames(hosts map[string][]*placed) []string {
	out := make([]string, 0, len(hosts))
	for h := range hosts {
		out = append(out, h)
	}
	slices.SortFunc(out, compareHostnames)
	return out
}

func hostRank(h string) int {
	switch {
	case h == "":
		return 2
	case strings.HasPrefix(h, "*."):
		return 1
	}
	return 0
}

func compareHostnames(a, b string) int {
	if c := cmp.Compare(hostRank(a), hostRank(b)); c != 0 {
		return c
	}
	if hostRank(a) == 1 {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

// covering returns h and every other hostname in hosts that matches all
// requests h matches, most specific first: the wildcards of h's parent
// domains, longest first, then the catch-all "". It looks each candidate up
// rather than scanning hosts, so building every virtual host stays linear
// in the number of hostnames.
func covering(h string, hosts map[string][]*placed) []string {
	out := []string{h}
	if h == "" {
		return out
	}
	rest := strings.TrimPrefix(h, "*.")
	for {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			break
		}
		rest = rest[i+1:]
		if w := "*." + rest; w != h {
			if _, ok := hosts[w]; ok && wildcardCovers(w, h) {
				out = append(out, w)
			}
		}
	}
	if _, ok := hosts[""]; ok {
		out = append(out, "")
	}
	return out
}

// comparePlaced orders matches by Gateway API precedence: Exact path, then
// RegularExpression, then the longest PathPrefix; then a method match; then
// more header matches; then more query matches; then the older route, its
// namespace/name, the rule index and the match index.
func comparePlaced(a, b *placed) int {
	ma, mb := a.rm.Match, b.rm.Match
	return cmp.Or(
		cmp.Compare(pathRank(ma.PathType), pathRank(mb.PathType)),
		cmp.Compare(len(mb.Path), len(ma.Path)),
		cmp.Compare(boolRank(ma.Method != ""), boolRank(mb.Method != "")),
		cmp.Compare(len(mb.Headers), len(ma.Headers)),
		cmp.Compare(len(mb.Query), len(ma.Query)),
		a.route.CreationTimestamp.Time.Compare(b.route.CreationTimestamp.Time),
		cmp.Compare(routeKey(a.route), routeKey(b.route)),
		cmp.Compare(a.rm.Rule.Index, b.rm.Rule.Index),
		cmp.Compare(a.matchIndex, b.matchIndex),
	)
}

func pathRank(t translate.PathMatchType) int {
	switch t {
	case translate.PathExact:
		return 0
	case translate.PathRegex:
		return 1
	}
	return 2
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}

// hostOrAny names hostname h in a message: "" is the catch-all.
func hostOrAny(h string) string {
	if h == "" {
		return "(any)"
	}
	return h
}
