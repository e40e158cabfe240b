package ingressnginx

import (
	"fmt"
	"slices"
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
)

// The settings of ingress-nginx's redirect of plain HTTP to HTTPS: each
// an annotation and a ConfigMap key (rewrite/main.go), except
// http-redirect-code, which only the ConfigMap has.
const (
	SSLRedirect           = "ssl-redirect"
	ForceSSLRedirect      = "force-ssl-redirect"
	PreserveTrailingSlash = "preserve-trailing-slash"
	HTTPRedirectCode      = "http-redirect-code"
)

// redirectSettings are the boolean settings, in report order.
var redirectSettings = []string{SSLRedirect, ForceSSLRedirect, PreserveTrailingSlash}

// redirectDefaults are ingress-nginx's built-in values (config.go,
// v1.15.1: SSLRedirect true, ForceSSLRedirect false,
// PreserveTrailingSlash false, HTTPRedirectCode 308).
var redirectDefaults = map[string]string{SSLRedirect: "true", ForceSSLRedirect: "false", PreserveTrailingSlash: "false", HTTPRedirectCode: "308"}

// redirect is one Ingress's redirect settings and where each came from.
type redirect struct {
	values map[string]value
	on     map[string]bool
	code   int
}

// redirectDefaultsFrom are the redirect settings an Ingress does not
// annotate: the ConfigMap's, else the built-in ones. A ConfigMap boolean
// that is not one is an error; an http-redirect-code other than 301, 302,
// 307 or 308 is ignored, as ingress-nginx ignores it (configmap.go).
func redirectDefaultsFrom(cm *ConfigMap) (map[string]value, input.ErrorList) {
	out := map[string]value{}
	for k, v := range redirectDefaults {
		out[k] = value{raw: v, source: FromDefault}
	}
	if cm == nil {
		return out, nil
	}
	var errs input.ErrorList
	for _, k := range redirectSettings {
		raw, ok := cm.Data[k]
		if !ok {
			continue
		}
		if _, err := strconv.ParseBool(raw); err != nil {
			errs = append(errs, &input.InputError{Pos: cm.Pos, Object: "ConfigMap " + cm.Name, Field: "data." + k, Msg: fmt.Sprintf("%q: want true or false", raw)})
			continue
		}
		out[k] = value{raw: raw, source: FromConfigMap}
	}
	if raw, ok := cm.Data[HTTPRedirectCode]; ok {
		if n, err := strconv.Atoi(raw); err == nil && slices.Contains([]int{301, 302, 307, 308}, n) {
			out[HTTPRedirectCode] = value{raw: raw, source: FromConfigMap}
		}
	}
	return out, errs
}

// readRedirect reads an Ingress's redirect annotations over defaults. A
// value that is not a boolean falls back to the default, as ingress-nginx's
// rewrite parser does, with an InvalidValueIgnored finding.
func (ig *ingress) readRedirect(defaults map[string]value, res *Result) {
	r := &redirect{values: map[string]value{}, on: map[string]bool{}}
	for _, k := range redirectSettings {
		v := defaults[k]
		if raw, ok := ig.obj.Annotations[Prefix+k]; ok {
			if _, err := strconv.ParseBool(raw); err == nil {
				v = value{raw: raw, source: FromAnnotation}
			} else {
				res.Report.Findings = append(res.Report.Findings, Finding{Ingress: ig.key, Annotation: Prefix + k, Source: FromAnnotation, Value: raw, Rule: -1}.record(
					ReasonInvalidValueIgnored, "accepts", "true or false", "fallback", v.raw, "fallbackSource", string(v.source)))
			}
		}
		r.values[k] = v
		r.on[k], _ = strconv.ParseBool(v.raw)
	}
	r.code, _ = strconv.Atoi(defaults[HTTPRedirectCode].raw)
	ig.redirect = r
}

// sslRedirects makes plain HTTP redirect to HTTPS where ingress-nginx
// does (lua_ingress.lua, redirect_to_https): force-ssl-redirect, or
// ssl-redirect (true by default) on a host with a certificate. The route
// of such a host then serves on its HTTPS listener only, and a route
// named ROUTE-ssl-redirect answers the same paths on its HTTP listener
// with http-redirect-code (308 by default) to https. owners are the
// Ingresses whose settings each rule of route has.
func sslRedirects(g *group, route *gwv1.HTTPRoute, owners []*ingress, res *Result) *gwv1.HTTPRoute {
	hasTLS := len(g.tls) > 0
	var redirecting []int
	for i, ig := range owners {
		r := ig.redirect
		switch {
		case r.on[ForceSSLRedirect] && !hasTLS:
			// ingress-nginx redirected to HTTPS, served with its default
			// certificate; the Gateway has no HTTPS listener for the host.
			res.Report.Findings = append(res.Report.Findings, ig.redirectFinding(ForceSSLRedirect, route, i).record(ReasonHTTPSRedirectWithoutTLS))
		case r.on[ForceSSLRedirect] || r.on[SSLRedirect] && hasTLS:
			redirecting = append(redirecting, i)
		}
	}
	if len(redirecting) == 0 {
		return nil
	}
	if len(redirecting) < len(owners) {
		for _, i := range redirecting {
			ig := owners[i]
			res.Report.Findings = append(res.Report.Findings, ig.redirectFinding(ig.redirectKey(), route, i).record(ReasonHTTPSRedirectNotCarried))
		}
		return nil
	}
	prefix := listenerPrefix(g)
	https, http := gwv1.SectionName(prefix+"https"), gwv1.SectionName(prefix+"http")
	route.Spec.ParentRefs[0].SectionName = &https
	rd := newRoute(route.Namespace, route.Name+"-ssl-redirect", g.class, g.host)
	rd.Spec.ParentRefs[0].SectionName = &http
	scheme := "https"
	for i, rule := range route.Spec.Rules {
		ig := owners[i]
		code := ig.redirect.code
		rd.Spec.Rules = append(rd.Spec.Rules, gwv1.HTTPRouteRule{Matches: rule.Matches, Filters: []gwv1.HTTPRouteFilter{{
			Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Scheme: &scheme, StatusCode: &code}}}})
		reason := ReasonHTTPSRedirectCarried
		if !ig.redirect.on[PreserveTrailingSlash] {
			// preserve-trailing-slash false: ingress-nginx dropped a
			// trailing / of the path from the Location.
			reason = ReasonHTTPSRedirectKeepsSlash
		}
		res.Report.Findings = append(res.Report.Findings, ig.redirectFinding(ig.redirectKey(), route, i).record(reason,
			"code", strconv.Itoa(code), "route", routeKey(rd)))
	}
	return rd
}

// redirectKey is the setting that makes ig redirect: force-ssl-redirect
// when true, else ssl-redirect.
func (ig *ingress) redirectKey() string {
	if ig.redirect.on[ForceSSLRedirect] {
		return ForceSSLRedirect
	}
	return SSLRedirect
}

// redirectFinding is a finding on ig's redirect setting key, for rule of
// route; record sets its reason.
func (ig *ingress) redirectFinding(key string, route *gwv1.HTTPRoute, rule int) Finding {
	v := ig.redirect.values[key]
	return Finding{Ingress: ig.key, Annotation: Prefix + key, Source: v.source, Value: v.raw, Route: routeKey(route), Rule: rule}
}

// listenerPrefix is the prefix of a group's listener names (addListeners).
func listenerPrefix(g *group) string {
	host := g.host
	if host == "" && len(g.tls) == 1 && len(g.tls[0].Hosts) == 1 {
		host = g.tls[0].Hosts[0]
	}
	if host == "" {
		return ""
	}
	return nameFromHost(host) + "-"
}
