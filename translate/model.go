package translate

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
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
	// CertSources maps each certificate and key path the configurations
	// name (where the proxy host keeps them: --cert-dir) to the file
	// gwretry read under --tls-dir, for what must read the certificate
	// itself (Traefik's store picks a certificate by its names). Nil
	// without HTTPS listeners.
	CertSources map[string]string
	// Rules holds every translated rule of a route attached to a
	// generated Gateway listener once, sorted by route (namespace/name)
	// and rule index. A rule of a route also attached to Services has
	// them in Rule.MeshParents.
	Rules []*Rule
	// MeshRules holds the translated rules of the routes attached to
	// Services (GAMMA mesh attachments) and to no generated listener,
	// sorted as Rules. No listener holds them: gateway targets do not
	// generate them, and Run reports their features not applicable there
	// (Scope); a target whose scope has MeshRoutes translates them.
	MeshRules []*Rule
	// Mesh are the Service parents that routes attach to, sorted by
	// Service, port and consumer namespace, each with the matches of its
	// rules (of MeshRules and of Rules) in precedence order: what a mesh
	// applies to the requests sent to the Service.
	Mesh []*MeshAttachment
	// Skipped holds rules that were read but could not be translated, with
	// the reason. They still get findings, so no rule disappears silently.
	Skipped []SkippedRule
	// RouteCount and RuleCount count the HTTPRoutes and rules read.
	RouteCount, RuleCount int
	// Sources says where each HTTPRoute ("namespace/name") was read, for
	// reports that name the file and document of a route.
	Sources map[string]Position
	// HTTPRoutes are the input HTTPRoutes by "namespace/name", translated
	// or not, as read: for a backend that writes the routes themselves
	// back out (Linkerd). A rule some policy reaches holds its effective
	// retry and timeouts (the policies' values merged in), so that a
	// data plane that reads the fields gets what the report says. Unlike the rest of the Model, their strings
	// have passed only the Gateway API's CRD validation, not the
	// allowlists in allow.go. Backends must not modify them. Only a
	// target that ReadsRouteObjects reads them: gwretry translate lets
	// them go once the last such target is done (nil from the start when
	// none is given).
	HTTPRoutes map[string]*gwv1.HTTPRoute
	// placements indexes the listeners by rule (PlacementsOf).
	placementsOnce sync.Once
	placements     map[*Rule][]Placement
	// ConnectionTimeouts are the proxy-wide connection timeouts of the
	// Gateways that ConnectionTimeoutPolicies target, sorted by Gateway.
	// Each field gets one finding per target (ConnectionFindings).
	ConnectionTimeouts []*GatewayTimeouts
	// connIndex indexes ConnectionTimeouts by listener and rule
	// (ListenerConnection, RuleConnection).
	connOnce sync.Once
	connIdx  connIndex
	// Effective says, for every rule (translated or skipped), the value
	// of each retry and timeout feature and where it came from (the
	// HTTPRoute, a policy, a CRD default), sorted by route and rule.
	Effective []RuleEffective
	// Policies is what became of each policy of the input (RetryPolicy,
	// BackendTrafficPolicy, ConnectionTimeoutPolicy), sorted by kind and
	// namespace/name.
	Policies []PolicyReport
	// Notes are what the user should know about the input beyond the
	// findings (defaults chosen, listeners and routes not attached, dead
	// rules).
	Notes []Note
}

// Listener is one bind address of the generated proxy.
type Listener struct {
	// Name is a stable identifier, safe in every data plane ("http-8080",
	// "https-443").
	Name string
	// TLS is true for an HTTPS listener: the proxy terminates TLS with the
	// certificate of each virtual host (chosen by SNI) and serves HTTP/1.1
	// inside.
	TLS bool
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
	// Certificate is the TLS certificate of the virtual host on a TLS
	// listener (nil on plain HTTP ones): the one of the Gateway listener
	// the hostname came from.
	Certificate *Certificate
	// Hostname is an exact name ("a.example.com"), a wildcard
	// ("*.example.com": any name with that suffix, not the apex), or "" for
	// any host.
	Hostname string
	// Routes are in Gateway API precedence order: the first that matches a
	// request wins. They hold the routes of this hostname, then those of
	// every less specific hostname on the listener that covers it (a
	// wildcard, then the catch-all), so a data plane that selects a virtual
	// host by the request's host needs no other.
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
	// Backends are the valid backends with a positive weight, each with at
	// least one endpoint. When there is none the rule forwards nothing
	// (see Forwards): it redirects (Filters.Redirect), or it is dead (see
	// Dead) and every request it matches is answered 500 without
	// contacting anything.
	Backends []*BackendRef
	// Invalid are the backendRefs that cannot receive traffic (a kind other
	// than Service, a Service or port that does not exist, a reference that
	// no ReferenceGrant permits), in spec order. The Gateway API answers
	// their share of the rule's traffic with 500.
	Invalid []InvalidBackend
	// NoBackendRefs is true when the rule lists no backendRefs at all.
	NoBackendRefs bool
	// Methods are the methods the rule's matches select, sorted and unique;
	// nil when some match accepts any method.
	Methods []string
	// Filters are the rule's filters; the filters of a backendRef are on
	// its BackendRef.
	Filters Filters
	// Ungenerated are the listeners the route is attached to beside the
	// generated ones that gwretry does not generate (HTTPS), sorted.
	Ungenerated []UngeneratedListener
	// TLSListeners are the HTTPS listeners ("Gateway ns/gw listener l")
	// that serve the rule, sorted: with them the rule has a listener.https
	// finding that each data plane gives for its TLS termination.
	TLSListeners []string
	// MeshParents are the route's Service parentRefs (GAMMA mesh
	// attachments), in parentRefs order; nil when it has none.
	MeshParents []MeshParent
	// GatewayUnattached says, for a rule in Model.MeshRules, why each of
	// the route's other parentRefs (Gateways, other kinds) gives no
	// generated listener; nil when the route has no other parentRef.
	GatewayUnattached []string
	// TLSUnrouted are the Gateway listeners with a hostname on the ports of
	// the rule's HTTPS listeners that no route attaches to ("Gateway ns/gw
	// listener l (hostname h)"): gwretry generates nothing for them, so
	// their SNI names get another listener's certificate and their
	// requests reach less specific hostnames' rules instead of a 404. A
	// backend cannot claim listener.https honoured while there are any.
	TLSUnrouted []string
	// TLSCertShadowed are the rule's HTTPS listeners whose certificate is
	// not served for a hostname, because an earlier listener at the same
	// address (--listen-https, or two Gateways on one port) has that
	// hostname with another Secret ("Gateway ns/gw listener l (hostname
	// h gets Secret a, not its Secret b)"), sorted. A backend cannot claim
	// listener.https honoured while there are any.
	TLSCertShadowed []string
	// PolicyConflicts are the features on which the policies of the
	// rule's Services (or listeners) disagree; their findings say so.
	PolicyConflicts []PolicyConflict
}

// Certificate is a Gateway listener's certificateRef, mapped to files
// (--tls-dir DIR: DIR/NAMESPACE/NAME/tls.crt and tls.key, read by gwretry;
// --cert-dir CDIR: CDIR/NAMESPACE/NAME/tls.crt and tls.key, what the
// configurations name).
type Certificate struct {
	// Secret is "namespace/name" of the certificateRef.
	Secret string
	// CertFile and KeyFile are the absolute paths of the PEM certificate
	// chain and private key on the proxy host, as the configurations name
	// them (under --cert-dir): the same whatever directory --tls-dir
	// read them from, so that outputs do not depend on where gwretry
	// runs. They passed the KindFilePath allowlist. Model.CertSource
	// gives the files gwretry read.
	CertFile, KeyFile string
}

// CertSource returns the file gwretry read for a certificate or key path
// that the configurations name (Model.CertSources), or path itself when it
// names none.
func (m *Model) CertSource(path string) string {
	if src, ok := m.CertSources[path]; ok {
		return src
	}
	return path
}

// InvalidBackend is a backendRef that cannot receive traffic.
type InvalidBackend struct {
	// Index is the backendRef's index in the rule.
	Index int
	// Weight is its weight (default 1).
	Weight int
	// Reason says why, for messages ("Service shop/cart is not in the
	// input").
	Reason string
}

// Forwards reports whether the rule sends requests to a backend: some valid
// backend has a positive weight. A rule that does not forwards nothing:
// it redirects (Filters.Redirect) or it is dead.
func (r *Rule) Forwards() bool {
	for _, b := range r.Backends {
		if b.Weight > 0 {
			return true
		}
	}
	return false
}

// Dead reports whether the rule would forward requests and has no backend
// that can receive traffic: no backendRefs, every weight 0, or every
// backendRef invalid, and no RequestRedirect. The Gateway API answers every
// request such a rule matches with 500. A rule that redirects is not dead.
func (r *Rule) Dead() bool { return !r.Forwards() && r.Filters.Redirect == nil }

// NoForwardReason says why the rule forwards nothing, for messages: it
// redirects, or why it is dead; "" when it forwards.
func (r *Rule) NoForwardReason() string {
	if !r.Forwards() && r.Filters.Redirect != nil {
		return "it answers with a redirect (RequestRedirect) and has no backendRefs"
	}
	return r.DeadReason()
}

// DeadReason says why a dead rule has no backend, for messages; "" when the
// rule is not dead.
func (r *Rule) DeadReason() string {
	switch {
	case !r.Dead():
		return ""
	case r.NoBackendRefs:
		return "it has no backendRefs"
	case len(r.Invalid) == 0:
		return "every backendRef has weight 0"
	}
	reasons := make([]string, len(r.Invalid))
	for i, b := range r.Invalid {
		reasons[i] = fmt.Sprintf("backendRefs[%d]: %s", b.Index, b.Reason)
	}
	return "no backendRef can receive traffic (" + strings.Join(reasons, "; ") + ")"
}

// InvalidWeight is the sum of the weights of the invalid backendRefs: the
// share of traffic the Gateway API answers with 500 when some backends are
// valid.
func (r *Rule) InvalidWeight() int {
	w := 0
	for _, b := range r.Invalid {
		w += b.Weight
	}
	return w
}

// MethodClass is a class of request methods that data planes retry
// differently.
type MethodClass string

// Method classes.
const (
	// Idempotent is every method but POST, PATCH and LOCK.
	Idempotent MethodClass = "idempotent"
	// NonIdempotent is POST, PATCH and LOCK (NonIdempotentMethods), which
	// nginx, HAProxy and gwretry's Envoy and Traefik outputs do not retry
	// after sending unless the user opts in.
	NonIdempotent MethodClass = "non-idempotent"
)

// MethodClasses returns the classes of the methods the rule matches, in
// the order Idempotent, NonIdempotent.
func (r *Rule) MethodClasses() []MethodClass {
	if r.Methods == nil {
		return []MethodClass{Idempotent, NonIdempotent}
	}
	var idem, non bool
	for _, m := range r.Methods {
		if IsNonIdempotent(m) {
			non = true
		} else {
			idem = true
		}
	}
	var out []MethodClass
	if idem {
		out = append(out, Idempotent)
	}
	if non {
		out = append(out, NonIdempotent)
	}
	return out
}

// MatchesNonIdempotent reports whether some request the rule matches is a
// POST, PATCH or LOCK.
func (r *Rule) MatchesNonIdempotent() bool {
	return slices.Contains(r.MethodClasses(), NonIdempotent)
}

// OnlyNonIdempotent reports whether every request the rule matches is a
// POST, PATCH or LOCK.
func (r *Rule) OnlyNonIdempotent() bool {
	cs := r.MethodClasses()
	return len(cs) == 1 && cs[0] == NonIdempotent
}

// IsNonIdempotent reports whether method is one of NonIdempotentMethods.
func IsNonIdempotent(method string) bool { return slices.Contains(NonIdempotentMethods(), method) }

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
	// On, when set, narrows which failures are retried: the retry came
	// from an Envoy Gateway BackendTrafficPolicy, whose retryOn decides
	// it. nil is the Gateway API's retry (every connection error and every
	// try backendRequest cut, besides Codes).
	On *RetryOn
}

// RetryOn is the retry condition of a BackendTrafficPolicy's retry, as
// Envoy Gateway writes it, and which failures it retries in the model's
// terms.
type RetryOn struct {
	// Policy is the object it came from ("BackendTrafficPolicy ns/name").
	Policy string
	// Triggers are Envoy's retry_on tokens as Envoy Gateway writes them
	// (its default, or the policy's triggers sorted and unique).
	Triggers []string
	// StatusCodes are Envoy's retriable_status_codes as Envoy Gateway
	// writes them (sorted and unique; may be empty).
	StatusCodes []int
	// ConnErrors is which connection failures the triggers retry.
	ConnErrors ConnRetry
	// Timeouts: a try cut by backendRequest (Envoy's per_try_timeout) is
	// retried.
	Timeouts bool
	// MaxInterval is the policy's perRetry.backOff.maxInterval (Envoy's
	// retry_back_off max_interval) beside its baseInterval; nil when unset.
	MaxInterval *Duration
}

// ConnRetried is which connection failures the retry asks to retry: all
// of them for the Gateway API's retry, the policy's for a
// BackendTrafficPolicy's.
func (rt *Retry) ConnRetried() ConnRetry {
	if rt == nil || rt.Attempts == 0 {
		return ConnRetryNone
	}
	if rt.On != nil {
		return rt.On.ConnErrors
	}
	return ConnRetryAll
}

// TimeoutRetried reports whether the retry asks to retry a try that
// backendRequest cut: always for the Gateway API's retry.
func (rt *Retry) TimeoutRetried() bool {
	if rt == nil || rt.Attempts == 0 {
		return false
	}
	return rt.On == nil || rt.On.Timeouts
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
	// Filters are the backendRef's own filters, applied only to the
	// requests sent to it.
	Filters Filters
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
	// Features are the features the rule sets (Rule.Features), and
	// FeatureRouteAttachment first when the route is attached to no
	// generated listener; each gets an unsupported finding on every
	// target.
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

// Placement is one match of a rule where the model serves it.
type Placement struct {
	Listener    *Listener
	VirtualHost *VirtualHost
	Match       *RouteMatch
}

// PlacementsOf returns the places the model serves rule r, in listener,
// virtual host and precedence order. The index behind it is built once per
// Model, on first use, by one walk over the listeners: a backend that needs
// a rule's matches looks them up here instead of walking every listener for
// every rule (which grows with the square of the routes). A Model must not
// change after its placements have been asked for.
func (m *Model) PlacementsOf(r *Rule) []Placement {
	m.placementsOnce.Do(func() {
		m.placements = map[*Rule][]Placement{}
		for _, l := range m.Listeners {
			for _, vh := range l.VirtualHosts {
				for _, rm := range vh.Routes {
					m.placements[rm.Rule] = append(m.placements[rm.Rule], Placement{Listener: l, VirtualHost: vh, Match: rm})
				}
			}
		}
	})
	return m.placements[r]
}
