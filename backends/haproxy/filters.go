package haproxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
	"github.com/haproxytech/client-native/v5/config-parser/parsers/http/actions"
	"github.com/haproxytech/client-native/v5/config-parser/types"
)

// hostWithoutPort is the log-format expression of the request's host
// without its port: Host "a.example.com:8080" gives "a.example.com", an
// IPv6 literal "[::1]:8080" gives "[::1]".
const hostWithoutPort = "%[req.hdr(host),regsub(:[0-9]*$,)]"

// listenerPort is the log-format expression of the port the request
// arrived on: the listener's port, which the frontend binds.
const listenerPort = "%[dst_port]"

// tlsCond and the port conditions select the redirect line that applies
// when the redirect keeps the request's scheme or derives its port.
const tlsCond = "{ ssl_fc }"

// filterPlan is a rule's filters as HAProxy rules of its backend.
type filterPlan struct {
	// request are the http-request rules that change the forwarded
	// request (headers, then the URL rewrite), after the retry rules.
	request []types.Action
	// redirect are the http-request rules of a rule that redirects: the
	// path change, then the redirect lines, tried in order.
	redirect []types.Action
	// response are the http-after-response rules (response headers).
	response []types.Action
	// prefixUnknown: a ReplacePrefixMatch could not be written because
	// the rule has no single PathPrefix match (a path match of another
	// type, several prefixes, or no generated listener).
	prefixUnknown bool
}

// rulePrefix returns the PathPrefix of the rule's matches, trailing '/'
// trimmed, when all its matches on every listener are one PathPrefix; else
// ok is false.
func rulePrefix(m *translate.Model, r *translate.Rule) (prefix string, ok bool) {
	var paths []string
	for _, p := range m.PlacementsOf(r) {
		if p.Match.Match.PathType != translate.PathPrefix {
			return "", false
		}
		paths = append(paths, strings.TrimRight(p.Match.Match.Path, "/"))
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if len(paths) != 1 {
		return "", false
	}
	return paths[0], true
}

// planFilters writes the rule-level filters of r. A dead rule gets none
// (it answers 500 before any could apply); a rule that redirects gets its
// redirect and response headers only (it forwards nothing).
func planFilters(m *translate.Model, r *translate.Rule, ck *tokenChecker) filterPlan {
	var p filterPlan
	fl := &r.Filters
	if r.Dead() {
		return p
	}
	if fl.ResponseHeaders != nil {
		p.response = headerActions(fl.ResponseHeaders, ck)
	}
	if rd := fl.Redirect; rd != nil && !r.Forwards() {
		if rd.Path != nil {
			a, ok := pathAction(m, r, rd.Path, ck)
			if !ok {
				p.prefixUnknown = true
			} else {
				p.redirect = append(p.redirect, a)
			}
		}
		p.redirect = append(p.redirect, redirectLines(rd, ck)...)
		return p
	}
	if fl.RequestHeaders != nil {
		p.request = headerActions(fl.RequestHeaders, ck)
	}
	if rw := fl.Rewrite; rw != nil {
		if rw.Path != nil {
			a, ok := pathAction(m, r, rw.Path, ck)
			if !ok {
				p.prefixUnknown = true
			} else {
				p.request = append(p.request, a)
			}
		}
		if rw.Hostname != "" {
			p.request = append(p.request, &actions.SetHeader{Name: "Host", Fmt: quoteFmt(formatWord(ck, "rewrite hostname", rw.Hostname))})
		}
	}
	return p
}

// headerActions removes, then sets, then adds headers.
func headerActions(hm *translate.HeaderModifier, ck *tokenChecker) []types.Action {
	var out []types.Action
	for _, n := range hm.Remove {
		out = append(out, &actions.DelHeader{Name: headerName(ck, n)})
	}
	for _, h := range hm.Set {
		out = append(out, &actions.SetHeader{Name: headerName(ck, h.Name), Fmt: headerFmt(h, ck)})
	}
	for _, h := range hm.Add {
		out = append(out, &actions.AddHeader{Name: headerName(ck, h.Name), Fmt: headerFmt(h, ck)})
	}
	return out
}

// headerName writes a header name a filter sets, adds or removes: a
// plain word when it is one, else in strong quotes (quoteWord: the API's
// '!#$%&\'*+^`|~' too). The name is no log-format string: HAProxy reads
// '%' and '$' in it as themselves.
func headerName(ck *tokenChecker, n string) string {
	if checkWord(n) == nil {
		return ck.word("header name", n)
	}
	if err := translate.CheckValue(translate.KindFilterHeaderName, n); err != nil {
		ck.fail(err) // not an HTTP token
	}
	if err := checkQuotable(n); err != nil {
		ck.fail(fmt.Errorf("header name: %w", err))
	}
	return quoteWord(n)
}

// headerFmt writes a header value as a log-format string that HAProxy
// reads as the text itself: each '%' doubled (log-format's escape), in
// single quotes (strong quoting: no escape, no '$' expansion, no comment
// or word break inside), a single quote written as '\” (close, an escaped
// quote, reopen). translate.KindFilterHeaderValue allows printable ASCII.
func headerFmt(h translate.Header, ck *tokenChecker) string {
	if err := checkText(h.Value); err != nil {
		ck.fail(fmt.Errorf("header %s value: %w", h.Name, err))
	}
	return textFmt(h.Value)
}

// textFmt is the log-format word for the text s (see headerFmt).
func textFmt(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// formatWord checks a value written into a log-format string (a path, a
// hostname): one plain word without '%' (a sample or a log variable) or
// '$' (an environment variable in double quotes).
func formatWord(ck *tokenChecker, where, s string) string {
	if strings.ContainsAny(s, "%$") {
		ck.fail(fmt.Errorf("%s: value %q contains '%%' or '$'", where, shorten(s)))
	}
	return ck.word(where, s)
}

// pathFmt writes a path, then suffix (replace-path's \1 or nothing),
// as a log-format string in strong quotes (textFmt): '%' doubled, '\”
// as '\”, and '$', ';' and the rest as they are (HAProxy expands no
// variable in single quotes, and reads a backslash in them as itself, so
// replace-path's regex engine gets \1). Its own check: the path is one
// HTTP carries (translate.HTTPExpresses: no control character, blank,
// quote, '#' or backslash).
func pathFmt(ck *tokenChecker, where, path, suffix string) string {
	if !translate.HTTPExpresses(translate.KindFilterPath, path) {
		ck.fail(fmt.Errorf("%s: %q is not a path HTTP carries", where, shorten(path)))
	}
	if err := checkQuotable(path + suffix); err != nil {
		ck.fail(fmt.Errorf("%s: %w", where, err))
	}
	return textFmt(path + suffix)
}

func quoteFmt(s string) string { return `"` + s + `"` }

// pathAction is set-path for ReplaceFullPath and replace-path for
// ReplacePrefixMatch; both keep the query string. ok is false when the
// rule's prefix is not known.
func pathAction(m *translate.Model, r *translate.Rule, pm *translate.PathModifier, ck *tokenChecker) (_ types.Action, ok bool) {
	switch pm.Type {
	case translate.ReplaceFullPath:
		return &actions.SetPath{Fmt: pathFmt(ck, "rewrite path", pm.Value, "")}, true
	case translate.ReplacePrefixMatch:
		prefix, ok := rulePrefix(m, r)
		if !ok {
			return nil, false
		}
		value := strings.TrimRight(pm.Value, "/")
		if prefix != "" {
			ck.pattern("path prefix", prefix)
		}
		regex, repl := prefixRewrite(prefix, value)
		return &actions.ReplacePath{MatchRegex: ck.word("path prefix regular expression", regex),
			ReplaceFmt: pathFmt(ck, "path replacement", strings.TrimSuffix(repl, `\1`), `\1`)}, true
	}
	ck.fail(fmt.Errorf("unknown path modifier %q", pm.Type))
	return nil, true
}

// prefixRewrite returns replace-path's regular expression and replacement
// that replace the PathPrefix match prefix (trailing '/' trimmed) by
// repl (trailing '/' trimmed), element-wise as the Gateway API defines:
// the rest of the path is "" or starts with '/', and an empty result is
// "/". The match has already chosen the request, so the regular
// expression always matches.
func prefixRewrite(prefix, repl string) (regex, replacement string) {
	if repl == "" {
		return "^" + regexLiteral(prefix) + "/?(.*)", `/\1`
	}
	return "^" + regexLiteral(prefix) + "(.*)", repl + `\1`
}

// regexLiteral writes s as a regular expression that matches s: every
// character but letters, digits and '/' in a bracket expression, where it
// stands for itself (no backslash, which HAProxy's tokenizer would read).
func regexLiteral(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteString("[" + string(c) + "]")
		}
	}
	return b.String()
}

// redirectLines are the http-request redirect lines of rd. HAProxy's
// `redirect prefix` appends the request's path, as the earlier path rule
// left it, and its query string; the prefix is scheme://host[:port].
// When the scheme or port derives from the request, a line per case
// chooses it: the request's scheme by ssl_fc, the listener's port by
// dst_port, and the port is left out where it is the scheme's default.
func redirectLines(rd *translate.Redirect, ck *tokenChecker) []types.Action {
	host := hostWithoutPort
	if rd.Hostname != "" {
		host = formatWord(ck, "redirect hostname", rd.Hostname)
	}
	code := strconv.Itoa(rd.StatusCode)
	line := func(scheme, port, cond string) types.Action {
		a := &actions.Redirect{Type: "prefix", Value: scheme + "://" + host + port, Code: code}
		if cond != "" {
			a.Cond, a.CondTest = "if", cond
		}
		return a
	}
	fixed := func(scheme string, port int) string {
		if port == 0 || port == defaultPort(scheme) {
			return ""
		}
		return ":" + strconv.Itoa(port)
	}
	switch {
	case rd.Scheme != "":
		return []types.Action{line(rd.Scheme, fixed(rd.Scheme, rd.Port), "")}
	case rd.Port != 0:
		return []types.Action{line("https", fixed("https", rd.Port), tlsCond), line("http", fixed("http", rd.Port), "")}
	}
	return []types.Action{
		line("https", "", tlsCond+" { dst_port 443 }"),
		line("https", ":"+listenerPort, tlsCond),
		line("http", "", "{ dst_port 80 }"),
		line("http", ":"+listenerPort, ""),
	}
}

// filterDecision decides a rule-level filter feature that this backend
// writes; ok is false for the others (translate.Assess decides them
// NotTranslated).
func filterDecision(r *translate.Rule, feat translate.Feature, p filterPlan) (report.Decision, bool) {
	fl := &r.Filters
	switch feat {
	case translate.FeatureResponseHeaderModifier:
		if r.Dead() {
			return report.Decision{}, false
		}
		// The backends' responses, or the redirect, and HAProxy's own
		// answers for the rule (such as 503 or 504) reach the client with
		// these headers changed.
		return ownHeadersCaveat(headerDecision(fl.ResponseHeaders, "http-after-response"), fl.ResponseHeaders), true
	case translate.FeatureRequestHeaderModifier:
		if !r.Forwards() {
			return report.Decision{}, false
		}
		d := headerDecision(fl.RequestHeaders, "http-request")
		if rw := fl.Rewrite; rw != nil && rw.Hostname != "" && d.Status() == report.Honoured && fl.RequestHeaders.Touches("host") {
			d = d.With(report.NewCaveat(report.CaveatHostReplacedByRewrite, "hostname", rw.Hostname))
		}
		return ownHeadersCaveat(d, fl.RequestHeaders), true
	case translate.FeatureURLRewrite:
		if !r.Forwards() {
			return report.Decision{}, false
		}
		if p.prefixUnknown {
			return report.Decide(report.ReasonPrefixRewriteWithoutPrefixMatch), true
		}
		rw := fl.Rewrite
		var facts []string
		if rw.Path != nil {
			// Both keep the query string; replace-path replaces the
			// matched prefix element-wise.
			switch rw.Path.Type {
			case translate.ReplaceFullPath:
				facts = append(facts, "http-request set-path "+rw.Path.Value)
			case translate.ReplacePrefixMatch:
				facts = append(facts, "http-request replace-path")
			}
		}
		if rw.Hostname != "" {
			facts = append(facts, "http-request set-header Host "+rw.Hostname)
		}
		return report.Decide(report.ReasonConfigured).Set(strings.Join(facts, "; ")), true
	case translate.FeatureRequestRedirect:
		if r.Forwards() {
			return report.Decision{}, false
		}
		if p.prefixUnknown {
			return report.Decide(report.ReasonPrefixRewriteWithoutPrefixMatch), true
		}
		return report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("http-request redirect prefix code %d", fl.Redirect.StatusCode)), true
	case translate.FeatureRequestMirror:
		// HAProxy mirrors only through an external SPOE agent (such as
		// haproxytech/spoa-mirror), which gwretry does not set up.
		return report.Decide(report.ReasonNotExpressible), true
	}
	return report.Decision{}, false
}

// ownHeaders are the headers HAProxy's HTTP/1 layer writes itself when it
// forwards a request or a response (TestLiveHeadersHandledByHAProxy,
// HAProxy 2.6 and 3.0): Connection (a keep-alive value is dropped, close
// is added beside other values and after a removal, as option
// http-server-close asks) and the framing headers, which must describe
// the body HAProxy forwards (a removed Content-Length is replaced by
// HAProxy's framing, a changed one cuts or breaks the message).
var ownHeaders = []string{"connection", "content-length", "transfer-encoding"}

// ownHeadersCaveat adds to d, the decision of header modifier hm, the
// caveat naming the ownHeaders hm sets, adds or removes, lower-case in
// that list's order: HAProxy writes them itself when it forwards the
// request or response (a Connection of keep-alive is dropped, HAProxy
// adds its own Connection: close beside other values and after a
// removal, and Content-Length and Transfer-Encoding are its framing of
// the body it forwards).
func ownHeadersCaveat(d report.Decision, hm *translate.HeaderModifier) report.Decision {
	var own []string
	for _, n := range ownHeaders {
		if hm.Touches(n) {
			own = append(own, n)
		}
	}
	if len(own) == 0 {
		return d
	}
	return d.With(report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", strings.Join(own, ", ")))
}

// headerDecision decides a header modifier, written as keyword rules
// (http-request or http-after-response) that remove, then set, then add
// (add-header adds its value as another header line, which HTTP reads as
// the value appended after a comma).
func headerDecision(hm *translate.HeaderModifier, keyword string) report.Decision {
	var parts []string
	if len(hm.Remove) > 0 {
		parts = append(parts, keyword+" del-header "+strings.Join(hm.Remove, ", "))
	}
	if len(hm.Set) > 0 {
		parts = append(parts, keyword+" set-header "+headerNames(hm.Set))
	}
	if len(hm.Add) > 0 {
		parts = append(parts, keyword+" add-header "+headerNames(hm.Add))
	}
	d := report.Decide(report.ReasonConfigured).Set(strings.Join(parts, "; "))
	if names := headerConflicts(hm); len(names) > 0 {
		// HAProxy removes first, then sets, then adds, each in order, so a
		// later rule for the same name undoes an earlier one, where the
		// Gateway API leaves the outcome undefined.
		d = d.With(report.NewCaveat(report.CaveatHeaderRulesUndoEachOther, "headers", strings.Join(names, ", ")))
	}
	return d
}

func headerNames(hs []translate.Header) string {
	var n []string
	for _, h := range hs {
		n = append(n, h.Name)
	}
	return strings.Join(n, ", ")
}

// headerConflicts lists the header names that one rule of a modifier
// undoes for another (names compare case-insensitively): a name both
// removed and set or added, or set twice. Setting and adding one name,
// or adding it twice, is exact (more header lines). Each name is listed
// once, as the modifier first spells it.
func headerConflicts(hm *translate.HeaderModifier) (names []string) {
	removed, set, named := map[string]bool{}, map[string]bool{}, map[string]bool{}
	conflict := func(name string) {
		if k := strings.ToLower(name); !named[k] {
			named[k] = true
			names = append(names, name)
		}
	}
	for _, n := range hm.Remove {
		removed[strings.ToLower(n)] = true
	}
	for _, h := range hm.Set {
		k := strings.ToLower(h.Name)
		if removed[k] || set[k] {
			conflict(h.Name)
		}
		set[k] = true
	}
	for _, h := range hm.Add {
		if removed[strings.ToLower(h.Name)] {
			conflict(h.Name)
		}
	}
	return names
}
