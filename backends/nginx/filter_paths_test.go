package nginx

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestFilterPathsWritten: a rewrite or redirect path with '$', ';' and
// '\” (issue 21) is written with textArg ('$' as ${gwretry_dollar},
// whose geo block is written too), the judge (run by translate.Run) reads
// each back as the value, and the findings are Configured with the value
// in their facts. A path with '%' (which nginx's rewrite escapes to %25)
// or '//' is not written. Live in e2e's TestFilterPathsLive.
func TestFilterPathsWritten(t *testing.T) {
	b := New()
	for _, s := range []string{"/a%41", "/a//b"} {
		if b.Expresses(translate.KindFilterPath, s) {
			t.Errorf("Expresses(%q) = true", s)
		}
	}
	values := []string{"/d$1/$x$$/a$", "/q'u;o=t$e"}
	var rules []*translate.Rule
	for _, v := range values {
		if !b.Expresses(translate.KindFilterPath, v) {
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
	res, err := translate.Run(model("", rules), []translate.Target{{Backend: b}}, false)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(res.Files[0].Data)
	if !strings.Contains(conf, "geo $gwretry_dollar {") {
		t.Errorf("no geo $gwretry_dollar:\n%s", conf)
	}
	for _, want := range []string{
		`rewrite ^ "/d${gwretry_dollar}1/${gwretry_dollar}x${gwretry_dollar}${gwretry_dollar}/a${gwretry_dollar}" break;`,
		`/d${gwretry_dollar}1/${gwretry_dollar}x${gwretry_dollar}${gwretry_dollar}/a${gwretry_dollar}$is_args$args";`,
		`rewrite ^ "/q'u;o=t${gwretry_dollar}e" break;`,
		`/q'u;o=t${gwretry_dollar}e$is_args$args";`,
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, conf)
		}
	}
	for _, f := range res.Report.Findings {
		r := rules[f.Rule]
		switch {
		case f.Feature == translate.FeatureURLRewrite:
			if f.Reason != report.ReasonConfigured {
				t.Errorf("rule %d %s: %s %v", f.Rule, f.Feature, f.Reason, f.Params)
			}
			if p := r.Filters.Rewrite.Path; p.Type == translate.ReplaceFullPath && !strings.Contains(f.Configured, "rewrite ^ "+p.Value+" break") {
				t.Errorf("rule %d: configured %q", f.Rule, f.Configured)
			}
		case f.Feature == translate.FeatureRequestRedirect && f.Reason != report.ReasonConfigured:
			t.Errorf("rule %d %s: %s %v", f.Rule, f.Feature, f.Reason, f.Params)
		}
	}
}
