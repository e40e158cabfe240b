package prove

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// t0 is an arbitrary instant the synthetic observations start at.
var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// tries builds the hits of one request: each try lasts d and the next
// starts gap after the previous ended.
func tries(n int, d, gap time.Duration) []flaky.Hit {
	var hits []flaky.Hit
	start := t0
	for i := range n {
		hits = append(hits, flaky.Hit{Endpoint: "a", Path: "/p", Method: "GET", N: i, Start: start, End: start.Add(d)})
		start = start.Add(d + gap)
	}
	return hits
}

// finding is a finding of the nginx target whose decision record has
// reason Configured (NotExpressible when unsupported) and the caveats
// given; its status is s, as a lying or a truthful report may say.
func finding(f translate.Feature, s translate.Status, caveats ...report.Caveat) translate.Finding {
	d := report.Decide(report.ReasonConfigured)
	if s == translate.Unsupported {
		d = report.Decide(report.ReasonNotExpressible)
	}
	return translate.Finding{Target: "nginx", Route: "e2e/p", Feature: f, Status: s, Decision: d.With(caveats...)}
}

func TestJudge(t *testing.T) {
	spec := Expect{Status: 200, Hits: Exactly(2)}
	codes := Claim{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: Shortfall{Class: ListedCodeNotRetried, Code: 500},
		Otherwise: []Expect{{Status: 500, Hits: Exactly(1)}}}
	attempts := Claim{Feature: translate.FeatureRetryAttempts, InEffect: true, Shortfall: Shortfall{Class: AttemptsNotKept},
		Otherwise: []Expect{{Status: 500}}}
	weak := Claim{Feature: translate.FeatureRetryCodes, Otherwise: []Expect{{Hits: AtLeast(3)}}}
	needsConn := Claim{Feature: translate.FeatureRetryAttempts, Requires: []translate.Feature{translate.FeatureRetryConnectionErrors},
		Otherwise: []Expect{{Status: 500}}}
	good := Observation{{Status: 200, Hits: tries(2, 0, 0)}}
	notRetried := Observation{{Status: 500, Hits: tries(1, 0, 0)}}
	retriedOnce := Observation{{Status: 500, Hits: tries(2, 0, 0)}}
	weird := Observation{{Status: 418, Hits: tries(1, 0, 0)}}
	h, a, u := translate.Honoured, translate.Approximated, translate.Unsupported
	idle := report.NewCaveat(report.CaveatIdleTimer)
	not500 := report.NewCaveat(report.CaveatCodesNotRetried, "codes", "429, 500")
	not503 := report.NewCaveat(report.CaveatCodesNotRetried, "codes", "503")
	tests := []struct {
		name     string
		test     Test
		findings []translate.Finding
		obs      Observation
		want     []Outcome
	}{
		{"honoured, as the API says", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, h)}, good, []Outcome{Backed}},
		{"approximated, as the API says", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, a, idle)}, good, []Outcome{Backed}},
		{"unsupported, but in effect", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, u)}, good, []Outcome{Contradicted}},
		{"unsupported, cannot tell", Test{Spec: spec, Claims: []Claim{weak}}, []translate.Finding{finding(weak.Feature, u)}, good, []Outcome{NotJudged}},
		{"honoured, not in effect", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, h)}, notRetried, []Outcome{Contradicted}},
		{"unsupported, not in effect", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, u)}, notRetried, []Outcome{Backed}},
		{"approximated, a caveat names the code", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, a, not500)}, notRetried, []Outcome{Backed}},
		{"approximated, another caveat", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, a, idle)}, notRetried, []Outcome{Contradicted}},
		{"approximated, the caveat names another code", Test{Spec: spec, Claims: []Claim{codes}}, []translate.Finding{finding(codes.Feature, a, not503)}, notRetried, []Outcome{Contradicted}},
		{"the gate hides later claims", Test{Spec: spec, Claims: []Claim{codes, attempts}},
			[]translate.Finding{finding(codes.Feature, u), finding(attempts.Feature, h)}, notRetried, []Outcome{Backed, NotJudged}},
		{"a later claim explains", Test{Spec: spec, Claims: []Claim{codes, attempts}},
			[]translate.Finding{finding(codes.Feature, h), finding(attempts.Feature, h)}, retriedOnce, []Outcome{NotJudged, Contradicted}},
		{"unexplained behaviour", Test{Spec: spec, Claims: []Claim{codes, attempts}},
			[]translate.Finding{finding(codes.Feature, u), finding(attempts.Feature, a, idle)}, weird, []Outcome{Contradicted, Contradicted}},
		{"missing finding", Test{Spec: spec, Claims: []Claim{codes}}, nil, good, []Outcome{Contradicted}},
		{"required feature unsupported", Test{Spec: spec, Claims: []Claim{needsConn}},
			[]translate.Finding{finding(needsConn.Feature, h), finding(translate.FeatureRetryConnectionErrors, u)}, notRetried, []Outcome{NotJudged}},
		{"required feature supported", Test{Spec: spec, Claims: []Claim{needsConn}},
			[]translate.Finding{finding(needsConn.Feature, h), finding(translate.FeatureRetryConnectionErrors, a, idle)}, notRetried, []Outcome{Contradicted}},
		{"some request must fail, none did", Test{SomeRequest: &Expect{Failed: true}, Claims: []Claim{attempts}},
			[]translate.Finding{finding(attempts.Feature, h)}, Observation{{Status: 200}, {Status: 200}}, []Outcome{Contradicted}},
		{"some request must fail, one did", Test{SomeRequest: &Expect{Failed: true}, Claims: []Claim{attempts}},
			[]translate.Finding{finding(attempts.Feature, h)}, Observation{{Status: 200}, {Status: 502}}, []Outcome{Backed}},
		{"no request", Test{Spec: spec, Claims: []Claim{attempts}}, []translate.Finding{finding(attempts.Feature, h)}, nil, []Outcome{Contradicted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.test, tc.findings, tc.obs)
			if len(got) != len(tc.want) {
				t.Fatalf("%d verdicts, want %d", len(got), len(tc.want))
			}
			for i, v := range got {
				if v.Outcome != tc.want[i] {
					t.Errorf("verdict %d (%s) = %s, want %s: %s", i, v.Feature, v.Outcome, tc.want[i], v.Reason)
				}
			}
		})
	}
}

func TestExpectMismatches(t *testing.T) {
	cut := flaky.Hit{Start: t0, End: t0.Add(300 * time.Millisecond), Cancelled: true, Endpoint: "a"}
	late := flaky.Hit{Start: t0.Add(500 * time.Millisecond), End: t0.Add(501 * time.Millisecond), Endpoint: "b"}
	r := Result{Status: 504, Duration: 600 * time.Millisecond, Complete: true, Hits: []flaky.Hit{cut, late}}
	tests := []struct {
		expect Expect
		want   string // "" for a match, else a substring of the mismatch
	}{
		{Expect{Status: 504, Hits: Exactly(2)}, ""},
		{Expect{Status: 200}, "status 504, want 200"},
		{Expect{Failed: true}, ""},
		{Expect{Hits: Between(3, 4)}, "2 tries, want 3 to 4"},
		{Expect{LastEndpoint: "b"}, ""},
		{Expect{LastEndpoint: "a"}, "last try not on endpoint a"},
		{Expect{MinGap: 200 * time.Millisecond}, ""},
		{Expect{MinGap: 250 * time.Millisecond}, "gap 1 is 200ms"},
		{Expect{ShortGap: 250 * time.Millisecond}, ""},
		{Expect{ShortGap: 100 * time.Millisecond}, "no gap shorter than 100ms"},
		{Expect{Duration: &Window{Min: 500 * time.Millisecond, Max: time.Second}}, ""},
		{Expect{Duration: &Window{Max: 500 * time.Millisecond}}, "took 600ms"},
		{Expect{FirstCut: &Window{Min: 250 * time.Millisecond, Max: 400 * time.Millisecond}}, ""},
		{Expect{FirstCut: &Window{Min: 400 * time.Millisecond}}, "first try not cut"},
		{Expect{EveryTryCut: true}, "try 2 not cut"},
		{Expect{Complete: boolPtr(false)}, "body complete true"},
	}
	for _, tc := range tests {
		got := strings.Join(tc.expect.Mismatches(r), "; ")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: mismatches %q, want %q", tc.expect, got, tc.want)
		}
	}
}

func TestScenarioTable(t *testing.T) {
	names := map[string]bool{}
	nameRE := regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	for _, s := range Scenarios() {
		if !nameRE.MatchString(s.Name) || names[s.Name] || s.Name == "ready" {
			t.Errorf("scenario name %q is not a unique DNS label", s.Name)
		}
		names[s.Name] = true
		if _, err := s.Intent(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if len(s.Claims) == 0 {
			t.Errorf("%s judges no feature", s.Name)
		}
		for _, c := range s.Claims {
			if _, ok := backing[c.Shortfall.Class]; len(c.Otherwise) > 0 && !ok {
				t.Errorf("%s %s: shortfalls of class %q, which the backing table does not have", s.Name, c.Feature, c.Shortfall.Class)
			}
		}
		if !strings.Contains(s.Manifest(), "value: "+s.Path()+"}") {
			t.Errorf("%s: manifest does not match %s:\n%s", s.Name, s.Path(), s.Manifest())
		}
	}
}

func TestMatrixMarkdown(t *testing.T) {
	build := func() []byte {
		m := NewMatrix()
		m.Row("nginx", "1.22", "nginx 1.22.1, live")
		m.Row("envoy", "1.36", "generated configuration only")
		m.Skip("envoy (live)", "binary not found")
		ok := Verdict{Feature: translate.FeatureRetryCodes, Status: translate.Honoured, Outcome: Backed}
		m.Add("nginx", "1.22", "s2", []Verdict{ok})
		m.Add("nginx", "1.22", "s1", []Verdict{ok})
		m.Add("nginx", "1.22", "s3", []Verdict{{Feature: translate.FeatureRetryBackoff, Status: translate.Honoured, Outcome: Contradicted}})
		m.Add("nginx", "1.22", "s4", []Verdict{{Feature: translate.FeatureRetryAttempts, Status: translate.Honoured, Outcome: NotJudged}})
		// A scenario that failed backs nothing, not even its good verdicts.
		m.Add("nginx", "1.22", "s5", []Verdict{ok, {Feature: translate.FeatureRetryBackoff, Status: translate.Honoured, Outcome: Contradicted}})
		return m.Markdown(Scenarios()[:1])
	}
	md := string(build())
	if md != string(build()) {
		t.Error("the matrix is not deterministic")
	}
	for _, want := range []string{
		"DO NOT EDIT",
		"| nginx | 1.22 | nginx 1.22.1, live | `retry.codes` | honoured | s1, s2 |",
		"| nginx | 1.22 | nginx 1.22.1, live | `retry.backoff` | — | reported honoured by s3, s5; not confirmed by a passing scenario |",
		"| nginx | 1.22 | nginx 1.22.1, live | `retry.attempts` | — | reported honoured by s4; not confirmed",
		"| nginx | 1.22 | nginx 1.22.1, live | `timeouts.request` | — | no scenario exercised it |",
		"| envoy | 1.36 | generated configuration only | `retry.codes` | — | no scenario exercised it |",
		"- envoy (live): binary not found",
		"| code-500-attempts-3-recovers |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("matrix lacks %q:\n%s", want, md)
		}
	}
	if strings.Index(md, "| envoy |") > strings.Index(md, "| nginx |") {
		t.Error("rows are not sorted by target")
	}
}

func scenarioNamed(t *testing.T, name string) Scenario {
	t.Helper()
	for _, s := range Scenarios() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %s", name)
	return Scenario{}
}
