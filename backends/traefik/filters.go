package traefik

// Rule-level HTTPRoute filters as Traefik file-provider middlewares and
// services. Traefik's own Gateway API provider
// (pkg/provider/kubernetes/gateway/httproute.go) uses internal middlewares
// (requestHeaderModifier, requestRedirect, URLRewrite) that the file
// provider cannot configure (tagged file:"-" in pkg/config/dynamic), so
// gwretry uses the public ones:
//
//   - RequestHeaderModifier: a headers middleware, customRequestHeaders
//     (set; an empty value deletes; there is no add).
//   - ResponseHeaderModifier: a headers middleware, customResponseHeaders.
//   - RequestRedirect: a redirectRegex middleware per router, whose regex
//     takes the request's URL apart and whose replacement builds the
//     Location the Gateway API defines.
//   - URLRewrite: a headers middleware setting Host (hostname), replacePath
//     (ReplaceFullPath) or replacePathRegex (ReplacePrefixMatch) per router,
//     and a headers middleware that deletes the X-Replaced-Path header
//     those two add.
//   - RequestMirror: a mirroring service in front of the rule's service.
//
// A router's middlewares run in this order: the errors middleware that
// answers 500, response headers, redirect, path rewrite, its cleanup, host
// rewrite, request headers, and last the Retry middleware, so that a retry
// does not apply the rewrites twice.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// replacedPathHeader is the request header replacePath and
// replacePathRegex add with the old path.
const replacedPathHeader = "X-Replaced-Path"

// The parts of a redirectRegex regex. Traefik matches it against
// scheme "://" Host header request-URI; the groups are 1 scheme, 2 host
// (without port), 3 port, 4 the path (or the rest after a prefix) and 5
// the query.
const (
	redirectURLRE   = `^(https?)://([^/?#]*?)(:[0-9]+)?`
	redirectQueryRE = `(\?[^#]*)?$`
	anyPathRE       = `(/[^?#]*)`
	// redirectEnd keeps the query and ends the Location with '#': Traefik
	// forwards the request instead of redirecting when the new URL equals
	// the old one, and the empty fragment, which url.URL.String drops from
	// the Location, keeps them apart (so a redirect to the same URL is
	// still answered, as the Gateway API defines).
	redirectEnd = "${5}#"
)

// hopByHop are the request headers Go's reverse proxy removes before
// sending the request to the backend (net/http/httputil), so a value set
// for them never arrives.
var hopByHop = []string{"connection", "proxy-connection", "keep-alive", "proxy-authenticate",
	"proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"}

// serverManaged are the response headers Go's HTTP server manages itself
// when it writes the response, so setting or removing them in Traefik is not
// what the client gets.
var serverManaged = []string{"connection", "content-length", "keep-alive", "trailer", "transfer-encoding", "te", "upgrade"}

func reqHeadersName(r *translate.Rule) string  { return r.Name + "-reqheaders" }
func respHeadersName(r *translate.Rule) string { return r.Name + "-respheaders" }
func rewriteHostName(r *translate.Rule) string { return r.Name + "-rewritehost" }
func replacedCleanName(r *translate.Rule) string {
	return r.Name + "-rewriteclean"
}
func redirectName(router string) string    { return router + "-redirect" }
func rewritePathName(router string) string { return router + "-rewritepath" }
func mainServiceName(r *translate.Rule) string {
	return r.Name + "-main"
}
func mirrorServiceName(r *translate.Rule, i int) string {
	return r.Name + "-mirror" + strconv.Itoa(i)
}

// redirects reports whether r answers with a redirect: it has a
// RequestRedirect and forwards nothing.
func redirects(r *translate.Rule) bool { return r.Filters.Redirect != nil && !r.Forwards() }

// appliesRequestFilters reports whether the request filters of r are
// written: it forwards requests.
func appliesRequestFilters(r *translate.Rule) bool { return r.Forwards() }

// appliesResponseHeaders reports whether r's ResponseHeaderModifier is
// written: it forwards, or answers a redirect (whose response gets the
// headers too).
func appliesResponseHeaders(r *translate.Rule) bool {
	return r.Filters.ResponseHeaders != nil && (r.Forwards() || redirects(r))
}

// headerOps resolves a header modifier into Traefik's one-map form: every
// name (compared case-insensitively) once, set or add becoming a set and
// remove an empty value; when a name is in several lists the last of set,
// add, remove wins. Names are written as the user wrote them (Traefik's
// Header.Set canonicalizes them).
func headerOps(hm *translate.HeaderModifier) map[string]string {
	out := map[string]string{}
	byLower := map[string]string{}
	put := func(name, value string) {
		if prev, ok := byLower[strings.ToLower(name)]; ok {
			delete(out, prev)
		}
		byLower[strings.ToLower(name)] = name
		out[name] = value
	}
	for _, h := range hm.Set {
		put(h.Name, h.Value)
	}
	for _, h := range hm.Add {
		put(h.Name, h.Value)
	}
	for _, n := range hm.Remove {
		put(n, "")
	}
	return out
}

// xffKey is how Traefik's headers middleware must spell X-Forwarded-For:
// it omits the header from the proxied request (a nil value, which Go's
// reverse proxy leaves alone) only for an empty value under exactly this
// key; any other spelling is deleted and then written again by the proxy
// with the client's address (seen live with Traefik 3.6.12).
const xffKey = "X-Forwarded-For"

// requestHeaderOps is headerOps for customRequestHeaders, with
// X-Forwarded-For spelt as Traefik needs it whatever the route's case.
func requestHeaderOps(hm *translate.HeaderModifier) map[string]string {
	out := headerOps(hm)
	for k, v := range out {
		if k != xffKey && strings.EqualFold(k, xffKey) {
			delete(out, k)
			out[xffKey] = v
		}
	}
	return out
}

// addRuleFilters adds the rule-level middlewares of r's filters.
func addRuleFilters(h *httpConfig, r *translate.Rule) error {
	fl := &r.Filters
	if appliesResponseHeaders(r) {
		if err := put(h.Middlewares, "middleware", respHeadersName(r),
			&middleware{Headers: &headers{CustomResponseHeaders: headerOps(fl.ResponseHeaders)}}); err != nil {
			return err
		}
	}
	if !appliesRequestFilters(r) {
		return nil
	}
	if fl.RequestHeaders != nil {
		if err := put(h.Middlewares, "middleware", reqHeadersName(r),
			&middleware{Headers: &headers{CustomRequestHeaders: requestHeaderOps(fl.RequestHeaders)}}); err != nil {
			return err
		}
	}
	if rw := fl.Rewrite; rw != nil {
		if rw.Hostname != "" {
			if err := put(h.Middlewares, "middleware", rewriteHostName(r),
				&middleware{Headers: &headers{CustomRequestHeaders: map[string]string{"Host": rw.Hostname}}}); err != nil {
				return err
			}
		}
		if rw.Path != nil {
			if err := put(h.Middlewares, "middleware", replacedCleanName(r),
				&middleware{Headers: &headers{CustomRequestHeaders: map[string]string{replacedPathHeader: ""}}}); err != nil {
				return err
			}
		}
	}
	return nil
}

// routerFilters adds the per-router middlewares of rm's rule (redirect and
// path rewrite depend on the listener port and the match) and returns the
// names of the filter middlewares, in chain order.
func routerFilters(h *httpConfig, router, scheme string, port int, rm *translate.RouteMatch) ([]string, error) {
	r := rm.Rule
	fl := &r.Filters
	var names []string
	if appliesResponseHeaders(r) {
		names = append(names, respHeadersName(r))
	}
	if redirects(r) {
		rr, ok := redirectMiddleware(fl.Redirect, scheme, port, rm.Match)
		if ok {
			if err := put(h.Middlewares, "middleware", redirectName(router), &middleware{RedirectRegex: rr}); err != nil {
				return nil, err
			}
			names = append(names, redirectName(router))
		}
	}
	if !appliesRequestFilters(r) {
		return names, nil
	}
	if rw := fl.Rewrite; rw != nil {
		if rw.Path != nil {
			if mw, ok := rewritePathMiddleware(rw.Path, rm.Match); ok {
				if err := put(h.Middlewares, "middleware", rewritePathName(router), mw); err != nil {
					return nil, err
				}
				names = append(names, rewritePathName(router), replacedCleanName(r))
			}
		}
		if rw.Hostname != "" {
			names = append(names, rewriteHostName(r))
		}
	}
	if fl.RequestHeaders != nil {
		names = append(names, reqHeadersName(r))
	}
	return names, nil
}

// prefixParts returns the prefix a PathPrefix match matched and the
// replacement, both without a trailing slash, as the Gateway API's
// ReplacePrefixMatch table defines them ("/foo/" matches like "/foo"; a
// value "/xyz/" replaces like "/xyz"). ok is false when m is not a
// PathPrefix match (the API allows ReplacePrefixMatch only with one).
func prefixParts(m translate.Match, value string) (prefix, repl string, ok bool) {
	if m.PathType != translate.PathPrefix {
		return "", "", false
	}
	return strings.TrimRight(m.Path, "/"), strings.TrimRight(value, "/"), true
}

// redirectMiddleware builds the redirectRegex of redirect rd for a router
// on a listener of port port with match m. ok is false when rd replaces a
// prefix and m is not a PathPrefix match.
func redirectMiddleware(rd *translate.Redirect, listenerScheme string, port int, m translate.Match) (*redirectRegex, bool) {
	pathRE, pathRepl := anyPathRE, "${4}"
	if p := rd.Path; p != nil {
		switch p.Type {
		case translate.ReplaceFullPath:
			pathRepl = replLiteral(p.Value)
		case translate.ReplacePrefixMatch:
			prefix, repl, ok := prefixParts(m, p.Value)
			if !ok {
				return nil, false
			}
			pathRE, pathRepl = prefixRE(prefix, repl, `[^?#]*`)
		default:
			return nil, false
		}
	}
	scheme := "${1}"
	if rd.Scheme != "" {
		scheme = rd.Scheme
	}
	host := "${2}"
	if rd.Hostname != "" {
		host = rd.Hostname
	}
	return &redirectRegex{
		Regex:       redirectURLRE + pathRE + redirectQueryRE,
		Replacement: scheme + "://" + host + locationPort(rd, listenerScheme, port) + pathRepl + redirectEnd,
		Permanent:   rd.StatusCode == 301 || rd.StatusCode == 308,
	}, true
}

// prefixRE returns the regex part that matches prefix and captures the
// rest of the path (of characters rest), and the replacement that puts
// repl in the prefix's place, as the Gateway API's ReplacePrefixMatch
// defines: "/foo" -> "/xyz", "/foo/" -> "/xyz/", "/foo/bar" -> "/xyz/bar";
// with an empty repl "/foo" and "/foo/" -> "/", "/foo/bar" -> "/bar". The
// capture is group 4 in a redirect regex, group 1 in a rewrite regex:
// the caller numbers it.
func prefixRE(prefix, repl, rest string) (re, replacement string) {
	q := regexp.QuoteMeta(prefix)
	if repl == "" {
		return q + `(?:/(` + rest + `))?`, "/${4}"
	}
	return q + `(/` + rest + `)?`, replLiteral(repl) + "${4}"
}

// replLiteral writes s as a Go regexp replacement template
// (Regexp.Expand, which Traefik's redirectRegex and replacePathRegex
// run) that expands to s: each '$' doubled.
func replLiteral(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// locationPort is the ":port" of the Location, or "" when the Gateway API
// leaves it out: the redirect's port; else 80 or 443 for a redirect
// scheme; else the listener's port; left out for http on 80 and https on
// 443. A redirect without scheme keeps the listener's (the request's)
// scheme, listenerScheme: "http", or "https" on a TLS listener.
func locationPort(rd *translate.Redirect, listenerScheme string, listenerPort int) string {
	scheme := rd.Scheme
	if scheme == "" {
		scheme = listenerScheme
	}
	port := rd.Port
	switch {
	case port != 0:
	case rd.Scheme == "https":
		port = 443
	case rd.Scheme == "http":
		port = 80
	default:
		port = listenerPort
	}
	if scheme == "http" && port == 80 || scheme == "https" && port == 443 {
		return ""
	}
	return ":" + strconv.Itoa(port)
}

// rewritePathMiddleware builds the path rewrite for a router with match m.
func rewritePathMiddleware(p *translate.PathModifier, m translate.Match) (*middleware, bool) {
	switch p.Type {
	case translate.ReplaceFullPath:
		return &middleware{ReplacePath: &replacePath{Path: p.Value}}, true
	case translate.ReplacePrefixMatch:
		prefix, repl, ok := prefixParts(m, p.Value)
		if !ok {
			return nil, false
		}
		re, replacement := prefixRE(prefix, repl, `.*`)
		return &middleware{ReplacePathRegex: &replacePathRegex{Regex: "^" + re + "$",
			Replacement: strings.ReplaceAll(replacement, "${4}", "${1}")}}, true
	}
	return nil, false
}

// mirrorPercent is the integer percent Traefik mirrors for share n/d:
// the nearest, and at least 1 when n > 0. exact is false when n/d is not a
// whole percent.
func mirrorPercent(n, d int) (pct int, exact bool) {
	if d <= 0 {
		return 0, false
	}
	pct = (200*n + d) / (2 * d)
	if n > 0 && pct == 0 {
		pct = 1
	}
	return min(pct, 100), 100*n%d == 0
}

// validMirrors are r's mirrors that can receive traffic.
func validMirrors(r *translate.Rule) []*translate.Mirror {
	var out []*translate.Mirror
	for _, m := range r.Filters.Mirrors {
		if m.Backend != nil {
			out = append(out, m)
		}
	}
	return out
}

// wrapMirrors puts a mirroring service named r.Name in front of the
// rule's service svc, with one load balancer per valid mirror, or puts svc
// itself under r.Name when there is none.
func wrapMirrors(h *httpConfig, r *translate.Rule, svc *service, transport string) error {
	ms := validMirrors(r)
	if len(ms) == 0 {
		return put(h.Services, "service", r.Name, svc)
	}
	if err := put(h.Services, "service", mainServiceName(r), svc); err != nil {
		return err
	}
	mr := &mirroring{Service: mainServiceName(r), Mirrors: []mirrorService{}}
	for i, m := range ms {
		name := mirrorServiceName(r, i)
		if err := put(h.Services, "service", name, &service{LoadBalancer: loadBalancerOf(m.Backend, transport)}); err != nil {
			return err
		}
		pct, _ := mirrorPercent(m.Numerator, m.Denominator)
		mr.Mirrors = append(mr.Mirrors, mirrorService{Name: name, Percent: pct})
	}
	return put(h.Services, "service", r.Name, &service{Mirroring: mr})
}

// site is one router of a rule: the listener, its port and the match.
type site struct {
	listener *translate.Listener
	vhost    *translate.VirtualHost
	port     int
	match    translate.Match
}

// listenerScheme is the scheme of l's requests.
func listenerScheme(l *translate.Listener) string {
	if l.TLS {
		return "https"
	}
	return "http"
}

// sitesOf lists the routers of every rule.
func sitesOf(m *translate.Model) map[*translate.Rule][]site {
	out := map[*translate.Rule][]site{}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				out[rm.Rule] = append(out[rm.Rule], site{listener: l, vhost: vh, port: l.Port, match: rm.Match})
			}
		}
	}
	return out
}

// filterDecision decides rule-level filter feature f of r, or ok false
// when f is not one gwretry translates for Traefik.
func filterDecision(r *translate.Rule, f translate.Feature, sites []site) (report.Decision, bool) {
	switch f {
	case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier,
		translate.FeatureRequestRedirect, translate.FeatureURLRewrite, translate.FeatureRequestMirror:
	default:
		return report.Decision{}, false
	}
	switch {
	case r.Dead():
		return report.Decide(report.ReasonRuleForwardsNothing), true
	case redirects(r) && f != translate.FeatureRequestRedirect && f != translate.FeatureResponseHeaderModifier:
		// Traefik answers with the redirect (redirectRegex).
		return report.Decide(report.ReasonRuleForwardsNothing), true
	case f == translate.FeatureRequestRedirect && !redirects(r):
		// The API forbids a redirect beside backendRefs: no redirect is
		// written and requests are proxied.
		return report.Decide(report.ReasonRedirectBesideBackends), true
	}
	switch f {
	case translate.FeatureRequestHeaderModifier:
		return headersDecision(r, r.Filters.RequestHeaders, true), true
	case translate.FeatureResponseHeaderModifier:
		return headersDecision(r, r.Filters.ResponseHeaders, false), true
	case translate.FeatureRequestRedirect:
		return redirectDecision(r, sites), true
	case translate.FeatureURLRewrite:
		return rewriteDecision(r, sites), true
	}
	return mirrorDecision(r), true
}

// headersDecision: a headers middleware (customRequestHeaders or
// customResponseHeaders) sets each header, replacing the value it had, and
// deletes those written with an empty value; it cannot add a value, and
// its map holds one entry per name.
func headersDecision(r *translate.Rule, hm *translate.HeaderModifier, request bool) report.Decision {
	where := "customResponseHeaders"
	if request {
		where = "customRequestHeaders"
	}
	d := report.Decide(report.ReasonConfigured).Set("headers " + where)
	if len(hm.Add) > 0 {
		var ns []string
		for _, h := range hm.Add {
			ns = append(ns, h.Name)
		}
		d = d.With(report.NewCaveat(report.CaveatHeaderAddReplaces, "headers", strings.Join(ns, ", ")))
	}
	seen := map[string]int{}
	for _, n := range headerNames(hm) {
		seen[strings.ToLower(n)]++
	}
	// repeated are in more than one of set, add and remove (the last is
	// written); handled are the hop-by-hop request headers Go's reverse
	// proxy drops and the response headers Go's HTTP server manages itself.
	var repeated, handled []string
	for _, n := range sortedKeys(seen) {
		if seen[n] > 1 {
			repeated = append(repeated, n)
		}
	}
	setOrAdd := func(n string) bool {
		return slices.ContainsFunc(append(hm.Set, hm.Add...), func(h translate.Header) bool { return strings.EqualFold(h.Name, n) })
	}
	for _, n := range sortedKeys(seen) {
		switch {
		case request && n == "host":
			d = d.With(report.NewCaveat(report.CaveatHostHeaderIsRequestHost))
		case request && n == "x-forwarded-for" && setOrAdd(n):
			d = d.With(report.NewCaveat(report.CaveatForwardedForAppended))
		case request && slices.Contains(hopByHop, n):
			if setOrAdd(n) {
				handled = append(handled, n)
			}
		case !request && slices.Contains(serverManaged, n):
			handled = append(handled, n)
		}
	}
	for _, c := range []struct {
		reason report.Reason
		names  []string
	}{
		{report.CaveatHeaderInSeveralLists, repeated},
		{report.CaveatHeadersHandledByProxy, handled},
	} {
		if len(c.names) > 0 {
			d = d.With(report.NewCaveat(c.reason, "headers", strings.Join(c.names, ", ")))
		}
	}
	if request && r.Filters.Rewrite != nil && r.Filters.Rewrite.Path != nil {
		d = d.With(report.NewCaveat(report.CaveatReplacedPathHeaderDeleted, "header", replacedPathHeader))
	}
	return d
}

func headerNames(hm *translate.HeaderModifier) []string {
	var out []string
	for _, h := range hm.Set {
		out = append(out, h.Name)
	}
	for _, h := range hm.Add {
		out = append(out, h.Name)
	}
	return append(out, hm.Remove...)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// redirectStatus is what Traefik's redirect middlewares answer: 302 to
// GET and 307 to the other methods, or 301 and 308 when permanent.
func redirectStatus(permanent bool, method string) int {
	switch {
	case permanent && method == "GET":
		return 301
	case permanent:
		return 308
	case method == "GET":
		return 302
	}
	return 307
}

// redirectDecision: a redirectRegex per router builds the Location from
// the request's URL as the Gateway API defines it (the query is kept); its
// status follows from the method, not the filter.
func redirectDecision(r *translate.Rule, sites []site) report.Decision {
	rd := r.Filters.Redirect
	for _, s := range sites {
		if rd.Path != nil && rd.Path.Type == translate.ReplacePrefixMatch && s.match.PathType != translate.PathPrefix {
			// The Gateway API allows it only with a PathPrefix match: no
			// redirect is written and Traefik answers 500.
			return report.Decide(report.ReasonPrefixRewriteNeedsPrefix, "match", string(s.match.PathType))
		}
	}
	permanent := rd.StatusCode == 301 || rd.StatusCode == 308
	d := report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("redirectRegex permanent %t", permanent))
	getOnly := r.Methods != nil && len(r.Methods) == 1 && r.Methods[0] == "GET"
	noGet := r.Methods != nil && !slices.Contains(r.Methods, "GET")
	want := rd.StatusCode
	if want != 303 && (getOnly && redirectStatus(permanent, "GET") == want || noGet && redirectStatus(permanent, "POST") == want) {
		// Every request of the rule gets the status asked.
		return d
	}
	// Traefik cannot answer 303, and answers the other statuses by method.
	return d.With(report.NewCaveat(report.CaveatRedirectStatusByMethod, "status", strconv.Itoa(rd.StatusCode),
		"get", strconv.Itoa(redirectStatus(permanent, "GET")), "other", strconv.Itoa(redirectStatus(permanent, "POST"))))
}

// rewriteDecision: a headers middleware sets Host (sent because
// passHostHeader is on); replacePath or replacePathRegex per router
// rewrites the path, and Traefik adds the old path in X-Replaced-Path,
// which a headers middleware deletes again.
func rewriteDecision(r *translate.Rule, sites []site) report.Decision {
	rw := r.Filters.Rewrite
	var facts []string
	var cs []report.Caveat
	if rw.Hostname != "" {
		facts = append(facts, "customRequestHeaders Host "+rw.Hostname)
	}
	if p := rw.Path; p != nil {
		if p.Type == translate.ReplacePrefixMatch {
			for _, s := range sites {
				if s.match.PathType != translate.PathPrefix {
					// The path is not rewritten.
					return report.Decide(report.ReasonPrefixRewriteNeedsPrefix, "match", string(s.match.PathType))
				}
			}
			facts = append(facts, "replacePathRegex")
		} else {
			facts = append(facts, "replacePath "+p.Value)
		}
		cs = append(cs, report.NewCaveat(report.CaveatReplacedPathHeaderDeleted, "header", replacedPathHeader))
	}
	if rq := r.Filters.RequestHeaders; rw.Hostname != "" && rq != nil &&
		slices.ContainsFunc(headerNames(rq), func(n string) bool { return strings.EqualFold(n, "host") }) {
		cs = append(cs, report.NewCaveat(report.CaveatHostRewrittenTwice))
	}
	return report.Decide(report.ReasonConfigured).Set(strings.Join(facts, ", ")).With(cs...)
}

// mirrorDecision: a mirroring service sends a whole percent of the
// requests to each valid mirror (nothing for an invalid backendRef, as the
// Gateway API defines), each copy once the main backend has answered.
func mirrorDecision(r *translate.Rule) report.Decision {
	var fractions, percents []string
	for _, m := range r.Filters.Mirrors {
		if m.Backend == nil {
			continue
		}
		if pct, exact := mirrorPercent(m.Numerator, m.Denominator); !exact {
			fractions = append(fractions, fmt.Sprintf("%d/%d", m.Numerator, m.Denominator))
			percents = append(percents, fmt.Sprintf("%d%%", pct))
		}
	}
	d := report.Decide(report.ReasonConfigured).Set("mirroring service " + r.Name)
	if len(fractions) > 0 {
		d = d.With(report.NewCaveat(report.CaveatMirrorShareRounded, "share", strings.Join(fractions, ", "),
			"rounded", strings.Join(percents, ", ")))
	}
	if retries(r) {
		// The Retry middleware runs the mirroring service again.
		d = d.With(report.NewCaveat(report.CaveatRetriesMirroredAgain))
	}
	return d
}
