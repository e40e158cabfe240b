package haproxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxytech/client-native/v5/config-parser/parsers/http/actions"
	"github.com/haproxytech/client-native/v5/config-parser/types"

	"github.com/gwretry/gwretry/translate"
)

// headerOp is one unconditional set-header, add-header or del-header rule
// as HAProxy runs it.
type headerOp struct {
	op, name, value string
}

// filterView is what a backend's http-request and http-after-response
// rules do to the requests and responses, as read from the file.
type filterView struct {
	request   []headerOp
	response  []headerOp
	paths     []types.Action
	redirects []*actions.Redirect
}

// requestAction records the filter rules among the http-request rules; ok
// is false for other actions.
func (f *filterView) requestAction(a types.Action) (ok bool, err error) {
	switch a := a.(type) {
	case *actions.SetHeader, *actions.AddHeader, *actions.DelHeader:
		op, err := readHeaderOp(a)
		if err == nil && op != nil {
			f.request = append(f.request, *op)
		}
		return true, err
	case *actions.SetPath:
		if a.Cond != "" {
			return true, fmt.Errorf("http-request set-path %s %s: condition not understood", a.Cond, a.CondTest)
		}
		f.paths = append(f.paths, a)
		return true, nil
	case *actions.ReplacePath:
		if a.Cond != "" {
			return true, fmt.Errorf("http-request replace-path %s %s: condition not understood", a.Cond, a.CondTest)
		}
		f.paths = append(f.paths, a)
		return true, nil
	case *actions.Redirect:
		f.redirects = append(f.redirects, a)
		return true, nil
	}
	return false, nil
}

// readHeaderOp reads one header rule; a conditional one is not counted
// (it may not apply to every request).
func readHeaderOp(a types.Action) (*headerOp, error) {
	var op headerOp
	var cond string
	name := func(s string) string {
		if n, ok := readWord(s); ok {
			return n
		}
		return "<unreadable " + s + ">"
	}
	switch a := a.(type) {
	case *actions.SetHeader:
		op, cond = headerOp{op: "set", name: name(a.Name), value: fmtValue(a.Fmt)}, a.Cond
	case *actions.AddHeader:
		op, cond = headerOp{op: "add", name: name(a.Name), value: fmtValue(a.Fmt)}, a.Cond
	case *actions.DelHeader:
		if a.Method != "" {
			return nil, fmt.Errorf("del-header %s -m %s: not understood", a.Name, a.Method)
		}
		op, cond = headerOp{op: "del", name: name(a.Name)}, a.Cond
	default:
		return nil, fmt.Errorf("%T is not a header rule", a)
	}
	if cond != "" {
		return nil, nil
	}
	return &op, nil
}

// fmtValue reads a log-format word that should be a constant text: the
// word as HAProxy's tokenizer reads it (readWord), then log-format's "%%"
// as '%'. Anything else (a sample fetch, a log variable, an environment
// variable, several words) is returned marked, which no Gateway API value
// equals.
func fmtValue(s string) string {
	w, ok := readWord(s)
	if !ok {
		return "<unreadable " + s + ">"
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '%' {
			b.WriteByte(w[i])
			continue
		}
		if i+1 < len(w) && w[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		return "<dynamic " + s + ">"
	}
	return b.String()
}

// foldHeaders returns the header modifier that ops amount to, run in
// order: a set or a delete undoes every earlier rule for that name
// (case-insensitively); adds accumulate.
func foldHeaders(ops []headerOp) *translate.HeaderModifier {
	var live []headerOp
	for _, o := range ops {
		if o.op != "add" {
			live = slices.DeleteFunc(live, func(p headerOp) bool { return strings.EqualFold(p.name, o.name) })
		}
		live = append(live, o)
	}
	if len(live) == 0 {
		return nil
	}
	hm := &translate.HeaderModifier{}
	for _, o := range live {
		switch o.op {
		case "set":
			hm.Set = append(hm.Set, translate.Header{Name: o.name, Value: o.value})
		case "add":
			hm.Add = append(hm.Add, translate.Header{Name: o.name, Value: o.value})
		case "del":
			hm.Remove = append(hm.Remove, o.name)
		}
	}
	return hm
}

// filters derives the rule's filters in the model's terms. The model
// gives the rule's PathPrefix match, which a replace-path must replace,
// and whether the rule has a URLRewrite hostname, which is then the last
// set-header Host.
func (f filterView) filters(m *translate.Model, r *translate.Rule) (translate.Filters, error) {
	var out translate.Filters
	out.ResponseHeaders = foldHeaders(f.response)
	path, err := f.pathModifier(m, r)
	if err != nil {
		return out, err
	}
	if len(f.redirects) > 0 {
		rd, err := readRedirect(f.redirects, r)
		if err != nil {
			return out, err
		}
		rd.Path = path
		out.Redirect = rd
		return out, nil
	}
	out.RequestHeaders = foldHeaders(f.request)
	if out.RequestHeaders == nil && r.Filters.RequestHeaders != nil {
		out.RequestHeaders = &translate.HeaderModifier{} // nothing, as an empty filter
	}
	host := ""
	if rw := r.Filters.Rewrite; rw != nil && rw.Hostname != "" && out.RequestHeaders != nil {
		// The Host that the backend receives is the rewrite's: it is the
		// set-header Host that remains once every rule has run.
		hm := out.RequestHeaders
		if i := slices.IndexFunc(hm.Set, func(h translate.Header) bool { return strings.EqualFold(h.Name, "host") }); i >= 0 {
			host = hm.Set[i].Value
			hm.Set = slices.Delete(hm.Set, i, i+1)
		}
		if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
			out.RequestHeaders = nil
		}
	}
	if path != nil || host != "" || (r.Filters.Rewrite != nil && *r.Filters.Rewrite == translate.Rewrite{}) {
		// An empty URLRewrite changes nothing, as the configuration.
		out.Rewrite = &translate.Rewrite{Hostname: host, Path: path}
	}
	return out, nil
}

// pathModifier reads the one set-path or replace-path rule.
func (f filterView) pathModifier(m *translate.Model, r *translate.Rule) (*translate.PathModifier, error) {
	switch len(f.paths) {
	case 0:
		return nil, nil
	case 1:
	default:
		return &translate.PathModifier{Type: translate.PathModifierType(fmt.Sprintf("%d path rules in a row", len(f.paths)))}, nil
	}
	switch a := f.paths[0].(type) {
	case *actions.SetPath:
		v := fmtValue(a.Fmt)
		return &translate.PathModifier{Type: translate.ReplaceFullPath, Value: v}, nil
	case *actions.ReplacePath:
		return readReplacePath(m, r, a.MatchRegex, fmtValue(a.ReplaceFmt)), nil
	}
	return nil, fmt.Errorf("%T is not a path rule", f.paths[0])
}

// readReplacePath reads a replace-path of the forms prefixRewrite writes
// (repl as fmtValue reads its log-format string):
// "^P/?(.*)" to "/\1" replaces prefix P by "", "^P(.*)" to "R\1" (R a
// path) replaces it by R. P must be the rule's PathPrefix match; anything
// else is returned as a path modifier of an unknown type, which no model
// value equals.
func readReplacePath(m *translate.Model, r *translate.Rule, regex, repl string) *translate.PathModifier {
	other := &translate.PathModifier{Type: translate.PathModifierType("replace-path " + regex + " " + repl)}
	body, ok := strings.CutPrefix(regex, "^")
	if !ok {
		return other
	}
	var lit, value string
	if l, ok := strings.CutSuffix(body, "/?(.*)"); ok && repl == `/\1` {
		lit = l
	} else if l, ok := strings.CutSuffix(body, "(.*)"); ok {
		v, ok := strings.CutSuffix(repl, `\1`)
		if !ok || !strings.HasPrefix(v, "/") || strings.Contains(v, `\`) {
			return other
		}
		lit, value = l, v
	} else {
		return other
	}
	p, ok := unRegexLiteral(lit)
	want, one := matchedPrefix(m, r)
	if !ok || !one || p != want {
		return other
	}
	return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: value}
}

// matchedPrefix is the prefix the Gateway API's ReplacePrefixMatch
// replaces for every request of rule r: its PathPrefix match, trailing '/'
// trimmed, when every match of the rule on every listener is a PathPrefix
// of that one value; one is false otherwise (no replace-path can then be
// the filter).
func matchedPrefix(m *translate.Model, r *translate.Rule) (prefix string, one bool) {
	for i, p := range m.PlacementsOf(r) {
		mt := p.Match.Match
		v := strings.TrimRight(mt.Path, "/")
		if mt.PathType != translate.PathPrefix || (i > 0 && v != prefix) {
			return "", false
		}
		prefix, one = v, true
	}
	return prefix, one
}

// unRegexLiteral reads a regular expression made of letters, digits, '/'
// and one-character bracket expressions as the literal it matches.
func unRegexLiteral(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == '[' && i+2 < len(s) && s[i+2] == ']' && s[i+1] != '^' && s[i+1] != '\\':
			b.WriteByte(s[i+1])
			i += 2
		default:
			return "", false
		}
	}
	return b.String(), true
}

// redirectContext is one kind of request a redirect line may see.
type redirectContext struct {
	tls  bool
	port int
}

// probeHost stands for the request's host when a Location is evaluated.
const probeHost = "probe.invalid"

// readRedirect evaluates the redirect lines, in order, for requests over
// HTTP and HTTPS arriving on ports 80, 443 and 8080, and derives the
// redirect in the model's terms: a scheme, host or port that follows the
// request is "" (0 for the port when it is what the Gateway API derives).
func readRedirect(lines []*actions.Redirect, r *translate.Rule) (*translate.Redirect, error) {
	type result struct {
		scheme, host string
		port, code   int
	}
	var res []result
	var ctxs []redirectContext
	for _, tls := range []bool{false, true} {
		for _, port := range []int{80, 443, 8080} {
			c := redirectContext{tls: tls, port: port}
			ctxs = append(ctxs, c)
			var got *result
			for _, a := range lines {
				hold, err := condHolds(a.Cond, a.CondTest, c)
				if err != nil {
					return nil, err
				}
				if !hold {
					continue
				}
				if a.Type != "prefix" || a.Option != "" {
					return nil, fmt.Errorf("http-request redirect %s %s %s: not understood", a.Type, a.Value, a.Option)
				}
				scheme, host, port, err := evalPrefix(a.Value, c)
				if err != nil {
					return nil, err
				}
				code := 302
				if a.Code != "" {
					if code, err = strconv.Atoi(a.Code); err != nil {
						return nil, fmt.Errorf("http-request redirect code %q", a.Code)
					}
				}
				got = &result{scheme, host, port, code}
				break
			}
			if got == nil {
				// Not every request is redirected: no model value says so.
				return &translate.Redirect{Scheme: "(only some requests)"}, nil
			}
			res = append(res, *got)
		}
	}
	rd := &translate.Redirect{}
	reqScheme := func(c redirectContext) string {
		if c.tls {
			return "https"
		}
		return "http"
	}
	all := func(f func(i int) bool) bool {
		for i := range res {
			if !f(i) {
				return false
			}
		}
		return true
	}
	switch {
	case all(func(i int) bool { return res[i].scheme == reqScheme(ctxs[i]) }):
	case all(func(i int) bool { return res[i].scheme == res[0].scheme }):
		rd.Scheme = res[0].scheme
	default:
		rd.Scheme = "(varies)"
	}
	switch {
	case all(func(i int) bool { return res[i].host == probeHost }):
	case all(func(i int) bool { return res[i].host == res[0].host }):
		rd.Hostname = res[0].host
	default:
		rd.Hostname = "(varies)"
	}
	derived := func(i int) int {
		if rd.Scheme != "" {
			return defaultPort(rd.Scheme)
		}
		return ctxs[i].port
	}
	switch {
	case (r.Filters.Redirect == nil || r.Filters.Redirect.Port == 0) && all(func(i int) bool { return res[i].port == derived(i) }):
	case all(func(i int) bool { return res[i].port == res[0].port }):
		rd.Port = res[0].port
	default:
		rd.Port = -1
	}
	if all(func(i int) bool { return res[i].code == res[0].code }) {
		rd.StatusCode = res[0].code
	} else {
		rd.StatusCode = -1
	}
	return rd, nil
}

// condHolds evaluates the conditions gwretry writes on redirect lines: a
// conjunction of { ssl_fc } and { dst_port N }.
func condHolds(cond, test string, c redirectContext) (bool, error) {
	if cond == "" {
		return true, nil
	}
	bad := fmt.Errorf("http-request redirect %s %s: condition not understood", cond, test)
	if cond != "if" {
		return false, bad
	}
	w := strings.Fields(test)
	hold := true
	for len(w) > 0 {
		switch {
		case len(w) >= 3 && w[0] == "{" && w[1] == "ssl_fc" && w[2] == "}":
			hold = hold && c.tls
			w = w[3:]
		case len(w) >= 4 && w[0] == "{" && w[1] == "dst_port" && w[3] == "}":
			n, err := strconv.Atoi(w[2])
			if err != nil {
				return false, bad
			}
			hold = hold && c.port == n
			w = w[4:]
		default:
			return false, bad
		}
	}
	return hold, nil
}

// evalPrefix evaluates a redirect prefix "scheme://host[:port]" whose only
// samples are the request's host without port and dst_port, and returns
// its parts with the port made explicit.
func evalPrefix(v string, c redirectContext) (scheme, host string, port int, err error) {
	s := strings.ReplaceAll(v, hostWithoutPort, probeHost)
	s = strings.ReplaceAll(s, listenerPort, strconv.Itoa(c.port))
	if strings.ContainsAny(s, `%\"`) {
		return "", "", 0, fmt.Errorf("http-request redirect prefix %s: not understood", v)
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "http" && scheme != "https") || rest == "" || strings.Contains(rest, "/") {
		return "", "", 0, fmt.Errorf("http-request redirect prefix %s: not scheme://host[:port]", v)
	}
	host, p, hasPort := strings.Cut(rest, ":")
	port = defaultPort(scheme)
	if hasPort {
		if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
			return "", "", 0, fmt.Errorf("http-request redirect prefix %s: port %q", v, p)
		}
	}
	return scheme, host, port, nil
}
