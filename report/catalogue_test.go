package report

import (
	"regexp"
	"slices"
	"testing"
)

var camel = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]+$`)

// TestCatalogue checks every entry: a CamelCase code used once, a status
// a finding can have (or none, for a caveat), a text, and a placeholder
// for each parameter and none other.
func TestCatalogue(t *testing.T) {
	seen := map[Reason]bool{}
	for _, e := range Catalogue() {
		if !camel.MatchString(string(e.Reason)) {
			t.Errorf("%q is not CamelCase", e.Reason)
		}
		if seen[e.Reason] {
			t.Errorf("%s is in the catalogue twice", e.Reason)
		}
		seen[e.Reason] = true
		switch e.Status {
		case "", Honoured, Approximated, Unsupported, NotApplicable:
		default:
			t.Errorf("%s: status %q", e.Reason, e.Status)
		}
		if e.Text == "" {
			t.Errorf("%s: no text", e.Reason)
		}
		var used []string
		for _, m := range placeholder.FindAllString(e.Text, -1) {
			used = append(used, m[1:len(m)-1])
		}
		slices.Sort(used)
		want := slices.Sorted(slices.Values(e.Params))
		if !slices.Equal(slices.Compact(used), want) {
			t.Errorf("%s: text uses %v, params are %v", e.Reason, used, e.Params)
		}
	}
}

func TestStatusFollowsFromTheRecord(t *testing.T) {
	for _, tc := range []struct {
		d    Decision
		want Status
	}{
		{Decide("Configured"), Honoured},
		{Decide("Configured").With(NewCaveat("IdleTimer")), Approximated},
		{Decide("NoBackoff"), Unsupported},
		{Decide("MeshAttachmentOnly"), NotApplicable},
		{Decide("NoSuchReason"), Unsupported},
	} {
		if got := tc.d.Status(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.d, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	ok := Finding{Feature: FeatureRetryCodes}
	ok.Decide(Decide("Configured").Set("retry_on 5xx").With(NewCaveat("CodesNotRetried", "codes", "418")))
	if err := Check(ok); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]func(*Finding){
		"no reason":          func(f *Finding) { f.Reason = "" },
		"unknown reason":     func(f *Finding) { f.Reason = "Nope" },
		"caveat as reason":   func(f *Finding) { f.Reason = "IdleTimer" },
		"status not derived": func(f *Finding) { f.Status = Honoured },
		"missing parameter":  func(f *Finding) { f.Caveats = []Caveat{{Reason: "CodesNotRetried"}} },
		"extra parameter": func(f *Finding) {
			f.Caveats = []Caveat{NewCaveat("CodesNotRetried", "codes", "418", "x", "y")}
		},
		"unsupported configures": func(f *Finding) { f.Reason = "NoBackoff"; f.Status = Unsupported },
		"caveats unsorted": func(f *Finding) {
			f.Caveats = []Caveat{NewCaveat("IdleTimer"), NewCaveat("CodesNotRetried", "codes", "418")}
		},
	} {
		bad := ok
		bad.Caveats = slices.Clone(ok.Caveats)
		f(&bad)
		if Check(bad) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRender(t *testing.T) {
	d := Decide("CodesNotRetryable", "codes", "418, 419")
	if got, want := d.Render(), "the data plane cannot retry 418, 419: those responses are returned as they are"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWithParams(t *testing.T) {
	if got := WithParams("CodesNotRetried", Params{"codes": "501", "a": "x"}); got != "CodesNotRetried{a=x, codes=501}" {
		t.Errorf("got %q", got)
	}
	if got := WithParams("IdleTimer", nil); got != "IdleTimer" {
		t.Errorf("got %q", got)
	}
}

// TestImportCatalogue checks the import's catalogue as TestCatalogue the
// translate one: CamelCase codes used once in either catalogue, an import
// status (or none, for a caveat), a text with a placeholder for each
// parameter and none other.
func TestImportCatalogue(t *testing.T) {
	seen := map[Reason]bool{}
	for _, e := range Catalogue() {
		seen[e.Reason] = true
	}
	for _, e := range ImportCatalogue() {
		if !camel.MatchString(string(e.Reason)) {
			t.Errorf("%q is not CamelCase", e.Reason)
		}
		if seen[e.Reason] {
			t.Errorf("%s is in a catalogue twice", e.Reason)
		}
		seen[e.Reason] = true
		switch e.Status {
		case "", ImportCarried, Approximated, ImportNotCarried:
		default:
			t.Errorf("%s: status %q", e.Reason, e.Status)
		}
		if e.Text == "" || len(e.Text) > 120 {
			t.Errorf("%s: text of %d characters", e.Reason, len(e.Text))
		}
		var used []string
		for _, m := range placeholder.FindAllString(e.Text, -1) {
			used = append(used, m[1:len(m)-1])
		}
		slices.Sort(used)
		if want := slices.Sorted(slices.Values(e.Params)); !slices.Equal(slices.Compact(used), want) {
			t.Errorf("%s: text uses %v, params are %v", e.Reason, used, e.Params)
		}
	}
}

func TestImportRecord(t *testing.T) {
	for _, tc := range []struct {
		r    Reason
		p    Params
		cs   []Caveat
		want Status
		ok   bool
	}{
		{"TriesCarried", Params{"attempts": "2"}, nil, ImportCarried, true},
		{"ConditionsCarried", Params{"codes": ""}, []Caveat{NewCaveat("ErrorNotListed")}, Approximated, true},
		{"NoConnectTimeout", nil, nil, ImportNotCarried, true},
		{"TriesCarried", nil, nil, ImportCarried, false},                                          // parameter missing
		{"NoConnectTimeout", nil, []Caveat{NewCaveat("ErrorNotListed")}, ImportNotCarried, false}, // caveat on not-carried
		{"ConditionsCarried", Params{"codes": ""}, []Caveat{NewCaveat("TimeoutNotListed"), NewCaveat("ErrorNotListed")}, Approximated, false},
		{"ErrorNotListed", nil, nil, ImportNotCarried, false},
		{"Configured", nil, nil, ImportNotCarried, false}, // a translate reason
	} {
		if got := ImportStatus(tc.r, tc.cs); got != tc.want {
			t.Errorf("%s %v: status %s, want %s", tc.r, tc.cs, got, tc.want)
		}
		if err := CheckImport(tc.r, tc.p, tc.cs); (err == nil) != tc.ok {
			t.Errorf("%s %v %v: CheckImport %v, want ok %v", tc.r, tc.p, tc.cs, err, tc.ok)
		}
	}
}
