package e2e

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/prove"
)

// reportVerdicts fails tb for every contradicted verdict, printing the
// finding and the observation, and logs the others.
func reportVerdicts(tb testing.TB, target string, verdicts []prove.Verdict) {
	tb.Helper()
	for _, v := range verdicts {
		if v.Outcome == prove.Contradicted {
			tb.Errorf("%s %s: %s", target, v.Feature, v.Reason)
		} else {
			tb.Logf("%s %s: %s (%s)", v.Feature, v.Status, v.Outcome, firstLine(v.Reason))
		}
	}
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
