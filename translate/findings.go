package translate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Feature names one feature a rule can set: retry, timeouts, backendRefs,
// a filter kind, a listener. The names are those of report.json, listed in
// the README's "The report" section.
type Feature string

// Features, in the order they are reported.
const (
	// FeatureBackendRefs is set when some backendRef of a rule cannot
	// receive traffic, or none can (a dead rule): the Gateway API answers
	// that share of the requests with 500.
	FeatureBackendRefs           Feature = "backendRefs"
	FeatureRetryAttempts         Feature = "retry.attempts"
	FeatureRetryBackendTimeout   Feature = "retry.backendTimeout"
	FeatureRetryBackoff          Feature = "retry.backoff"
	FeatureRetryCodes            Feature = "retry.codes"
	FeatureRetryConnectionErrors Feature = "retry.connectionErrors"
	FeatureBackendRequestTimeout Feature = "timeouts.backendRequest"
	FeatureRequestTimeout        Feature = "timeouts.request"
)

// Status is how far a data plane honours a feature.
type Status string

// Statuses, from best to worst.
const (
	// Honoured: the data plane, as configured, behaves as the Gateway API
	// defines the feature. The end-to-end tests check this claim.
	Honoured Status = "honoured"
	// Approximated: something close is configured; the message says what
	// differs.
	Approximated Status = "approximated"
	// Unsupported: nothing in this data plane version does it; the message
	// says what the user can do.
	Unsupported Status = "unsupported"
)

// Rank orders statuses: honoured 0, approximated 1, unsupported 2.
func (s Status) Rank() int {
	switch s {
	case Honoured:
		return 0
	case Approximated:
		return 1
	default:
		return 2
	}
}

// Finding is what one target does with one feature of one rule, or, for
// the connection.* features, of one Gateway: then Gateway is set and Route,
// Rule and RuleName are empty.
type Finding struct {
	Target   string  `json:"target"`
	Gateway  string  `json:"gateway,omitempty"`
	Route    string  `json:"route"`
	Rule     int     `json:"rule"`
	RuleName string  `json:"ruleName"`
	Feature  Feature `json:"feature"`
	Status   Status  `json:"status"`
	Message  string  `json:"message"`
	// Source is where the feature's value came from, on the findings of
	// rules some policy reaches ("HTTPRoute", "RetryPolicy ns/name
	// override", ...; see RuleEffective); "" on the others, whose values
	// all come from the HTTPRoute. A connection.* finding names the
	// ConnectionTimeoutPolicy whose value it reports.
	Source string `json:"source,omitempty"`
}

// NewFinding returns a finding for a feature of rule r. The target is filled
// in by Run.
func NewFinding(r *Rule, f Feature, s Status, format string, args ...any) Finding {
	return Finding{Route: r.Route, Rule: r.Index, RuleName: r.RuleName, Feature: f, Status: s,
		Message: fmt.Sprintf(format, args...)}
}

// Features returns the features a rule sets, as the README's "The report"
// section defines them (after gwretry's reference notes, report.md), in
// report order.
// Features are: backendRefs (when some or all backendRefs cannot receive
// traffic), the retry and timeout features, one per filter kind of the
// rule (filters.*) and of its backendRefs (backendRefs.filters.*), and
// listener.https when the route is also attached to an HTTPS listener.
func (r *Rule) Features() []Feature {
	fs := features(r.Retry, r.Timeouts)
	if r.Dead() || len(r.Invalid) > 0 {
		fs = append([]Feature{FeatureBackendRefs}, fs...)
	}
	fs = append(fs, r.Filters.Features()...)
	fs = append(fs, r.backendFilterFeatures()...)
	if len(r.Ungenerated) > 0 || len(r.TLSListeners) > 0 {
		fs = append(fs, FeatureListenerHTTPS)
	}
	return fs
}

// DeadRuleFinding is the finding for a retry or timeout feature of a rule
// that forwards nothing (Rule.Forwards is false: it is dead, or it
// redirects): no backend is ever contacted, so the setting never takes
// effect. answer says what the target does instead ("Envoy answers 500").
func DeadRuleFinding(r *Rule, f Feature, answer string) Finding {
	if !r.Dead() {
		return NewFinding(r, f, Unsupported, "the rule forwards nothing (%s): %s for every request it matches, so %s never takes effect",
			r.NoForwardReason(), answer, f)
	}
	return NewFinding(r, f, Unsupported, "the rule has no backend that can receive traffic (%s): %s for every request it matches, so %s never takes effect",
		r.DeadReason(), answer, f)
}

func features(rt *Retry, t Timeouts) []Feature {
	var fs []Feature
	if rt != nil {
		fs = append(fs, FeatureRetryAttempts)
		if t.BackendRequest != nil {
			fs = append(fs, FeatureRetryBackendTimeout)
		}
		if rt.Backoff != nil {
			fs = append(fs, FeatureRetryBackoff)
		}
		if len(rt.Codes) > 0 {
			fs = append(fs, FeatureRetryCodes)
		}
		fs = append(fs, FeatureRetryConnectionErrors)
	}
	if t.BackendRequest != nil {
		fs = append(fs, FeatureBackendRequestTimeout)
	}
	if t.Request != nil {
		fs = append(fs, FeatureRequestTimeout)
	}
	return fs
}

// SortFindings sorts findings by target, route, rule and feature, so that
// report.json diffs cleanly.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Route, b.Route),
			cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Feature, b.Feature))
	})
}

// Report is report.json.
type Report struct {
	SchemaVersion int          `json:"schemaVersion"`
	Targets       []TargetInfo `json:"targets"`
	Routes        int          `json:"routes"`
	Rules         int          `json:"rules"`
	// Effective is every rule's retry and timeout values with their
	// sources.
	Effective []RuleEffective `json:"effective"`
	Findings  []Finding       `json:"findings"`
	// Policies is what became of each policy in the input (none: absent).
	Policies []PolicyReport `json:"policies,omitempty"`
}

// TargetInfo names a data plane and the version the report assumes.
type TargetInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Worst returns the worst status among the findings, and false when there are
// none.
func (r *Report) Worst() (Status, bool) {
	var worst Status
	for _, f := range r.Findings {
		if worst == "" || f.Status.Rank() > worst.Rank() {
			worst = f.Status
		}
	}
	return worst, worst != ""
}

// IsRetry reports whether f is one of the retry.* features, which a rule
// with attempts 0 honours by not retrying at all.
func (f Feature) IsRetry() bool { return strings.HasPrefix(string(f), "retry.") }
