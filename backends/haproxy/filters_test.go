package haproxy

import (
	"strings"
	"testing"

	hostilevalues "github.com/gwretry/gwretry/internal/hostile"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// filterRules are rules with every Standard filter, each behind /rNN
// (modelOf).
func filterRules() []*translate.Rule {
	var rules []*translate.Rule
	add := func(r *translate.Rule, set func(fl *translate.Filters)) {
		r.Index = len(rules)
		r.Name = "default_web_r" + itoa(r.Index)
		set(&r.Filters)
		rules = append(rules, r)
	}
	fwd := func() *translate.Rule { return rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{}) }
	redirect := func() *translate.Rule {
		r := rule(0, nil, translate.Timeouts{})
		r.Backends, r.NoBackendRefs = nil, true
		return r
	}
	add(fwd(), func(fl *translate.Filters) { // r00
		fl.RequestHeaders = &translate.HeaderModifier{
			Set:    []translate.Header{{Name: "X-Set", Value: "set value"}, {Name: "X-If", Value: "if"}},
			Add:    []translate.Header{{Name: "X-Add", Value: "a,b <c> [d]|^e"}, {Name: "X-Set", Value: "more"}},
			Remove: []string{"X-Gone"},
		}
		fl.ResponseHeaders = &translate.HeaderModifier{
			Set:    []translate.Header{{Name: "X-Resp", Value: "r1"}},
			Add:    []translate.Header{{Name: "X-Resp-Add", Value: "r2"}},
			Remove: []string{"X-Backend"},
		}
	})
	add(fwd(), func(fl *translate.Filters) { // r01
		fl.Rewrite = &translate.Rewrite{Hostname: "rewritten.example", Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/new"}}
	})
	add(fwd(), func(fl *translate.Filters) { // r02
		fl.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/"}}
	})
	add(fwd(), func(fl *translate.Filters) { // r03
		fl.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/full(1)"}}
	})
	add(redirect(), func(fl *translate.Filters) { // r04
		fl.Redirect = &translate.Redirect{StatusCode: 302}
	})
	add(redirect(), func(fl *translate.Filters) { // r05
		fl.Redirect = &translate.Redirect{Scheme: "https", Hostname: "example.org", StatusCode: 301,
			Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/to"}}
		fl.ResponseHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Redirected", Value: "yes"}}}
	})
	add(redirect(), func(fl *translate.Filters) { // r06
		fl.Redirect = &translate.Redirect{Port: 8443, StatusCode: 308, Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/full"}}
	})
	add(redirect(), func(fl *translate.Filters) { // r07
		fl.Redirect = &translate.Redirect{Scheme: "http", Port: 80, StatusCode: 307}
	})
	add(fwd(), func(fl *translate.Filters) { // r08
		mirror := ref("default_m_80", 1, ep("10.0.0.9", 80))
		fl.Mirrors = []*translate.Mirror{{Backend: mirror, Numerator: 1, Denominator: 2}}
		fl.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "Host", Value: "h"}}}
		fl.Rewrite = &translate.Rewrite{Hostname: "rewritten.example"}
	})
	add(fwd(), func(fl *translate.Filters) { // r09: empty filters
		fl.Rewrite = &translate.Rewrite{}
		fl.RequestHeaders = &translate.HeaderModifier{}
	})
	return rules
}

func findingOf(t *testing.T, fs map[int]map[translate.Feature]translate.Finding, rule int, feat translate.Feature) translate.Finding {
	t.Helper()
	f, ok := fs[rule][feat]
	if !ok {
		t.Fatalf("rule %d: no finding for %s", rule, feat)
	}
	return f
}

// TestFilters checks the lines and findings of every filter; generate runs
// translate.Run, so the judge agrees with every honoured claim.
func TestFilters(t *testing.T) {
	cfg, fs := generate(t, modelOf(filterRules()...), translate.Options{Version: checkedVersion})
	proxytest.HAProxyCheck(t, []byte(cfg))
	for _, want := range []string{
		"http-request del-header X-Gone\n",
		`http-request set-header X-Set 'set value'` + "\n",
		`http-request set-header X-If 'if'` + "\n",
		`http-request add-header X-Add 'a,b <c> [d]|^e'` + "\n",
		`http-after-response set-header X-Resp 'r1'` + "\n",
		`http-after-response del-header X-Backend` + "\n",
		`http-request replace-path ^/r01(.*) '/new\1'` + "\n",
		`http-request set-header Host "rewritten.example"` + "\n",
		`http-request replace-path ^/r02/?(.*) '/\1'` + "\n",
		`http-request set-path '/full(1)'` + "\n",
		"http-request redirect prefix https://%[req.hdr(host),regsub(:[0-9]*$,)] code 302 if { ssl_fc } { dst_port 443 }\n",
		"http-request redirect prefix http://%[req.hdr(host),regsub(:[0-9]*$,)]:%[dst_port] code 302\n",
		"http-request replace-path ^/r05(.*) '/to\\1'\n",
		"http-request redirect prefix https://example.org code 301\n",
		"http-request redirect prefix https://%[req.hdr(host),regsub(:[0-9]*$,)]:8443 code 308 if { ssl_fc }\n",
		"http-request redirect prefix http://%[req.hdr(host),regsub(:[0-9]*$,)] code 307\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
	// The reason of each filter finding; only rule 8's Host conflict has
	// a caveat (TestDecisions checks it).
	reasons := map[int]map[translate.Feature]report.Reason{
		0: {translate.FeatureRequestHeaderModifier: report.ReasonConfigured, translate.FeatureResponseHeaderModifier: report.ReasonConfigured},
		1: {translate.FeatureURLRewrite: report.ReasonConfigured},
		2: {translate.FeatureURLRewrite: report.ReasonConfigured},
		3: {translate.FeatureURLRewrite: report.ReasonConfigured},
		4: {translate.FeatureRequestRedirect: report.ReasonConfigured},
		5: {translate.FeatureRequestRedirect: report.ReasonConfigured, translate.FeatureResponseHeaderModifier: report.ReasonConfigured},
		6: {translate.FeatureRequestRedirect: report.ReasonConfigured},
		7: {translate.FeatureRequestRedirect: report.ReasonConfigured},
		9: {translate.FeatureURLRewrite: report.ReasonConfigured, translate.FeatureRequestHeaderModifier: report.ReasonConfigured},
		8: {translate.FeatureRequestMirror: report.ReasonNotExpressible, translate.FeatureRequestHeaderModifier: report.ReasonConfigured, translate.FeatureURLRewrite: report.ReasonConfigured},
	}
	for rule, feats := range reasons {
		for feat, want := range feats {
			f := findingOf(t, fs, rule, feat)
			hostConflict := rule == 8 && feat == translate.FeatureRequestHeaderModifier
			if f.Reason != want || hasCaveat(f, report.CaveatHostReplacedByRewrite) != hostConflict || len(f.Caveats) > 1 {
				t.Errorf("rule %d %s: %s %v, want %s", rule, feat, f.Reason, f.Caveats, want)
			}
		}
	}
}

// TestFilterPrefixUnknown: ReplacePrefixMatch on a rule without one
// PathPrefix match is reported, not written.
func TestFilterPrefixUnknown(t *testing.T) {
	r := rule(0, nil, translate.Timeouts{})
	r.Filters.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/x"}}
	m := modelOf(r)
	m.Listeners[0].VirtualHosts[0].Routes[0].Match = translate.Match{PathType: translate.PathExact, Path: "/r00"}
	cfg, fs := generate(t, m, translate.Options{Version: checkedVersion})
	if f := findingOf(t, fs, 0, translate.FeatureURLRewrite); f.Reason != report.ReasonPrefixRewriteWithoutPrefixMatch {
		t.Errorf("finding %+v, want PrefixRewriteWithoutPrefixMatch", f)
	}
	if strings.Contains(cfg, "replace-path") {
		t.Error("replace-path written without a known prefix")
	}
}

func TestPrefixRewriteRegex(t *testing.T) {
	tests := []struct{ prefix, regex string }{
		{"/a.b(c)", "^/a[.]b[(]c[)]"},
		{"/$x%20+*", "^/[$]x[%]20[+][*]"},
		{"", "^"},
	}
	for _, tt := range tests {
		if got := regexLiteral(tt.prefix); "^"+got != tt.regex {
			t.Errorf("regexLiteral(%q) = %q, want %q", tt.prefix, got, tt.regex)
		}
		if back, ok := unRegexLiteral(regexLiteral(tt.prefix)); !ok || back != tt.prefix {
			t.Errorf("unRegexLiteral(regexLiteral(%q)) = %q, %v", tt.prefix, back, ok)
		}
	}
}

// TestJudgeCatchesFilters: tampered filter lines and widened claims are
// contradicted by what the judge reads back.
func TestJudgeCatchesFilters(t *testing.T) {
	opts := translate.Options{Version: checkedVersion}
	tests := map[string]struct {
		edit  func(string) string
		claim func([]translate.Finding)
	}{
		"set value changed":            {replace(`set-header X-Set 'set value'`, `set-header X-Set 'other'`), nil},
		"removal dropped":              {replace("  http-request del-header X-Gone\n", ""), nil},
		"add made set":                 {replace(`add-header X-Add`, `set-header X-Add`), nil},
		"set value made a fetch":       {replace(`set-header X-Set 'set value'`, `set-header X-Set '%[src]'`), nil},
		"set value made an env var":    {replace(`set-header X-Set 'set value'`, `set-header X-Set "${HOME}"`), nil},
		"set value unquoted":           {replace(`set-header X-Set 'set value'`, `set-header X-Set set value`), nil},
		"conditional add":              {replace(`add-header X-Add 'a,b <c> [d]|^e'`, `add-header X-Add 'a,b <c> [d]|^e' if { ssl_fc }`), nil},
		"response set dropped":         {replace("  http-after-response set-header X-Resp 'r1'\n", ""), nil},
		"prefix of another match":      {replace(`replace-path ^/r01(.*)`, `replace-path ^/r0(.*)`), nil},
		"prefix without slash keeping": {replace(`replace-path ^/r02/?(.*) '/\1'`, `replace-path ^/r02(.*) '\1'`), nil},
		"full path changed":            {replace(`set-path '/full(1)'`, `set-path '/full(2)'`), nil},
		"host rewrite dropped":         {replace("  http-request set-header Host \"rewritten.example\"\n", ""), nil},
		"redirect code":                {replace("https://example.org code 301", "https://example.org code 302"), nil},
		"redirect host":                {replace("https://example.org code 301", "https://example.com code 301"), nil},
		"redirect keeps port":          {replace("http://%[req.hdr(host),regsub(:[0-9]*$,)]:%[dst_port] code 302\n", "http://%[req.hdr(host),regsub(:[0-9]*$,)]:8080 code 302\n"), nil},
		"redirect scheme fixed":        {replace("https://%[req.hdr(host),regsub(:[0-9]*$,)]:8443 code 308 if { ssl_fc }", "http://%[req.hdr(host),regsub(:[0-9]*$,)]:8443 code 308 if { ssl_fc }"), nil},
		"redirect only on TLS":         {replace("http://%[req.hdr(host),regsub(:[0-9]*$,)] code 307\n", "http://%[req.hdr(host),regsub(:[0-9]*$,)] code 307 if { ssl_fc }\n"), nil},
		"mirror claimed":               {nil, honour(translate.FeatureRequestMirror)},
		"host conflict claimed":        {nil, honour(translate.FeatureRequestHeaderModifier)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if errs := judged(t, modelOf(filterRules()...), opts, tt.edit, tt.claim); len(errs) == 0 {
				t.Error("the judge found no contradiction")
			}
		})
	}
}

// TestFilterValuesChecked: the backend's own check refuses filter values
// that are not one plain word of a log-format string, whatever
// Model.Check let through.
func TestFilterValuesChecked(t *testing.T) {
	fields := map[string]func(fl *translate.Filters, v string){
		"header name": func(fl *translate.Filters, v string) {
			fl.RequestHeaders = &translate.HeaderModifier{Remove: []string{v}}
		},
		"header value": func(fl *translate.Filters, v string) {
			fl.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "X", Value: v}}}
		},
		"response value": func(fl *translate.Filters, v string) {
			fl.ResponseHeaders = &translate.HeaderModifier{Add: []translate.Header{{Name: "X", Value: v}}}
		},
		"rewrite hostname": func(fl *translate.Filters, v string) { fl.Rewrite = &translate.Rewrite{Hostname: v} },
		"rewrite path": func(fl *translate.Filters, v string) {
			fl.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/" + v}}
		},
		"prefix value": func(fl *translate.Filters, v string) {
			fl.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/" + v}}
		},
	}
	for _, v := range []string{`a"b`, "a\nb", "a%b", "a$b", `a\b`, "a#b", "a  b", "a\tb", "é"} {
		for name, set := range fields {
			if name == "header name" && (v == "a%b" || v == "a$b" || v == "a#b") {
				continue // an HTTP token, no log-format string: written in strong quotes (headerName), HAProxy reads it as it is
			}
			if (name == "rewrite path" || name == "prefix value") && v == "a$b" {
				continue // a path HTTP carries, in strong quotes (pathFmt); see TestPathFmt
			}
			if (name == "header value" || name == "response value") && !strings.ContainsAny(v, "\n") {
				continue // quoted text (headerFmt), non-ASCII too; see TestTextFmt
			}
			r := rule(0, nil, translate.Timeouts{})
			set(&r.Filters, v)
			var ck tokenChecker
			planFilters(modelOf(r), r, &ck)
			if ck.err == nil {
				t.Errorf("%s = %q: own check passed", name, v)
			}
		}
	}
}

// TestTextFmt: every printable text survives textFmt and the judge's
// reading (readWord, then log-format's %%), as HAProxy reads it; live
// proof in e2e's TestFilterHeaderValuesLive.
func TestTextFmt(t *testing.T) {
	for _, v := range hostilevalues.HeaderValues() {
		if got := fmtValue(textFmt(v)); got != v {
			t.Errorf("%q: written %s, read back %q", v, textFmt(v), got)
		}
	}
	for _, bad := range []string{`'a`, `"a`, `a b`, `a#b`, `"$HOME"`, `'%[src]'`, `a\`, `'%'`} {
		if got := fmtValue(bad); !strings.HasPrefix(got, "<") {
			t.Errorf("%s read as the constant %q", bad, got)
		}
	}
}
