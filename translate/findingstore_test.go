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

// TestAssessShared: with Decisions.Shared, Assess decides the same
// findings, and equal decisions of two rules share their caveats.
func TestAssessShared(t *testing.T) {
	rule := func(i int) *Rule {
		return &Rule{Name: "r" + string(rune('0'+i)), Route: "ns/r", Index: i, Retry: &Retry{Attempts: 2, Codes: []int{503}},
			Backends: []*BackendRef{{Name: "b", Service: "ns/b", Port: 80, Weight: 1, Endpoints: []Endpoint{{Host: "10.0.0.1", Port: 80}}}}}
	}
	decisions := func(shared *report.Interner) Decisions {
		return Decisions{Shared: shared, Feature: func(f Feature) report.Decision {
			return report.Decide(report.ReasonConfigured, "feature", string(f)).With(report.NewCaveat(report.CaveatBodyBufferLimit, "limit", "1MiB"))
		}}
	}
	shared := report.NewInterner()
	a, b := Assess(rule(0), decisions(shared)), Assess(rule(1), decisions(shared))
	if !reflect.DeepEqual(a, Assess(rule(0), decisions(nil))) || !reflect.DeepEqual(b, Assess(rule(1), decisions(nil))) {
		t.Fatal("shared decisions differ from those decided alone")
	}
	if len(a) == 0 || len(a) != len(b) || &a[0].Caveats[0] != &b[0].Caveats[0] {
		t.Errorf("the rules' equal decisions are not shared (%d, %d findings)", len(a), len(b))
	}
}
