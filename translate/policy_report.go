package translate

import (
	"strconv"

	"github.com/gwretry/gwretry/report"
)

// RuleEffective is one rule's entry in report.json's "effective": the
// value of every retry and timeout feature the rule ends up setting and
// where it came from.
type RuleEffective struct {
	Route     string                     `json:"route"`
	Rule      int                        `json:"rule"`
	RuleName  string                     `json:"ruleName"`
	Effective map[Feature]EffectiveValue `json:"effective"`
	// Policies are the policies that reach the rule, whether or not a
	// value of theirs won ("RetryPolicy ns/name"); a rule with any is
	// policy-shaped, and its findings carry their source.
	Policies []string `json:"policies,omitempty"`
}

// EffectiveValue is a value and its source: "HTTPRoute", "RetryPolicy
// NS/NAME default", "RetryPolicy NS/NAME override" or
// "BackendTrafficPolicy NS/NAME", followed by " (API default)" when a CRD
// default filled it.
type EffectiveValue struct {
	Value  any    `json:"value"`
	Source string `json:"source"`
}

// PolicyStatus is the offline equivalent of a policy's Accepted condition
// reason (GEP-713).
type PolicyStatus string

// Policy statuses.
const (
	PolicyAccepted       PolicyStatus = "Accepted"
	PolicyConflicted     PolicyStatus = "Conflicted"
	PolicyTargetNotFound PolicyStatus = "TargetNotFound"
)

// PolicyReport is one entry of report.json's "policies": what became of
// a policy.
type PolicyReport struct {
	Kind      string       `json:"kind"`
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Status    PolicyStatus `json:"status"`
	// Targets are the targetRefs found in the input; NotFound the others.
	Targets  []string `json:"targets,omitempty"`
	NotFound []string `json:"notFound,omitempty"`
	// Reached are the rules the policy reaches ("ns/route rule 0").
	Reached []string `json:"reached"`
	// Lost says which field of which rule it lost, and to whom.
	Lost []string `json:"lost,omitempty"`
	// Notes are other facts: a BackendTrafficPolicy retry replaced by a
	// route's own.
	Notes []string `json:"notes,omitempty"`
	// NotCarried lists what the policy sets that no HTTPRoute field can
	// carry, so that no target gets it.
	NotCarried []string `json:"notCarried,omitempty"`
	// EnvoyOnly lists what a BackendTrafficPolicy sets that only the
	// Envoy target carries (a gRPC status among its triggers, a code
	// below 400): Envoy's own retry conditions, which the Gateway API has
	// not.
	EnvoyOnly []string `json:"envoyOnly,omitempty"`
}

// PolicyConflict is a field of a rule on which the policies of its
// backends' Services (or of its listeners) disagree: gwretry writes one
// value per rule, so the finding of Feature says so.
type PolicyConflict struct {
	Feature Feature
	Text    string
}

// RuleLabel names a rule in policy reports: "ns/route rule 0".
func RuleLabel(route string, index int) string { return route + " rule " + strconv.Itoa(index) }

// applyProvenance gives each finding of a policy-shaped rule its source
// (the effective value's, or "HTTPRoute" for features no policy sets)
// and makes the findings of fields the rule's Services or listeners
// disagree on say so: such a finding is at best approximated.
func applyProvenance(m *Model, fs []Finding) {
	type key struct {
		route string
		rule  int
	}
	eff := map[key]*RuleEffective{}
	for i := range m.Effective {
		e := &m.Effective[i]
		eff[key{e.Route, e.Rule}] = e
	}
	conflicts := map[key][]PolicyConflict{}
	for _, r := range m.Rules {
		if len(r.PolicyConflicts) > 0 {
			conflicts[key{r.Route, r.Index}] = r.PolicyConflicts
		}
	}
	for i := range fs {
		f := &fs[i]
		k := key{f.Route, f.Rule}
		if e := eff[k]; e != nil && len(e.Policies) > 0 {
			f.Source = "HTTPRoute"
			if v, ok := e.Effective[f.Feature]; ok {
				f.Source = v.Source
			}
		}
		for _, c := range conflicts[k] {
			if c.Feature != f.Feature {
				continue
			}
			switch {
			case f.Reason != "" && f.Status != Unsupported && f.Status != NotApplicable:
				f.AddCaveats(report.NewCaveat(report.CaveatPolicyConflict))
			case f.Status == Honoured:
				f.Status = Approximated
			}
		}
	}
}
