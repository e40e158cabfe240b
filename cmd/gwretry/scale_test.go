package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// TestScalesLinearly guards against superlinear steps (hostname covering,
// precedence, endpoint lookup, duplicate and conflict detection, name
// uniqueness, parse-back comparison, judges): the bytes that load, build
// and each target allocate for 4 times the routes must be at most 5 times
// as many. Allocated bytes, unlike seconds, do not depend on the load of a
// shared machine.
func TestScalesLinearly(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and translates 500 routes")
	}
	const small, factor, limit = 100, 4, 5.0
	stages := func(n int) map[string]uint64 {
		data, err := corpus.Generate(corpus.Defaults(n))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		var in *input.Input
		out["load"] = allocated(func() {
			if in, err = input.Load([]string{p}, nil, input.DefaultLimits()); err != nil {
				t.Fatal(err)
			}
		})
		var m *translate.Model
		out["build"] = allocated(func() {
			if m, err = resolve.Build(in, translate.ResolveOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		for _, b := range backends.All() {
			target := []translate.Target{{Backend: b, Version: b.Versions()[len(b.Versions())-1]}}
			out["target="+b.Name()] = allocated(func() {
				if _, err := translate.Run(m, target, false); err != nil {
					t.Fatal(err)
				}
			})
		}
		return out
	}
	a, b := stages(small), stages(small*factor)
	for stage, x := range a {
		ratio := float64(b[stage]) / float64(x)
		t.Logf("%-16s %8.1f MB -> %8.1f MB: %.2f x", stage, float64(x)/(1<<20), float64(b[stage])/(1<<20), ratio)
		if ratio > limit {
			t.Errorf("%s allocates %.2f times as much for %d times the routes (%d -> %d): superlinear", stage, ratio, factor, small, small*factor)
		}
	}
}

// allocated returns the bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
