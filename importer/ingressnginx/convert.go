package ingressnginx

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Options tune the import.
type Options struct {
	// ConfigMap holds the controller's defaults; nil means ingress-nginx's
	// built-in ones.
	ConfigMap *ConfigMap
	// Class is the controller's --ingress-class ("nginx" when empty): the
	// kubernetes.io/ingress.class annotation value it serves, and the name
	// of the Gateways every Ingress it serves is imported under.
	Class string
	// Controller is the controller's --controller-class
	// ("k8s.io/ingress-nginx" when empty): an IngressClass is served when
	// its spec.controller is this.
	Controller string
	// WatchWithoutClass is --watch-ingress-without-class: Ingresses that
	// name no class are served too.
	WatchWithoutClass bool
	// ClassByName is --ingress-class-by-name: the IngressClass named Class
	// is served whatever its spec.controller.
	ClassByName bool
}

// DefaultController is ingress-nginx's --controller-class default.
const DefaultController = "k8s.io/ingress-nginx"

// serves decides, as ingress-nginx's store.GetIngressClass does, whether
// the controller serves obj: spec.ingressClassName first, then the
// kubernetes.io/ingress.class annotation, then --watch-ingress-without-class.
// When it does not, why and its params (name, value pairs) say so, and
// field/value/source name what decided.
func (o Options) serves(obj *networkingv1.Ingress, classes map[string]*networkingv1.IngressClass) (ok bool, field, value string, source Source, why Reason, params []string) {
	if n := obj.Spec.IngressClassName; n != nil {
		field, value, source = "spec.ingressClassName", *n, FromSpec
		ic, found := classes[*n]
		switch {
		case found && (ic.Spec.Controller == o.Controller || o.ClassByName && *n == o.Class):
			return true, field, value, source, "", nil
		case found && *n == o.Class:
			return false, field, value, source, ReasonClassServedByName, []string{"controller", ic.Spec.Controller}
		case found:
			return false, field, value, source, ReasonClassOfOtherController, []string{"controller", ic.Spec.Controller, "controllerClass", o.Controller}
		case *n == o.Class:
			// The chart's IngressClass, assumed: the caller notes it.
			return true, field, value, source, "", nil
		}
		return false, field, value, source, ReasonClassNotInInput, []string{"ingressClass", o.Class, "controllerClass", o.Controller}
	}
	if v, found := obj.Annotations[classAnnotation]; found {
		field, value, source = fmt.Sprintf("metadata.annotations[%q]", classAnnotation), v, FromAnnotation
		if v == o.Class {
			return true, field, value, source, "", nil
		}
		return false, field, value, source, ReasonClassNotServed, []string{"ingressClass", o.Class}
	}
	if o.WatchWithoutClass {
		return true, "spec.ingressClassName", "", FromSpec, "", nil
	}
	// A default IngressClass does not help: the API server writes it into
	// spec.ingressClassName when an Ingress is created.
	return false, "spec.ingressClassName", "", FromSpec, ReasonNotServed, nil
}

const classAnnotation = "kubernetes.io/ingress.class"

// Result is the Gateway API output and its report.
type Result struct {
	Gateways []*gwv1.Gateway
	Routes   []*gwv1.HTTPRoute
	Report   *Report
	Notes    []translate.Note
	// Sources locates each Ingress ("namespace/name") in the input.
	Sources map[string]input.Position
}

// ingress is one Ingress being imported, with its effective settings.
type ingress struct {
	obj   *networkingv1.Ingress
	pos   input.Position
	ns    string
	key   string // namespace/name
	class string
	s     *settings
	regex bool
	// redirect are its settings of the redirect to HTTPS.
	redirect *redirect
}

func (ig *ingress) annotationField(name string) string {
	return fmt.Sprintf("metadata.annotations[%q]", Prefix+name)
}

// path is one Ingress path on its way to a rule.
type path struct {
	ing     *ingress
	ruleIdx int
	pathIdx int
	p       networkingv1.HTTPIngressPath
}

// group is the Ingress rules of one namespace, class and host: one
// HTTPRoute (ingress2gateway's ingressRuleGroup).
type group struct {
	ns, class, host string
	name            string
	first           *ingress // the Ingress the route is named after
	tls             []networkingv1.IngressTLS
	paths           []path
}

// Import converts the Ingresses of in.
func Import(in *Input, opts Options) (*Result, error) {
	if opts.Class == "" {
		opts.Class = "nginx"
	}
	if opts.Controller == "" {
		opts.Controller = DefaultController
	}
	if !nameRE.MatchString(opts.Class) {
		return nil, fmt.Errorf("ingress class %q: not a valid Gateway name (a DNS subdomain)", opts.Class)
	}
	classes := map[string]*networkingv1.IngressClass{}
	for _, c := range in.IngressClasses {
		classes[c.Obj.Name] = c.Obj
	}
	defaults, errs := defaultsFrom(opts.ConfigMap)
	rdefaults, rerrs := redirectDefaultsFrom(opts.ConfigMap)
	errs = append(errs, rerrs...)
	res := &Result{Report: &Report{SchemaVersion: SchemaVersion}, Sources: map[string]input.Position{}}
	if opts.ConfigMap != nil {
		res.Report.ConfigMap = opts.ConfigMap.Name
	}
	ports := servicePorts(in)
	var ings []*ingress
	for _, o := range in.Ingresses {
		ig, e := newIngress(o, defaults, opts, classes, res)
		errs = append(errs, e...)
		if ig != nil {
			ig.readRedirect(rdefaults, res)
			ings = append(ings, ig)
		}
	}
	res.Report.Ingresses = len(in.Ingresses)
	if len(errs) > 0 {
		return nil, errs
	}
	// use-regex (or rewrite-target) on one Ingress makes every path of its
	// host a regular expression: ingress-nginx writes one server per host.
	regexHosts := map[string]*ingress{} // class/host -> the first Ingress that asks
	for _, ig := range ings {
		if !ig.regex {
			continue
		}
		for _, r := range ig.obj.Spec.Rules {
			if _, ok := regexHosts[ig.class+"/"+r.Host]; !ok {
				regexHosts[ig.class+"/"+r.Host] = ig
			}
		}
	}
	sv := layOut(ings)
	groups, order := groupRules(ings)
	gateways := map[string]*gwv1.Gateway{}
	var gwOrder []string
	gatewayOf := func(ns, class string) *gwv1.Gateway {
		gwKey := ns + "/" + class
		gw, ok := gateways[gwKey]
		if !ok {
			gw = newGateway(ns, class)
			gateways[gwKey] = gw
			gwOrder = append(gwOrder, gwKey)
		}
		return gw
	}
	namedAfter := map[string]string{} // route -> Ingress
	for _, k := range order {
		g := groups[k]
		addListeners(gatewayOf(g.ns, g.class), g)
		route, redirect, e := toRoute(g, sv, ports, regexHosts, res)
		errs = append(errs, e...)
		if route != nil {
			res.Routes = append(res.Routes, route)
			namedAfter[routeKey(route)] = g.first.key
		}
		if redirect != nil {
			res.Routes = append(res.Routes, redirect)
			namedAfter[routeKey(redirect)] = g.first.key
		}
	}
	errs = append(errs, defaultBackends(sv, ports, res)...)
	if ig := sv.catchAll; ig != nil {
		gatewayOf(ig.ns, ig.class)
		route := newRoute(ig.ns, ig.obj.Name+"-default-backend", ig.class, "")
		ref, e := backendRef(ig, *ig.obj.Spec.DefaultBackend, "spec.defaultBackend", ports)
		if e != nil {
			errs = append(errs, e)
		} else {
			rule := gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: *ref}}}
			carryInto(&rule, ig, []*ingress{ig}, routeKey(route), 0, res)
			route.Spec.Rules = append(route.Spec.Rules, rule)
			res.Routes = append(res.Routes, route)
			namedAfter[routeKey(route)] = ig.key
		}
	}
	hostless(sv, namedAfter, res)
	if len(errs) > 0 {
		return nil, errs
	}
	sort.Strings(gwOrder)
	for _, k := range gwOrder {
		gw := gateways[k]
		if len(gw.Spec.Listeners) == 0 {
			gw.Spec.Listeners = []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}
		}
		res.Gateways = append(res.Gateways, gw)
	}
	slices.SortStableFunc(res.Routes, func(a, b *gwv1.HTTPRoute) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	res.Report.Routes = len(res.Routes)
	res.Report.Gateways = len(res.Gateways)
	// Every status follows from its record, decided once.
	for i := range res.Report.Findings {
		f := &res.Report.Findings[i]
		if err := report.CheckImport(f.Reason, f.Params, f.Caveats); err != nil {
			return nil, fmt.Errorf("internal error: %s %s: %w", f.Ingress, f.Annotation, err)
		}
		f.Status = Status(report.ImportStatus(f.Reason, f.Caveats))
	}
	sortFindings(res.Report.Findings)
	if res.Report.Findings == nil {
		res.Report.Findings = []Finding{}
	}
	return res, nil
}

// newIngress reads one Ingress's class and settings. Canary Ingresses are
// not imported (nil, with a finding).
func newIngress(o input.Object[networkingv1.Ingress], defaults map[string]value, opts Options, classes map[string]*networkingv1.IngressClass, res *Result) (*ingress, input.ErrorList) {
	obj := o.Obj
	ns := obj.Namespace
	if ns == "" {
		ns = "default"
	}
	ig := &ingress{obj: obj, pos: o.Pos, ns: ns, key: ns + "/" + obj.Name, s: &settings{values: map[string]value{}}}
	res.Sources[ig.key] = o.Pos
	object := "Ingress " + ig.key
	var errs input.ErrorList
	bad := func(name, msg string) {
		errs = append(errs, &input.InputError{Pos: o.Pos, Object: object, Field: ig.annotationField(name), Msg: msg})
	}
	ann := obj.Annotations
	// Every Ingress the controller serves shares its one set of servers:
	// they are imported under one class, the controller's.
	ig.class = opts.Class
	served, field, val, src, why, params := opts.serves(obj, classes)
	if !served {
		res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: field, Source: src, Value: val, Rule: -1}.record(why, params...))
		return nil, nil
	}
	if n := obj.Spec.IngressClassName; n != nil && classes[*n] == nil {
		res.Notes = append(res.Notes, translate.Info(object, "IngressClass %s is not in the input: imported as the one the ingress-nginx chart installs (spec.controller %s)", *n, opts.Controller))
	}
	if v, ok := ann[Prefix+Canary]; ok {
		if b, err := strconv.ParseBool(v); err != nil {
			bad(Canary, fmt.Sprintf("%q: want true or false", v))
		} else if b {
			res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: Prefix + Canary, Source: FromAnnotation, Value: v, Rule: -1}.record(ReasonCanaryNotImported))
			return nil, errs
		}
	}
	for _, name := range retrySettings {
		if raw, ok := ann[Prefix+name]; ok && rejectedByIngressNginx(name, raw) {
			// ingress-nginx keeps the Ingress and serves the ConfigMap's
			// value or its default: imported the same way, said once.
			d := defaults[name]
			ig.s.parseSetting(name, d.raw) // checked by defaultsFrom
			ig.s.values[name] = d
			res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: Prefix + name, Source: FromAnnotation, Value: raw, Rule: -1}.record(
				ReasonInvalidValueIgnored, "accepts", validationOf(name), "fallback", d.raw, "fallbackSource", string(d.source)))
			continue
		}
		if raw, ok := ann[Prefix+name]; ok {
			if msg := ig.s.parseSetting(name, raw); msg != "" {
				bad(name, msg)
				continue
			}
			ig.s.values[name] = value{raw: raw, source: FromAnnotation}
			continue
		}
		d := defaults[name]
		ig.s.parseSetting(name, d.raw) // checked by defaultsFrom
		ig.s.values[name] = d
	}
	if d := defaults[RetryNonIdempotent]; d.source == FromConfigMap {
		ig.s.parseSetting(RetryNonIdempotent, d.raw)
		ig.s.values[RetryNonIdempotent] = d
	}
	if v, ok := ann[Prefix+UseRegex]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad(UseRegex, fmt.Sprintf("%q: want true or false", v))
		}
		ig.regex = b
		f := Finding{Ingress: ig.key, Annotation: Prefix + UseRegex, Source: FromAnnotation, Value: v, Rule: -1}.record(ReasonPathTypesKept)
		if b {
			// Exact paths stay Exact: each rule's finding says how
			// ingress-nginx matched them (ExactMatchedAsRegex).
			f = f.record(ReasonPathsBecomeRegexes)
		}
		res.Report.Findings = append(res.Report.Findings, f)
	}
	if ann[Prefix+RewriteTarget] != "" {
		ig.regex = true
	}
	// Every other ingress-nginx annotation is reported as not carried.
	names := make([]string, 0, len(ann))
	for k := range ann {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		name, ok := strings.CutPrefix(k, Prefix)
		if !ok || slices.Contains(retrySettings, name) || name == UseRegex || name == Canary {
			continue
		}
		r := ReasonAnnotationNotCarried
		if name == RewriteTarget {
			r = ReasonRewriteTargetDropped
		}
		res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: k, Source: FromAnnotation, Value: ann[k], Rule: -1}.record(r))
	}
	return ig, errs
}

// nameRE is what a Gateway name and parentRef accept (a DNS subdomain).
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// groupRules groups the Ingress rules by namespace, class and host, in the
// sorted order of those keys, as ingress2gateway does.
func groupRules(ings []*ingress) (map[string]*group, []string) {
	groups := map[string]*group{}
	var order []string
	for _, ig := range ings {
		for ri, r := range ig.obj.Spec.Rules {
			k := ig.ns + "/" + ig.class + "/" + r.Host
			g, ok := groups[k]
			if !ok {
				g = &group{ns: ig.ns, class: ig.class, host: r.Host, name: ig.obj.Name, first: ig}
				groups[k] = g
				order = append(order, k)
			}
			g.tls = append(g.tls, ig.obj.Spec.TLS...)
			if r.HTTP == nil {
				continue
			}
			for pi, p := range r.HTTP.Paths {
				g.paths = append(g.paths, path{ing: ig, ruleIdx: ri, pathIdx: pi, p: p})
			}
		}
	}
	sort.Strings(order)
	return groups, order
}

func newGateway(ns, class string) *gwv1.Gateway {
	gw := &gwv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: class},
		Spec:       gwv1.GatewaySpec{GatewayClassName: gwv1.ObjectName(class)},
	}
	return gw
}

// addListeners adds the group's HTTP listener (and HTTPS listener when its
// Ingresses have TLS) to the Gateway, once per host.
func addListeners(gw *gwv1.Gateway, g *group) {
	host := g.host
	if host == "" && len(g.tls) == 1 && len(g.tls[0].Hosts) == 1 {
		host = g.tls[0].Hosts[0]
	}
	prefix := listenerPrefix(g)
	var hostname *gwv1.Hostname
	if host != "" {
		h := gwv1.Hostname(host)
		hostname = &h
	}
	has := func(name string) bool {
		return slices.ContainsFunc(gw.Spec.Listeners, func(l gwv1.Listener) bool { return string(l.Name) == name })
	}
	if !has(prefix + "http") {
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: gwv1.SectionName(prefix + "http"), Hostname: hostname, Port: 80, Protocol: gwv1.HTTPProtocolType})
	}
	if len(g.tls) == 0 {
		return
	}
	var certs []string
	for _, t := range g.tls {
		if t.SecretName != "" && !slices.Contains(certs, t.SecretName) {
			certs = append(certs, t.SecretName)
		}
	}
	sort.Strings(certs)
	name := prefix + "https"
	i := slices.IndexFunc(gw.Spec.Listeners, func(l gwv1.Listener) bool { return string(l.Name) == name })
	if i < 0 {
		gw.Spec.Listeners = append(gw.Spec.Listeners, gwv1.Listener{Name: gwv1.SectionName(name), Hostname: hostname, Port: 443,
			Protocol: gwv1.HTTPSProtocolType, TLS: &gwv1.ListenerTLSConfig{}})
		i = len(gw.Spec.Listeners) - 1
	}
	tls := gw.Spec.Listeners[i].TLS
	for _, c := range certs {
		if !slices.ContainsFunc(tls.CertificateRefs, func(r gwv1.SecretObjectReference) bool { return string(r.Name) == c }) {
			group, kind := gwv1.Group(""), gwv1.Kind("Secret")
			tls.CertificateRefs = append(tls.CertificateRefs, gwv1.SecretObjectReference{Group: &group, Kind: &kind, Name: gwv1.ObjectName(c)})
		}
	}
}

var nonAlnum = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// nameFromHost is ingress2gateway's NameFromHost: "foo.example.com" ->
// "foo-example-com", "" or "*" -> "all-hosts".
func nameFromHost(host string) string {
	if host == "" || host == "*" {
		return "all-hosts"
	}
	return strings.TrimLeft(nonAlnum.ReplaceAllString(host, "-"), "-")
}

func newRoute(ns, name, class, host string) *gwv1.HTTPRoute {
	r := &gwv1.HTTPRoute{
		TypeMeta:   metav1.TypeMeta{APIVersion: gwv1.GroupVersion.String(), Kind: "HTTPRoute"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
	}
	r.Spec.ParentRefs = []gwv1.ParentReference{{Name: gwv1.ObjectName(class)}}
	if host != "" {
		r.Spec.Hostnames = []gwv1.Hostname{gwv1.Hostname(host)}
	}
	return r
}

func routeKey(r *gwv1.HTTPRoute) string { return r.Namespace + "/" + r.Name }

// toRoute builds the group's HTTPRoute: one rule per distinct path type
// and path, with the backends of every Ingress path that has them.
//
// The second route, when not nil, redirects plain HTTP to HTTPS
// (sslRedirects).
func toRoute(g *group, sv *servers, ports map[string]map[string]int32, regexHosts map[string]*ingress, res *Result) (*gwv1.HTTPRoute, *gwv1.HTTPRoute, input.ErrorList) {
	route := newRoute(g.ns, g.name+"-"+nameFromHost(g.host), g.class, g.host)
	var owners []*ingress // the Ingress whose settings each rule has
	var errs input.ErrorList
	type ruleAt struct {
		rule gwv1.HTTPRouteRule
		ings []*ingress
		// paths are the Ingress paths of rule.BackendRefs, one each.
		paths []path
	}
	var keys []string
	rules := map[string]*ruleAt{}
	regexBy, regex := regexHosts[g.class+"/"+g.host]
	regexAnn, regexVal := Prefix+UseRegex, ""
	if regex {
		regexVal = regexBy.obj.Annotations[regexAnn]
		if b, _ := strconv.ParseBool(regexVal); !b {
			regexAnn = Prefix + RewriteTarget
			regexVal = regexBy.obj.Annotations[regexAnn]
		}
	}
	for _, p := range g.paths {
		field := fmt.Sprintf("spec.rules[%d].http.paths[%d]", p.ruleIdx, p.pathIdx)
		if p.p.PathType == nil {
			errs = append(errs, &input.InputError{Pos: p.ing.pos, Object: "Ingress " + p.ing.key, Field: field + ".pathType", Msg: "required"})
			continue
		}
		key := string(*p.p.PathType) + "/" + pathValue(p.p.Path)
		if owner := sv.path[g.host+"/"+key]; owner.ns != g.ns {
			// ingress-nginx has one server per host across namespaces:
			// an Ingress of another namespace has this location.
			res.Report.Findings = append(res.Report.Findings, Finding{Ingress: p.ing.key, Annotation: field + ".backend",
				Source: FromSpec, Value: backendName(p.p.Backend), Route: routeKey(route), Rule: -1}.record(ReasonOtherNamespaceServes,
				"pathType", string(*p.p.PathType), "path", pathValue(p.p.Path), "host", hostName(g.host), "servedBy", owner.key))
			continue
		}
		ra, ok := rules[key]
		if !ok {
			match, err := toMatch(p, regex)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			ra = &ruleAt{rule: gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{match}}}
			rules[key] = ra
			keys = append(keys, key)
			if *p.p.PathType == networkingv1.PathTypeImplementationSpecific && !regex {
				res.Report.Findings = append(res.Report.Findings, Finding{Ingress: p.ing.key, Annotation: field + ".pathType", Source: FromSpec,
					Value: "ImplementationSpecific", Route: routeKey(route), Rule: len(keys) - 1}.record(ReasonImplementationSpecificAsPrefix,
					"path", pathValue(p.p.Path), "alsoMatched", strings.TrimSuffix(pathValue(p.p.Path), "/")+"x"))
			}
			if regex && *p.p.PathType == networkingv1.PathTypeExact {
				res.Report.Findings = append(res.Report.Findings, Finding{Ingress: p.ing.key, Annotation: regexAnn, Source: FromAnnotation, Value: regexVal,
					Route: routeKey(route), Rule: len(keys) - 1}.record(ReasonExactMatchedAsRegex, "path", pathValue(p.p.Path)))
			}
			if regex && *p.p.PathType != networkingv1.PathTypeExact {
				res.Report.Findings = append(res.Report.Findings, Finding{Ingress: p.ing.key, Annotation: regexAnn, Source: FromAnnotation, Value: regexVal,
					Route: routeKey(route), Rule: len(keys) - 1}.record(ReasonRegexSemanticsDiffer,
					"regex", *match.Path.Value, "path", pathValue(p.p.Path), "setBy", regexBy.key))
			}
		}
		if !slices.Contains(ra.ings, p.ing) {
			ra.ings = append(ra.ings, p.ing)
		}
		if p.p.Backend.Service == nil && p.p.Backend.Resource == nil {
			errs = append(errs, &input.InputError{Pos: p.ing.pos, Object: "Ingress " + p.ing.key, Field: field + ".backend", Msg: "required: a service or a resource"})
			continue
		}
		ref, err := backendRef(p.ing, p.p.Backend, field+".backend", ports)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ra.rule.BackendRefs = append(ra.rule.BackendRefs, gwv1.HTTPBackendRef{BackendRef: *ref})
		ra.paths = append(ra.paths, p)
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	for i, k := range keys {
		ra := rules[k]
		// ingress-nginx serves a host and path from one Ingress only: the
		// first in its order (servedFirst); the others' backends get none
		// of that path's traffic.
		owner := sv.path[g.host+"/"+k]
		var refs []gwv1.HTTPBackendRef
		for j, ref := range ra.rule.BackendRefs {
			p := ra.paths[j]
			if p.ing == owner {
				refs = append(refs, ref)
				continue
			}
			res.Report.Findings = append(res.Report.Findings, Finding{Ingress: p.ing.key, Annotation: fmt.Sprintf("spec.rules[%d].http.paths[%d].backend", p.ruleIdx, p.pathIdx),
				Source: FromSpec, Value: backendName(p.p.Backend), Route: routeKey(route), Rule: i}.record(ReasonOtherIngressServes, "servedBy", owner.key))
		}
		ra.rule.BackendRefs = refs
		carryInto(&ra.rule, owner, ra.ings, routeKey(route), i, res)
		route.Spec.Rules = append(route.Spec.Rules, ra.rule)
		owners = append(owners, owner)
	}
	if ig := sv.def[g.host]; ig != nil && ig.ns == g.ns {
		// The host's server was created by an Ingress with a
		// defaultBackend: its "/" location, which no path replaced.
		ref, err := backendRef(ig, *ig.obj.Spec.DefaultBackend, "spec.defaultBackend", ports)
		if err != nil {
			return nil, nil, input.ErrorList{err}
		}
		t, v := gwv1.PathMatchPathPrefix, "/"
		rule := gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &t, Value: &v}}},
			BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: *ref}}}
		i := len(route.Spec.Rules)
		carryInto(&rule, ig, []*ingress{ig}, routeKey(route), i, res)
		route.Spec.Rules = append(route.Spec.Rules, rule)
		owners = append(owners, ig)
		res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: "spec.defaultBackend", Source: FromSpec,
			Value: backendName(*ig.obj.Spec.DefaultBackend), Route: routeKey(route), Rule: i}.record(ReasonDefaultBackendCarried, "host", g.host))
	}
	if len(route.Spec.Rules) == 0 {
		return nil, nil, nil
	}
	rd := sslRedirects(g, route, owners, res)
	bareRedirects(route, owners, res)
	return route, rd, nil
}

// bareRedirects adds, for each PathPrefix /foo/ rule (a Prefix path that
// ends in /), a rule for Exact /foo that answers 301 with /foo/: a
// PathPrefix ignores the trailing / and sends /foo to the backend, where
// ingress-nginx's location "/foo/" does not match /foo and nginx answers
// it 301 to /foo/ (ngx_http_core_module: a prefix location ending in /
// served by proxy_pass). Not when a rule of the route matches /foo itself.
func bareRedirects(route *gwv1.HTTPRoute, owners []*ingress, res *Result) {
	n := len(route.Spec.Rules)
	for i := 0; i < n; i++ {
		r := route.Spec.Rules[i]
		if len(r.Matches) != 1 || r.Matches[0].Path == nil || *r.Matches[0].Path.Type != gwv1.PathMatchPathPrefix {
			continue
		}
		v := *r.Matches[0].Path.Value
		bare, ok := strings.CutSuffix(v, "/")
		if !ok || bare == "" || strings.HasSuffix(bare, "/") || matchedExactly(route, bare) {
			continue
		}
		exact, full, code := gwv1.PathMatchExact, v, 301
		route.Spec.Rules = append(route.Spec.Rules, gwv1.HTTPRouteRule{
			Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &exact, Value: &bare}}},
			Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
				Path: &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: &full}, StatusCode: &code}}}})
		ig := owners[i]
		res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: "pathType", Source: FromSpec, Value: "Prefix " + v,
			Route: routeKey(route), Rule: len(route.Spec.Rules) - 1}.record(ReasonBarePathRedirected, "path", v, "bare", bare))
	}
}

// matchedExactly reports whether a rule of route matches path by an
// Exact or PathPrefix match of path itself.
func matchedExactly(route *gwv1.HTTPRoute, path string) bool {
	for _, r := range route.Spec.Rules {
		for _, m := range r.Matches {
			if m.Path != nil && m.Path.Type != nil && *m.Path.Type != gwv1.PathMatchRegularExpression && *m.Path.Value == path {
				return true
			}
		}
	}
	return false
}

// hostName is a host as a finding names it: "_" for the catch-all
// server, as nginx names it.
func hostName(h string) string {
	if h == "" {
		return "_"
	}
	return h
}

// servers is how ingress-nginx lays out the Ingresses it serves
// (createServers, getBackendServers): one server per host across
// namespaces, created by the first Ingress of its order with the host;
// one location per path and path type, from the first Ingress that has it.
type servers struct {
	order []*ingress
	// host maps a host ("" for the catch-all server _) to the Ingress that
	// created its server.
	host map[string]*ingress
	// path maps "host/pathType/path" to the Ingress whose location it is.
	path map[string]*ingress
	// def maps a host to the Ingress whose spec.defaultBackend serves the
	// paths no location of the host matches.
	def map[string]*ingress
	// catchAll is the first Ingress with a defaultBackend and no rules:
	// the catch-all server's / location.
	catchAll *ingress
}

func layOut(ings []*ingress) *servers {
	sv := &servers{order: slices.Clone(ings), host: map[string]*ingress{}, path: map[string]*ingress{}, def: map[string]*ingress{}}
	slices.SortStableFunc(sv.order, func(a, b *ingress) int {
		switch {
		case servedFirst(a, b):
			return -1
		case servedFirst(b, a):
			return 1
		}
		return 0
	})
	for _, ig := range sv.order {
		db := ig.obj.Spec.DefaultBackend
		if db != nil && db.Service != nil && len(ig.obj.Spec.Rules) == 0 && sv.catchAll == nil {
			sv.catchAll = ig
		}
		for _, r := range ig.obj.Spec.Rules {
			if _, ok := sv.host[r.Host]; !ok && r.Host != "" {
				sv.host[r.Host] = ig
			}
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.PathType == nil {
					continue
				}
				k := r.Host + "/" + string(*p.PathType) + "/" + pathValue(p.Path)
				if _, ok := sv.path[k]; !ok {
					sv.path[k] = ig
				}
			}
		}
	}
	for h, ig := range sv.host {
		db := ig.obj.Spec.DefaultBackend
		if db != nil && db.Service != nil && sv.path[h+"/Prefix//"] == nil {
			sv.def[h] = ig
		}
	}
	return sv
}

// defaultBackends reports each spec.defaultBackend that ingress-nginx did
// not use (or used for fewer hosts than the Ingress has).
func defaultBackends(sv *servers, ports map[string]map[string]int32, res *Result) input.ErrorList {
	var errs input.ErrorList
	for _, ig := range sv.order {
		db := ig.obj.Spec.DefaultBackend
		if db == nil {
			continue
		}
		if _, e := backendRef(ig, *db, "spec.defaultBackend", ports); e != nil {
			errs = append(errs, e)
			continue
		}
		not := func(r Reason, kv ...string) {
			res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: "spec.defaultBackend", Source: FromSpec,
				Value: backendName(*db), Rule: -1}.record(r, kv...))
		}
		switch {
		case db.Service == nil:
			not(ReasonDefaultBackendUnused)
			continue
		case len(ig.obj.Spec.Rules) == 0 && sv.catchAll != ig:
			not(ReasonDefaultBackendNotFirst, "servedBy", sv.catchAll.key)
			continue
		case len(ig.obj.Spec.Rules) == 0:
			continue
		}
		var seen []string
		for _, r := range ig.obj.Spec.Rules {
			if slices.Contains(seen, r.Host) {
				continue
			}
			seen = append(seen, r.Host)
			switch {
			case r.Host == "":
				// The catch-all server's / location comes from the
				// controller's default backend or the first Ingress
				// without rules, never from this defaultBackend.
				not(ReasonDefaultBackendNotForCatchAll)
			case sv.host[r.Host] != ig:
				not(ReasonDefaultBackendOtherServer, "host", r.Host, "servedBy", sv.host[r.Host].key)
			case sv.def[r.Host] == nil:
				not(ReasonDefaultBackendReplaced, "host", r.Host, "replacedBy", sv.path[r.Host+"/Prefix//"].key)
			}
		}
	}
	return errs
}

// hostless reports the routes without hostnames (the catch-all route and
// the rules of Ingress rules without a host): ingress-nginx put them in
// its catch-all server _, which only takes requests for hosts no server
// has, where an HTTPRoute without hostnames also takes the paths that the
// routes of the Gateway's hosts do not match.
func hostless(sv *servers, namedAfter map[string]string, res *Result) {
	hasRoot := map[string]bool{} // namespace/host -> its route has PathPrefix "/"
	for _, r := range res.Routes {
		for _, rule := range r.Spec.Rules {
			for _, m := range rule.Matches {
				if m.Path != nil && *m.Path.Type == gwv1.PathMatchPathPrefix && *m.Path.Value == "/" && len(r.Spec.Hostnames) == 1 {
					hasRoot[r.Namespace+"/"+string(r.Spec.Hostnames[0])] = true
				}
			}
		}
	}
	for _, r := range res.Routes {
		if len(r.Spec.Hostnames) != 0 {
			continue
		}
		var exposed, others []string
		for h, ig := range sv.host {
			switch {
			case ig.ns != r.Namespace:
				others = append(others, h)
			case !hasRoot[r.Namespace+"/"+h]:
				exposed = append(exposed, h)
			}
		}
		if len(exposed) == 0 && len(others) == 0 {
			continue
		}
		sort.Strings(exposed)
		sort.Strings(others)
		field := "spec.rules[].host"
		if sv.catchAll != nil && namedAfter[routeKey(r)] == sv.catchAll.key && len(r.Spec.Rules) == 1 && len(r.Spec.Rules[0].Matches) == 0 {
			field = "spec.defaultBackend"
		}
		f := Finding{Ingress: namedAfter[routeKey(r)], Annotation: field, Source: FromSpec, Value: "", Route: routeKey(r), Rule: -1}
		// ingress-nginx's catch-all server _ served only the hosts no
		// server had: on the Gateway, the route also takes the paths no
		// rule of the exposed hosts matches (ingress-nginx answered them
		// 404 from the controller's default backend); the Gateway is its
		// namespace's only, so requests for the other namespaces' hosts
		// do not reach it.
		if len(exposed) > 0 {
			res.Report.Findings = append(res.Report.Findings, f.record(ReasonCatchAllHost,
				"gateway", r.Namespace+"/"+string(r.Spec.ParentRefs[0].Name), "hosts", strings.Join(exposed, ", ")))
		}
		if len(others) > 0 {
			res.Report.Findings = append(res.Report.Findings, f.record(ReasonCatchAllOtherNamespaces, "hosts", strings.Join(others, ", ")))
		}
	}
}

// servedFirst reports whether ingress-nginx handles a before b
// (store.sortIngressSlice): by creationTimestamp, then by namespace/name
// in reverse order.
func servedFirst(a, b *ingress) bool {
	ta, tb := a.obj.CreationTimestamp, b.obj.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.key > b.key
}

func backendName(b networkingv1.IngressBackend) string {
	switch {
	case b.Service == nil && b.Resource != nil:
		return b.Resource.Kind + " " + b.Resource.Name
	case b.Service == nil:
		return ""
	case b.Service.Port.Name != "":
		return b.Service.Name + ":" + b.Service.Port.Name
	}
	return fmt.Sprintf("%s:%d", b.Service.Name, b.Service.Port.Number)
}

func pathValue(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// toMatch converts an Ingress path: Prefix and Exact as they are,
// ImplementationSpecific as PathPrefix, and every path but Exact ones as
// "(?i)PATH.*" on a host with use-regex (ingress2gateway's forms).
func toMatch(p path, regex bool) (gwv1.HTTPRouteMatch, *input.InputError) {
	v := pathValue(p.p.Path)
	var t gwv1.PathMatchType
	switch *p.p.PathType {
	case networkingv1.PathTypeExact:
		t = gwv1.PathMatchExact
	case networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific:
		t = gwv1.PathMatchPathPrefix
		if regex {
			t = gwv1.PathMatchRegularExpression
			v = "(?i)" + v + ".*"
		}
	default:
		return gwv1.HTTPRouteMatch{}, &input.InputError{Pos: p.ing.pos, Object: "Ingress " + p.ing.key,
			Field: fmt.Sprintf("spec.rules[%d].http.paths[%d].pathType", p.ruleIdx, p.pathIdx),
			Msg:   fmt.Sprintf("%q: want Exact, Prefix or ImplementationSpecific", *p.p.PathType)}
	}
	return gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &t, Value: &v}}, nil
}

// servicePorts maps "namespace/name" of each Service to its port numbers
// by port name.
func servicePorts(in *Input) map[string]map[string]int32 {
	out := map[string]map[string]int32{}
	for _, o := range in.Services {
		ns := o.Obj.Namespace
		if ns == "" {
			ns = "default"
		}
		m := map[string]int32{}
		for _, p := range o.Obj.Spec.Ports {
			m[p.Name] = p.Port
		}
		out[ns+"/"+o.Obj.Name] = m
	}
	return out
}

// backendRef converts an Ingress backend; a named port is looked up in
// the Services of the input.
func backendRef(ig *ingress, b networkingv1.IngressBackend, field string, ports map[string]map[string]int32) (*gwv1.BackendRef, *input.InputError) {
	if b.Service == nil {
		if b.Resource == nil {
			return nil, &input.InputError{Pos: ig.pos, Object: "Ingress " + ig.key, Field: field, Msg: "required: a service or a resource"}
		}
		kind := gwv1.Kind(b.Resource.Kind)
		ref := &gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Kind: &kind, Name: gwv1.ObjectName(b.Resource.Name)}}
		if b.Resource.APIGroup != nil {
			g := gwv1.Group(*b.Resource.APIGroup)
			ref.Group = &g
		}
		return ref, nil
	}
	port := b.Service.Port.Number
	if b.Service.Port.Name != "" {
		n, ok := ports[ig.ns+"/"+b.Service.Name][b.Service.Port.Name]
		if !ok {
			return nil, &input.InputError{Pos: ig.pos, Object: "Ingress " + ig.key, Field: field + ".service.port.name",
				Msg: fmt.Sprintf("port %q of Service %s/%s: give the Service in the input (or a port number) to resolve it", b.Service.Port.Name, ig.ns, b.Service.Name)}
		}
		port = n
	}
	p := gwv1.PortNumber(port)
	return &gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(b.Service.Name), Port: &p}}, nil
}
