package translate

import (
	"reflect"
	"testing"

	"github.com/gwretry/gwretry/report"
)

// TestFindingStore: findings come out of the store as they went in, in
// their order, and equal decisions come out shared.
func TestFindingStore(t *testing.T) {
	conflict := report.NewCaveat(report.CaveatPolicyConflict, "policy", "ns/p")
	in := []Finding{
		{Target: "envoy", Route: "ns/a", Rule: 0, RuleName: "", Feature: FeatureRetryAttempts, Status: Honoured,
			Decision: report.Decide(report.ReasonConfigured).Set("num_retries 3")},
		{Target: "envoy", Gateway: "ns/gw", Route: "ns/a", Rule: 1, RuleName: "second", Feature: FeatureRetryCodes, Status: Approximated,
			Decision: report.Decide(report.ReasonConfigured, "codes", "500").With(conflict), Source: "RetryPolicy ns/p"},
		{Target: "nginx", Route: "ns/b", Rule: 15, Feature: FeatureRequestTimeout, Status: Unsupported,
			Decision: report.Decide(report.ReasonNotTranslated)},
		{Target: "nginx", Route: "ns/b", Rule: 15, Feature: FeatureRetryCodes, Status: Approximated,
			Decision: report.Decide(report.ReasonConfigured, "codes", "500").With(conflict), Source: "RetryPolicy ns/p"},
	}
	s := newFindingStore()
	s.grow(1)
	for _, f := range in {
		s.add(f)
	}
	out := s.findings()
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("stored findings differ:\n%+v\nwant\n%+v", out, in)
	}
	if &out[1].Caveats[0] != &out[3].Caveats[0] {
		t.Error("equal decisions are not shared")
	}
	if len(s.findings()) != 0 {
		t.Error("the store still holds findings once they are taken")
	}
}
