// Package testmodel builds a translate.Model from manifest files for a
// test, the way the CLI does: strict loading, then resolution with
// --endpoint overrides.
package testmodel

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// Load loads paths and resolves them with opts and the --endpoint values
// in endpoints ("NAME[.NS]:PORT=HOST:PORT"); any error fails tb.
func Load(tb testing.TB, paths []string, opts translate.ResolveOptions, endpoints ...string) *translate.Model {
	tb.Helper()
	_, m := load(tb, paths, nil, opts, endpoints)
	return m
}

// load is Load with standard input (for the path "-"), returning the
// input too.
func load(tb testing.TB, paths []string, stdin io.Reader, opts translate.ResolveOptions, endpoints []string) (*input.Input, *translate.Model) {
	tb.Helper()
	in, err := input.Load(paths, stdin, input.DefaultLimits())
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
	m, err := resolve.Build(in, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return in, m
}

// Route is the manifest of Gateway ns/gw (one HTTP listener on port 80)
// and HTTPRoute ns/r attached to it with rules, the YAML of the route's
// rules list ("  - matches: ..." lines, indented two spaces; a leading
// newline is dropped): the frame every single-route live test shares.
func Route(rules string) string {
	return `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
` + strings.TrimPrefix(rules, "\n")
}

// LoadText is Load of one manifest file whose text is manifests (read as
// standard input, "-").
func LoadText(tb testing.TB, manifests string, opts translate.ResolveOptions, endpoints ...string) *translate.Model {
	tb.Helper()
	_, m := load(tb, []string{"-"}, strings.NewReader(manifests), opts, endpoints)
	return m
}

// ConnectionPolicy is the manifest of Gateway ns/gw with one HTTP
// listener, HTTPRoute ns/r forwarding everything to Service svc:8080, and
// a ConnectionTimeoutPolicy on the Gateway whose spec has the fields of
// spec ("clientTimeout: 1s", ...), for the live connection-timeout tests.
func ConnectionPolicy(spec ...string) string {
	return Route("  - backendRefs: [{name: svc, port: 8080}]\n") + `---
apiVersion: gwretry.io/v1alpha1
kind: ConnectionTimeoutPolicy
metadata: {name: tuning, namespace: ns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  ` + strings.Join(spec, "\n  ") + "\n"
}

// ConnectionTimeouts is the model of testdata/conntimeout, loaded from a
// package two levels below the module root (backends/NAME): Gateway
// shop/gw (port 8080, the OpenShift enhancement's values) and shop/gw2
// (port 8081, a clamped clientTimeout, serverTimeout 1d).
func ConnectionTimeouts(tb testing.TB) *translate.Model {
	tb.Helper()
	return Load(tb, []string{"../../testdata/conntimeout/input.yaml"}, translate.ResolveOptions{},
		"cart:8080=127.0.0.1:9100", "ws:8080=127.0.0.1:9101")
}

// FromYAML is LoadText without endpoints that returns the input too (to
// resolve again with some objects replaced).
func FromYAML(tb testing.TB, manifest string, opts translate.ResolveOptions) (*input.Input, *translate.Model) {
	tb.Helper()
	return load(tb, []string{"-"}, strings.NewReader(manifest), opts, nil)
}

// Corpus is the model of the benchmark corpus of n routes
// (internal/corpus, its defaults), loaded and resolved as the CLI does.
func Corpus(tb testing.TB, n int) *translate.Model {
	tb.Helper()
	data, err := corpus.Generate(corpus.Defaults(n))
	if err != nil {
		tb.Fatal(err)
	}
	return LoadText(tb, string(data), translate.ResolveOptions{})
}

// FirstLineDiff says where two generated files first differ, by line,
// for a test's failure message.
func FirstLineDiff(got, want []byte) string {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			return fmt.Sprintf("line %d:\n got %q\nwant %q", i+1, gl[i], wl[i])
		}
	}
	return fmt.Sprintf("%d and %d lines", len(gl), len(wl))
}

// GatewayAndService are Gateway default/gw (one HTTP listener on port 80)
// and Service default/svc (port 8080), the frame of the tests whose
// HTTPRoute default/r, written before them, attaches to gw and forwards
// to svc.
const GatewayAndService = `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: x
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: default}
spec: {ports: [{port: 8080}]}
`
