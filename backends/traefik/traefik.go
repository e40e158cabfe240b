// Package traefik translates a gwretry Model into a Traefik v3 static
// configuration (traefik/traefik.yaml) and a file-provider dynamic
// configuration (traefik/dynamic.yaml).
//
// Every route match becomes a router whose explicit priority keeps the
// Model's precedence order; every rule becomes a service (a weighted service
// over per-backend load balancers when it has several backends), a Retry
// middleware when it retries, and a serversTransport when it has a
// backendRequest timeout. What Traefik can and cannot do per version is in
// versions.go; what each feature becomes is in findings.go.
package traefik

import (
	"fmt"

	"github.com/gwretry/gwretry/translate"
)

// Output file paths, and where traefik.yaml expects dynamic.yaml.
const (
	staticPath  = "traefik/traefik.yaml"
	dynamicPath = "traefik/dynamic.yaml"
	// DynamicFile is the absolute path traefik.yaml gives the file
	// provider. /etc/traefik is where Traefik (and its official image)
	// looks for traefik.yaml by default; an absolute path does not depend
	// on Traefik's working directory, which a relative one would.
	DynamicFile = "/etc/traefik/dynamic.yaml"
)

// Backend generates Traefik configurations.
type Backend struct{}

// New returns the Traefik backend.
func New() *Backend { return &Backend{} }

// Name returns "traefik".
func (*Backend) Name() string { return "traefik" }

// Versions returns the Traefik versions known, oldest first.
func (*Backend) Versions() []string {
	var vs []string
	for _, s := range versionTable() {
		vs = append(vs, s.Version)
	}
	return vs
}

// Generate writes traefik.yaml and dynamic.yaml for m and reports, per rule
// and feature, what Traefik does with it.
func (*Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	sup, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	st, err := buildStatic(m)
	if err != nil {
		return nil, err
	}
	dyn, rules, err := buildDynamic(m, sup, opts)
	if err != nil {
		return nil, err
	}
	staticYAML, err := encodeChecked(st, &staticConfig{})
	if err != nil {
		return nil, fmt.Errorf("internal error: traefik.yaml: %w", err)
	}
	dynamicYAML, err := encodeChecked(dyn, &dynamicConfig{})
	if err != nil {
		return nil, fmt.Errorf("internal error: dynamic.yaml: %w", err)
	}
	if err := checkRules(dynamicYAML, rules); err != nil {
		return nil, fmt.Errorf("internal error: dynamic.yaml: %w", err)
	}
	out := &translate.Output{
		Files: []translate.File{{Path: staticPath, Data: staticYAML}, {Path: dynamicPath, Data: dynamicYAML}},
		Notes: notes(m, sup),
	}
	for _, r := range m.Rules {
		out.Findings = append(out.Findings, findings(r, sup, opts)...)
	}
	return out, nil
}

// notes are the data-plane-wide lines of the report.
func notes(m *translate.Model, sup support) []string {
	n := []string{
		"traefik.yaml loads dynamic.yaml from " + DynamicFile + ": put both files in /etc/traefik " +
			"(e.g. docker run -v \"$PWD/traefik:/etc/traefik:ro\" traefik:v" + sup.Version + ") " +
			"or change providers.file.filename to where dynamic.yaml is",
		"Traefik's file provider rejects the whole dynamic.yaml on one unknown field (every request " +
			"then gets 404): use the file generated for the Traefik version you run (--target traefik@" +
			sup.Version + ")",
		"rules without a retry stanza get no Retry middleware, and Traefik never retries without one",
		"router priorities follow the Gateway API precedence order; regular expressions in path, " +
			"header and query matches must match the whole value",
		"entry points keep Traefik's default respondingTimeouts (readTimeout 60s for reading the request, " +
			"no writeTimeout)",
	}
	for _, r := range m.Rules {
		if r.AllWeightsZero() {
			n = append(n, fmt.Sprintf("rule %s of %s: every backend has weight 0; Traefik answers 503 "+
				"(the Gateway API asks for 500)", ruleLabel(r), r.Route))
		}
	}
	return n
}

func ruleLabel(r *translate.Rule) string {
	if r.RuleName != "" {
		return r.RuleName
	}
	return fmt.Sprint(r.Index)
}
