package prove

import (
	"net/http"
	"testing"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestJudgeChecks: a filter's check is judged on its own: met, honoured
// and approximated are backed and unsupported contradicted; missed,
// honoured is contradicted, unsupported backed, and approximated backed
// only by a caveat that names the header missed.
func TestJudgeChecks(t *testing.T) {
	hm := &translate.HeaderModifier{Set: []translate.Header{{Name: "X-A", Value: "a"}}, Add: []translate.Header{{Name: "X-Add", Value: "v"}}, Remove: []string{"X-B"}}
	conds := headerConds(hm, func(string) string { return oldValue }, RequestHeaderNotModified, "at the backend", func(r Result) (http.Header, string) {
		if len(r.Hits) == 0 {
			return nil, "no try reached the backend"
		}
		return r.Hits[0].Header, ""
	})
	check := Check{Feature: translate.FeatureRequestHeaderModifier, Conds: conds}
	seen := func(h http.Header) Observation {
		return Observation{{Method: "GET", Status: 200, Hits: []flaky.Hit{{Header: h}}}}
	}
	good := seen(http.Header{"X-A": {"a"}, "X-Add": {oldValue + ", v"}})
	replaced := seen(http.Header{"X-A": {"a"}, "X-Add": {"v"}})
	kept := seen(http.Header{"X-A": {"a"}, "X-Add": {oldValue, "v"}, "X-B": {oldValue}})
	none := Observation{{Method: "GET", Status: 502}}
	names := func(h string) report.Decision {
		return approx(report.NewCaveat(report.CaveatHeaderAddReplaces, "headers", h))
	}
	honoured, unsupported := report.Decide(report.ReasonConfigured), report.Decide(report.ReasonNotExpressible)
	for _, tc := range []struct {
		name   string
		record report.Decision
		obs    Observation
		want   Outcome
	}{
		{"honoured, as the API says", honoured, good, Backed},
		{"honoured, a header added as two lines", honoured, seen(http.Header{"X-A": {"a"}, "X-Add": {oldValue, "v"}}), Backed},
		{"honoured, add replaced", honoured, replaced, Contradicted},
		{"honoured, a header not removed", honoured, kept, Contradicted},
		{"honoured, nothing reached the backend", honoured, none, Contradicted},
		{"approximated, the caveat names the header", names("X-Add"), replaced, Backed},
		{"approximated, the caveat names another header", names("X-A"), replaced, Contradicted},
		{"approximated, the caveat does not cover the removal", names("X-Add"), kept, Contradicted},
		{"unsupported, not in effect", unsupported, kept, Backed},
		{"unsupported, in effect", unsupported, good, Contradicted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := translate.Finding{Target: "x", Route: "ns/r", Feature: check.Feature}
			f.Decide(tc.record)
			v := JudgeChecks([]Check{check}, []translate.Finding{f}, tc.obs)
			if len(v) != 1 || v[0].Outcome != tc.want {
				t.Errorf("got %+v, want %s", v, tc.want)
			}
		})
	}
	if v := JudgeChecks([]Check{check}, nil, good); v[0].Outcome != Contradicted {
		t.Errorf("no finding: %s, want contradicted", v[0].Outcome)
	}
}

func TestReplacedPath(t *testing.T) {
	prefix := &UserRule{MatchPath: "/rw", MatchType: translate.PathPrefix}
	for _, tc := range []struct {
		pm   translate.PathModifier
		u    *UserRule
		path string
		want string
		ok   bool
	}{
		{translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/full"}, prefix, "/rw/a", "/full", true},
		{translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/x"}, prefix, "/rw", "/x", true},
		{translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/x"}, prefix, "/rw/a", "/x/a", true},
		{translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/"}, prefix, "/rw/a", "/a", true},
		{translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/"}, prefix, "/rw", "/", true},
		{translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/x"}, &UserRule{MatchPath: "/", MatchType: translate.PathPrefix}, "/a", "/x/a", true},
		{translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/x"}, &UserRule{MatchPath: "/rw", MatchType: translate.PathExact}, "/rw", "", false},
	} {
		got, ok := replacedPath(&tc.pm, tc.u, tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v on %s: %q %v, want %q %v", tc.pm, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
