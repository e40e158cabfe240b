// Package grpc translates a gwretry Model into the retry policy a proxyless
// gRPC client applies: a gRPC service config (grpc/service-config.json)
// with one methodConfig per route rule, following gRFC A6 (client retries)
// and A44 (how xDS retry policies become A6 policies).
//
// A rule's Exact /package.Service/Method matches become {service, method}
// names, its PathPrefix /package.Service matches {service}, PathPrefix /
// the default {}; any other match cannot be named. A name that two rules
// claim goes to the one the Gateway API gives precedence (gRPC rejects a
// service config with a duplicate name). attempts becomes maxAttempts
// (capped at 5), backoff initialBackoff (raised by 25% against A6's jitter)
// with maxBackoff 10× and multiplier 2, codes retryableStatusCodes through
// gRPC's HTTP-to-status mapping, request the timeout. findings.go says what
// each feature becomes; judge.go reads the file back.
package grpc

import (
	"fmt"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// configPath is the generated file.
const configPath = "grpc/service-config.json"

// Config configures the backend.
type Config struct {
	// RetryThrottling is --grpc-retry-throttling: "MAXTOKENS,TOKENRATIO",
	// or "" for none.
	RetryThrottling string
}

// Backend generates gRPC service configs.
type Backend struct {
	throttling *RetryThrottling
}

// New returns the gRPC backend without retry throttling.
func New() *Backend { return &Backend{} }

// NewWithConfig returns the gRPC backend configured by c, or an error when
// c.RetryThrottling is malformed.
func NewWithConfig(c Config) (*Backend, error) {
	if c.RetryThrottling == "" {
		return New(), nil
	}
	t, err := parseThrottling(c.RetryThrottling)
	if err != nil {
		return nil, err
	}
	return &Backend{throttling: t}, nil
}

// Name returns "grpc".
func (*Backend) Name() string { return "grpc" }

// version is a gRPC client the backend knows: grpc-go's, whose behaviour
// (maxAttempts cap, retry buffer, HTTP-to-status table, jitter) the
// findings and the judge describe and the tests load.
type version struct{ Name string }

func versionTable() []version { return []version{{Name: "1.84"}} }

// Versions returns the grpc-go versions known, oldest first.
// Scope: the routes on the Gateway listeners; a service config configures
// clients' calls, not a proxy that accepts connections, so a Gateway's
// connection timeouts are not its.
func (*Backend) Scope() translate.Scope { return translate.Scope{GatewayRoutes: true} }

func (*Backend) Versions() []string {
	return translate.VersionNames(versionTable(), func(v version) string { return v.Name })
}

// Generate writes grpc/service-config.json for m and reports, per rule and
// feature, what a gRPC client does with it.
func (b *Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	if _, err := translate.LookupVersion(versionTable(), func(v version) string { return v.Name }, opts.Version); err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	plans := plan(m)
	sc := build(m, plans, b.throttling)
	data, err := encode(sc)
	if err != nil {
		return nil, &translate.InternalError{Err: fmt.Errorf("%s: %w", configPath, err)}
	}
	out := &translate.Output{
		Files: []translate.File{{Path: configPath, Data: data}},
		Notes: notes(m, plans),
	}
	for _, r := range m.Rules {
		out.Findings = append(out.Findings, findings(r, plans[r], b.throttling, opts.Shared)...)
	}
	return out, nil
}

// notes are the target-wide lines of the report, and a line per rule
// served only for some hostnames.
func notes(m *translate.Model, plans map[*translate.Rule]*rulePlan) []translate.Note {
	out := translate.InfoNotes(
		"grpc/service-config.json is the service config of one gRPC channel: give it to the client "+
			"(grpc.WithDefaultServiceConfig in Go, defaultServiceConfig in Java) or serve it from the name "+
			"resolver; the calls go to the target the client dials, not to the rules' backendRefs",
		"every gRPC call is a POST, and gRPC retries it by the retryPolicy whatever --retry-non-idempotent "+
			"says (gRFC A6 leaves idempotence to the service owner)",
		"besides the retryPolicy, gRPC retries on its own (transparently) a call that the server reports it "+
			"never processed (REFUSED_STREAM, or beyond a GOAWAY's last stream)",
		"rules with a retry stanza but no backoff get initialBackoff 0.025s and maxBackoff 0.250s, gRFC A44's "+
			"defaults",
	)
	for _, r := range m.Rules {
		if p := plans[r]; len(p.Names) > 0 && len(p.Hostnames) > 0 {
			out = append(out, translate.Info(translate.RuleObject(r), "served only for the hostnames %s, but a "+
				"service config applies to every call of the channel that loads it: give it only to channels "+
				"whose target authority is one of them", strings.Join(p.Hostnames, ", ")))
		}
	}
	return out
}
