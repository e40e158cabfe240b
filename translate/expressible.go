package translate

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/gwretry/gwretry/report"
)

// Expresser is a Backend whose format cannot hold every value the Gateway
// API accepts: Expresses reports whether it writes s, a value of the given
// kind (KindPath, KindRegex, KindHeaderName, KindHeaderValue,
// KindQueryName, KindFilterHeaderValue, KindFilterPath, ...), so that its
// data plane reads it back as it is. A Backend that is no Expresser writes
// every value a Model holds (its format's library quotes it: protobuf,
// YAML, JSON).
type Expresser interface {
	Expresses(kind, s string) bool
}

// ExpressWhy is an Expresser that says why its format cannot carry a
// value Expresses refuses: the "why" param of the rule's findings.
type ExpressWhy interface {
	NotExpressed(kind, s string) string
}

// HTTPWhy says why HTTP itself cannot carry a value (HTTPExpresses).
func HTTPWhy(kind string) string {
	if kind == KindFilterPath {
		return "HTTP carries no request path or Location path that does not start with '/' or that holds characters a path cannot"
	}
	return "an HTTP field value holds no line break or control character but tab, nor blanks at either end"
}

// CheckExpressed is the grammar of Model.CheckWith for a target e: what
// the Gateway API accepts (CheckValue) and e writes (Expresses). A target
// checks its model with it before it writes: ForTarget left out every
// rule with another value.
func CheckExpressed(e Expresser) func(kind, s string) error {
	return func(kind, s string) error {
		if err := CheckValue(kind, s); err != nil {
			return err
		}
		if !e.Expresses(kind, s) {
			return fmt.Errorf("%s %s cannot be written in this target's format", kind, QuoteShort(s))
		}
		return nil
	}
}

// Unexpressed is why a target does not write a rule: the first value of
// the rule, in the order of its matches and then its filters, that the
// target cannot write.
type Unexpressed struct {
	// Field names the value ("path", "header x-id", "urlRewrite path").
	Field string
	// Value is the value as the route gives it.
	Value string
	// Match is true when the value is one of the rule's matches: the
	// target cannot select the requests it matches.
	Match bool
	// HTTP is true when HTTP itself cannot carry the value
	// (HTTPExpresses), whatever the target.
	HTTP bool
	// Why says why the format (or HTTP) cannot carry it.
	Why string
}

// Decision is the record of every feature of a rule that a target does
// not write for u.
func (u Unexpressed) Decision() report.Decision {
	reason := report.ReasonValueNotExpressible
	if u.Match {
		reason = report.ReasonMatchNotExpressible
	}
	return report.Decide(reason, "field", u.Field, "value", u.Value, "why", u.Why)
}

// HTTPExpresses reports whether HTTP itself can carry a value of the given
// kind, whatever the format: a path a redirect or rewrite writes must
// start with '/' (a request's path, RFC 9112 origin-form; a redirect's
// Location with a host, RFC 3986 path-abempty) and hold only what a path
// holds (httpPathRE), or be "" (ReplacePrefixMatch removing the prefix);
// a header value a filter writes must be an HTTP field value. The Gateway API's schema accepts "foo", which no
// data plane can send as a request's path: the rule is answered 500 on
// every target, with a finding that says why.
func HTTPExpresses(kind, s string) bool {
	switch kind {
	case KindFilterPath:
		return s == "" || httpPathRE.MatchString(s)
	case KindFilterHeaderValue:
		// RFC 9110 field-value: no control character but tab inside,
		// none at either end (a recipient trims it).
		return httpFieldValueRE.MatchString(s)
	}
	return true
}

var httpFieldValueRE = regexp.MustCompile(`^[^\x00-\x20\x7f]([^\x00-\x08\x0a-\x1f\x7f]*[^\x00-\x20\x7f])?$`)

// httpPathRE is a path HTTP carries as it is: '/' then RFC 3986 pchars,
// '/' and percent-escapes (no space, quote, '?', '#' or control
// character, which a data plane would send raw or re-escape).
var httpPathRE = regexp.MustCompile(`^/(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})*$`)

// RE2Expresses reports whether a value of the given kind can be written
// where the data plane compiles regular expressions with RE2 (Envoy):
// a regular expression must compile (Go's regexp is RE2's syntax).
func RE2Expresses(kind, s string) bool {
	if kind == KindRegex {
		_, err := regexp.Compile(s)
		return err == nil
	}
	return true
}

// matchValues calls f with every value of a match.
func matchValues(mt Match, f func(field, kind, s string) bool) bool {
	kind := KindPath
	if mt.PathType == PathRegex {
		kind = KindRegex
	}
	if !f("path", kind, mt.Path) {
		return false
	}
	for _, list := range []struct {
		what string
		vs   []ValueMatch
	}{{"header", mt.Headers}, {"query", mt.Query}} {
		nameKind := KindHeaderName
		if list.what == "query" {
			nameKind = KindQueryName
		}
		for _, v := range list.vs {
			if !f(list.what+" name", nameKind, v.Name) {
				return false
			}
			kind := KindHeaderValue
			if v.Type == StringRegex {
				kind = KindRegex
			}
			if !f(list.what+" "+v.Name, kind, v.Value) {
				return false
			}
		}
	}
	return true
}

// filterValues calls f with every value of a rule's or backend's filters.
func filterValues(fl *Filters, where string, f func(field, kind, s string) bool) bool {
	for _, hm := range []struct {
		name string
		m    *HeaderModifier
	}{{"requestHeaderModifier", fl.RequestHeaders}, {"responseHeaderModifier", fl.ResponseHeaders}} {
		if hm.m == nil {
			continue
		}
		for _, h := range append(append([]Header(nil), hm.m.Set...), hm.m.Add...) {
			if !f(where+hm.name+" name", KindFilterHeaderName, h.Name) || !f(where+hm.name+" "+h.Name, KindFilterHeaderValue, h.Value) {
				return false
			}
		}
		for _, n := range hm.m.Remove {
			if !f(where+hm.name+" remove", KindFilterHeaderName, n) {
				return false
			}
		}
	}
	path := func(what string, p *PathModifier) bool {
		if p == nil || (p.Type == ReplacePrefixMatch && p.Value == "") {
			return true
		}
		return f(where+what+" path", KindFilterPath, p.Value)
	}
	if rd := fl.Redirect; rd != nil && !path("requestRedirect", rd.Path) {
		return false
	}
	if rw := fl.Rewrite; rw != nil && !path("urlRewrite", rw.Path) {
		return false
	}
	return true
}

// unexpressed returns why ok cannot write rule r (its matches are in
// matches), or nil.
func unexpressed(r *Rule, matches []Match, ok func(kind, s string) bool, why func(kind, s string) string) *Unexpressed {
	var u *Unexpressed
	check := func(match bool) func(field, kind, s string) bool {
		return func(field, kind, s string) bool {
			if ok(kind, s) {
				return true
			}
			u = &Unexpressed{Field: field, Value: s, Match: match, HTTP: !HTTPExpresses(kind, s)}
			if u.HTTP {
				u.Why = HTTPWhy(kind)
			} else {
				u.Why = why(kind, s)
			}
			return false
		}
	}
	for _, mt := range matches {
		if !matchValues(mt, check(true)) {
			return u
		}
	}
	if !filterValues(&r.Filters, "", check(false)) {
		return u
	}
	for _, b := range r.Backends {
		if !filterValues(&b.Filters, fmt.Sprintf("backendRef %s ", b.Service), check(false)) {
			return u
		}
	}
	return nil
}

// ForTarget returns the model target b writes, and the rules of m it does
// not write with why (nil when it writes every rule, and then the model is m
// itself). A rule with a value that b's format (Expresser) or HTTP cannot
// carry is made dead in the copy: no backends and no filters, so that b
// answers 500 for the requests it still matches, and a match b cannot
// write is left out (those requests reach the rules after it). Every
// other target writes the rule as it is. Run gives every feature of such a
// rule the Unexpressed decision, on b only.
func ForTarget(m *Model, b Backend) (*Model, map[*Rule]*Unexpressed) {
	ok := HTTPExpresses
	if e, is := b.(Expresser); is {
		ok = func(kind, s string) bool { return HTTPExpresses(kind, s) && e.Expresses(kind, s) }
	}
	why := func(kind, _ string) string { return "the target's format has no way to write this " + kind }
	if w, is := b.(ExpressWhy); is {
		why = w.NotExpressed
	}
	matches := map[*Rule][]Match{}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				matches[rm.Rule] = append(matches[rm.Rule], rm.Match)
			}
		}
	}
	for _, a := range m.Mesh {
		for _, rm := range a.Routes {
			matches[rm.Rule] = append(matches[rm.Rule], rm.Match)
		}
	}
	var bad map[*Rule]*Unexpressed
	for _, r := range b.Scope().rules(m) {
		if u := unexpressed(r, matches[r], ok, why); u != nil {
			if bad == nil {
				bad = map[*Rule]*Unexpressed{}
			}
			bad[r] = u
		}
	}
	if bad == nil {
		return m, nil
	}
	rules := map[*Rule]*Rule{}
	rule := func(r *Rule) *Rule {
		if _, isBad := bad[r]; !isBad {
			return r
		}
		if c, done := rules[r]; done {
			return c
		}
		c := *r
		c.Backends, c.Filters, c.Invalid, c.NoBackendRefs = nil, Filters{}, nil, true
		rules[r] = &c
		return &c
	}
	keep := func(rm *RouteMatch) bool {
		_, isBad := bad[rm.Rule]
		return !isBad || matchValues(rm.Match, func(_, kind, s string) bool { return ok(kind, s) })
	}
	routes := func(in []*RouteMatch) []*RouteMatch {
		out := make([]*RouteMatch, 0, len(in))
		for _, rm := range in {
			if keep(rm) {
				out = append(out, &RouteMatch{Match: rm.Match, Rule: rule(rm.Rule)})
			}
		}
		return out
	}
	out := &Model{CertSources: m.CertSources, Skipped: m.Skipped, RouteCount: m.RouteCount, RuleCount: m.RuleCount,
		Sources: m.Sources, Effective: m.Effective, Policies: m.Policies, Notes: m.Notes}
	if ReadsRouteObjects(b) {
		// Only such a target reads them; another's run may go on while
		// they are let go of (ReadsRouteObjects).
		out.HTTPRoutes = m.HTTPRoutes
	}
	listeners := map[*Listener]*Listener{}
	for _, l := range m.Listeners {
		c := *l
		c.VirtualHosts = nil
		for _, vh := range l.VirtualHosts {
			v := *vh
			v.Routes = routes(vh.Routes)
			c.VirtualHosts = append(c.VirtualHosts, &v)
		}
		listeners[l] = &c
		out.Listeners = append(out.Listeners, &c)
	}
	// A rule none of whose matches is written is left out: nothing of it
	// is in the configuration.
	placed := map[*Rule]bool{}
	for _, l := range out.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				placed[rm.Rule] = true
			}
		}
	}
	for _, a := range m.Mesh {
		for _, rm := range a.Routes {
			if keep(rm) {
				placed[rule(rm.Rule)] = true
			}
		}
	}
	kept := func(r *Rule) bool {
		_, isBad := bad[r]
		return !isBad || placed[rule(r)]
	}
	for _, r := range m.Rules {
		if kept(r) {
			out.Rules = append(out.Rules, rule(r))
		}
	}
	for _, r := range m.MeshRules {
		if kept(r) {
			out.MeshRules = append(out.MeshRules, rule(r))
		}
	}
	for _, a := range m.Mesh {
		c := *a
		c.Routes = routes(a.Routes)
		out.Mesh = append(out.Mesh, &c)
	}
	for _, g := range m.ConnectionTimeouts {
		c := *g
		c.Listeners, c.Rules = nil, nil
		for _, l := range g.Listeners {
			c.Listeners = append(c.Listeners, listeners[l])
		}
		for _, r := range g.Rules {
			if kept(r) {
				c.Rules = append(c.Rules, rule(r))
			}
		}
		out.ConnectionTimeouts = append(out.ConnectionTimeouts, &c)
	}
	return out, bad
}

// unwrittenFindings replaces the findings of each rule of m in scope that
// a target did not write (ForTarget) by one per feature of the rule as
// the route gives it (unwrittenFeatures), each with the rule's
// Unexpressed decision.
func unwrittenFindings(m *Model, scope Scope, fs []Finding, unwritten map[*Rule]*Unexpressed) []Finding {
	type key struct {
		route string
		index int
	}
	drop := map[key]bool{}
	for r := range unwritten {
		drop[key{r.Route, r.Index}] = true
	}
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		if f.Gateway != "" || !drop[key{f.Route, f.Rule}] {
			out = append(out, f)
		}
	}
	for _, r := range scope.rules(m) {
		if u, ok := unwritten[r]; ok {
			for _, feat := range unwrittenFeatures(r) {
				out = append(out, Record(r, feat, u.Decision()))
			}
		}
	}
	return out
}

// unwrittenFeatures are the features of a rule a target does not write:
// its own, and backendRefs, so that even a rule that sets nothing else has
// a finding that says its requests are not served there.
func unwrittenFeatures(r *Rule) []Feature {
	fs := r.Features()
	if !slices.Contains(fs, FeatureBackendRefs) {
		fs = append([]Feature{FeatureBackendRefs}, fs...)
	}
	return fs
}

// unwrittenDropped drops the target's notes about the rules it did not
// write: they speak of the dead copy ForTarget made ("it has no
// backendRefs"), not of the rule; unwrittenNotes says what became of it.
func unwrittenDropped(notes []Note, unwritten map[*Rule]*Unexpressed) []Note {
	objects := map[string]bool{}
	for r := range unwritten {
		objects[RuleObject(r)] = true
	}
	out := notes[:0:0]
	for _, n := range notes {
		if !objects[n.Object] {
			out = append(out, n)
		}
	}
	return out
}

// unwrittenNotes warn of each rule a target did not write, in the order
// of the model's rules.
func unwrittenNotes(m *Model, unwritten map[*Rule]*Unexpressed) []Note {
	var out []Note
	for _, rules := range [][]*Rule{m.Rules, m.MeshRules} {
		for _, r := range rules {
			if u, ok := unwritten[r]; ok {
				what := "the requests it matches are answered 500"
				if u.Match {
					what = "that match is left out (its requests reach the rules after it), and the rule's other matches, if any, are answered 500"
				}
				who := "the target's format"
				if u.HTTP {
					who = "HTTP"
				}
				out = append(out, Warning(RuleObject(r), "%s cannot carry the %s %s: %s", who, u.Field, QuoteShort(u.Value), what))
			}
		}
	}
	return out
}

// PortableWhy is the why of a value a target writes only from the
// portable grammar (Portable): what gwretry writes there.
func PortableWhy(kind string) string {
	return "gwretry writes a " + kind + " for this target only as " + allowedText(kind)
}

// RE2Why is the why of a regular expression RE2 does not compile.
const RE2Why = "not a regular expression RE2 compiles"
