package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestHarnessFailsOnAWrongClaim is the harness's own proof: a report that
// claims backoff is honoured on nginx, which retries at once, must make the
// suite fail, and the failure must show the finding and the observation.
func TestHarnessFailsOnAWrongClaim(t *testing.T) {
	sc := scenarioNamed(t, "backoff-between-tries")
	lying := []translate.Finding{
		finding(translate.FeatureRetryAttempts, translate.Honoured),
		finding(translate.FeatureRetryBackoff, translate.Honoured),
		finding(translate.FeatureRetryCodes, translate.Honoured),
		finding(translate.FeatureRetryConnectionErrors, translate.Honoured),
	}
	lying[1].Configured = "retries wait 200ms"
	// What nginx does: three tries, no gap.
	obs := prove.Observation{{Method: "GET", Path: sc.Path(), Status: 200, Complete: true, Hits: tries(3, time.Millisecond, 0)}}

	rec := &recordingTB{TB: t}
	reportVerdicts(rec, "nginx", prove.Judge(sc.Test, lying, obs))
	if len(rec.errors) != 1 {
		t.Fatalf("the harness reported %d failures for a report that lies about backoff, want 1:\n%s", len(rec.errors), strings.Join(rec.errors, "\n"))
	}
	for _, want := range []string{"REPORT AND PROXY DISAGREE", "retry.backoff = honoured", `Configured, configured "retries wait 200ms"`,
		"gap 1 is 0s, want at least 200ms", "3 hit(s)"} {
		if !strings.Contains(rec.errors[0], want) {
			t.Errorf("the failure does not show %q:\n%s", want, rec.errors[0])
		}
	}

	// The truthful report passes on the same observation.
	honest := append([]translate.Finding(nil), lying...)
	honest[1] = finding(translate.FeatureRetryBackoff, translate.Unsupported)
	rec = &recordingTB{TB: t}
	reportVerdicts(rec, "nginx", prove.Judge(sc.Test, honest, obs))
	if len(rec.errors) != 0 {
		t.Errorf("the truthful report failed: %v", rec.errors)
	}
}

// recordingTB records Errorf calls instead of failing.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Helper()                         {}
func (r *recordingTB) Logf(format string, args ...any) {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// scenarioNamed is the suite's scenario called name.
func scenarioNamed(t *testing.T, name string) prove.Scenario {
	t.Helper()
	for _, s := range prove.Scenarios() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %s", name)
	return prove.Scenario{}
}

// t0 is an arbitrary instant the synthetic observations start at.
var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// tries builds the hits of one request: each try lasts d and the next
// starts gap after the previous ended (as prove's unit tests do).
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
