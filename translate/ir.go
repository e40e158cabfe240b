package translate

import (
	"bytes"
	"net"
	"path/filepath"
	"strconv"

	yaml3 "go.yaml.in/yaml/v3"
)

// IR is a serialisable view of a Model: plain values, in the Model's
// (deterministic) order, for everything a target reads. It holds no
// pointers into the Model, no raw Gateway API objects (Model.HTTPRoutes),
// nothing machine-dependent (certificate files are named by their Secret,
// input files by their base name) and no notes (their prose is the
// report's). testdata/model holds its goldens: each X.in.yaml built as the
// CLI builds it, then written with YAML, is X.ir.yaml (TestModelGolden).
type IR struct {
	// RouteCount and RuleCount count the HTTPRoutes and rules read.
	RouteCount int `json:"routeCount" yaml:"routeCount"`
	RuleCount  int `json:"ruleCount" yaml:"ruleCount"`
	// Sources says where each route was read: "FILE: document N", the
	// file by its base name.
	Sources map[string]string `json:"sources,omitempty" yaml:"sources,omitempty"`
	// Listeners are Model.Listeners; their routes name rules of Rules.
	Listeners []IRListener `json:"listeners,omitempty" yaml:"listeners,omitempty"`
	// Rules and MeshRules are Model.Rules and Model.MeshRules.
	Rules     []IRRule `json:"rules,omitempty" yaml:"rules,omitempty"`
	MeshRules []IRRule `json:"meshRules,omitempty" yaml:"meshRules,omitempty"`
	// Mesh are the Service parents with their matches (Model.Mesh).
	Mesh []IRMeshAttachment `json:"mesh,omitempty" yaml:"mesh,omitempty"`
	// ConnectionTimeouts are the connection timeouts per Gateway.
	ConnectionTimeouts []IRGatewayTimeouts `json:"connectionTimeouts,omitempty" yaml:"connectionTimeouts,omitempty"`
	// Effective are the values of every rule with their sources.
	Effective []IREffective `json:"effective,omitempty" yaml:"effective,omitempty"`
	// Policies are what became of each policy of the input.
	Policies []IRPolicy `json:"policies,omitempty" yaml:"policies,omitempty"`
	// Skipped are the rules read and not translated.
	Skipped []IRSkipped `json:"skipped,omitempty" yaml:"skipped,omitempty"`
}

// IRListener is one bind address of the generated proxy.
type IRListener struct {
	Name    string `json:"name" yaml:"name"`
	Address string `json:"address" yaml:"address"`
	Port    int    `json:"port" yaml:"port"`
	// Protocol is HTTP, or HTTPS for a listener that terminates TLS.
	Protocol     string          `json:"protocol" yaml:"protocol"`
	VirtualHosts []IRVirtualHost `json:"virtualHosts" yaml:"virtualHosts"`
}

// IRVirtualHost is the routes of one hostname ("" for any) on a listener.
type IRVirtualHost struct {
	Name     string `json:"name" yaml:"name"`
	Hostname string `json:"hostname" yaml:"hostname"`
	// Secret is "namespace/name" of the certificate's Secret on an HTTPS
	// listener.
	Secret string `json:"secret,omitempty" yaml:"secret,omitempty"`
	// Routes are in precedence order: the first that matches wins.
	Routes []IRRouteMatch `json:"routes" yaml:"routes"`
}

// IRRouteMatch is one match of a rule, named by Rule.Name.
type IRRouteMatch struct {
	Rule    string `json:"rule" yaml:"rule"`
	IRMatch `yaml:",inline"`
}

// IRMatch is a Match.
type IRMatch struct {
	PathType string         `json:"pathType" yaml:"pathType"`
	Path     string         `json:"path" yaml:"path"`
	Method   string         `json:"method,omitempty" yaml:"method,omitempty"`
	Headers  []IRValueMatch `json:"headers,omitempty" yaml:"headers,omitempty"`
	Query    []IRValueMatch `json:"query,omitempty" yaml:"query,omitempty"`
}

// IRValueMatch is a header or query parameter match.
type IRValueMatch struct {
	Type  string `json:"type" yaml:"type"`
	Name  string `json:"name" yaml:"name"`
	Value string `json:"value" yaml:"value"`
}

// IRRule is a Rule. Retry is absent when the rule has none; Attempts is
// always written, 0 included. Durations are the GEP-2257 text as written.
type IRRule struct {
	Name     string      `json:"name" yaml:"name"`
	Route    string      `json:"route" yaml:"route"`
	Index    int         `json:"index" yaml:"index"`
	RuleName string      `json:"ruleName,omitempty" yaml:"ruleName,omitempty"`
	Methods  []string    `json:"methods,omitempty" yaml:"methods,omitempty,flow"`
	Retry    *IRRetry    `json:"retry,omitempty" yaml:"retry,omitempty"`
	Timeouts *IRTimeouts `json:"timeouts,omitempty" yaml:"timeouts,omitempty"`
	Backends []IRBackend `json:"backends,omitempty" yaml:"backends,omitempty"`
	// InvalidBackends are Rule.Invalid.
	InvalidBackends []IRInvalidBackend `json:"invalidBackends,omitempty" yaml:"invalidBackends,omitempty"`
	NoBackendRefs   bool               `json:"noBackendRefs,omitempty" yaml:"noBackendRefs,omitempty"`
	// Dead is Rule.Dead: every request the rule matches is answered 500.
	Dead    bool       `json:"dead,omitempty" yaml:"dead,omitempty"`
	Filters *IRFilters `json:"filters,omitempty" yaml:"filters,omitempty"`
	// Features are Rule.Features: the rule's findings on every target.
	Features             []string                `json:"features,omitempty" yaml:"features,omitempty"`
	UngeneratedListeners []IRUngeneratedListener `json:"ungeneratedListeners,omitempty" yaml:"ungeneratedListeners,omitempty"`
	TLSListeners         []string                `json:"tlsListeners,omitempty" yaml:"tlsListeners,omitempty"`
	TLSUnrouted          []string                `json:"tlsUnrouted,omitempty" yaml:"tlsUnrouted,omitempty"`
	TLSCertShadowed      []string                `json:"tlsCertShadowed,omitempty" yaml:"tlsCertShadowed,omitempty"`
	MeshParents          []IRMeshParent          `json:"meshParents,omitempty" yaml:"meshParents,omitempty"`
	GatewayUnattached    []string                `json:"gatewayUnattached,omitempty" yaml:"gatewayUnattached,omitempty"`
	PolicyConflicts      []IRPolicyConflict      `json:"policyConflicts,omitempty" yaml:"policyConflicts,omitempty"`
}

// IRRetry is a Retry.
type IRRetry struct {
	Attempts int    `json:"attempts" yaml:"attempts"`
	Codes    []int  `json:"codes,omitempty" yaml:"codes,omitempty,flow"`
	Backoff  string `json:"backoff,omitempty" yaml:"backoff,omitempty"`
	// On is the BackendTrafficPolicy's retry condition, when the retry
	// came from one.
	On *IRRetryOn `json:"retryOn,omitempty" yaml:"retryOn,omitempty"`
}

// IRRetryOn is a RetryOn.
type IRRetryOn struct {
	Policy      string    `json:"policy" yaml:"policy"`
	Triggers    []string  `json:"triggers" yaml:"triggers,flow"`
	StatusCodes []int     `json:"statusCodes" yaml:"statusCodes,flow"`
	ConnErrors  ConnRetry `json:"connectionErrors" yaml:"connectionErrors"`
	Timeouts    bool      `json:"timeoutsRetried" yaml:"timeoutsRetried"`
	MaxInterval string    `json:"maxInterval,omitempty" yaml:"maxInterval,omitempty"`
}

// IRTimeouts is a Timeouts; "" is unset, "0s" disables.
type IRTimeouts struct {
	Request        string `json:"request,omitempty" yaml:"request,omitempty"`
	BackendRequest string `json:"backendRequest,omitempty" yaml:"backendRequest,omitempty"`
}

// IRBackend is a BackendRef; endpoints are "host:port".
type IRBackend struct {
	Name      string     `json:"name" yaml:"name"`
	Service   string     `json:"service" yaml:"service"`
	Port      int        `json:"port" yaml:"port"`
	Weight    int        `json:"weight" yaml:"weight"`
	Endpoints []string   `json:"endpoints" yaml:"endpoints,flow"`
	Filters   *IRFilters `json:"filters,omitempty" yaml:"filters,omitempty"`
}

// IRInvalidBackend is an InvalidBackend.
type IRInvalidBackend struct {
	Index  int    `json:"index" yaml:"index"`
	Weight int    `json:"weight" yaml:"weight"`
	Reason string `json:"reason" yaml:"reason"`
}

// IRFilters is a Filters; absent when no filter is set.
type IRFilters struct {
	RequestHeaders  *IRHeaderModifier `json:"requestHeaders,omitempty" yaml:"requestHeaders,omitempty"`
	ResponseHeaders *IRHeaderModifier `json:"responseHeaders,omitempty" yaml:"responseHeaders,omitempty"`
	Redirect        *IRRedirect       `json:"redirect,omitempty" yaml:"redirect,omitempty"`
	Rewrite         *IRRewrite        `json:"rewrite,omitempty" yaml:"rewrite,omitempty"`
	Mirrors         []IRMirror        `json:"mirrors,omitempty" yaml:"mirrors,omitempty"`
	Other           []IROtherFilter   `json:"other,omitempty" yaml:"other,omitempty"`
}

// IRHeaderModifier is a HeaderModifier.
type IRHeaderModifier struct {
	Set    []IRHeader `json:"set,omitempty" yaml:"set,omitempty"`
	Add    []IRHeader `json:"add,omitempty" yaml:"add,omitempty"`
	Remove []string   `json:"remove,omitempty" yaml:"remove,omitempty,flow"`
}

// IRHeader is a header name and value.
type IRHeader struct {
	Name  string `json:"name" yaml:"name"`
	Value string `json:"value" yaml:"value"`
}

// IRPathModifier is a PathModifier.
type IRPathModifier struct {
	Type  string `json:"type" yaml:"type"`
	Value string `json:"value" yaml:"value"`
}

// IRRedirect is a Redirect.
type IRRedirect struct {
	Scheme     string          `json:"scheme,omitempty" yaml:"scheme,omitempty"`
	Hostname   string          `json:"hostname,omitempty" yaml:"hostname,omitempty"`
	Path       *IRPathModifier `json:"path,omitempty" yaml:"path,omitempty"`
	Port       int             `json:"port,omitempty" yaml:"port,omitempty"`
	StatusCode int             `json:"statusCode" yaml:"statusCode"`
}

// IRRewrite is a Rewrite.
type IRRewrite struct {
	Hostname string          `json:"hostname,omitempty" yaml:"hostname,omitempty"`
	Path     *IRPathModifier `json:"path,omitempty" yaml:"path,omitempty"`
}

// IRMirror is a Mirror: Backend, or why it cannot receive traffic.
type IRMirror struct {
	Backend     *IRBackend `json:"backend,omitempty" yaml:"backend,omitempty"`
	Invalid     string     `json:"invalid,omitempty" yaml:"invalid,omitempty"`
	Numerator   int        `json:"numerator" yaml:"numerator"`
	Denominator int        `json:"denominator" yaml:"denominator"`
}

// IROtherFilter is an OtherFilter.
type IROtherFilter struct {
	Type    string `json:"type" yaml:"type"`
	Feature string `json:"feature" yaml:"feature"`
	Detail  string `json:"detail" yaml:"detail"`
}

// IRUngeneratedListener is an UngeneratedListener.
type IRUngeneratedListener struct {
	Gateway  string `json:"gateway" yaml:"gateway"`
	Listener string `json:"listener" yaml:"listener"`
	Protocol string `json:"protocol" yaml:"protocol"`
}

// IRMeshParent is a MeshParent.
type IRMeshParent struct {
	Index       int               `json:"index" yaml:"index"`
	Service     string            `json:"service" yaml:"service"`
	Port        int               `json:"port,omitempty" yaml:"port,omitempty"`
	SectionName string            `json:"sectionName,omitempty" yaml:"sectionName,omitempty"`
	Consumer    bool              `json:"consumer,omitempty" yaml:"consumer,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
}

// IRPolicyConflict is a PolicyConflict.
type IRPolicyConflict struct {
	Feature string `json:"feature" yaml:"feature"`
	Text    string `json:"text" yaml:"text"`
}

// IRMeshAttachment is a MeshAttachment; its routes name rules of Rules or
// MeshRules.
type IRMeshAttachment struct {
	Service     string         `json:"service" yaml:"service"`
	Port        int            `json:"port,omitempty" yaml:"port,omitempty"`
	SectionName string         `json:"sectionName,omitempty" yaml:"sectionName,omitempty"`
	Consumer    string         `json:"consumer,omitempty" yaml:"consumer,omitempty"`
	Routes      []IRRouteMatch `json:"routes" yaml:"routes"`
}

// IRGatewayTimeouts is a GatewayTimeouts; listeners and rules by name.
type IRGatewayTimeouts struct {
	Gateway   string                `json:"gateway" yaml:"gateway"`
	Listeners []string              `json:"listeners,omitempty" yaml:"listeners,omitempty,flow"`
	Rules     []string              `json:"rules,omitempty" yaml:"rules,omitempty"`
	Timeouts  []IRConnectionTimeout `json:"timeouts" yaml:"timeouts"`
}

// IRConnectionTimeout is a ConnectionTimeout: Text as written, Value the
// duration used (clamped when Clamped).
type IRConnectionTimeout struct {
	Feature string `json:"feature" yaml:"feature"`
	Policy  string `json:"policy" yaml:"policy"`
	Text    string `json:"text" yaml:"text"`
	Value   string `json:"value" yaml:"value"`
	Clamped bool   `json:"clamped,omitempty" yaml:"clamped,omitempty"`
	Order   int    `json:"order" yaml:"order"`
	Blocked string `json:"blocked,omitempty" yaml:"blocked,omitempty"`
}

// IREffective is a RuleEffective: each feature's value and source.
type IREffective struct {
	Route     string                      `json:"route" yaml:"route"`
	Rule      int                         `json:"rule" yaml:"rule"`
	RuleName  string                      `json:"ruleName,omitempty" yaml:"ruleName,omitempty"`
	Effective map[string]IREffectiveValue `json:"effective,omitempty" yaml:"effective,omitempty"`
	Policies  []string                    `json:"policies,omitempty" yaml:"policies,omitempty"`
}

// IREffectiveValue is an EffectiveValue.
type IREffectiveValue struct {
	Value  any    `json:"value" yaml:"value"`
	Source string `json:"source" yaml:"source"`
}

// IRPolicy is a PolicyReport.
type IRPolicy struct {
	Kind       string   `json:"kind" yaml:"kind"`
	Namespace  string   `json:"namespace" yaml:"namespace"`
	Name       string   `json:"name" yaml:"name"`
	Status     string   `json:"status" yaml:"status"`
	Targets    []string `json:"targets,omitempty" yaml:"targets,omitempty"`
	NotFound   []string `json:"notFound,omitempty" yaml:"notFound,omitempty"`
	Reached    []string `json:"reached,omitempty" yaml:"reached,omitempty"`
	Lost       []string `json:"lost,omitempty" yaml:"lost,omitempty"`
	Notes      []string `json:"notes,omitempty" yaml:"notes,omitempty"`
	NotCarried []string `json:"notCarried,omitempty" yaml:"notCarried,omitempty"`
	EnvoyOnly  []string `json:"envoyOnly,omitempty" yaml:"envoyOnly,omitempty"`
}

// IRSkipped is a SkippedRule.
type IRSkipped struct {
	Route    string   `json:"route" yaml:"route"`
	Index    int      `json:"index" yaml:"index"`
	RuleName string   `json:"ruleName,omitempty" yaml:"ruleName,omitempty"`
	Features []string `json:"features" yaml:"features"`
	Reason   string   `json:"reason" yaml:"reason"`
}

// IR returns the serialisable view of the model. It reads the Model only.
func (m *Model) IR() IR {
	ir := IR{RouteCount: m.RouteCount, RuleCount: m.RuleCount}
	if len(m.Sources) > 0 {
		ir.Sources = make(map[string]string, len(m.Sources))
		for route, p := range m.Sources {
			p.File = filepath.Base(p.File)
			ir.Sources[route] = p.String()
		}
	}
	for _, l := range m.Listeners {
		il := IRListener{Name: l.Name, Address: l.Address, Port: l.Port, Protocol: "HTTP"}
		if l.TLS {
			il.Protocol = "HTTPS"
		}
		for _, vh := range l.VirtualHosts {
			ivh := IRVirtualHost{Name: vh.Name, Hostname: vh.Hostname, Routes: irRouteMatches(vh.Routes)}
			if vh.Certificate != nil {
				ivh.Secret = vh.Certificate.Secret
			}
			il.VirtualHosts = append(il.VirtualHosts, ivh)
		}
		ir.Listeners = append(ir.Listeners, il)
	}
	for _, r := range m.Rules {
		ir.Rules = append(ir.Rules, irRule(r))
	}
	for _, r := range m.MeshRules {
		ir.MeshRules = append(ir.MeshRules, irRule(r))
	}
	for _, a := range m.Mesh {
		ir.Mesh = append(ir.Mesh, IRMeshAttachment{Service: a.Service, Port: a.Port, SectionName: a.SectionName,
			Consumer: a.Consumer, Routes: irRouteMatches(a.Routes)})
	}
	for _, g := range m.ConnectionTimeouts {
		ig := IRGatewayTimeouts{Gateway: g.Gateway, Timeouts: []IRConnectionTimeout{}}
		for _, l := range g.Listeners {
			ig.Listeners = append(ig.Listeners, l.Name)
		}
		for _, r := range g.Rules {
			ig.Rules = append(ig.Rules, r.Name)
		}
		for _, t := range g.Timeouts {
			ig.Timeouts = append(ig.Timeouts, IRConnectionTimeout{Feature: string(t.Feature), Policy: t.Policy, Text: t.Text,
				Value: t.Value.String(), Clamped: t.Clamped, Order: t.Order, Blocked: t.Blocked})
		}
		ir.ConnectionTimeouts = append(ir.ConnectionTimeouts, ig)
	}
	for _, e := range m.Effective {
		ie := IREffective{Route: e.Route, Rule: e.Rule, RuleName: e.RuleName, Policies: e.Policies}
		if len(e.Effective) > 0 {
			ie.Effective = make(map[string]IREffectiveValue, len(e.Effective))
			for f, v := range e.Effective {
				val := v.Value
				if codes, ok := val.([]int); ok {
					val = flowInts(codes)
				}
				ie.Effective[string(f)] = IREffectiveValue{Value: val, Source: v.Source}
			}
		}
		ir.Effective = append(ir.Effective, ie)
	}
	for _, p := range m.Policies {
		ir.Policies = append(ir.Policies, IRPolicy{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, Status: string(p.Status),
			Targets: p.Targets, NotFound: p.NotFound, Reached: p.Reached, Lost: p.Lost, Notes: p.Notes, NotCarried: p.NotCarried, EnvoyOnly: p.EnvoyOnly})
	}
	for _, s := range m.Skipped {
		ir.Skipped = append(ir.Skipped, IRSkipped{Route: s.Route, Index: s.Index, RuleName: s.RuleName,
			Features: featureStrings(s.Features), Reason: s.Reason})
	}
	return ir
}

// YAML writes the IR as YAML: two-space indents, fields in declaration
// order, map keys sorted.
func (ir IR) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(ir); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func irRouteMatches(rms []*RouteMatch) []IRRouteMatch {
	out := make([]IRRouteMatch, 0, len(rms))
	for _, rm := range rms {
		out = append(out, IRRouteMatch{Rule: rm.Rule.Name, IRMatch: irMatch(rm.Match)})
	}
	return out
}

func irMatch(m Match) IRMatch {
	out := IRMatch{PathType: string(m.PathType), Path: m.Path, Method: m.Method}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, IRValueMatch{Type: string(h.Type), Name: h.Name, Value: h.Value})
	}
	for _, q := range m.Query {
		out.Query = append(out.Query, IRValueMatch{Type: string(q.Type), Name: q.Name, Value: q.Value})
	}
	return out
}

func irRule(r *Rule) IRRule {
	out := IRRule{Name: r.Name, Route: r.Route, Index: r.Index, RuleName: r.RuleName, Methods: r.Methods,
		NoBackendRefs: r.NoBackendRefs, Dead: r.Dead(), Filters: irFilters(&r.Filters), Features: featureStrings(r.Features()),
		TLSListeners: r.TLSListeners, TLSUnrouted: r.TLSUnrouted, TLSCertShadowed: r.TLSCertShadowed,
		GatewayUnattached: r.GatewayUnattached}
	if r.Retry != nil {
		out.Retry = &IRRetry{Attempts: r.Retry.Attempts, Codes: r.Retry.Codes, Backoff: durationText(r.Retry.Backoff)}
		if on := r.Retry.On; on != nil {
			out.Retry.On = &IRRetryOn{Policy: on.Policy, Triggers: on.Triggers, StatusCodes: on.StatusCodes, ConnErrors: on.ConnErrors, Timeouts: on.Timeouts, MaxInterval: durationText(on.MaxInterval)}
			if out.Retry.On.StatusCodes == nil {
				out.Retry.On.StatusCodes = []int{}
			}
		}
	}
	if r.Timeouts.Request != nil || r.Timeouts.BackendRequest != nil {
		out.Timeouts = &IRTimeouts{Request: durationText(r.Timeouts.Request), BackendRequest: durationText(r.Timeouts.BackendRequest)}
	}
	for _, b := range r.Backends {
		out.Backends = append(out.Backends, irBackend(b))
	}
	for _, b := range r.Invalid {
		out.InvalidBackends = append(out.InvalidBackends, IRInvalidBackend{Index: b.Index, Weight: b.Weight, Reason: b.Reason})
	}
	for _, u := range r.Ungenerated {
		out.UngeneratedListeners = append(out.UngeneratedListeners, IRUngeneratedListener{Gateway: u.Gateway, Listener: u.Listener, Protocol: u.Protocol})
	}
	for _, p := range r.MeshParents {
		out.MeshParents = append(out.MeshParents, IRMeshParent{Index: p.Index, Service: p.Service, Port: p.Port,
			SectionName: p.SectionName, Consumer: p.Consumer, Annotations: p.Annotations})
	}
	for _, c := range r.PolicyConflicts {
		out.PolicyConflicts = append(out.PolicyConflicts, IRPolicyConflict{Feature: string(c.Feature), Text: c.Text})
	}
	return out
}

// durationText is d as written; "" when unset. A "0s" that disables a
// timeout is kept: it is not unset.
func durationText(d *Duration) string {
	if d == nil {
		return ""
	}
	if d.Text == "" {
		return d.Value.String()
	}
	return d.Text
}

func irBackend(b *BackendRef) IRBackend {
	out := IRBackend{Name: b.Name, Service: b.Service, Port: b.Port, Weight: b.Weight, Endpoints: []string{}, Filters: irFilters(&b.Filters)}
	for _, e := range b.Endpoints {
		out.Endpoints = append(out.Endpoints, net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
	}
	return out
}

func irFilters(f *Filters) *IRFilters {
	if f.IsZero() {
		return nil
	}
	out := &IRFilters{RequestHeaders: irHeaderModifier(f.RequestHeaders), ResponseHeaders: irHeaderModifier(f.ResponseHeaders)}
	if rd := f.Redirect; rd != nil {
		out.Redirect = &IRRedirect{Scheme: rd.Scheme, Hostname: rd.Hostname, Path: irPath(rd.Path), Port: rd.Port, StatusCode: rd.StatusCode}
	}
	if rw := f.Rewrite; rw != nil {
		out.Rewrite = &IRRewrite{Hostname: rw.Hostname, Path: irPath(rw.Path)}
	}
	for _, mr := range f.Mirrors {
		im := IRMirror{Invalid: mr.Invalid, Numerator: mr.Numerator, Denominator: mr.Denominator}
		if mr.Backend != nil {
			b := irBackend(mr.Backend)
			im.Backend = &b
		}
		out.Mirrors = append(out.Mirrors, im)
	}
	for _, o := range f.Other {
		out.Other = append(out.Other, IROtherFilter{Type: o.Type, Feature: string(o.Feature), Detail: o.Detail})
	}
	return out
}

func irHeaderModifier(hm *HeaderModifier) *IRHeaderModifier {
	if hm == nil {
		return nil
	}
	out := &IRHeaderModifier{Remove: hm.Remove}
	for _, h := range hm.Set {
		out.Set = append(out.Set, IRHeader(h))
	}
	for _, h := range hm.Add {
		out.Add = append(out.Add, IRHeader(h))
	}
	return out
}

func irPath(p *PathModifier) *IRPathModifier {
	if p == nil {
		return nil
	}
	return &IRPathModifier{Type: string(p.Type), Value: p.Value}
}

// flowInts is a list of numbers (status codes) that YAML writes on one
// line, as IRRetry.Codes; JSON writes it as any list.
type flowInts []int

// MarshalYAML writes the list in flow style.
func (f flowInts) MarshalYAML() (any, error) {
	var n yaml3.Node
	if err := n.Encode([]int(f)); err != nil {
		return nil, err
	}
	n.Style = yaml3.FlowStyle
	return &n, nil
}

func featureStrings(fs []Feature) []string {
	if fs == nil {
		return nil
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f)
	}
	return out
}
