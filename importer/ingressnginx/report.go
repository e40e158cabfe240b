package ingressnginx

import (
	"cmp"
	"slices"
)

// Status is how much of an ingress-nginx setting's behaviour the Gateway
// API output carries.
type Status string

// Statuses, from best to worst.
const (
	// Carried: the HTTPRoute says what ingress-nginx did.
	Carried Status = "carried"
	// Approximated: something close is written; the message says how the
	// behaviour changes.
	Approximated Status = "approximated"
	// NotCarried: the Gateway API cannot say it; the message says what the
	// output does instead.
	NotCarried Status = "not-carried"
)

// Rank orders statuses: carried 0, approximated 1, not-carried 2.
func (s Status) Rank() int {
	switch s {
	case Carried:
		return 0
	case Approximated:
		return 1
	}
	return 2
}

// Finding is what the import did with one setting of one Ingress, for one
// HTTPRoute rule (Rule -1 and Route "" when it is about the whole Ingress).
type Finding struct {
	// Ingress is "namespace/name".
	Ingress string `json:"ingress"`
	// Annotation is the full annotation name
	// ("nginx.ingress.kubernetes.io/proxy-next-upstream"), also when the
	// value came from the ConfigMap or the default; "configmap:KEY" for a
	// ConfigMap-only key.
	Annotation string `json:"annotation"`
	// Source is annotation, configmap or default.
	Source Source `json:"source"`
	// Value is the value in effect, as written.
	Value  string `json:"value"`
	Route  string `json:"route"`
	Rule   int    `json:"rule"`
	Status Status `json:"status"`
	// Reason is why the setting has its status, a code of Reasons; the
	// status follows from it (Convert sets it), and the message says it
	// in words for people.
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
}

// Report is the import's report (report.json, schemaVersion 1).
type Report struct {
	SchemaVersion int `json:"schemaVersion"`
	// ConfigMap is "namespace/name" of the ConfigMap the defaults came
	// from, or "" for ingress-nginx's built-in defaults.
	ConfigMap string    `json:"configMap"`
	Ingresses int       `json:"ingresses"`
	Routes    int       `json:"routes"`
	Gateways  int       `json:"gateways"`
	Findings  []Finding `json:"findings"`
}

// sortFindings orders findings by Ingress, route, rule and the order of
// the settings, so that the report diffs cleanly.
func sortFindings(fs []Finding) {
	order := func(a string) int {
		for i, s := range retrySettings {
			if a == Prefix+s {
				return i
			}
		}
		return len(retrySettings)
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Ingress, b.Ingress), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule),
			cmp.Compare(order(a.Annotation), order(b.Annotation)), cmp.Compare(a.Annotation, b.Annotation))
	})
}
