package resolve

import (
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// statusFinding is a fake backend's finding of status s, with a decision
// that gives s (Configured, NotExpressible, or Configured with a caveat).
func statusFinding(r *translate.Rule, f translate.Feature, s translate.Status, _ string) translate.Finding {
	d := report.Decide(report.ReasonConfigured)
	switch s {
	case translate.Unsupported:
		d = report.Decide(report.ReasonNotExpressible)
	case translate.Approximated:
		d = d.With(report.NewCaveat(report.CaveatIdleTimer))
	}
	return translate.Record(r, f, d)
}
