// Package nginx writes an NGINX configuration (nginx/nginx.conf) that routes
// like a set of Gateway API HTTPRoutes and retries and times out their rules
// as closely as nginx can, and reports, per rule and feature, how close that
// is.
//
// The configuration is built as crossplane directives, checked against an
// allowlist, written with nginx-go-crossplane and parsed back before it is
// returned. It has no pid and error_log lines: run it with
//
//	nginx -p DIR/ -c DIR/nginx.conf -g 'pid DIR/nginx.pid; error_log stderr;'
package nginx

import (
	"fmt"
	"slices"

	"github.com/gwretry/gwretry/translate"
)

// ConfigPath is the path of the generated file in the output directory.
const ConfigPath = "nginx/nginx.conf"

// Backend generates NGINX configurations.
type Backend struct{}

// New returns the NGINX backend.
func New() *Backend { return &Backend{} }

// Name returns "nginx".
func (*Backend) Name() string { return "nginx" }

// Versions returns the nginx versions gwretry knows, oldest first.
func (*Backend) Versions() []string {
	var vs []string
	for _, v := range versionTable() {
		vs = append(vs, v.Name)
	}
	return vs
}

// Generate writes nginx/nginx.conf for m and one finding per feature of
// every rule.
func (*Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	v, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	if err := checkRegexes(m); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	cp, err := planConfig(m, v, opts)
	if err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	if err := checkArgs(cp.Directives); err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	conf, err := render(cp.Directives, v)
	if err != nil {
		return nil, fmt.Errorf("nginx: %w", err)
	}
	notes := []string{
		"run: mkdir -p DIR/logs && nginx -p DIR/ -c DIR/nginx.conf -g 'pid DIR/nginx.pid; error_log stderr;' (the access log and temporary files go under DIR)",
		"rules without a retry stanza or with attempts 0 get proxy_next_upstream off (nginx would otherwise retry errors and timeouts on another server)",
		"nothing is retried once part of a response has reached the client; after the last try nginx returns the last response, or 502/504 on a connection error or timeout",
		"routing: each match becomes nginx maps (path on the decoded, normalized $uri; headers as $http_<name>, first value; query parameters on the raw $args, first occurrence, compared without percent-decoding); regular expressions must match the whole value and are run by nginx's PCRE, not RE2",
		"a header regex matches only a non-empty header (nginx cannot tell an empty header from a missing one)",
		"the Host header is passed to backends as the client sent it; requests that match no route get 404",
	}
	return &translate.Output{
		Files:    []translate.File{{Path: ConfigPath, Data: conf}},
		Findings: cp.Findings,
		Notes:    slices.Concat(notes, cp.Notes),
	}, nil
}
