package traefik

import (
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestAttemptsWithHugeDurations guards against time.Duration overflow
// turning "retries can be dropped" into a false "honoured".
func TestAttemptsWithHugeDurations(t *testing.T) {
	huge := &translate.Duration{Text: "99999h", Value: 99999 * time.Hour}
	r := &translate.Rule{Retry: &translate.Retry{Attempts: 1000, Backoff: huge},
		Timeouts: translate.Timeouts{BackendRequest: huge}}
	d := attemptsDecision(r, versionTable()[0], translate.Options{})
	if !hasCaveat(d, report.CaveatLateRetriesDropped) || d.Status() != translate.Approximated {
		t.Errorf("decision %+v, want approximated with the late retries dropped", d)
	}
}
