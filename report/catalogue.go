package report

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Entry is one reason of the catalogue.
type Entry struct {
	Reason Reason
	// Status is, for a finding reason, the status a finding with this
	// reason has when no caveat applies; "" marks a caveat, which makes
	// an honoured finding approximated.
	Status Status
	// Params names the parameters a finding or caveat with this reason
	// carries, each always present.
	Params []string
	// Text is the short rendering, with {name} for each parameter.
	Text string
}

// IsCaveat reports whether e is a caveat rather than a finding reason.
func (e Entry) IsCaveat() bool { return e.Status == "" }

// Render returns e's text with its parameters filled in.
func (e Entry) Render(p Params) string {
	return placeholder.ReplaceAllStringFunc(e.Text, func(m string) string {
		return p[m[1:len(m)-1]]
	})
}

var placeholder = regexp.MustCompile(`\{[a-zA-Z]+\}`)

// Catalogue returns every reason, sorted by code: the shared finding
// reasons and caveats, then those only some targets use. docs/report.md
// lists it (TestCatalogueDoc).
func Catalogue() []Entry {
	es := slices.Concat(findingReasons(), caveats(),
		envoyReasons(), grpcReasons(), haproxyReasons(), linkerdReasons(), nginxReasons(), openshiftReasons(), traefikReasons())
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Compare(a.Reason, b.Reason) })
	return es
}

var index = sync.OnceValue(func() map[Reason]Entry {
	m := map[Reason]Entry{}
	for _, e := range Catalogue() {
		m[e.Reason] = e
	}
	return m
})

// Lookup returns the catalogue entry of r.
func Lookup(r Reason) (Entry, bool) {
	e, ok := index()[r]
	return e, ok
}

// Render returns the short text of a finding's decision: its reason's
// rendering, then each caveat's. An honoured reason is left out when
// caveats follow: they say how the configured behaviour differs.
func (d Decision) Render() string {
	e, _ := Lookup(d.Reason)
	var parts []string
	if e.Status != Honoured || len(d.Caveats) == 0 {
		parts = append(parts, e.Render(d.Params))
	}
	for _, c := range d.Caveats {
		ce, _ := Lookup(c.Reason)
		parts = append(parts, ce.Render(c.Params))
	}
	return strings.Join(parts, "; ")
}

// Check reports whether f's record is whole and agrees with its status:
// a finding reason of the catalogue with exactly its parameters, known
// caveats with theirs, nothing configured or caveated when unsupported or
// not applicable, and the status Decision.Status derives.
func Check(f Finding) error {
	e, ok := Lookup(f.Reason)
	switch {
	case f.Reason == "":
		return fmt.Errorf("%s: no reason", f.Feature)
	case !ok:
		return fmt.Errorf("%s: reason %s is not in the catalogue", f.Feature, f.Reason)
	case e.IsCaveat():
		return fmt.Errorf("%s: reason %s is a caveat, not a finding reason", f.Feature, f.Reason)
	}
	if err := checkParams(f.Reason, e, f.Params); err != nil {
		return fmt.Errorf("%s: %w", f.Feature, err)
	}
	for i, c := range f.Caveats {
		ce, ok := Lookup(c.Reason)
		switch {
		case !ok:
			return fmt.Errorf("%s: caveat %s is not in the catalogue", f.Feature, c.Reason)
		case !ce.IsCaveat():
			return fmt.Errorf("%s: caveat %s is a finding reason", f.Feature, c.Reason)
		case i > 0 && f.Caveats[i-1].Reason >= c.Reason:
			return fmt.Errorf("%s: caveats not sorted or repeated at %s", f.Feature, c.Reason)
		}
		if err := checkParams(c.Reason, ce, c.Params); err != nil {
			return fmt.Errorf("%s: %w", f.Feature, err)
		}
	}
	if (e.Status == Unsupported || e.Status == NotApplicable) && (f.Configured != "" || len(f.Caveats) > 0) {
		return fmt.Errorf("%s: reason %s is %s but the finding configures %q with %d caveats", f.Feature, f.Reason, e.Status, f.Configured, len(f.Caveats))
	}
	if want := f.Decision.Status(); f.Status != want {
		return fmt.Errorf("%s: status %s, but reason %s with %d caveats gives %s", f.Feature, f.Status, f.Reason, len(f.Caveats), want)
	}
	return nil
}

func checkParams(r Reason, e Entry, p Params) error {
	for _, name := range e.Params {
		if _, ok := p[name]; !ok {
			return fmt.Errorf("%s: parameter %s missing", r, name)
		}
	}
	if len(p) != len(e.Params) {
		for name := range p {
			if !slices.Contains(e.Params, name) {
				return fmt.Errorf("%s: parameter %s is not one of %v", r, name, e.Params)
			}
		}
	}
	return nil
}
