package traefik

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// routerFacts are what the judge reads from a router's rule and entry
// point: the listener port, the path prefix its PathPrefix match matched
// (hasPrefix false for other path matches) and its method ("" for any).
type routerFacts struct {
	// scheme is "https" for a TLS router, else "http".
	scheme    string
	port      int
	prefix    string
	hasPrefix bool
	method    string
}

func (j *judge) facts(rt *router) (routerFacts, error) {
	if f, ok := j.known[rt]; ok {
		return f, nil
	}
	f, err := j.readFacts(rt)
	if err != nil {
		return f, err
	}
	if j.known == nil {
		j.known = map[*router]routerFacts{}
	}
	j.known[rt] = f
	return f, nil
}

// readFacts is facts, read from the router and its entry point.
func (j *judge) readFacts(rt *router) (routerFacts, error) {
	var f routerFacts
	if len(rt.EntryPoints) != 1 {
		return f, fmt.Errorf("router has %d entry points, want 1", len(rt.EntryPoints))
	}
	ep, ok := j.st.EntryPoints[rt.EntryPoints[0]]
	if !ok {
		return f, fmt.Errorf("entry point %s is not defined", rt.EntryPoints[0])
	}
	_, p, err := net.SplitHostPort(ep.Address)
	if err != nil {
		return f, fmt.Errorf("entry point %s: %w", rt.EntryPoints[0], err)
	}
	if f.port, err = strconv.Atoi(p); err != nil {
		return f, fmt.Errorf("entry point %s: port %q", rt.EntryPoints[0], p)
	}
	f.scheme = "http"
	if rt.TLS != nil {
		f.scheme = "https"
	}
	x, err := parseRule(rt.Rule)
	if err != nil {
		return f, err
	}
	parts := []expr{x}
	if x.Op == "&&" {
		parts = x.Subs
	}
	for _, s := range parts {
		switch {
		case s.Op == "" && s.Func == "Method" && len(s.Args) == 1:
			f.method = s.Args[0]
		case s.Op == "" && s.Func == "PathPrefix" && len(s.Args) == 1 && s.Args[0] == "/":
			f.prefix, f.hasPrefix = "", true
		case s.Op == "||" && len(s.Subs) == 2 && s.Subs[0].Func == "Path" && s.Subs[1].Func == "PathPrefix" &&
			len(s.Subs[0].Args) == 1 && len(s.Subs[1].Args) == 1 && s.Subs[1].Args[0] == s.Subs[0].Args[0]+"/":
			// Traefik's prefix is a string prefix: Path(p) || PathPrefix(p/)
			// is the element-wise prefix p.
			f.prefix, f.hasPrefix = s.Subs[0].Args[0], true
		}
	}
	return f, nil
}

// serves reports whether a router with these facts takes requests of
// method class c.
func (f routerFacts) serves(c translate.MethodClass) bool {
	return f.method == "" || translate.IsNonIdempotent(f.method) == (c == translate.NonIdempotent)
}

// redirectCode is what Traefik answers to the requests of class c on this
// router: 302/307 (301/308 when permanent) by method, or 0 when the class
// holds methods that get different codes.
func (f routerFacts) redirectCode(permanent bool, c translate.MethodClass) int {
	switch {
	case f.method != "":
		return traefikRedirectCode(permanent, f.method)
	case c == translate.NonIdempotent:
		return traefikRedirectCode(permanent, "POST")
	}
	return 0 // GET gets one code, HEAD, PUT... the other
}

// traefikRedirectCode is the status Traefik's redirect middlewares
// (pkg/middlewares/redirect) answer: 302 (301 when permanent) to a GET, and
// 307 (308 when permanent) to every other method, which keeps it.
func traefikRedirectCode(permanent bool, method string) int {
	get := method == "GET"
	if permanent {
		return map[bool]int{true: 301, false: 308}[get]
	}
	return map[bool]int{true: 302, false: 307}[get]
}

// hdrOp is the last thing the middlewares did to a header.
type hdrOp struct {
	name  string
	value string
	// remove: deleted; add: a value added beside the request's own.
	remove, add bool
}

// readFilters reads the filters a router's middlewares apply to the
// requests of class c, in the model's terms. answered is the status when a
// redirect answers every request (later middlewares never run).
func (j *judge) readFilters(r *translate.Rule, rt *router, f routerFacts, c translate.MethodClass) (fl translate.Filters, answered int, err error) {
	req, resp := map[string]hdrOp{}, map[string]hdrOp{}
	var rw translate.Rewrite
	rewritten, retried := false, false
	for _, n := range rt.Middlewares {
		mw := j.d.HTTP.Middlewares[n]
		if mw == nil {
			return fl, 0, fmt.Errorf("middleware %s is not defined", n)
		}
		switch {
		case mw.Retry != nil:
			retried = mw.Retry.Attempts > 1
		case mw.Headers != nil:
			if err := dupNames(mw.Headers.CustomRequestHeaders); err != nil {
				return fl, 0, fmt.Errorf("middleware %s: %w", n, err)
			}
			if err := dupNames(mw.Headers.CustomResponseHeaders); err != nil {
				return fl, 0, fmt.Errorf("middleware %s: %w", n, err)
			}
			for k, v := range mw.Headers.CustomRequestHeaders {
				lk := strings.ToLower(k)
				switch {
				case lk == "host" && v == "":
					// Del("Host") leaves req.Host, which is what is sent.
				case lk == "host":
					rw.Hostname, rewritten = v, true
				case lk == "x-forwarded-for" && v == "" && k != xffKey:
					// Deleted under another spelling, X-Forwarded-For is
					// written again by the proxy: not removed.
				default:
					req[lk] = hdrOp{name: k, value: v, remove: v == ""}
				}
			}
			for k, v := range mw.Headers.CustomResponseHeaders {
				// Response modifiers run innermost first: the outermost
				// middleware's value is the one the client gets.
				if _, done := resp[strings.ToLower(k)]; !done {
					resp[strings.ToLower(k)] = hdrOp{name: k, value: v, remove: v == ""}
				}
			}
		case mw.ReplacePath != nil:
			rw.Path, rewritten = &translate.PathModifier{Type: translate.ReplaceFullPath, Value: mw.ReplacePath.Path}, true
			req[strings.ToLower(replacedPathHeader)] = hdrOp{name: replacedPathHeader, value: "the old path", add: true}
		case mw.ReplacePathRegex != nil:
			rw.Path, rewritten = readPrefixRewrite(mw.ReplacePathRegex, f, r.Filters.Rewrite), true
			if retried {
				// Applied again on every retry, to the rewritten path.
				rw.Path.Type = "re-applied on every retry"
			}
			req[strings.ToLower(replacedPathHeader)] = hdrOp{name: replacedPathHeader, value: "the old path", add: true}
		case mw.RedirectRegex != nil:
			rd := readRedirect(mw.RedirectRegex, f, r.Filters.Redirect)
			rd.StatusCode = f.redirectCode(mw.RedirectRegex.Permanent, c)
			fl.Redirect = rd
			answered = rd.StatusCode
			if answered == 0 {
				answered = 302
			}
			fl.ResponseHeaders = headerModifier(resp, serverManaged, nil)
			return fl, answered, nil
		}
	}
	fl.ResponseHeaders = headerModifier(resp, serverManaged, nil)
	// Go's reverse proxy drops hop-by-hop headers and appends the client's
	// address to X-Forwarded-For, so a value set for them never arrives as
	// set; a deleted one stays deleted.
	fl.RequestHeaders = headerModifier(req, nil, append(slices.Clone(hopByHop), "x-forwarded-for"))
	if rewritten {
		fl.Rewrite = &rw
	}
	return fl, 0, nil
}

// dupNames refuses two names that differ only in case: Traefik would apply
// them in a random order.
func dupNames(m map[string]string) error {
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if seen[strings.ToLower(k)] {
			return fmt.Errorf("header %s is written twice (Traefik applies them in a random order)", k)
		}
		seen[strings.ToLower(k)] = true
	}
	return nil
}

// headerModifier turns the header operations into the model's terms,
// leaving out the names in ignored and the sets of names in notSet.
func headerModifier(ops map[string]hdrOp, ignored, notSet []string) *translate.HeaderModifier {
	hm := &translate.HeaderModifier{}
	for _, k := range slices.Sorted(maps.Keys(ops)) {
		op := ops[k]
		switch {
		case slices.Contains(ignored, k):
		case op.remove:
			hm.Remove = append(hm.Remove, op.name)
		case slices.Contains(notSet, k):
		case op.add:
			hm.Add = append(hm.Add, translate.Header{Name: op.name, Value: op.value})
		default:
			hm.Set = append(hm.Set, translate.Header{Name: op.name, Value: op.value})
		}
	}
	if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
		return nil
	}
	return hm
}

// readPrefixRewrite reads a replacePathRegex back as a ReplacePrefixMatch
// of the router's prefix, or as an unrecognised modifier. A value that
// replaces as want's does is returned in want's terms ("/xyz/" replaces
// like "/xyz").
func readPrefixRewrite(rr *replacePathRegex, f routerFacts, want *translate.Rewrite) *translate.PathModifier {
	pm := readPrefixRewriteValue(rr, f)
	if want != nil && want.Path != nil && want.Path.Type == pm.Type && pm.Type == translate.ReplacePrefixMatch &&
		strings.TrimRight(want.Path.Value, "/") == pm.Value {
		out := *want.Path
		return &out
	}
	return pm
}

func readPrefixRewriteValue(rr *replacePathRegex, f routerFacts) *translate.PathModifier {
	bad := &translate.PathModifier{Type: "unrecognised replacePathRegex", Value: rr.Regex + " -> " + rr.Replacement}
	if !f.hasPrefix {
		return bad
	}
	q := regexp.QuoteMeta(f.prefix)
	switch {
	case rr.Regex == "^"+q+`(?:/(.*))?$` && rr.Replacement == "/${1}":
		return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: ""}
	case rr.Regex == "^"+q+`(/.*)?$` && strings.HasSuffix(rr.Replacement, "${1}"):
		v, ok := expandLiteral(strings.TrimSuffix(rr.Replacement, "${1}"))
		if ok && isLiteralPath(v) && v != "" && !strings.HasSuffix(v, "/") {
			return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: v}
		}
	}
	return bad
}

// isLiteralPath reports whether s, a replacement's expansion, is a path
// (expandLiteral: no expansion left in it).
func isLiteralPath(s string) bool {
	return strings.HasPrefix(s, "/") && !strings.Contains(s, "\\")
}

// literalPath is the path replacement template t expands to, or "" when
// it is no literal path.
func literalPath(t string) string {
	if s, ok := expandLiteral(t); ok && isLiteralPath(s) {
		return s
	}
	return ""
}

// expandLiteral is what Go's Regexp.Expand makes of template t when t
// names no group: each "$$" is one '$'. ok is false when t holds another
// '$' (a group reference, expanded from the request).
func expandLiteral(t string) (s string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '$' {
			b.WriteByte(t[i])
			continue
		}
		if i+1 < len(t) && t[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		return "", false
	}
	return b.String(), true
}

// locTemplate is a Location as a redirect builds it: literal parts, or ""
// for the request's own scheme, host or path.
type locTemplate struct {
	scheme, host, port string
	path               translate.PathModifier
	keepPath           bool
}

// expectedTemplate is the Location the Gateway API defines for rd on a
// listener of scheme scheme and port port.
func expectedTemplate(rd *translate.Redirect, scheme string, port int) locTemplate {
	t := locTemplate{scheme: rd.Scheme, host: rd.Hostname, port: gatewayLocationPort(rd, scheme, port), keepPath: rd.Path == nil}
	if rd.Path != nil {
		t.path = *rd.Path
		if t.path.Type == translate.ReplacePrefixMatch {
			t.path.Value = strings.TrimRight(t.path.Value, "/")
		}
	}
	return t
}

// gatewayLocationPort is the ":port" the Gateway API puts in the
// Location of rd on a listener of scheme listenerScheme and port
// listenerPort (HTTPRequestRedirectFilter.port): the filter's port; when
// unset, the well-known port of the filter's scheme if it sets one, else
// the listener's port; and none when that port is the well-known one of
// the Location's scheme (the filter's, else the request's).
func gatewayLocationPort(rd *translate.Redirect, listenerScheme string, listenerPort int) string {
	wellKnown := map[string]int{"http": 80, "https": 443}
	scheme, port := listenerScheme, listenerPort
	if rd.Scheme != "" {
		scheme, port = rd.Scheme, wellKnown[rd.Scheme]
	}
	if rd.Port != 0 {
		port = rd.Port
	}
	if wellKnown[scheme] == port {
		return ""
	}
	return fmt.Sprintf(":%d", port)
}

// readRedirect reads a redirectRegex back. When its Location is the one
// the Gateway API defines for want on this router, it returns want's terms
// (several redirects build one Location: scheme "" on port 80 and scheme
// "http"); otherwise what the regex builds, with Port -1 when the Location
// has no port, so that it never equals a redirect it does not do.
func readRedirect(rr *redirectRegex, f routerFacts, want *translate.Redirect) *translate.Redirect {
	unrecognised := &translate.Redirect{Scheme: "unrecognised redirectRegex " + rr.Regex + " -> " + rr.Replacement, Port: -1}
	if !strings.HasPrefix(rr.Regex, redirectURLRE) || !strings.HasSuffix(rr.Regex, redirectQueryRE) ||
		!strings.HasSuffix(rr.Replacement, redirectEnd) {
		return unrecognised
	}
	pathRE := strings.TrimSuffix(strings.TrimPrefix(rr.Regex, redirectURLRE), redirectQueryRE)
	scheme, rest, ok := strings.Cut(strings.TrimSuffix(rr.Replacement, redirectEnd), "://")
	if !ok {
		return unrecognised
	}
	var t locTemplate
	switch scheme {
	case "${1}":
	case "http", "https":
		t.scheme = scheme
	default:
		return unrecognised
	}
	end := strings.IndexAny(rest, ":/$")
	if strings.HasPrefix(rest, "${2}") {
		end = len("${2}")
	} else if end <= 0 {
		return unrecognised
	} else {
		t.host = rest[:end]
	}
	rest = rest[end:]
	if strings.HasPrefix(rest, ":") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		t.port, rest = rest[:i], rest[i:]
		if n, err := strconv.Atoi(t.port[1:]); err != nil || n < 1 || n > 65535 {
			return unrecognised
		}
	}
	q := regexp.QuoteMeta(f.prefix)
	switch {
	case pathRE == anyPathRE && rest == "${4}":
		t.keepPath = true
	case pathRE == anyPathRE && literalPath(rest) != "":
		t.path = translate.PathModifier{Type: translate.ReplaceFullPath, Value: literalPath(rest)}
	case f.hasPrefix && pathRE == q+`(?:/([^?#]*))?` && rest == "/${4}":
		t.path = translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: ""}
	case f.hasPrefix && pathRE == q+`(/[^?#]*)?` && strings.HasSuffix(rest, "${4}") &&
		literalPath(strings.TrimSuffix(rest, "${4}")) != "" && !strings.HasSuffix(literalPath(strings.TrimSuffix(rest, "${4}")), "/"):
		t.path = translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: literalPath(strings.TrimSuffix(rest, "${4}"))}
	default:
		return unrecognised
	}
	if want != nil && t == expectedTemplate(want, f.scheme, f.port) {
		out := *want
		return &out
	}
	out := &translate.Redirect{Scheme: t.scheme, Hostname: t.host, Port: -1}
	if t.port != "" {
		out.Port, _ = strconv.Atoi(t.port[1:])
	}
	if !t.keepPath {
		p := t.path
		out.Path = &p
	}
	return out
}

// readMirrors reads a mirroring service's mirrors in the model's terms:
// each mirror's servers are matched with the endpoints of the rule's
// mirror backendRefs. retried marks a share that a Retry middleware sends
// again on every retry (Numerator -1: never what the Gateway API asks).
func (j *judge) readMirrors(r *translate.Rule, mr *mirroring, retried bool) ([]*translate.Mirror, error) {
	var out []*translate.Mirror
	for _, ms := range mr.Mirrors {
		s := j.d.HTTP.Services[ms.Name]
		if s == nil || s.LoadBalancer == nil || s.Weighted != nil || s.Mirroring != nil {
			return nil, fmt.Errorf("mirror %s is not a load balancer service", ms.Name)
		}
		if ms.Percent < 0 || ms.Percent > 100 {
			return nil, fmt.Errorf("mirror %s: Traefik refuses percent %d", ms.Name, ms.Percent)
		}
		var urls []string
		for _, sv := range s.LoadBalancer.Servers {
			urls = append(urls, sv.URL)
		}
		slices.Sort(urls)
		be := &translate.BackendRef{Service: "servers " + strings.Join(urls, " ")}
		for _, m := range r.Filters.Mirrors {
			if m.Backend != nil && slices.Equal(urls, endpointURLs(m.Backend)) {
				be = m.Backend
				break
			}
		}
		m := &translate.Mirror{Backend: be, Numerator: ms.Percent, Denominator: 100}
		if retried {
			m.Numerator = -1
		}
		out = append(out, m)
	}
	return out, nil
}

func endpointURLs(b *translate.BackendRef) []string {
	var out []string
	for _, e := range b.Endpoints {
		out = append(out, "http://"+net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
	}
	slices.Sort(out)
	return out
}
