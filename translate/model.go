package translate

import (
	"slices"
	"time"
)

// Model is the data-plane-neutral intent of a set of manifests: where the
// proxy listens, which requests go to which rule, and what each rule asks of
// retries and timeouts, with the Gateway API defaults applied. Every string in
// a Model has passed the allowlists in allow.go.
type Model struct {
	// Listeners are the addresses the generated proxy binds, sorted by
	// address. Each has its virtual hosts and, in them, the routes in
	// Gateway API precedence order.
	Listeners []*Listener
	// Rules holds every translated route rule once, sorted by route
	// (namespace/name) and rule index.
	Rules []*Rule
	// Skipped holds rules that were read but could not be translated, with
	// the reason. They still get findings, so no rule disappears silently.
	Skipped []SkippedRule
	// RouteCount and RuleCount count the HTTPRoutes and rules read.
	RouteCount, RuleCount int
	// Notes are informational lines about the input (skipped kinds,
	// defaults chosen, listeners ignored).
	Notes []string
}

// Listener is one bind address of the generated proxy.
type Listener struct {
	// Name is a stable identifier, safe in every data plane ("http-8080").
	Name string
	// Address is the IP or hostname to bind, Port the TCP port.
	Address string
	Port    int
	// VirtualHosts are sorted: exact hostnames first (alphabetically), then
	// wildcards (longest first), then the catch-all "" last.
	VirtualHosts []*VirtualHost
}

// VirtualHost groups the routes served for one hostname on a listener.
type VirtualHost struct {
	// Name is a stable identifier, safe in every data plane.
	Name string
	// Hostname is an exact name ("a.example.com"), a wildcard
	// ("*.example.com": any name with that suffix, not the apex), or "" for
	// any host.
	Hostname string
	// Routes are in Gateway API precedence order: the first that matches a
	// request wins.
	Routes []*RouteMatch
}

// RouteMatch is one match of one rule, placed on a virtual host.
type RouteMatch struct {
	Match Match
	Rule  *Rule
}

// PathMatchType is how Match.Path is compared with the request path.
type PathMatchType string

// Path match types, as in the Gateway API.
const (
	PathExact  PathMatchType = "Exact"
	PathPrefix PathMatchType = "PathPrefix"
	PathRegex  PathMatchType = "RegularExpression"
)

// StringMatchType is how a header or query value is compared.
type StringMatchType string

// String match types, as in the Gateway API.
const (
	StringExact StringMatchType = "Exact"
	StringRegex StringMatchType = "RegularExpression"
)

// Match selects requests; all its parts must hold (AND).
type Match struct {
	PathType PathMatchType
	// Path starts with "/". A PathPrefix matches element-wise: "/a"
	// matches "/a", "/a/" and "/a/b" but not "/ab". Prefix "/" matches all.
	Path string
	// Method is an upper-case HTTP method, or "" for any.
	Method  string
	Headers []ValueMatch // header names are lower-case
	Query   []ValueMatch // query parameter names are case-sensitive
}

// ValueMatch matches one header or query parameter.
type ValueMatch struct {
	Type  StringMatchType
	Name  string
	Value string
}

// Rule is one HTTPRoute rule: its retry and timeout intent and its backends.
type Rule struct {
	// Name is a stable identifier, unique in the Model and safe in every
	// data plane: "<namespace>_<route>_r<index>".
	Name string
	// Route is "namespace/name" of the HTTPRoute; Index the rule's index in
	// spec.rules; RuleName its optional name.
	Route    string
	Index    int
	RuleName string
	// Retry is nil when the rule has no retry stanza.
	Retry *Retry
	// Timeouts holds the rule's timeouts; nil fields are unset.
	Timeouts Timeouts
	// Backends are the weighted backends. Every rule in Model.Rules has at
	// least one backend with at least one endpoint.
	Backends []*BackendRef
}

// Retry is a rule's retry intent with the Gateway API v1.7.0 defaults applied.
type Retry struct {
	// Attempts is the number of retries after the first try (default 1);
	// 0 disables retries.
	Attempts int
	// Codes are the HTTP status codes to retry, sorted and unique; empty
	// means none (connection errors are still retried).
	Codes []int
	// Backoff is the base interval between tries; nil when unset.
	Backoff *Duration
}

// Timeouts is a rule's timeout intent. A nil field is unset; a zero
// Duration disables the timeout.
type Timeouts struct {
	Request        *Duration
	BackendRequest *Duration
}

// Duration is a GEP-2257 duration: its value and the text the user wrote.
type Duration struct {
	Text  string
	Value time.Duration
}

// IsZero reports whether d disables the timeout it sets ("0s").
func (d *Duration) IsZero() bool { return d != nil && d.Value == 0 }

// BackendRef is one resolved backendRef.
type BackendRef struct {
	// Name is a stable identifier, safe in every data plane:
	// "<namespace>_<service>_<port>".
	Name      string
	Service   string // namespace/name
	Port      int
	Weight    int
	Endpoints []Endpoint
}

// Endpoint is one address traffic is sent to.
type Endpoint struct {
	// Host is an IP address or a DNS name.
	Host string
	Port int
}

// SkippedRule is a rule that was read but not translated.
type SkippedRule struct {
	Route    string
	Index    int
	RuleName string
	// Features are the features the rule sets; each gets an unsupported
	// finding on every target.
	Features []Feature
	Reason   string
}

// SplitCodes splits the codes to retry into those in accepted (what a data
// plane can retry on) and the others, both in order. A nil Retry has none.
func (rt *Retry) SplitCodes(accepted []int) (supported, unsupported []int) {
	if rt == nil {
		return nil, nil
	}
	for _, c := range rt.Codes {
		if slices.Contains(accepted, c) {
			supported = append(supported, c)
		} else {
			unsupported = append(unsupported, c)
		}
	}
	return supported, unsupported
}

// AllWeightsZero reports whether every backend of the rule has weight 0,
// in which case a Gateway answers its requests with 500.
func (r *Rule) AllWeightsZero() bool {
	for _, b := range r.Backends {
		if b.Weight > 0 {
			return false
		}
	}
	return true
}
