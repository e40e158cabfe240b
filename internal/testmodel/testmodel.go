// Package testmodel builds a translate.Model from manifest files for a
// test, the way the CLI does: strict loading, then resolution with
// --endpoint overrides.
package testmodel

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// Load loads paths and resolves them with opts and the --endpoint values
// in endpoints ("NAME[.NS]:PORT=HOST:PORT"); any error fails tb.
func Load(tb testing.TB, paths []string, opts translate.ResolveOptions, endpoints ...string) *translate.Model {
	tb.Helper()
	in, err := translate.Load(paths, nil, translate.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range endpoints {
		ep, err := translate.ParseEndpoint(s)
		if err != nil {
			tb.Fatal(err)
		}
		opts.Endpoints = append(opts.Endpoints, ep)
	}
	m, err := translate.Build(in, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// FromYAML loads manifest, the documents of one file given as standard
// input ("-"), and resolves it with opts; it returns the input too (to
// resolve again with some objects replaced). Any error fails tb.
func FromYAML(tb testing.TB, manifest string, opts translate.ResolveOptions) (*translate.Input, *translate.Model) {
	tb.Helper()
	in, err := translate.Load([]string{"-"}, strings.NewReader(manifest), translate.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	m, err := translate.Build(in, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return in, m
}
