// Package envoy translates a gwretry Model into a static Envoy v3 bootstrap
// (envoy/envoy.yaml) that `envoy -c` runs as it is, and reports how far Envoy
// honours each retry and timeout feature of each rule.
//
// The configuration is built from go-control-plane protos, validated with
// their generated ValidateAll methods, written with protojson and
// yaml.v2 (internal/yamlchunk, byte for byte sigs.k8s.io/yaml's
// JSONToYAML), and parsed back strictly (yaml.v3, protojson) and compared
// before it is returned.
//
//gwretry:format
package envoy

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gwretry/gwretry/translate"
)

// OutputPath is where the bootstrap is written, relative to the output
// directory.
const OutputPath = "envoy/envoy.yaml"

// capability is what gwretry relies on in one Envoy version. Every version
// gwretry knows has exactly one row in capabilities.
type capability struct {
	// version is "MAJOR.MINOR".
	version string
	// retryOn are the retry_on tokens of every retry policy. They must
	// include a per-try timeout trigger (reset, 5xx or gateway-error): the
	// others do not retry a try cut by per_try_timeout.
	retryOn []string
	// statusCodesToken is appended to retryOn when the rule lists codes.
	statusCodesToken string
	// hostSelectionRetryMaxAttempts bounds how often a retry looks for a
	// host it has not tried yet (previous_hosts predicate).
	hostSelectionRetryMaxAttempts int64
	// maxRetries is the clusters' circuit breaker for concurrent retries
	// (Envoy's default of 3 silently drops the rest).
	maxRetries uint32
	// defaultRouteTimeout applies when a route sets no timeout.
	defaultRouteTimeout time.Duration
	// streamIdleTimeout is the connection manager's default stream idle
	// timeout; a longer route timeout needs a route idle_timeout too.
	streamIdleTimeout time.Duration
	// defaultBackoffBase is the back-off base when a policy sets none.
	defaultBackoffBase time.Duration
	// backoffMaxFactor is max_interval as a multiple of base_interval when
	// it is not set.
	backoffMaxFactor int
	// safeRetryOn are the retry_on tokens of the policy that POST, PATCH and
	// LOCK requests get without --retry-non-idempotent: they retry only a
	// request that never reached the backend, never one it may have
	// processed, and never a try cut by per_try_timeout.
	safeRetryOn []string
	// maxNumRetries is the largest num_retries Envoy accepts (a UInt32);
	// larger attempts are clamped to it and reported approximated.
	maxNumRetries uint32
	// retryBufferLimit is the per_request_buffer_limit_bytes of every route
	// with a retry policy: Envoy buffers a request body for retries up to
	// the smaller of it and the listener's per_connection_buffer_limit_bytes,
	// and gives up retrying a request whose body is larger.
	retryBufferLimit uint32
	// connectionBufferLimit is Envoy's default listener
	// per_connection_buffer_limit_bytes.
	connectionBufferLimit uint32
}

// capabilities returns the table of known Envoy versions, oldest first; the
// last is the default.
func capabilities() []capability {
	return []capability{{
		version:                       "1.36",
		retryOn:                       []string{"connect-failure", "refused-stream", "reset"},
		statusCodesToken:              "retriable-status-codes",
		hostSelectionRetryMaxAttempts: 5,
		maxRetries:                    1024,
		defaultRouteTimeout:           15 * time.Second,
		streamIdleTimeout:             5 * time.Minute,
		defaultBackoffBase:            25 * time.Millisecond,
		backoffMaxFactor:              10,
		safeRetryOn:                   []string{"connect-failure", "refused-stream", "reset-before-request"},
		maxNumRetries:                 math.MaxUint32,
		retryBufferLimit:              1 << 20,
		connectionBufferLimit:         1 << 20,
	}}
}

// lookup returns the capability row for version; "" means the default.
func lookup(version string) (capability, error) {
	return translate.LookupVersion(capabilities(), func(c capability) string { return c.version }, version)
}

func versions(caps []capability) []string {
	var vs []string
	for _, c := range caps {
		vs = append(vs, c.version)
	}
	return vs
}

// Backend is the Envoy target.
type Backend struct{}

// New returns the Envoy backend.
func New() *Backend { return &Backend{} }

// Name returns "envoy".
func (*Backend) Name() string { return "envoy" }

// Versions returns the Envoy versions gwretry knows, oldest first.
// Scope: the routes on the Gateway listeners it generates and their
// connection timeouts.
func (*Backend) Scope() translate.Scope { return translate.GatewayScope() }

// Expresses is translate.Expresser: protobuf carries every string, and
// Envoy compiles regular expressions with RE2. A path a rewrite writes
// goes into a regex_rewrite substitution, whose '$' the reader refuses to
// evaluate (capture groups): not written.
func (*Backend) Expresses(kind, s string) bool {
	if kind == translate.KindFilterPath && strings.Contains(s, "$") {
		return false
	}
	return translate.RE2Expresses(kind, s)
}

func (*Backend) Versions() []string { return versions(capabilities()) }

// Generate writes envoy/envoy.yaml for m and one finding per feature per
// rule.
func (b *Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	if err := m.CheckWith(translate.CheckExpressed(b)); err != nil {
		return nil, err
	}
	c, err := lookup(opts.Version)
	if err != nil {
		return nil, err
	}
	g := &generator{cap: c, retryNonIdempotent: opts.RetryNonIdempotent, shared: opts.Shared}
	bs, err := g.bootstrap(m)
	if err != nil {
		return nil, err
	}
	if err := validate(bs); err != nil {
		return nil, &translate.InternalError{Err: fmt.Errorf("generated bootstrap is invalid: %w", err)}
	}
	file, err := writeChecked(bs, opts.Spool)
	if err != nil {
		return nil, &translate.InternalError{Err: err}
	}
	if err := checkClusterRefs(bs); err != nil {
		if file.Spooled != "" {
			os.Remove(file.Spooled)
		}
		return nil, &translate.InternalError{Err: err}
	}
	var findings []translate.Finding
	for _, r := range m.Rules {
		findings = append(findings, g.findings(r)...)
	}
	findings = append(findings, connFindings(m, c)...)
	return &translate.Output{
		Files:    []translate.File{file},
		Findings: findings,
		Notes:    translate.InfoNotes(slices.Concat(notes(c, opts.RetryNonIdempotent, g.validateClustersOff), stripNotes(g.strippedListeners), tlsNotes(m))...),
	}, nil
}

// notes are the data-plane-wide facts a user of the generated file needs.
func notes(c capability, retryNonIdempotent, validateClustersOff bool) []string {
	ns := []string{
		fmt.Sprintf("run it with `envoy -c %s` (a static v3 bootstrap for Envoy %s; no admin interface is configured)", OutputPath, c.version),
		fmt.Sprintf("a rule without timeouts.request keeps Envoy's default route timeout of %s, which includes all retries; set timeouts.request (\"0s\" disables it) to change it", formatDuration(c.defaultRouteTimeout)),
		fmt.Sprintf("every cluster sets circuit_breakers max_retries %d: Envoy's default allows 3 concurrent retries per cluster and silently drops the others", c.maxRetries),
		fmt.Sprintf("retry_on is %q (plus %s when a rule lists codes): reset makes Envoy retry a try cut by backendRequest (per_try_timeout), and may replay a request the backend already processed; a retry that comes from a BackendTrafficPolicy gets the policy's retry_on and retriable_status_codes as Envoy Gateway writes them instead", strings.Join(c.retryOn, ","), c.statusCodesToken),
		fmt.Sprintf("Envoy retries nothing once response bytes were sent downstream, nor a request whose body exceeds its retry buffer: every route with a retry policy sets per_request_buffer_limit_bytes %d (%s; the listener's per_connection_buffer_limit_bytes, 1 MiB by default, caps it)", c.retryBufferLimit, translate.ByteSize(uint64(c.retryBufferLimit))),
		fmt.Sprintf("host matching ignores the port of the Host header (ignore_port_in_host_matching); backends with DNS names are STRICT_DNS clusters (IPv4 preferred), IP backends STATIC clusters, connect_timeout %s", formatDuration(clusterConnectTimeout)),
		"every connection manager sets internal_address_config with no address, so Envoy treats every client as external and removes x-envoy-retry-on, x-envoy-max-retries, x-envoy-upstream-rq-timeout-ms, x-envoy-upstream-rq-per-try-timeout-ms and its other retry and timeout request headers before routing: no client can change a rule's retries or timeouts",
	}
	if retryNonIdempotent {
		ns = append(ns, "--retry-non-idempotent: POST, PATCH and LOCK requests are retried like any other method")
	} else {
		ns = append(ns, fmt.Sprintf("Envoy retries every method; gwretry adds, before each retrying route, a route for POST, PATCH and LOCK with the same match, timeouts and num_retries that retries only requests never sent (retry_on %s, or the policy's triggers among them: no codes, no reset, no per-try timeout), and gives routes that match only those methods the same policy (--retry-non-idempotent drops both)", strings.Join(c.safeRetryOn, ",")))
	}
	if validateClustersOff {
		ns = append(ns, fmt.Sprintf("a route table that sends the share of invalid backendRefs to the missing cluster %q (answered 500 through cluster_not_found_response_code) sets validate_clusters false, or Envoy would refuse to load it; gwretry checks every other cluster name itself", invalidCluster))
	}
	return ns
}

// stripNotes says which listeners drop the port of the Host header.
func stripNotes(listeners []string) []string {
	if len(listeners) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("listener(s) %s set strip_any_host_port: a redirect there takes the request's host and names no port, and Envoy would otherwise copy the port the client wrote in Host into Location; every request on them reaches its backend with Host without a port", strings.Join(listeners, ", "))}
}

// formatDuration writes d in GEP-2257 form for messages.
func formatDuration(d time.Duration) string {
	s, err := translate.FormatDuration(d)
	if err != nil {
		return d.String()
	}
	return s
}

// nonIdempotentMethods are the methods not retried by default.
func nonIdempotentMethods() []string { return translate.NonIdempotentMethods() }

func isNonIdempotent(method string) bool { return slices.Contains(nonIdempotentMethods(), method) }

// NotExpressed is translate.ExpressWhy.
func (*Backend) NotExpressed(kind, s string) string {
	if kind == translate.KindFilterPath {
		return "Envoy's regex_rewrite substitution reads '$' as a capture group reference"
	}
	return translate.RE2Why
}
