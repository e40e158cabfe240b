package input

import (
	"fmt"
	"regexp"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// Validation re-implements the Gateway API's own rules (OpenAPI patterns,
// CEL and webhook checks as of v1.7.0) that matter to a translator, because
// decoding offline applies none of them.

var (
	dnsLabelRE      = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	sectionNameRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	headerTokenRE   = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]+$")
	routeHostnameRE = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Limits of the Gateway API types.
const (
	maxHostnames  = 16
	maxParentRefs = 32
	maxRules      = 16
	maxMatches    = 128
	maxHeaders    = 16
	maxBackends   = 16
)

// FieldErrors collects the problems of one object.
type FieldErrors struct {
	Pos    Position
	Object string
	Errs   ErrorList
}

func (f *FieldErrors) Add(field, format string, args ...any) {
	f.Errs = append(f.Errs, &InputError{Pos: f.Pos, Object: f.Object, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (f *FieldErrors) CheckName(field, name string) {
	switch {
	case name == "":
		f.Add(field, "required")
	case len(name) > 253 || !sectionNameRE.MatchString(name):
		f.Add(field, "%s is not a valid name: lower-case letters, digits, '-' and '.', at most 253, starting and ending with a letter or digit", translate.QuoteShort(name))
	}
}

func (f *FieldErrors) CheckNamespace(field, ns string) {
	if ns != "" && (len(ns) > 63 || !dnsLabelRE.MatchString(ns)) {
		f.Add(field, "%s is not a valid namespace: a DNS label (lower-case letters, digits and '-', at most 63)", translate.QuoteShort(ns))
	}
}

func (f *FieldErrors) CheckHostname(field, h string) {
	if len(h) > 253 || !routeHostnameRE.MatchString(h) {
		f.Add(field, "%s is not a valid hostname: a lower-case DNS name, optionally starting with '*.'", translate.QuoteShort(h))
	}
	// An IP address passes the API's hostname pattern, and the API server
	// accepts it (its documentation says IPs are not allowed, which no
	// validation enforces): it is matched as a name, like any other.
}

// DurationField parses an optional duration and checks GEP-2257 and the
// "non-zero is at least 1ms" rule.
func (f *FieldErrors) DurationField(field string, d *gwv1.Duration) *translate.Duration {
	if d == nil {
		return nil
	}
	v, err := translate.ParseDuration(string(*d))
	if err != nil {
		f.Add(field, "%v", err)
		return nil
	}
	return &translate.Duration{Text: string(*d), Value: v}
}

// Validate checks the Gateway API objects of in (HTTPRoutes, Gateways,
// GatewayClasses) as the API server would with the v1.7.0 CRDs of the
// channel: schema, defaults and CEL rules. It does not apply gwretry's own
// limits on what a generated configuration may contain; Build does.
func Validate(in *Input, ch translate.Channel) ErrorList {
	var errs ErrorList
	for _, r := range in.Routes {
		errs = append(errs, validateAPI(r.Pos, "HTTPRoute", r.Obj.Namespace, r.Obj.Name, r.Obj, ch)...)
	}
	for _, g := range in.Gateways {
		errs = append(errs, validateAPI(g.Pos, "Gateway", g.Obj.Namespace, g.Obj.Name, g.Obj, ch)...)
	}
	for _, c := range in.GatewayClasses {
		errs = append(errs, validateAPI(c.Pos, "GatewayClass", c.Obj.Namespace, c.Obj.Name, c.Obj, ch)...)
	}
	return append(errs, validatePolicies(in, ch)...)
}

// Check is Validate, then gwretry's own checks for the objects the
// API accepts (so that one mistake is not reported twice).
func Check(in *Input, ch translate.Channel) ErrorList {
	var errs ErrorList
	// Each route is validated on its own (the schema and CEL validators
	// are shared, read-only), on every core; the problems are listed in
	// the routes' order whatever the number of cores.
	perRoute := make([]ErrorList, len(in.Routes))
	translate.Parallel(len(in.Routes), func(i int) {
		r := in.Routes[i]
		if e := validateAPI(r.Pos, "HTTPRoute", r.Obj.Namespace, r.Obj.Name, r.Obj, ch); len(e) > 0 {
			perRoute[i] = e
			return
		}
		perRoute[i] = validateRoute(r)
	})
	for _, e := range perRoute {
		errs = append(errs, e...)
	}
	for _, g := range in.Gateways {
		if e := validateAPI(g.Pos, "Gateway", g.Obj.Namespace, g.Obj.Name, g.Obj, ch); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		errs = append(errs, validateGateway(g)...)
	}
	for _, c := range in.GatewayClasses {
		errs = append(errs, validateAPI(c.Pos, "GatewayClass", c.Obj.Namespace, c.Obj.Name, c.Obj, ch)...)
	}
	return append(errs, validatePolicies(in, ch)...)
}

// validateRoute checks an HTTPRoute and returns its problems.
func validateRoute(o Object[gwv1.HTTPRoute]) ErrorList {
	rt := o.Obj
	f := &FieldErrors{Pos: o.Pos, Object: ObjectName("HTTPRoute", rt.Namespace, rt.Name)}
	f.CheckName("metadata.name", rt.Name)
	f.CheckNamespace("metadata.namespace", rt.Namespace)
	if n := len(rt.Spec.Hostnames); n > maxHostnames {
		f.Add("spec.hostnames", "%d hostnames, at most %d allowed", n, maxHostnames)
	}
	for i, h := range rt.Spec.Hostnames {
		f.CheckHostname(fmt.Sprintf("spec.hostnames[%d]", i), string(h))
	}
	if n := len(rt.Spec.ParentRefs); n > maxParentRefs {
		f.Add("spec.parentRefs", "%d parentRefs, at most %d allowed", n, maxParentRefs)
	}
	for i, p := range rt.Spec.ParentRefs {
		field := fmt.Sprintf("spec.parentRefs[%d]", i)
		f.CheckName(field+".name", string(p.Name))
		if p.Namespace != nil {
			f.CheckNamespace(field+".namespace", string(*p.Namespace))
		}
		if p.SectionName != nil {
			f.CheckName(field+".sectionName", string(*p.SectionName))
		}
		if p.Port != nil && (*p.Port < 1 || *p.Port > 65535) {
			f.Add(field+".port", "%d is not a port (1-65535)", *p.Port)
		}
	}
	if n := len(rt.Spec.Rules); n > maxRules {
		f.Add("spec.rules", "%d rules, at most %d allowed", n, maxRules)
	}
	ruleNames := map[string]int{}
	matches := 0
	for i, r := range rt.Spec.Rules {
		field := fmt.Sprintf("spec.rules[%d]", i)
		if r.Name != nil {
			f.CheckName(field+".name", string(*r.Name))
			if j, dup := ruleNames[string(*r.Name)]; dup {
				f.Add(field+".name", "%q is also the name of spec.rules[%d]: rule names must be unique", *r.Name, j)
			}
			ruleNames[string(*r.Name)] = i
		}
		matches += len(r.Matches)
		for j, m := range r.Matches {
			validateMatch(f, fmt.Sprintf("%s.matches[%d]", field, j), m)
		}
		if n := len(r.BackendRefs); n > maxBackends {
			f.Add(field+".backendRefs", "%d backendRefs, at most %d allowed", n, maxBackends)
		}
		for j, b := range r.BackendRefs {
			bf := fmt.Sprintf("%s.backendRefs[%d]", field, j)
			f.CheckName(bf+".name", string(b.Name))
			if b.Namespace != nil {
				f.CheckNamespace(bf+".namespace", string(*b.Namespace))
			}
			if b.Port != nil && (*b.Port < 1 || *b.Port > 65535) {
				f.Add(bf+".port", "%d is not a port (1-65535)", *b.Port)
			}
			if b.Weight != nil && (*b.Weight < 0 || *b.Weight > 1000000) {
				f.Add(bf+".weight", "%d is out of range 0-1000000", *b.Weight)
			}
		}
		validateRetryAndTimeouts(f, field, r)
	}
	if matches > maxMatches {
		f.Add("spec.rules", "%d matches in total, at most %d allowed", matches, maxMatches)
	}
	return f.Errs
}

func validateMatch(f *FieldErrors, field string, m gwv1.HTTPRouteMatch) {
	if p := m.Path; p != nil {
		t := gwv1.PathMatchPathPrefix
		if p.Type != nil {
			t = *p.Type
		}
		v := "/"
		if p.Value != nil {
			v = *p.Value
		}
		pf := field + ".path.value"
		switch t {
		case gwv1.PathMatchExact, gwv1.PathMatchPathPrefix:
			switch {
			case !strings.HasPrefix(v, "/"):
				f.Add(pf, "%s must start with '/'", translate.QuoteShort(v))
			case strings.Contains(v, "//") || strings.Contains(v, "/./") || strings.Contains(v, "/../") ||
				strings.Contains(strings.ToLower(v), "%2f") || strings.Contains(v, "#") ||
				strings.HasSuffix(v, "/..") || strings.HasSuffix(v, "/."):
				f.Add(pf, "%s must not contain '//', '/./', '/../', '%%2f' or '#', nor end with '/.' or '/..'", translate.QuoteShort(v))
			}
		case gwv1.PathMatchRegularExpression:
		default:
			f.Add(field+".path.type", "%q is not one of Exact, PathPrefix, RegularExpression", t)
		}
	}
	if n := len(m.Headers); n > maxHeaders {
		f.Add(field+".headers", "%d header matches, at most %d allowed", n, maxHeaders)
	}
	for i, h := range m.Headers {
		hf := fmt.Sprintf("%s.headers[%d]", field, i)
		if !headerTokenRE.MatchString(string(h.Name)) || len(h.Name) > 256 {
			f.Add(hf+".name", "%s is invalid: the Gateway API requires a header name of letters, digits and !#$%%&'*+-.^_`|~, at most 256", translate.QuoteShort(string(h.Name)))
		}
		validateValueMatch(f, hf, h.Type == nil || *h.Type == gwv1.HeaderMatchExact, h.Type != nil && *h.Type == gwv1.HeaderMatchRegularExpression, h.Value)
	}
	if n := len(m.QueryParams); n > maxHeaders {
		f.Add(field+".queryParams", "%d query parameter matches, at most %d allowed", n, maxHeaders)
	}
	for i, q := range m.QueryParams {
		qf := fmt.Sprintf("%s.queryParams[%d]", field, i)
		if !headerTokenRE.MatchString(string(q.Name)) || len(q.Name) > 256 {
			f.Add(qf+".name", "%s is invalid: the Gateway API requires a query parameter name of letters, digits and !#$%%&'*+-.^_`|~, at most 256", translate.QuoteShort(string(q.Name)))
		}
		validateValueMatch(f, qf, q.Type == nil || *q.Type == gwv1.QueryParamMatchExact, q.Type != nil && *q.Type == gwv1.QueryParamMatchRegularExpression, q.Value)
	}
	if m.Method != nil {
		switch *m.Method {
		case gwv1.HTTPMethodGet, gwv1.HTTPMethodHead, gwv1.HTTPMethodPost, gwv1.HTTPMethodPut, gwv1.HTTPMethodDelete,
			gwv1.HTTPMethodConnect, gwv1.HTTPMethodOptions, gwv1.HTTPMethodTrace, gwv1.HTTPMethodPatch:
		default:
			f.Add(field+".method", "%s is invalid: the Gateway API requires an HTTP method, one of GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH", translate.QuoteShort(string(*m.Method)))
		}
	}
}

func validateValueMatch(f *FieldErrors, field string, exact, regex bool, value string) {
	switch {
	case exact:
		if value == "" {
			f.Add(field+".value", "required")
		}
	case regex:
	default:
		f.Add(field+".type", "must be Exact or RegularExpression")
	}
}

// validateRetryAndTimeouts checks a rule's retry and timeouts as the API
// server would (v1.7.0).
func validateRetryAndTimeouts(f *FieldErrors, field string, r gwv1.HTTPRouteRule) {
	if t := r.Timeouts; t != nil {
		req := f.DurationField(field+".timeouts.request", t.Request)
		be := f.DurationField(field+".timeouts.backendRequest", t.BackendRequest)
		checkMinimum(f, field+".timeouts.request", req)
		checkMinimum(f, field+".timeouts.backendRequest", be)
		if req != nil && be != nil && req.Value != 0 && be.Value > req.Value {
			f.Add(field+".timeouts.backendRequest", "backendRequest timeout (%s) cannot be longer than request timeout (%s)", be.Text, req.Text)
		}
	}
	if rt := r.Retry; rt != nil {
		if rt.Attempts != nil && *rt.Attempts < 0 {
			f.Add(field+".retry.attempts", "%d must be 0 or more (retries after the first try)", *rt.Attempts)
		}
		seen := map[int]int{}
		for i, c := range rt.Codes {
			cf := fmt.Sprintf("%s.retry.codes[%d]", field, i)
			if c < 400 || c > 599 {
				f.Add(cf, "%d is not a retryable status code: must be 400-599", c)
			}
			if j, dup := seen[int(c)]; dup {
				f.Add(cf, "%d is also codes[%d]: codes must be unique", c, j)
			}
			seen[int(c)] = i
		}
		b := f.DurationField(field+".retry.backoff", rt.Backoff)
		checkMinimum(f, field+".retry.backoff", b)
	}
}

func checkMinimum(f *FieldErrors, field string, d *translate.Duration) {
	if d != nil && d.Value != 0 && d.Value.Milliseconds() < 1 {
		f.Add(field, "%s: a non-zero duration must be at least 1ms", d.Text)
	}
}

// validateGateway checks the parts of a Gateway that resolution uses.
func validateGateway(o Object[gwv1.Gateway]) ErrorList {
	g := o.Obj
	f := &FieldErrors{Pos: o.Pos, Object: ObjectName("Gateway", g.Namespace, g.Name)}
	f.CheckName("metadata.name", g.Name)
	f.CheckNamespace("metadata.namespace", g.Namespace)
	names := map[string]int{}
	for i, l := range g.Spec.Listeners {
		field := fmt.Sprintf("spec.listeners[%d]", i)
		f.CheckName(field+".name", string(l.Name))
		if j, dup := names[string(l.Name)]; dup {
			f.Add(field+".name", "%q is also the name of listeners[%d]: listener names must be unique", l.Name, j)
		}
		names[string(l.Name)] = i
		if l.Port < 1 || l.Port > 65535 {
			f.Add(field+".port", "%d is not a port (1-65535)", l.Port)
		}
		if l.Protocol == "" {
			f.Add(field+".protocol", "required")
		}
		if l.Hostname != nil {
			f.CheckHostname(field+".hostname", string(*l.Hostname))
		}
	}
	return f.Errs
}
