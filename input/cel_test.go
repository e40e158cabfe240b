package input

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/celcases"
	"github.com/gwretry/gwretry/translate"
)

// celCase is one case of testdata/cel/*.yaml.
type celCase = celcases.Case

func loadCELCases(t *testing.T, file string) []celCase {
	t.Helper()
	return celcases.Load(t, file)
}

// TestCELAgreement checks that Validate accepts and rejects what the API
// server does: upstream's CEL test cases (testdata/cel/upstream.yaml) and
// cases from the CRD schemas (testdata/cel/schema.yaml).
func TestCELAgreement(t *testing.T) {
	total, agree := 0, 0
	for _, file := range []string{"../testdata/cel/upstream.yaml", "../testdata/cel/schema.yaml", "../testdata/cel/absent.yaml"} {
		for _, c := range loadCELCases(t, file) {
			if c.Valid == (len(c.WantErrors)+len(c.WantFields) > 0) {
				t.Errorf("%s: %s: set exactly one of valid and wantErrors/wantFields", file, c.Name)
				continue
			}
			for _, ch := range c.Channels {
				total++
				t.Run(ch+"/"+c.Name, func(t *testing.T) {
					doc, err := yaml.Marshal(c.Object)
					if err != nil {
						t.Fatal(err)
					}
					in, err := Load([]string{"-"}, strings.NewReader(string(doc)), DefaultLimits())
					var got error
					if err != nil {
						got = err
					} else if errs := Validate(in, translate.Channel(ch)); len(errs) > 0 {
						got = errs
					}
					if c.Valid {
						if got != nil {
							t.Fatalf("rejected, the API server accepts it:\n%v", got)
						}
						agree++
						return
					}
					if got == nil {
						t.Fatalf("accepted, the API server rejects it with %q", c.WantErrors)
					}
					ok := true
					for _, w := range c.WantErrors {
						if !strings.Contains(got.Error(), w) && !strings.Contains(got.Error(), strings.ReplaceAll(w, "more", "longer")) {
							t.Errorf("error lacks %q:\n%v", w, got)
							ok = false
						}
					}
					for _, f := range c.WantFields {
						if !strings.Contains(got.Error(), ": "+f+": ") {
							t.Errorf("error does not name field %s:\n%v", f, got)
							ok = false
						}
					}
					if ok {
						agree++
					}
				})
			}
		}
	}
	t.Logf("CEL and schema cases: %d checked, %d agree with the API server", total, agree)
}
