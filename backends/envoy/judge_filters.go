package envoy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/gwretry/gwretry/translate"
)

// The judge reads the filters back as Envoy applies them and states them
// in the model's terms (translate.Filters). Where Envoy's result is not
// what the Gateway API defines for the rule, it writes a description that
// no valid model value equals, so that an honoured claim is refused.

// readFilters derives the filters route rt of rule r applies.
func (j *judge) readFilters(r *translate.Rule, rt *routev3.Route, env routeEnv) (translate.Filters, error) {
	var fl translate.Filters
	// Envoy applies the route's, the virtual host's and the route table's
	// header mutations; all of them count.
	fl.RequestHeaders = readHeaders(
		slices.Concat(rt.GetRequestHeadersToAdd(), env.vh.GetRequestHeadersToAdd(), env.rc.GetRequestHeadersToAdd()),
		slices.Concat(rt.GetRequestHeadersToRemove(), env.vh.GetRequestHeadersToRemove(), env.rc.GetRequestHeadersToRemove()))
	fl.ResponseHeaders = readHeaders(
		slices.Concat(rt.GetResponseHeadersToAdd(), env.vh.GetResponseHeadersToAdd(), env.rc.GetResponseHeadersToAdd()),
		slices.Concat(rt.GetResponseHeadersToRemove(), env.vh.GetResponseHeadersToRemove(), env.rc.GetResponseHeadersToRemove()))
	if rd := rt.GetRedirect(); rd != nil {
		red, err := j.readRedirect(r, rt, rd, env)
		if err != nil {
			return fl, err
		}
		fl.Redirect = red
		return fl, nil
	}
	ra := rt.GetRoute()
	if ra == nil {
		return fl, nil
	}
	rw, err := j.readRewrite(r, rt, ra)
	if err != nil {
		return fl, err
	}
	fl.Rewrite = rw
	for _, mp := range ra.GetRequestMirrorPolicies() {
		fl.Mirrors = append(fl.Mirrors, j.readMirror(mp))
	}
	return fl, nil
}

// readHeaders states header mutations as a header modifier; nil when there
// are none.
func readHeaders(add []*corev3.HeaderValueOption, remove []string) *translate.HeaderModifier {
	if len(add) == 0 && len(remove) == 0 {
		return nil
	}
	hm := &translate.HeaderModifier{Remove: slices.Clone(remove)}
	for _, o := range add {
		h := translate.Header{Name: o.GetHeader().GetKey(), Value: o.GetHeader().GetValue()}
		if raw := o.GetHeader().GetRawValue(); len(raw) > 0 {
			h.Value = string(raw)
		}
		if text, ok := readEnvoyText(h.Value); ok {
			h.Value = text
		} else {
			// Envoy substitutes %COMMAND% operators in header values.
			h.Value += " (with Envoy's %-substitution)"
		}
		appendAction := o.GetAppendAction()
		if a := o.GetAppend(); a != nil { //nolint:staticcheck // read as Envoy does
			appendAction = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			if a.GetValue() {
				appendAction = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
			}
		}
		switch appendAction {
		case corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD:
			hm.Add = append(hm.Add, h)
		case corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD:
			hm.Set = append(hm.Set, h)
		default:
			// ADD_IF_ABSENT, OVERWRITE_IF_EXISTS: neither set nor add.
			h.Value += " (only " + appendAction.String() + ")"
			hm.Set = append(hm.Set, h)
		}
	}
	return hm
}

// apiPrefix returns the rule's PathPrefix match value when the rule has
// exactly one match and it is a PathPrefix (what ReplacePrefixMatch
// requires), as the model's listeners hold it.
func (j *judge) apiPrefix(r *translate.Rule) (string, bool) {
	ms := j.matches[r.Name]
	if len(ms) != 1 || ms[0].PathType != translate.PathPrefix {
		return "", false
	}
	return ms[0].Path, true
}

// probePaths are request paths the rule's match accepts, on which Envoy's
// path change is compared with the Gateway API's.
func probePaths(prefix string) []string {
	m := strings.TrimRight(prefix, "/")
	out := []string{m + "/", m + "/a", m + "/a/b/", m + "//c"}
	if m != "" {
		out = append([]string{m}, out...)
	}
	return out
}

// apiPath is the path the Gateway API makes of path under modifier p, for
// a rule whose PathPrefix match is prefix.
func apiPath(p *translate.PathModifier, prefix, path string) string {
	switch {
	case p == nil:
		return path
	case p.Type == translate.ReplaceFullPath:
		return p.Value
	}
	m, v := strings.TrimRight(prefix, "/"), strings.TrimRight(p.Value, "/")
	out := v + strings.TrimPrefix(path, m)
	if out == "" {
		return "/"
	}
	return out
}

// pathChange is how Envoy changes a path: prefix_rewrite (replacing the
// matched prefix), regex_rewrite, a full replacement, or nothing.
type pathChange struct {
	prefixRewrite *string
	regex         *matcherv3.RegexMatchAndSubstitute
	full          *string
}

// apply returns what Envoy makes of path for a route whose match is m.
func (c pathChange) apply(m *routev3.RouteMatch, path string) (string, error) {
	switch {
	case c.full != nil:
		return *c.full, nil
	case c.prefixRewrite != nil:
		var matched string
		switch ps := m.GetPathSpecifier().(type) {
		case *routev3.RouteMatch_Prefix:
			matched = ps.Prefix
		case *routev3.RouteMatch_PathSeparatedPrefix:
			matched = ps.PathSeparatedPrefix
		case *routev3.RouteMatch_Path:
			matched = ps.Path
		default:
			return "", fmt.Errorf("prefix_rewrite beside match %T is not evaluated", ps)
		}
		if !strings.HasPrefix(path, matched) {
			return "", fmt.Errorf("probe path %q is not matched by prefix %q", path, matched)
		}
		return *c.prefixRewrite + path[len(matched):], nil
	case c.regex != nil:
		re, err := regexp.Compile(c.regex.GetPattern().GetRegex())
		if err != nil {
			return "", fmt.Errorf("regex_rewrite: %w", err)
		}
		sub := c.regex.GetSubstitution()
		if strings.ContainsAny(sub, `\$`) {
			return "", fmt.Errorf("regex_rewrite substitution %q with capture groups is not evaluated", sub)
		}
		// RE2's GlobalReplace, as Envoy calls it, is Go's ReplaceAll.
		return re.ReplaceAllLiteralString(path, sub), nil
	}
	return path, nil
}

// readPath states Envoy's path change in the model's terms: the rule's own
// modifier when Envoy yields what the Gateway API defines for it on every
// probe path, else a description.
func (j *judge) readPath(r *translate.Rule, want *translate.PathModifier, m *routev3.RouteMatch, c pathChange, redirect bool) (*translate.PathModifier, error) {
	prefix, ok := j.apiPrefix(r)
	if !ok {
		prefix = "/"
		if want != nil && want.Type == translate.ReplacePrefixMatch {
			return &translate.PathModifier{Type: "not evaluated", Value: "the rule has no single PathPrefix match"}, nil
		}
	}
	if c == (pathChange{}) && want == nil {
		return nil, nil
	}
	for _, p := range probePaths(prefix) {
		got, err := c.apply(m, p)
		if err != nil {
			return nil, err
		}
		if redirect && !strings.HasPrefix(got, "/") {
			got = "/" + got // Envoy's Location always has a path
		}
		if exp := apiPath(want, prefix, p); got != exp {
			return &translate.PathModifier{Type: "Envoy's path change", Value: fmt.Sprintf("%s becomes %s, not %s", p, got, exp)}, nil
		}
	}
	if want == nil {
		return nil, nil
	}
	return &translate.PathModifier{Type: want.Type, Value: want.Value}, nil
}

// redirectStatus maps Envoy's response_code enum to a status.
func redirectStatus(c routev3.RedirectAction_RedirectResponseCode) int {
	for status, code := range redirectCodes {
		if code == c {
			return status
		}
	}
	return 0
}

// readRedirect states a redirect action in the model's terms. Envoy builds
// Location from scheme_redirect (else the request's scheme: https on a
// filter chain with a TLS transport socket, http otherwise), host_redirect (else the request's Host, whose port it drops
// only when port_redirect is set or the connection manager strips every
// Host port) and port_redirect (written as it is, even 80 or 443; without
// it no port).
func (j *judge) readRedirect(r *translate.Rule, rt *routev3.Route, rd *routev3.RedirectAction, env routeEnv) (*translate.Redirect, error) {
	out := &translate.Redirect{StatusCode: redirectStatus(rd.GetResponseCode())}
	// Without scheme_redirect Envoy writes the request's :scheme, which
	// the connection manager sets from the connection (https on a filter
	// chain that terminates TLS) when the client sent no
	// X-Forwarded-Proto.
	scheme := "http"
	if env.tls {
		scheme = "https"
	}
	switch s := rd.GetSchemeRewriteSpecifier().(type) {
	case *routev3.RedirectAction_SchemeRedirect:
		scheme = strings.ToLower(s.SchemeRedirect)
	case *routev3.RedirectAction_HttpsRedirect:
		if s.HttpsRedirect {
			scheme = "https"
		}
	}
	port := int(rd.GetPortRedirect())
	hostExact := rd.GetHostRedirect() != "" || port != 0 || env.stripAnyHostPort
	var c pathChange
	switch p := rd.GetPathRewriteSpecifier().(type) {
	case nil:
	case *routev3.RedirectAction_PathRedirect:
		c.full = &p.PathRedirect
		if strings.Contains(p.PathRedirect, "?") {
			// The redirect's own query replaces the request's.
			out.Path = &translate.PathModifier{Type: "Envoy's path_redirect with a query", Value: p.PathRedirect}
		}
	case *routev3.RedirectAction_PrefixRewrite:
		c.prefixRewrite = &p.PrefixRewrite
	case *routev3.RedirectAction_RegexRewrite:
		c.regex = p.RegexRewrite
	default:
		return nil, fmt.Errorf("redirect path specifier %T is not evaluated", p)
	}
	want := r.Filters.Redirect
	if want == nil {
		want = &translate.Redirect{}
	}
	if out.Path == nil {
		path, err := j.readPath(r, want.Path, rt.GetMatch(), c, true)
		if err != nil {
			return nil, err
		}
		out.Path = path
	}
	if rd.GetStripQuery() {
		out.Path = &translate.PathModifier{Type: "Envoy's strip_query", Value: "the query string is dropped"}
	}
	// The Location the Gateway API asks for, on this listener.
	wantScheme, wantPort := askedLocation(want, env.port, env.tls)
	same := hostExact && scheme == wantScheme && rd.GetHostRedirect() == want.Hostname && port == wantPort
	if same {
		out.Scheme, out.Hostname, out.Port = want.Scheme, want.Hostname, want.Port
		return out, nil
	}
	host := rd.GetHostRedirect()
	if host == "" {
		host = "the request's Host"
		if !hostExact {
			host += " with the port the client wrote"
		}
	}
	out.Scheme = scheme
	out.Hostname = fmt.Sprintf("%s (Location %s://%s, port %d written; the Gateway API asks for %s with port %d written, 0 for none)", host, scheme, host, port, wantScheme, wantPort)
	out.Port = port
	return out, nil
}

// askedLocation is the scheme and port of the Location the Gateway API
// asks for when rd is served on a listener of port (tls: terminating TLS),
// derived here from the specification, not from the generator: the
// scheme is rd's, else the request's; the port is rd's, else the
// well-known port of rd's scheme when it sets one, else the listener's;
// a port that is the scheme's well-known one is not written (0).
func askedLocation(rd *translate.Redirect, port int, tls bool) (string, int) {
	wellKnown := map[string]int{"http": 80, "https": 443}
	scheme := rd.Scheme
	if scheme == "" {
		scheme = "http"
		if tls {
			scheme = "https"
		}
	}
	p := rd.Port
	switch {
	case p != 0:
	case rd.Scheme != "":
		p = wellKnown[rd.Scheme]
	default:
		p = port
	}
	if p == wellKnown[scheme] {
		p = 0
	}
	return scheme, p
}

// readRewrite states a route action's host and path rewrites in the
// model's terms; nil when it rewrites nothing.
func (j *judge) readRewrite(r *translate.Rule, rt *routev3.Route, ra *routev3.RouteAction) (*translate.Rewrite, error) {
	rw := &translate.Rewrite{}
	switch h := ra.GetHostRewriteSpecifier().(type) {
	case nil:
	case *routev3.RouteAction_HostRewriteLiteral:
		rw.Hostname = h.HostRewriteLiteral
	default:
		rw.Hostname = fmt.Sprintf("(Envoy's %T)", h)
	}
	if ra.GetPathRewritePolicy() != nil || ra.GetPathRewrite() != "" {
		return nil, fmt.Errorf("path_rewrite_policy and path_rewrite are not evaluated")
	}
	var c pathChange
	if ra.GetPrefixRewrite() != "" {
		p := ra.GetPrefixRewrite()
		c.prefixRewrite = &p
	}
	if ra.GetRegexRewrite() != nil {
		if c.prefixRewrite != nil {
			return nil, fmt.Errorf("both prefix_rewrite and regex_rewrite")
		}
		c.regex = ra.GetRegexRewrite()
	}
	var want *translate.PathModifier
	if r.Filters.Rewrite != nil {
		want = r.Filters.Rewrite.Path
	}
	path, err := j.readPath(r, want, rt.GetMatch(), c, false)
	if err != nil {
		return nil, err
	}
	rw.Path = path
	if rw.Hostname == "" && rw.Path == nil {
		return nil, nil
	}
	return rw, nil
}

// readMirror states one mirror policy in the model's terms. A mirror whose
// cluster is unknown, whose endpoints are not the backend's, or that gets
// Host "<host>-shadow" has no Backend (it is not the Gateway API's mirror).
func (j *judge) readMirror(mp *routev3.RouteAction_RequestMirrorPolicy) *translate.Mirror {
	m := &translate.Mirror{Numerator: 100, Denominator: 100}
	if rf := mp.GetRuntimeFraction(); rf != nil {
		dv := rf.GetDefaultValue()
		m.Numerator = int(dv.GetNumerator())
		switch dv.GetDenominator() {
		case typev3.FractionalPercent_HUNDRED:
			m.Denominator = 100
		case typev3.FractionalPercent_TEN_THOUSAND:
			m.Denominator = 10000
		case typev3.FractionalPercent_MILLION:
			m.Denominator = 1000000
		}
		// Envoy caps a numerator above the denominator.
		m.Numerator = min(m.Numerator, m.Denominator)
	}
	ref := j.backends[mp.GetCluster()]
	cl := j.clusters[mp.GetCluster()]
	switch {
	case ref == nil || cl == nil:
		m.Invalid = fmt.Sprintf("cluster %q is not a backend of the model", mp.GetCluster())
	case !mp.GetDisableShadowHostSuffixAppend():
		m.Invalid = "the mirrored request's Host gets the suffix -shadow"
	case !sameEndpoints(cl, ref):
		m.Invalid = fmt.Sprintf("cluster %q does not hold the endpoints of %s", mp.GetCluster(), ref.Service)
	default:
		m.Backend = ref
	}
	return m
}

// sameEndpoints reports whether cluster cl sends to exactly b's endpoints.
func sameEndpoints(cl *clusterv3.Cluster, b *translate.BackendRef) bool {
	var got, want []string
	for _, le := range cl.GetLoadAssignment().GetEndpoints() {
		for _, e := range le.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			got = append(got, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
		}
	}
	for _, e := range b.Endpoints {
		want = append(want, fmt.Sprintf("%s:%d", e.Host, e.Port))
	}
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}
