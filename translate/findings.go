package translate

import (
	"cmp"
	"slices"

	"github.com/gwretry/gwretry/report"
)

// The report's vocabulary lives in package report; these names keep the
// packages that speak of a rule's findings through translate working.
type (
	// Feature is report.Feature.
	Feature = report.Feature
	// Status is report.Status.
	Status = report.Status
	// Finding is report.Finding.
	Finding = report.Finding
)

// Features, in the order they are reported.
const (
	FeatureBackendRefs           = report.FeatureBackendRefs
	FeatureRetryAttempts         = report.FeatureRetryAttempts
	FeatureRetryBackendTimeout   = report.FeatureRetryBackendTimeout
	FeatureRetryBackoff          = report.FeatureRetryBackoff
	FeatureRetryCodes            = report.FeatureRetryCodes
	FeatureRetryConnectionErrors = report.FeatureRetryConnectionErrors
	FeatureBackendRequestTimeout = report.FeatureBackendRequestTimeout
	FeatureRequestTimeout        = report.FeatureRequestTimeout
)

// Statuses, from best to worst.
const (
	Honoured      = report.Honoured
	Approximated  = report.Approximated
	Unsupported   = report.Unsupported
	NotApplicable = report.NotApplicable
)

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
// none; not-applicable findings do not count.
func (r *Report) Worst() (Status, bool) {
	var worst Status
	for _, f := range r.Findings {
		if f.Status == NotApplicable {
			continue
		}
		if worst == "" || f.Status.Rank() > worst.Rank() {
			worst = f.Status
		}
	}
	return worst, worst != ""
}
