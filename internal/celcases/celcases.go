// Package celcases reads the validation cases of testdata/cel/*.yaml: an
// object and whether the API server with the v1.7.0 CRDs of each listed
// channel accepts it. input's tests check gwretry's validation and the
// real API server against them; cmd/gwretry's check that every valid one
// translates.
package celcases

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// Case is one case of a testdata/cel file.
type Case struct {
	Name     string   `json:"name"`
	Source   string   `json:"source"`
	Channels []string `json:"channels"`
	Valid    bool     `json:"valid"`
	// WantErrors are substrings the API server's error contains.
	WantErrors []string `json:"wantErrors"`
	// WantFields are field paths that must be named by an error.
	WantFields []string       `json:"wantFields"`
	Object     map[string]any `json:"object"`
}

// Load reads the cases of file, strictly; a file that cannot be read
// fails the test.
func Load(tb testing.TB, file string) []Case {
	tb.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Cases []Case `json:"cases"`
	}
	if err := yaml.UnmarshalStrict(raw, &doc); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	return doc.Cases
}
