package corpus_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// TestCorpus: the same options give the same bytes, another seed other
// bytes, and the corpus loads and validates as the API server would, with
// every route attached to a generated listener.
func TestCorpus(t *testing.T) {
	for _, n := range []int{1, 50, 250} {
		a, err := corpus.Generate(corpus.Defaults(n))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := corpus.Generate(corpus.Defaults(n))
		if !bytes.Equal(a, b) {
			t.Fatalf("%d routes: two runs differ", n)
		}
		o := corpus.Defaults(n)
		o.Seed = 2
		if c, _ := corpus.Generate(o); n > 1 && bytes.Equal(a, c) {
			t.Errorf("%d routes: seeds 1 and 2 give the same corpus", n)
		}
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, a, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := input.Load([]string{p}, nil, input.DefaultLimits())
		if err != nil {
			t.Fatalf("%d routes: %v", n, err)
		}
		if len(in.Routes) != n {
			t.Errorf("%d routes loaded, want %d", len(in.Routes), n)
		}
		m, err := resolve.Build(in, translate.ResolveOptions{})
		if err != nil {
			t.Fatalf("%d routes: %v", n, err)
		}
		if len(m.Skipped) > 0 {
			t.Errorf("%d routes: %d rules skipped, e.g. %s: %s", n, len(m.Skipped), m.Skipped[0].Route, m.Skipped[0].Reason)
		}
	}
	if _, err := corpus.Generate(corpus.Options{}); err == nil {
		t.Error("0 routes: no error")
	}
}
