package envoy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// placed is a rule and the match it is placed with.
type placed struct {
	rule  *translate.Rule
	match translate.Match
}

// filterModel puts each rule behind its match on one listener at port.
func filterModel(port int, ps ...placed) *translate.Model {
	vh := &translate.VirtualHost{Name: "any"}
	var rules []*translate.Rule
	for _, p := range ps {
		vh.Routes = append(vh.Routes, &translate.RouteMatch{Match: p.match, Rule: p.rule})
		rules = append(rules, p.rule)
	}
	return &translate.Model{
		Listeners:  []*translate.Listener{{Name: fmt.Sprintf("http-%d", port), Address: "127.0.0.1", Port: port, VirtualHosts: []*translate.VirtualHost{vh}}},
		Rules:      rules,
		RouteCount: 1, RuleCount: len(rules),
	}
}

// filterRule is a proxying rule with filters and no retry.
func filterRule(index int, fl translate.Filters) *translate.Rule {
	r := newRule(index, nil, translate.Timeouts{})
	r.Name = fmt.Sprintf("default_web_r%d", index)
	r.Filters = fl
	return r
}

// redirectRule is a rule without backendRefs that redirects.
func redirectRule(index int, rd *translate.Redirect, fl translate.Filters) *translate.Rule {
	r := filterRule(index, fl)
	r.Backends, r.NoBackendRefs = nil, true
	r.Filters.Redirect = rd
	return r
}

func mirrorOf(name string, n, d int) *translate.Mirror {
	return &translate.Mirror{Backend: backend(name, 1, "127.0.0.2"), Numerator: n, Denominator: d}
}

func findingOf(t *testing.T, fs []translate.Finding, r *translate.Rule, f translate.Feature) translate.Finding {
	t.Helper()
	for _, x := range fs {
		if x.Route == r.Route && x.Rule == r.Index && x.Feature == f {
			return x
		}
	}
	t.Fatalf("rule %s has no %s finding in %v", r.Name, f, fs)
	return translate.Finding{}
}

// TestHeaderFilterFields: set is OVERWRITE_IF_EXISTS_OR_ADD, add is
// APPEND_IF_EXISTS_OR_ADD, remove is *_headers_to_remove; Host is left out
// and reported, since Envoy refuses to load a route that mutates it.
func TestHeaderFilterFields(t *testing.T) {
	hm := &translate.HeaderModifier{
		Set:    []translate.Header{{Name: "X-Set", Value: "a b"}},
		Add:    []translate.Header{{Name: "X-Add", Value: "c,d"}},
		Remove: []string{"X-Gone"},
	}
	withHost := &translate.HeaderModifier{Set: []translate.Header{{Name: "Host", Value: "x.example"}, {Name: "X-Ok", Value: "1"}}, Remove: []string{"host"}}
	server := &translate.HeaderModifier{Set: []translate.Header{{Name: "Server", Value: "me"}}}
	r0 := filterRule(0, translate.Filters{RequestHeaders: hm, ResponseHeaders: hm})
	r1 := filterRule(1, translate.Filters{RequestHeaders: withHost, ResponseHeaders: server})
	r2 := filterRule(2, translate.Filters{RequestHeaders: hm})
	r2.Retry = &translate.Retry{Attempts: 1} // a twin route for POST gets the same mutations
	m := filterModel(8080, placed{r0, prefix("/a")}, placed{r1, prefix("/b")}, placed{r2, prefix("/c")})
	out, bs := generate(t, m, translate.Options{})

	wantAdd := []*corev3.HeaderValueOption{
		{Header: &corev3.HeaderValue{Key: "X-Set", Value: "a b"}, AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD},
		{Header: &corev3.HeaderValue{Key: "X-Add", Value: "c,d"}, AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD},
	}
	for _, name := range []string{r0.Name, r2.Name, r2.Name + twinSuffix} {
		rt := route0(t, routesNamed(t, bs, name))
		for which, got := range map[string][]*corev3.HeaderValueOption{"request": rt.GetRequestHeadersToAdd(), "response": rt.GetResponseHeadersToAdd()} {
			if which == "response" && name != r0.Name {
				if len(got) > 0 {
					t.Errorf("%s: response headers %v, want none", name, got)
				}
				continue
			}
			if !slices.EqualFunc(got, wantAdd, func(a, b *corev3.HeaderValueOption) bool { return proto.Equal(a, b) }) {
				t.Errorf("%s %s_headers_to_add = %v, want %v", name, which, got, wantAdd)
			}
		}
		if got := rt.GetRequestHeadersToRemove(); !slices.Equal(got, []string{"X-Gone"}) {
			t.Errorf("%s request_headers_to_remove = %v", name, got)
		}
	}
	rt := route0(t, routesNamed(t, bs, r1.Name))
	if len(rt.GetRequestHeadersToAdd()) != 1 || rt.GetRequestHeadersToAdd()[0].GetHeader().GetKey() != "X-Ok" || len(rt.GetRequestHeadersToRemove()) != 0 {
		t.Errorf("Host must be left out: add %v remove %v", rt.GetRequestHeadersToAdd(), rt.GetRequestHeadersToRemove())
	}

	for _, c := range []struct {
		r       *translate.Rule
		f       translate.Feature
		caveats []report.Caveat
	}{
		{r0, translate.FeatureRequestHeaderModifier, nil},
		{r0, translate.FeatureResponseHeaderModifier, nil},
		{r1, translate.FeatureRequestHeaderModifier, []report.Caveat{report.NewCaveat(report.CaveatHeaderNotModifiable, "headers", "Host, host")}},
		{r1, translate.FeatureResponseHeaderModifier, []report.Caveat{report.NewCaveat(report.CaveatServerHeaderOverwritten)}},
		{r2, translate.FeatureRequestHeaderModifier, nil},
	} {
		f := findingOf(t, out.Findings, c.r, c.f)
		if f.Reason != report.ReasonConfigured || fmt.Sprint(f.Caveats) != fmt.Sprint(c.caveats) {
			t.Errorf("%s %s: %s %v, want Configured %v", c.r.Name, c.f, f.Reason, f.Caveats, c.caveats)
		}
	}
}

// TestReplacePrefixMatchTable applies the path change gwretry writes, with
// Envoy's semantics, to the Gateway API's own ReplacePrefixMatch table
// (HTTPPathModifier.ReplacePrefixMatch, v1.7.0) and more, for both the
// rewrite (route action) and the redirect.
func TestReplacePrefixMatchTable(t *testing.T) {
	cases := []struct{ path, prefix, value, want string }{
		// The Gateway API's table.
		{"/foo/bar", "/foo", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo", "/xyz/", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz", "/xyz/bar"},
		{"/foo/bar", "/foo/", "/xyz/", "/xyz/bar"},
		{"/foo", "/foo", "/xyz", "/xyz"},
		{"/foo/", "/foo", "/xyz", "/xyz/"},
		{"/foo/bar", "/foo", "", "/bar"},
		{"/foo/", "/foo", "", "/"},
		{"/foo", "/foo", "", "/"},
		{"/foo/", "/foo", "/", "/"},
		{"/foo", "/foo", "/", "/"},
		// The conformance manifests' cases (httproute-rewrite-path,
		// httproute-redirect-path).
		{"/prefix/one/two", "/prefix/one", "/one", "/one/two"},
		{"/strip-prefix/three", "/strip-prefix", "/", "/three"},
		{"/strip-prefix", "/strip-prefix", "/", "/"},
		{"/original-prefix/lemon", "/original-prefix", "/replacement-prefix", "/replacement-prefix/lemon"},
		// A prefix of "/" has nothing to replace: the value is put in front.
		{"/", "/", "/xyz", "/xyz/"},
		{"/a/b", "/", "/xyz", "/xyz/a/b"},
		{"/a/b", "/", "", "/a/b"},
		{"/a/b", "/", "/", "/a/b"},
		// Regex metacharacters in the prefix are literal.
		{"/a.b+c/d", "/a.b+c", "", "/d"},
	}
	for _, c := range cases {
		mt := prefix(c.prefix)
		m := buildMatch(mt)
		pm := &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: c.value}
		ra := &routev3.RouteAction{}
		if err := applyRewrite(ra, &translate.Rewrite{Path: pm}, mt); err != nil {
			t.Fatal(err)
		}
		rc := pathChange{regex: ra.GetRegexRewrite()}
		if ra.GetPrefixRewrite() != "" {
			p := ra.GetPrefixRewrite()
			rc.prefixRewrite = &p
		}
		got, err := rc.apply(m, c.path)
		if err != nil || got != c.want {
			t.Errorf("rewrite %s (prefix %s, value %q): %q %v, want %q (%v)", c.path, c.prefix, c.value, got, err, c.want, ra)
		}
		rd, _, err := redirectAction(&translate.Redirect{Path: pm, StatusCode: 302}, mt, listenerSide{port: 80})
		if err != nil {
			t.Fatal(err)
		}
		var dc pathChange
		switch p := rd.GetPathRewriteSpecifier().(type) {
		case *routev3.RedirectAction_PrefixRewrite:
			dc.prefixRewrite = &p.PrefixRewrite
		case *routev3.RedirectAction_RegexRewrite:
			dc.regex = p.RegexRewrite
		}
		got, err = dc.apply(m, c.path)
		if !strings.HasPrefix(got, "/") {
			got = "/" + got
		}
		if err != nil || got != c.want {
			t.Errorf("redirect %s (prefix %s, value %q): %q %v, want %q", c.path, c.prefix, c.value, got, err, c.want)
		}
	}
}

// TestRedirectFields: the Location parts as the Gateway API derives them
// (port from the scheme, else the listener; no port where it is the
// scheme's own), the status code enum, and strip_any_host_port where the
// Location takes the request's host and names no port.
func TestRedirectFields(t *testing.T) {
	full := &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/new"}
	cases := []struct {
		name         string
		listenerPort int
		rd           translate.Redirect
		scheme, host string
		port         uint32
		code         routev3.RedirectAction_RedirectResponseCode
		strip        bool
		path         string // path_redirect
	}{
		{"https on 80", 80, translate.Redirect{Scheme: "https", StatusCode: 301}, "https", "", 0, routev3.RedirectAction_MOVED_PERMANENTLY, true, ""},
		{"https on 8080", 8080, translate.Redirect{Scheme: "https", StatusCode: 302}, "https", "", 0, routev3.RedirectAction_FOUND, true, ""},
		{"http on 8080", 8080, translate.Redirect{Scheme: "http", StatusCode: 303}, "http", "", 0, routev3.RedirectAction_SEE_OTHER, true, ""},
		{"no scheme on 8080", 8080, translate.Redirect{Hostname: "b.example", StatusCode: 307}, "", "b.example", 8080, routev3.RedirectAction_TEMPORARY_REDIRECT, false, ""},
		{"no scheme on 80", 80, translate.Redirect{Hostname: "b.example", StatusCode: 308}, "", "b.example", 0, routev3.RedirectAction_PERMANENT_REDIRECT, false, ""},
		{"no scheme, no host on 80", 80, translate.Redirect{Path: full, StatusCode: 302}, "", "", 0, routev3.RedirectAction_FOUND, true, "/new"},
		{"no scheme, no host on 8080", 8080, translate.Redirect{StatusCode: 302}, "", "", 8080, routev3.RedirectAction_FOUND, false, ""},
		{"https port 8443", 80, translate.Redirect{Scheme: "https", Port: 8443, StatusCode: 302}, "https", "", 8443, routev3.RedirectAction_FOUND, false, ""},
		{"https port 443", 8080, translate.Redirect{Scheme: "https", Port: 443, StatusCode: 302}, "https", "", 0, routev3.RedirectAction_FOUND, true, ""},
		{"http port 443", 80, translate.Redirect{Scheme: "http", Port: 443, StatusCode: 302}, "http", "", 443, routev3.RedirectAction_FOUND, false, ""},
		{"port 80 on 8080", 8080, translate.Redirect{Port: 80, Hostname: "b.example", StatusCode: 302}, "", "b.example", 0, routev3.RedirectAction_FOUND, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rd := c.rd
			r := redirectRule(0, &rd, translate.Filters{})
			m := filterModel(c.listenerPort, placed{r, prefix("/old")})
			out, bs := generate(t, m, translate.Options{})
			rt := route0(t, routesNamed(t, bs, r.Name))
			ra := rt.GetRedirect()
			if ra == nil {
				t.Fatalf("no redirect action: %v", rt)
			}
			if ra.GetSchemeRedirect() != c.scheme || ra.GetHostRedirect() != c.host || ra.GetPortRedirect() != c.port ||
				ra.GetResponseCode() != c.code || ra.GetPathRedirect() != c.path || ra.GetStripQuery() {
				t.Errorf("redirect = %v, want scheme %q host %q port %d code %s path %q", ra, c.scheme, c.host, c.port, c.code, c.path)
			}
			hcm := hcmOf(t, bs, 0)
			if hcm.GetStripAnyHostPort() != c.strip {
				t.Errorf("strip_any_host_port = %v, want %v", hcm.GetStripAnyHostPort(), c.strip)
			}
			if f := findingOf(t, out.Findings, r, translate.FeatureRequestRedirect); f.Status != translate.Honoured {
				t.Errorf("finding %s %s", f.Status, report.WithParams(f.Reason, f.Params))
			}
			if err := Check(out.Files[0].Data); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestRewriteAndMirrorFields: host_rewrite_literal, regex_rewrite for a
// full path, request_mirror_policies with exact shares, and the share that
// Envoy can only round.
func TestRewriteAndMirrorFields(t *testing.T) {
	r0 := filterRule(0, translate.Filters{Rewrite: &translate.Rewrite{Hostname: "b.example", Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/one"}}})
	r1 := filterRule(1, translate.Filters{Mirrors: []*translate.Mirror{
		mirrorOf("mirror_a", 10, 100), mirrorOf("mirror_b", 1, 10000), mirrorOf("mirror_c", 0, 100),
		{Invalid: "Service default/nope is not in the input", Numerator: 100, Denominator: 100},
	}})
	r2 := filterRule(2, translate.Filters{Mirrors: []*translate.Mirror{mirrorOf("mirror_a", 1, 3)}})
	m := filterModel(8080, placed{r0, prefix("/a")}, placed{r1, prefix("/b")}, placed{r2, prefix("/c")})
	out, bs := generate(t, m, translate.Options{})

	ra := route0(t, routesNamed(t, bs, r0.Name)).GetRoute()
	if ra.GetHostRewriteLiteral() != "b.example" || ra.GetRegexRewrite().GetPattern().GetRegex() != "^/.*$" ||
		ra.GetRegexRewrite().GetSubstitution() != "/one" || ra.GetPrefixRewrite() != "" || ra.GetAppendXForwardedHost() {
		t.Errorf("rewrite: %v", ra)
	}
	mp := route0(t, routesNamed(t, bs, r1.Name)).GetRoute().GetRequestMirrorPolicies()
	want := []*routev3.RouteAction_RequestMirrorPolicy{
		{Cluster: "mirror_a", RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 10}}, DisableShadowHostSuffixAppend: true},
		{Cluster: "mirror_b", RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 1, Denominator: typev3.FractionalPercent_TEN_THOUSAND}}, DisableShadowHostSuffixAppend: true},
		{Cluster: "mirror_c", RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 0}}, DisableShadowHostSuffixAppend: true},
	}
	if !slices.EqualFunc(mp, want, func(a, b *routev3.RouteAction_RequestMirrorPolicy) bool { return proto.Equal(a, b) }) {
		t.Errorf("mirrors = %v, want %v", mp, want)
	}
	mp = route0(t, routesNamed(t, bs, r2.Name)).GetRoute().GetRequestMirrorPolicies()
	if len(mp) != 1 || mp[0].GetRuntimeFraction().GetDefaultValue().GetNumerator() != 333333 ||
		mp[0].GetRuntimeFraction().GetDefaultValue().GetDenominator() != typev3.FractionalPercent_MILLION {
		t.Errorf("1/3 mirror: %v", mp)
	}
	checkClustersReferenced(t, bs)
	for _, c := range []struct {
		r          *translate.Rule
		f          translate.Feature
		configured string
		caveats    []report.Caveat
	}{
		{r0, translate.FeatureURLRewrite, "host_rewrite_literal b.example; regex_rewrite to /one", nil},
		// The invalid mirror is left out, as the Gateway API asks.
		{r1, translate.FeatureRequestMirror, "request_mirror_policies 3", nil},
		{r2, translate.FeatureRequestMirror, "request_mirror_policies 1", []report.Caveat{report.NewCaveat(report.CaveatMirrorShareRounded, "share", "1/3", "rounded", "333333/MILLION")}},
	} {
		if f := findingOf(t, out.Findings, c.r, c.f); f.Reason != report.ReasonConfigured || f.Configured != c.configured || fmt.Sprint(f.Caveats) != fmt.Sprint(c.caveats) {
			t.Errorf("%s %s: %s %q %v, want Configured %q %v", c.r.Name, c.f, f.Reason, f.Configured, f.Caveats, c.configured, c.caveats)
		}
	}
}

// TestRedirectRuleFindings: a redirect-only rule answers the redirect, its
// response headers apply to the redirect, and a mirror there is not
// possible.
func TestRedirectRuleFindings(t *testing.T) {
	hm := &translate.HeaderModifier{Set: []translate.Header{{Name: "X-A", Value: "1"}}}
	r := redirectRule(0, &translate.Redirect{Scheme: "https", StatusCode: 301}, translate.Filters{
		RequestHeaders: hm, ResponseHeaders: hm, Mirrors: []*translate.Mirror{mirrorOf("mirror_a", 1, 1)}})
	r.Retry = &translate.Retry{Attempts: 1}
	m := filterModel(80, placed{r, prefix("/old")})
	out, bs := generate(t, m, translate.Options{})
	rt := route0(t, routesNamed(t, bs, r.Name))
	if rt.GetRedirect() == nil || len(rt.GetResponseHeadersToAdd()) != 1 {
		t.Errorf("redirect route: %v", rt)
	}
	for f, want := range map[translate.Feature]report.Reason{
		translate.FeatureRequestRedirect:        report.ReasonConfigured,
		translate.FeatureResponseHeaderModifier: report.ReasonConfigured,
		translate.FeatureRequestHeaderModifier:  report.ReasonConfigured,
		translate.FeatureRequestMirror:          report.ReasonRuleForwardsNothing,
		translate.FeatureRetryAttempts:          report.ReasonRuleForwardsNothing,
	} {
		if got := findingOf(t, out.Findings, r, f); got.Reason != want || len(got.Caveats) > 0 {
			t.Errorf("%s: %s %v, want %s", f, got.Reason, got.Caveats, want)
		}
	}
	// What the redirect rule answers instead is its redirect's record.
	if f := findingOf(t, out.Findings, r, translate.FeatureRequestRedirect); f.Configured != "redirect response_code MOVED_PERMANENTLY" {
		t.Errorf("redirect of a redirect rule: configured %q", f.Configured)
	}
	if _, err := translate.Run(m, []translate.Target{{Backend: New()}}, false); err != nil {
		t.Fatal(err)
	}
}

// judgedFilterModel is a model with every translated filter, on listener
// port 8080.
func judgedFilterModel() *translate.Model {
	hm := &translate.HeaderModifier{
		Set:    []translate.Header{{Name: "X-Set", Value: "a"}},
		Add:    []translate.Header{{Name: "X-Add", Value: "b"}},
		Remove: []string{"X-Gone"},
	}
	r0 := filterRule(0, translate.Filters{RequestHeaders: hm, ResponseHeaders: hm,
		Rewrite: &translate.Rewrite{Hostname: "rw.example", Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/new"}},
		Mirrors: []*translate.Mirror{mirrorOf("mirror_a", 25, 100)}})
	r0.Retry = &translate.Retry{Attempts: 1} // twin and primary route
	r1 := redirectRule(1, &translate.Redirect{Scheme: "https", StatusCode: 308, Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: ""}}, translate.Filters{})
	r2 := redirectRule(2, &translate.Redirect{Hostname: "to.example", StatusCode: 302, Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/full"}}, translate.Filters{})
	r3 := filterRule(3, translate.Filters{Rewrite: &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/whole"}}})
	r4 := filterRule(4, translate.Filters{Mirrors: []*translate.Mirror{mirrorOf("mirror_b", 1, 3)}})
	r5 := filterRule(5, translate.Filters{RequestHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "Host", Value: "h.example"}}}})
	r6 := redirectRule(6, &translate.Redirect{StatusCode: 302}, translate.Filters{})
	return filterModel(8080, placed{r0, prefix("/r0")}, placed{r1, prefix("/r1")}, placed{r2, prefix("/r2")},
		placed{r3, prefix("/r3")}, placed{r4, prefix("/r4")}, placed{r5, prefix("/r5")}, placed{r6, prefix("/r6")})
}

// TestFilterJudge: Run accepts every honoured filter claim; the judge reads
// the filters back in the model's terms; a tampered file or a widened
// claim is caught.
func TestFilterJudge(t *testing.T) {
	for _, port := range []int{80, 8080} {
		m := judgedFilterModel()
		m.Listeners[0].Port = port
		for _, optIn := range []bool{false, true} {
			if _, err := translate.Run(m, []translate.Target{{Backend: New()}}, optIn); err != nil {
				t.Fatalf("port %d, opt-in %v: Run: %v", port, optIn, err)
			}
		}
	}
	m := judgedFilterModel()
	out, _ := generate(t, m, translate.Options{})
	data := out.Files[0].Data
	obs, err := observe(t, m, translate.Options{}, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Rules[:4] {
		for c, b := range obs[r.Name] {
			got := b.Filters
			got.Mirrors = nil
			want := r.Filters
			want.Mirrors = nil
			if text(got) != text(want) {
				t.Errorf("%s (%s): read back %s, want %s", r.Name, c, text(got), text(want))
			}
		}
	}
	if b := obs[m.Rules[1].Name][translate.Idempotent]; b.Answer != 308 {
		t.Errorf("redirect answer %d", b.Answer)
	}
	if ms := obs[m.Rules[0].Name][translate.NonIdempotent].Filters.Mirrors; len(ms) != 1 || ms[0].Backend == nil || ms[0].Numerator != 25 || ms[0].Denominator != 100 {
		t.Errorf("mirror read back: %+v", ms)
	}

	files := map[string]fileEdit{
		"set becomes add":           {"- append_action: OVERWRITE_IF_EXISTS_OR_ADD\n", "- append_action: APPEND_IF_EXISTS_OR_ADD\n", "filters.requestHeaderModifier"},
		"set becomes add-if-absent": {"- append_action: OVERWRITE_IF_EXISTS_OR_ADD\n", "- append_action: ADD_IF_ABSENT\n", "sets request headers"},
		"header value changed":      {"value: a\n", "value: z\n", "sets request headers"},
		"remove dropped":            {"- X-Gone\n", "- X-Other\n", "removes request headers"},
		"redirect code":             {"response_code: PERMANENT_REDIRECT", "response_code: TEMPORARY_REDIRECT", "redirects with 307"},
		"redirect host port kept":   {"strip_any_host_port: true", "strip_any_host_port: false", "the port the client wrote"},
		"redirect port added":       {"scheme_redirect: https", "scheme_redirect: https\n                  port_redirect: 443", "port 443 written"},
		"redirect scheme":           {"scheme_redirect: https", "scheme_redirect: http", "filters.requestRedirect"},
		"redirect host":             {"host_redirect: to.example", "host_redirect: other.example", "other.example"},
		"redirect full path":        {"path_redirect: /full", "path_redirect: /fall", "/fall"},
		"redirect prefix regex":     {"regex: ^/r1(/|$)", "regex: ^/r1/", "/r1 becomes"},
		"rewrite prefix":            {"prefix_rewrite: /new", "prefix_rewrite: /new/", "/r0 becomes /new/, not /new"},
		"rewrite host":              {"host_rewrite_literal: rw.example", "host_rewrite_literal: xx.example", "filters.urlRewrite"},
		"rewrite full path":         {"substitution: /whole", "substitution: /hole", "filters.urlRewrite"},
		"mirror share":              {"numerator: 25", "numerator: 26", "share 13/50"},
		"mirror shadow host":        {"disable_shadow_host_suffix_append: true", "disable_shadow_host_suffix_append: false", "filters.requestMirror"},
		"mirror cluster":            {"- cluster: mirror_a", "- cluster: default_web_8080", "filters.requestMirror"},
	}
	// Approximated claims widened to honoured.
	claims := map[string]widenedClaim{
		"mirror 1/3 rounded": {4, translate.FeatureRequestMirror, "share 333333/1000000"},
		"Host left out":      {5, translate.FeatureRequestHeaderModifier, "sets request headers"},
	}
	checkCaught(t, m, data, out.Findings, files, claims)
}

// hcmOf unpacks the connection manager of listener i.
func hcmOf(t testing.TB, bs *bootstrapv3.Bootstrap, i int) *hcmv3.HttpConnectionManager {
	t.Helper()
	hcm := &hcmv3.HttpConnectionManager{}
	if err := bs.GetStaticResources().GetListeners()[i].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	return hcm
}

// text writes the filters but mirrors with pointers followed.
func text(fl translate.Filters) string {
	deref := func(p any) string {
		switch v := p.(type) {
		case *translate.HeaderModifier:
			if v != nil {
				return fmt.Sprintf("%v", *v)
			}
		case *translate.Redirect:
			if v != nil {
				return fmt.Sprintf("%s %s %d %d %v", v.Scheme, v.Hostname, v.Port, v.StatusCode, *v.Path)
			}
		case *translate.Rewrite:
			if v != nil {
				return fmt.Sprintf("%s %v", v.Hostname, *v.Path)
			}
		}
		return "nil"
	}
	return strings.Join([]string{deref(fl.RequestHeaders), deref(fl.ResponseHeaders), deref(fl.Redirect), deref(fl.Rewrite)}, " | ")
}
