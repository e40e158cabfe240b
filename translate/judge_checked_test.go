package translate

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
)

// TestChecked: the judge checks honoured findings and approximated ones
// whose caveats only say how the data plane, configured as defined, acts
// at run time; never one with a caveat about what is configured, one whose
// reason is itself not honoured, nor an unsupported one.
func TestChecked(t *testing.T) {
	configured := report.Decide(report.ReasonConfigured)
	interim := report.NewCaveat(report.CaveatInterimResponseIsFinal, "version", "1.22")
	handled := report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", "connection")
	exempt := report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", "POST")
	for _, tc := range []struct {
		name string
		d    report.Decision
		want bool
	}{
		{"honoured", configured, true},
		{"runtime caveat only", configured.With(interim), true},
		{"a header the proxy handles", configured.With(handled), false},
		{"a caveat about the configuration", configured.With(interim, exempt), false},
		{"configuration caveat only", configured.With(exempt), false},
		{"unsupported", report.Decide(report.ReasonNotExpressible), false},
		{"not applicable", report.Decide(report.ReasonRoutesNotServed), false},
	} {
		var f Finding
		f.Decide(tc.d)
		if got := Checked(f); got != tc.want {
			t.Errorf("%s (%s, %v): Checked %v, want %v", tc.name, f.Status, f.Caveats, got, tc.want)
		}
	}
}

// TestTLSContradictionUnrouted: a rule whose HTTPS port also has listeners
// no route attaches to (Rule.TLSUnrouted, as resolve's
// TestTLSUnroutedListeners builds it) cannot be honoured.
func TestTLSContradictionUnrouted(t *testing.T) {
	r := &Rule{TLSUnrouted: []string{"Gateway ns/gw listener a (hostname a.example.com)", "Gateway ns/gw listener lone (hostname lone.example.com)"}}
	b := Behaviour{TLS: map[string]Certificate{}}
	if why := tlsContradiction(r, b, map[string]Certificate{TLSKey(443, ""): {}}); !strings.Contains(why, "generates nothing for") {
		t.Errorf("tlsContradiction = %q", why)
	}
}
