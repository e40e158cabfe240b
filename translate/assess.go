package translate

import (
	"strings"

	"github.com/gwretry/gwretry/report"
)

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
	// RetryOn: the target writes the retry condition of a
	// BackendTrafficPolicy's retry (Retry.On) as it is, and its Feature
	// says so. Otherwise Assess adds RetriesMoreThanPolicy to
	// retry.connectionErrors and retry.backendTimeout where the condition
	// asks for less than the Gateway API's retry.
	RetryOn bool
	// Retried says which connection failures the target retries for the
	// rule and whether it retries a try its backendRequest timer cut, as
	// planned; nil: as the Gateway API's retry (all of them, yes).
	Retried func() (conn ConnRetry, timeouts bool)
	// Shared, when set (a target's Options.Shared), shares the decisions'
	// parameters and caveats with those of the findings before.
	Shared *report.Interner
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
		x := decide(r, f, d)
		if d.Shared != nil {
			x = d.Shared.Decision(x)
		}
		out = append(out, Record(r, f, x))
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
	x := d.Feature(f)
	if !d.RetryOn {
		x = widerThanPolicy(r, f, x, d.Retried)
	}
	return x
}

// widerThanPolicy adds RetriesMoreThanPolicy to a retry decision of a
// target that retries more failures (conn, timeouts) than the rule's
// BackendTrafficPolicy asks for.
func widerThanPolicy(r *Rule, f Feature, x report.Decision, retried func() (ConnRetry, bool)) report.Decision {
	rt := r.Retry
	if rt == nil || rt.On == nil || rt.Attempts == 0 || x.Reason == report.ReasonRetriesDisabled || x.Reason == report.ReasonTimeoutDisabled {
		return x
	}
	if st := x.Status(); st != Honoured && st != Approximated {
		return x
	}
	conn, timeouts := ConnRetryAll, true
	if retried != nil {
		conn, timeouts = retried()
	}
	var asks string
	switch {
	case f == FeatureRetryConnectionErrors && connRank(conn) <= connRank(rt.On.ConnErrors):
		return x
	case f == FeatureRetryConnectionErrors && rt.On.ConnErrors == ConnRetryUnsent:
		asks = "only the connection failures before the request was sent"
	case f == FeatureRetryConnectionErrors && rt.On.ConnErrors == ConnRetryNone:
		asks = "no connection failure"
	case f == FeatureRetryBackendTimeout && timeouts && !rt.On.Timeouts:
		asks = "no retry of a try the per-try timeout cut"
	default:
		return x
	}
	return x.With(report.NewCaveat(report.CaveatRetriesMoreThanPolicy, "policy", rt.On.Policy, "triggers", strings.Join(rt.On.Triggers, ","), "asks", asks))
}
