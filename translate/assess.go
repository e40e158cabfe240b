package translate

import "github.com/gwretry/gwretry/report"

// Record returns the finding of feature f of rule r that decision d
// records; its status follows from d, and its words are rendered from the
// catalogue when shown (Finding.Text). It is the one way a target makes a
// rule's finding.
func Record(r *Rule, f Feature, d report.Decision) Finding {
	fd := Finding{Route: r.Route, Rule: r.Index, RuleName: r.RuleName, Feature: f}
	fd.Decide(d)
	return fd
}

// Decisions are what one target decides of one rule, feature by feature;
// Assess asks them in its order and decides the shared cases itself. A nil
// hook decides nothing.
type Decisions struct {
	// First decides a feature before anything else, for a target that
	// treats the whole rule alike (Linkerd ignores a route it cannot
	// convert); ok false goes on.
	First func(f Feature) (d report.Decision, ok bool)
	// Written decides a filter, or listener.https, that the target
	// writes; ok false leaves it to the shared NotTranslated finding.
	Written func(f Feature) (d report.Decision, ok bool)
	// Feature decides backendRefs, and the retry and timeout features of
	// a rule that forwards.
	Feature func(f Feature) report.Decision
}

// Assess returns one finding per feature rule r sets (Rule.Features), in
// that order. Each is the target's decision, or one of the shared ones,
// decided here for every target alike:
//
//   - listener.https of a route attached to a listener gwretry does not
//     generate: ListenerNotGenerated;
//   - a filter, or listener.https, that the target does not write
//     (Written leaves it): NotTranslated;
//   - a retry or timeout feature of a rule that forwards nothing (no
//     backend can receive traffic, or it redirects): RuleForwardsNothing.
func Assess(r *Rule, d Decisions) []Finding {
	fs := r.Features()
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		out = append(out, Record(r, f, decide(r, f, d)))
	}
	return out
}

func decide(r *Rule, f Feature, d Decisions) report.Decision {
	if d.First != nil {
		if x, ok := d.First(f); ok {
			return x
		}
	}
	switch {
	case f == FeatureListenerHTTPS && len(r.Ungenerated) > 0:
		return report.Decide(report.ReasonListenerNotGenerated)
	case f.IsFilter() || f == FeatureListenerHTTPS:
		if d.Written != nil {
			if x, ok := d.Written(f); ok {
				return x
			}
		}
		return report.Decide(report.ReasonNotTranslated)
	case !r.Forwards() && f != FeatureBackendRefs:
		return report.Decide(report.ReasonRuleForwardsNothing)
	case d.Feature == nil:
		return report.Decide(report.ReasonNotTranslated)
	}
	return d.Feature(f)
}
