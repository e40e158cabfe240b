package translate

import "github.com/gwretry/gwretry/report"

// statusFinding is a fake backend's finding of status s, with a decision
// that gives s (Configured, NotExpressible, or Configured with a caveat).
func statusFinding(r *Rule, f Feature, s Status, _ string) Finding {
	d := report.Decide(report.ReasonConfigured)
	switch s {
	case Unsupported:
		d = report.Decide(report.ReasonNotExpressible)
	case Approximated:
		d = d.With(report.NewCaveat(report.CaveatIdleTimer))
	}
	return Record(r, f, d)
}
