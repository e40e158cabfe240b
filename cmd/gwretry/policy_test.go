package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// TestPolicyFindingsHaveSources translates every testdata case whose input
// holds policies for every target and fails when a finding of a
// policy-shaped rule (one some policy reaches) lacks its source, or names
// another source than report.json's effective entry for the feature; and
// when a rule's effective values lack a source.
func TestPolicyFindingsHaveSources(t *testing.T) {
	cases, err := filepath.Glob("../../testdata/policy-*")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 3 {
		t.Fatalf("only %d policy cases", len(cases))
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"translate", "--output-dir", out, "--report", "none", "-q"}, goldenArgs(t, dir)...)
			// Every target, not only those the golden runs.
			for i, a := range args {
				if a == "--target" {
					args[i+1] = "all"
				}
			}
			var stderr bytes.Buffer
			if code := run(args, nil, &bytes.Buffer{}, &stderr); code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			data, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep translate.Report
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&rep); err != nil {
				t.Fatal(err)
			}
			type key struct {
				route string
				rule  int
			}
			eff := map[key]translate.RuleEffective{}
			shaped := 0
			for _, e := range rep.Effective {
				eff[key{e.Route, e.Rule}] = e
				if len(e.Policies) > 0 {
					shaped++
				}
				for f, v := range e.Effective {
					if v.Source == "" {
						t.Errorf("%s rule %d: effective %s has no source", e.Route, e.Rule, f)
					}
				}
			}
			if shaped == 0 {
				t.Fatal("no policy-shaped rule")
			}
			for _, f := range rep.Findings {
				e, ok := eff[key{f.Route, f.Rule}]
				if !ok {
					t.Errorf("%s rule %d: findings but no effective entry", f.Route, f.Rule)
					continue
				}
				if len(e.Policies) == 0 {
					continue
				}
				want := "HTTPRoute"
				if v, ok := e.Effective[f.Feature]; ok {
					want = v.Source
				}
				if f.Source == "" {
					t.Errorf("%s: %s rule %d %s: no source", f.Target, f.Route, f.Rule, f.Feature)
				} else if f.Source != want {
					t.Errorf("%s: %s rule %d %s: source %q, effective says %q", f.Target, f.Route, f.Rule, f.Feature, f.Source, want)
				}
			}
			// The text report shows each finding's source.
			text := string(reportText(&rep, nil, false, false))
			if !strings.Contains(text, "SOURCE") {
				t.Errorf("the text report has no SOURCE column:\n%s", text)
			}
		})
	}
}
