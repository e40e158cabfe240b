package traefik

import (
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/translate"
)

// filterTestModel is filterModel with fixed ports (no server runs).
func filterTestModel(t *testing.T) (*translate.Model, map[string]*translate.Rule) {
	t.Helper()
	return filterModel(flaky.New(t, "main"), flaky.New(t, "mirror"))
}

// TestJudgeReadsFiltersBack: the judge reads every filter of the filter
// model back in the model's terms, and confirms every claim.
func TestJudgeReadsFiltersBack(t *testing.T) {
	m, rules := filterTestModel(t)
	opts := translate.Options{Version: v37}
	out, obs := observe(t, m, opts, nil)
	if errs := claimErrors(m, out.Findings, obs); len(errs) > 0 {
		t.Fatalf("unaltered file: %v", errs)
	}
	for _, tc := range []struct {
		path  string
		class translate.MethodClass
		check func(fl translate.Filters) bool
	}{
		{"/hdr", translate.Idempotent, func(fl translate.Filters) bool {
			return fl.RequestHeaders != nil && len(fl.RequestHeaders.Set) == 1 && fl.RequestHeaders.Set[0].Value == "set value" &&
				slices.Equal(fl.RequestHeaders.Remove, []string{"X-Del"}) && fl.ResponseHeaders != nil &&
				slices.Equal(fl.ResponseHeaders.Remove, []string{flaky.EndpointHeader})
		}},
		{"/rw", translate.NonIdempotent, func(fl translate.Filters) bool {
			return fl.Rewrite != nil && fl.Rewrite.Hostname == "rewritten.example" && fl.Rewrite.Path.Value == "/new/" &&
				fl.RequestHeaders != nil && slices.Equal(fl.RequestHeaders.Remove, []string{replacedPathHeader})
		}},
		{"/redir", translate.Idempotent, func(fl translate.Filters) bool {
			return fl.Redirect != nil && fl.Redirect.StatusCode == 301 && fl.Redirect.Hostname == "redirect.example" &&
				fl.ResponseHeaders != nil
		}},
		{"/redirport", translate.Idempotent, func(fl translate.Filters) bool {
			return fl.Redirect != nil && fl.Redirect.StatusCode == 0 && fl.Redirect.Port == 9090
		}},
		{"/redirport", translate.NonIdempotent, func(fl translate.Filters) bool {
			return fl.Redirect != nil && fl.Redirect.StatusCode == 307
		}},
		{"/mirror", translate.Idempotent, func(fl translate.Filters) bool {
			return len(fl.Mirrors) == 1 && fl.Mirrors[0].Numerator == 50 && fl.Mirrors[0].Backend.Service == "default/mirror"
		}},
	} {
		if fl := obs[rules[tc.path].Name][tc.class].Filters; !tc.check(fl) {
			t.Errorf("%s %s: read back %+v", tc.path, tc.class, fl)
		}
	}
}

// TestJudgeCatchesAlteredFilters: a configuration changed after generation,
// or a claim widened to honoured, is caught for every filter.
func TestJudgeCatchesAlteredFilters(t *testing.T) {
	m, rules := filterTestModel(t)
	opts := translate.Options{Version: v36}
	name := func(p string) string { return rules[p].Name }
	router := func(d *dynamicConfig, p string) *router {
		for n, rt := range d.HTTP.Routers {
			if strings.HasSuffix(n, "-"+name(p)) {
				return rt
			}
		}
		t.Fatalf("no router for %s", p)
		return nil
	}
	for _, tc := range []struct {
		name    string
		path    string
		feature translate.Feature // widened to honoured when set
		edit    func(d *dynamicConfig)
		want    string
	}{
		{"request header value changed", "/hdr", "", func(d *dynamicConfig) {
			d.HTTP.Middlewares[name("/hdr")+"-reqheaders"].Headers.CustomRequestHeaders["X-Set"] = "other"
		}, "sets request headers"},
		{"request header removal dropped", "/hdr", "", func(d *dynamicConfig) {
			delete(d.HTTP.Middlewares[name("/hdr")+"-reqheaders"].Headers.CustomRequestHeaders, "X-Del")
		}, "removes request headers"},
		{"X-Forwarded-For removal spelt in lower case", "/xff", "", func(d *dynamicConfig) {
			hs := d.HTTP.Middlewares[name("/xff")+"-reqheaders"].Headers.CustomRequestHeaders
			delete(hs, xffKey)
			hs["x-forwarded-for"] = ""
		}, "removes request headers"},
		{"response headers middleware unhooked", "/hdr", "", func(d *dynamicConfig) {
			rt := router(d, "/hdr")
			rt.Middlewares = slices.DeleteFunc(rt.Middlewares, func(s string) bool { return strings.HasSuffix(s, "-respheaders") })
		}, "sets response headers"},
		{"response header set to Content-Length", "/hdr", "", func(d *dynamicConfig) {
			d.HTTP.Middlewares[name("/hdr")+"-respheaders"].Headers.CustomResponseHeaders = map[string]string{
				"X-Resp": "r <v>", "Content-Length": ""}
		}, "removes response headers"},
		{"add widened", "/add", translate.FeatureRequestHeaderModifier, nil, `sets request headers ["x-add: added"], not []`},
		{"host rewrite changed", "/rwhost", "", func(d *dynamicConfig) {
			d.HTTP.Middlewares[name("/rwhost")+"-rewritehost"].Headers.CustomRequestHeaders["Host"] = "evil.example"
		}, "rewrites host"},
		{"path rewrite widened", "/rw", translate.FeatureURLRewrite, func(d *dynamicConfig) {
			rt := router(d, "/rw")
			mw := d.HTTP.Middlewares[rt.Middlewares[0]]
			mw.ReplacePathRegex.Replacement = "/other${1}"
		}, "rewrites host"},
		{"redirect status made permanent", "/redirfull", "", func(d *dynamicConfig) {
			d.HTTP.Middlewares[router(d, "/redirfull").Middlewares[1]].RedirectRegex.Permanent = false
		}, "redirects with 307"},
		{"redirect without the # guard", "/redirfull", "", func(d *dynamicConfig) {
			mw := d.HTTP.Middlewares[router(d, "/redirfull").Middlewares[1]].RedirectRegex
			mw.Replacement = strings.TrimSuffix(mw.Replacement, "#")
		}, "unrecognised redirectRegex"},
		{"redirect host changed", "/redir", "", func(d *dynamicConfig) {
			mw := d.HTTP.Middlewares[router(d, "/redir").Middlewares[2]].RedirectRegex
			mw.Replacement = strings.Replace(mw.Replacement, "redirect.example", "evil.example", 1)
		}, `host "evil.example"`},
		{"redirect status widened", "/redirport", translate.FeatureRequestRedirect, nil, "redirects with 0"},
		{"mirror percent changed", "/mirror", "", func(d *dynamicConfig) {
			d.HTTP.Services[name("/mirror")].Mirroring.Mirrors[0].Percent = 100
		}, "share 1/1"},
		{"mirror removed", "/mirror", "", func(d *dynamicConfig) {
			s := d.HTTP.Services[name("/mirror")]
			*s = *d.HTTP.Services[name("/mirror")+"-main"]
		}, "mirrors to []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, obs := observe(t, m, opts, tc.edit)
			fs := slices.Clone(out.Findings)
			r := rules[tc.path]
			for i, f := range fs {
				if tc.feature != "" && f.Route == r.Route && f.Feature == tc.feature {
					fs[i].Status = translate.Honoured
				}
			}
			errs := translate.CheckClaims(r, fs, obs[r.Name])
			if len(errs) == 0 || !strings.Contains(joinErrs(errs), tc.want) {
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
		})
	}
}
