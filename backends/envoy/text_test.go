package envoy

import (
	"fmt"
	"testing"

	"github.com/gwretry/gwretry/internal/hostile"
	"github.com/gwretry/gwretry/translate"
)

// TestHeaderValuesLiteral: each hostile header value goes through the
// whole backend (allowlist, encode, ValidateAll, parse-back) and through
// translate.Run, whose judge reads every honoured header claim back from
// envoy.yaml; a lone '%' would be a %COMMAND% operator, so '%' is doubled.
func TestHeaderValuesLiteral(t *testing.T) {
	var ps []placed
	for i, v := range hostile.HeaderValues() {
		hm := &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Set", Value: v}}, Add: []translate.Header{{Name: "X-Add", Value: v}}}
		r := filterRule(i, translate.Filters{RequestHeaders: hm, ResponseHeaders: hm})
		ps = append(ps, placed{r, translate.Match{PathType: translate.PathPrefix, Path: fmt.Sprintf("/r%d", i)}})
	}
	m := filterModel(8080, ps...)
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: New().Versions()[len(New().Versions())-1]}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if (f.Feature == translate.FeatureRequestHeaderModifier || f.Feature == translate.FeatureResponseHeaderModifier) && f.Status != translate.Honoured {
			t.Errorf("rule %d %s: %s: %s", f.Rule, f.Feature, f.Status, f.Text())
		}
	}
	for _, bad := range []string{"%", "%REQ(:path)%", "a%b%%"} {
		if got, ok := readEnvoyText(bad); ok {
			t.Errorf("%q read as the text %q", bad, got)
		}
	}
	if got, ok := readEnvoyText(envoyText("100% %% %[src]")); !ok || got != "100% %% %[src]" {
		t.Errorf("round trip: %q %v", got, ok)
	}
}
