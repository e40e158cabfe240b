package resolve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// FuzzLoadAndBuild feeds arbitrary manifests through loading, validation
// and resolution: they may be rejected, but must never panic or hang, and
// a model that comes out must pass the allowlists.
func FuzzLoadAndBuild(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/*/input.yaml")
	seeds = append(seeds, "../testdata/examples/retry.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(string(data))
		}
	}
	f.Add(minimalRoute)
	f.Fuzz(func(t *testing.T, doc string) {
		lim := translate.Limits{MaxInputBytes: 1 << 20, MaxDocumentBytes: 1 << 18, MaxDocuments: 100}
		in, err := input.Load([]string{"-"}, strings.NewReader(doc), lim)
		if err != nil {
			return
		}
		m, err := Build(in, translate.ResolveOptions{})
		if err != nil {
			if !input.IsInputError(err) {
				t.Fatalf("Build returned a non-input error: %v", err)
			}
			return
		}
		if err := m.Check(); err != nil {
			t.Fatalf("model fails the allowlist: %v", err)
		}
		translated := len(m.Rules) + len(m.MeshRules) + len(m.Skipped)
		if translated != m.RuleCount {
			t.Fatalf("%d rules read, %d translated or skipped: a rule vanished", m.RuleCount, translated)
		}
	})
}
