package ingressnginx

import (
	"cmp"
	"slices"

	"github.com/gwretry/gwretry/report"
)

// Status is how much of an ingress-nginx setting's behaviour the Gateway
// API output carries.
type Status string

// Statuses, from best to worst.
const (
	// Carried: the HTTPRoute says what ingress-nginx did.
	Carried Status = "carried"
	// Approximated: something close is written; the reason and caveats
	// say how the behaviour changes.
	Approximated Status = "approximated"
	// NotCarried: the Gateway API cannot say it; the reason says what the
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
	// Reason is why the setting has its status, a code of
	// report.ImportCatalogue; the status follows from it and the caveats
	// (Import sets it). Text renders the finding in words.
	Reason Reason `json:"reason"`
	// Params are the reason's parameters: the facts its text names.
	Params report.Params `json:"params,omitempty"`
	// Caveats are the ways a carried setting's behaviour changes, sorted
	// by reason; any makes the finding approximated.
	Caveats []report.Caveat `json:"caveats,omitempty"`
}

// Text is the finding in words, rendered from its record by the import
// catalogue.
func (f Finding) Text() string { return report.RenderImport(f.Reason, f.Params, f.Caveats) }

// record returns f with reason r and its parameters given as name, value
// pairs.
func (f Finding) record(r Reason, kv ...string) Finding {
	f.Reason = r
	f.Params = nil
	if len(kv) > 0 {
		f.Params = report.Params{}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Params[kv[i]] = kv[i+1]
		}
	}
	return f
}

// SchemaVersion is the version of the import's report.json: 2 holds
// records (reason, params, caveats) and no message.
const SchemaVersion = 2

// Report is the import's report (report.json, schemaVersion 2).
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
