package haproxy

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestPathFmt: a rewrite or redirect path with '$', percent-escapes, ';'
// and '\” (issue 21) is written in strong quotes with '%' doubled
// (set-path, and replace-path's replacement ending in \1), the judge
// (run by generate) reads each back as the value, and the finding's
// configured fact names it. A '//' is still not written. Live in e2e's
// TestFilterPathsLive.
func TestPathFmt(t *testing.T) {
	if New().Expresses(translate.KindFilterPath, "/a//b") {
		t.Errorf("Expresses(%q) = true", "/a//b")
	}
	values := []string{"/d$1/$x$$/a$", "/p/%2F%41%25;q='s'"}
	var rules []*translate.Rule
	for _, v := range values {
		if !New().Expresses(translate.KindFilterPath, v) {
			t.Errorf("Expresses(%q) = false", v)
		}
		for _, typ := range []translate.PathModifierType{translate.ReplaceFullPath, translate.ReplacePrefixMatch} {
			r := rule(len(rules), nil, translate.Timeouts{})
			r.Filters.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: typ, Value: v}}
			rules = append(rules, r)
			r = rule(len(rules), nil, translate.Timeouts{})
			r.Backends, r.NoBackendRefs = nil, true
			r.Filters.Redirect = &translate.Redirect{StatusCode: 302, Path: &translate.PathModifier{Type: typ, Value: v}}
			rules = append(rules, r)
		}
	}
	cfg, fs := generate(t, modelOf(rules...), translate.Options{Version: "3.0"})
	for _, v := range values {
		q := "'" + strings.ReplaceAll(strings.ReplaceAll(v, "%", "%%"), "'", `'\''`)
		for _, want := range []string{"http-request set-path " + q + "'\n", `(.*) ` + q + `\1'` + "\n"} {
			if strings.Count(cfg, want) != 2 {
				t.Errorf("haproxy.cfg has %q %d times, want 2 (rewrite and redirect):\n%s", want, strings.Count(cfg, want), cfg)
			}
		}
	}
	for i, r := range rules {
		feat := translate.FeatureURLRewrite
		if r.Filters.Redirect != nil {
			feat = translate.FeatureRequestRedirect
		}
		f := findingOf(t, fs, i, feat)
		if f.Reason != report.ReasonConfigured {
			t.Errorf("rule %d %s: %s %v, want Configured", i, feat, f.Reason, f.Params)
		}
		if rw := r.Filters.Rewrite; rw != nil && rw.Path.Type == translate.ReplaceFullPath {
			if want := "http-request set-path " + rw.Path.Value; !strings.Contains(f.Configured, want) {
				t.Errorf("rule %d: configured %q, want %q", i, f.Configured, want)
			}
		}
	}
}

// TestHeaderNamesQuoted: a header name a filter sets, adds or removes
// with the API's other token characters (issue 21) is written in strong
// quotes (a plain word stays one), the judge (run by generate) reads it
// back, and the findings are Configured. Live in e2e's
// TestFilterHeaderValuesLive (route "names").
func TestHeaderNamesQuoted(t *testing.T) {
	const name, gone = "x!#$%&'*+^_`|~n", "y!#$%&'*+^_`|~r"
	if !New().Expresses(translate.KindFilterHeaderName, name) {
		t.Errorf("Expresses(%q) = false", name)
	}
	r := rule(0, nil, translate.Timeouts{})
	r.Filters.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: name, Value: "v1"}, {Name: "X-Plain", Value: "p"}},
		Add: []translate.Header{{Name: name, Value: "v3"}}, Remove: []string{gone}}
	r.Filters.ResponseHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: name, Value: "v2"}}}
	cfg, fs := generate(t, modelOf(r), translate.Options{Version: "3.0"})
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	for _, want := range []string{
		"http-request del-header " + q(gone) + "\n",
		"http-request set-header " + q(name) + " 'v1'\n",
		"http-request set-header X-Plain 'p'\n",
		"http-request add-header " + q(name) + " 'v3'\n",
		"http-after-response set-header " + q(name) + " 'v2'\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
		}
	}
	for _, feat := range []translate.Feature{translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier} {
		if f := findingOf(t, fs, 0, feat); f.Reason != report.ReasonConfigured {
			t.Errorf("%s: %s %v, want Configured", feat, f.Reason, f.Params)
		}
	}
}

// TestQueryNamesQuoted: a query name with the API's other token
// characters (issue 21) is written as urlp() in strong quotes, a '\”
// escaped for HAProxy's argument parser; a plain name stays one word;
// '&' and '#' are not written. Live in e2e's TestQuotedValuesLive
// (?x!$'*^|~=1).
func TestQueryNamesQuoted(t *testing.T) {
	for s, want := range map[string]bool{"x!$'*^|~": true, "a+b": true, "a%b": true, "a`b": true, "a&b": false, "a#b": false} {
		if got := New().Expresses(translate.KindQueryName, s); got != want {
			t.Errorf("Expresses(query name %q) = %v, want %v", s, got, want)
		}
	}
	var ck tokenChecker
	for name, want := range map[string]string{"x!$'*^|~": `'urlp(x!$\'\''*^|~)'`, "plain": "urlp(plain)"} {
		if got := queryFetch(&ck, name); got != want {
			t.Errorf("queryFetch(%q) = %s, want %s", name, got, want)
		}
	}
	if ck.err != nil {
		t.Error(ck.err)
	}
	queryFetch(&ck, "a&b")
	if ck.err == nil {
		t.Error("queryFetch(a&b): own check passed")
	}
}
