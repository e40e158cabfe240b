package main

import (
	"bytes"
	"testing"
)

// BenchmarkTranslateAll measures a whole `translate --target all -o DIR` of
// the upstream conformance manifests, as a CI step runs it.
func BenchmarkTranslateAll(b *testing.B) {
	dir := b.TempDir()
	args := []string{"translate", "../../testdata/upstream-conformance", "--target", "all", "-o", dir, "-q", "--report", "none"}
	b.ReportAllocs()
	for b.Loop() {
		if code := run(args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
}
