package report

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// Status is how far a target honours a feature.
type Status string

// Statuses, from best to worst; NotApplicable stands apart.
const (
	// Honoured: the data plane, as configured, behaves as the Gateway API
	// defines the feature for every request the rule matches. The judges
	// and the live tests check this claim.
	Honoured Status = "honoured"
	// Approximated: something close is configured; the caveats say what
	// differs.
	Approximated Status = "approximated"
	// Unsupported: nothing in this data plane version does it; the reason
	// says what the user can do.
	Unsupported Status = "unsupported"
	// NotApplicable: the rule or Gateway is outside what the target
	// serves (a mesh target and a Gateway's listeners, a gateway target
	// and a route attached to Services only). It is not a gap of the
	// target, and --fail-on never counts it.
	NotApplicable Status = "notApplicable"
)

// Rank orders statuses: honoured 0, approximated 1, unsupported 2;
// not-applicable is -1, below every threshold a gate can set.
func (s Status) Rank() int {
	switch s {
	case Honoured:
		return 0
	case Approximated:
		return 1
	case NotApplicable:
		return -1
	default:
		return 2
	}
}

// Reason is a stable code, in CamelCase, for why a finding has its status
// (a finding reason) or for one way the configured behaviour differs from
// the Gateway API's (a caveat). Every reason is an entry of Catalogue;
// tests and tools read reasons, never messages.
type Reason string

// Params are the values a reason is rendered with, by name ("methods":
// "POST, PATCH, LOCK"). encoding/json writes them sorted by name.
type Params map[string]string

// Caveat is one way what a target configures differs from what the
// Gateway API defines: a reason of kind caveat and its parameters.
type Caveat struct {
	Reason Reason `json:"reason"`
	Params Params `json:"params,omitempty"`
}

// NewCaveat returns a caveat with parameters given as name, value pairs.
func NewCaveat(r Reason, kv ...string) Caveat {
	return Caveat{Reason: r, Params: pairs(kv)}
}

func pairs(kv []string) Params {
	if len(kv) == 0 {
		return nil
	}
	p := Params{}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	if len(kv)%2 == 1 {
		p[kv[len(kv)-1]] = ""
	}
	return p
}

// WithParams writes a reason with its parameters, sorted by name, as
// tools and failure messages show it: "CodesNotRetried{codes=501}", or
// the bare reason when it has none.
func WithParams(r Reason, p Params) string {
	if len(p) == 0 {
		return string(r)
	}
	kv := make([]string, 0, len(p))
	for _, k := range slices.Sorted(maps.Keys(p)) {
		kv = append(kv, k+"="+p[k])
	}
	return string(r) + "{" + strings.Join(kv, ", ") + "}"
}

// Decision is the record a target's planner writes for one feature of
// one rule (or of one Gateway): what it configured, why, and how that
// differs from the Gateway API. The finding's status follows from it
// (Status).
type Decision struct {
	// Reason is a finding reason of the catalogue.
	Reason Reason `json:"reason"`
	// Params are the reason's parameters.
	Params Params `json:"params,omitempty"`
	// Configured is a short fact naming what was written
	// ("proxy_next_upstream_tries 3"); empty when nothing was.
	Configured string `json:"configured,omitempty"`
	// Caveats are the ways the configured behaviour differs, sorted by
	// reason.
	Caveats []Caveat `json:"caveats,omitempty"`
}

// Decide returns a decision for reason r with parameters given as name,
// value pairs.
func Decide(r Reason, kv ...string) Decision { return Decision{Reason: r, Params: pairs(kv)} }

// Set returns d configuring fact.
func (d Decision) Set(fact string) Decision {
	d.Configured = fact
	return d
}

// With returns d with the caveats cs added (in reason order; a caveat of
// a reason already there replaces it).
func (d Decision) With(cs ...Caveat) Decision {
	out := slices.Clone(d.Caveats)
	for _, c := range cs {
		if i := slices.IndexFunc(out, func(x Caveat) bool { return x.Reason == c.Reason }); i >= 0 {
			out[i] = c
			continue
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b Caveat) int { return cmp.Compare(a.Reason, b.Reason) })
	d.Caveats = out
	return d
}

// Status derives the finding's status from the decision: the reason's
// own status when it is unsupported or not applicable, approximated when
// any caveat applies, the reason's status otherwise. An unknown reason is
// unsupported (Check refuses it).
func (d Decision) Status() Status {
	e, ok := Lookup(d.Reason)
	if !ok || e.Status == "" {
		return Unsupported
	}
	switch {
	case e.Status == Unsupported || e.Status == NotApplicable:
		return e.Status
	case len(d.Caveats) > 0:
		return Approximated
	}
	return e.Status
}

// Finding is what one target does with one feature of one rule, or, for
// the connection.* features, of one Gateway: then Gateway is set and
// Route, Rule and RuleName are empty.
type Finding struct {
	Target   string  `json:"target"`
	Gateway  string  `json:"gateway,omitempty"`
	Route    string  `json:"route"`
	Rule     int     `json:"rule"`
	RuleName string  `json:"ruleName"`
	Feature  Feature `json:"feature"`
	Status   Status  `json:"status"`
	// Decision is the record the status follows from.
	Decision
	// Source is where the feature's value came from, on the findings of
	// rules some policy reaches ("HTTPRoute", "RetryPolicy ns/name
	// override", ...); "" on the others, whose values all come from the
	// HTTPRoute. A connection.* finding names the ConnectionTimeoutPolicy
	// whose value it reports.
	Source string `json:"source,omitempty"`
}

// Text is the finding in words, rendered from its record by the
// catalogue: its reason, then each caveat.
func (f *Finding) Text() string { return f.Decision.Render() }

// Decide sets the finding's decision and the status that follows from it.
func (f *Finding) Decide(d Decision) {
	f.Decision = d
	f.Status = d.Status()
}

// AddCaveats adds caveats to the finding's decision and derives its
// status again.
func (f *Finding) AddCaveats(cs ...Caveat) { f.Decide(f.Decision.With(cs...)) }
