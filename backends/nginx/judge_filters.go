package nginx

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// The judge's side of the filters: it reads what nginx does with a rule's
// requests and responses from the parsed directives (the location, its
// server and the http block's maps, split_clients and upstreams) and
// writes it in the model's terms. It takes from the model only what the
// Gateway API defines (the rule's match prefixes, its mirror backends'
// endpoints, to name them), never what the generator meant to write.

// filterScope is what the judge reads a rule's filters from.
type filterScope struct {
	// scopes are the location, its server and http, innermost first; the
	// server and http levels hold only their simple directives (leaves),
	// read once, so that looking a directive up does not walk every
	// location and server of the file for every rule.
	scopes []crossplane.Directives
	// server is the location's whole server block (its locations).
	server crossplane.Directives
	// blocks are the http-level map and split_clients blocks by the
	// variable they define.
	blocks map[string]*crossplane.Directive
	// servers are the server entries of each upstream.
	servers map[string][]string
	// consts are the http-level constants textArg uses, by variable.
	consts map[string]string
	// v is the nginx version the file is for.
	v version
	// tls: the server listens with ssl, so $scheme is https there.
	tls bool
}

// innermost returns every name directive of the innermost scope that has
// one: nginx inherits proxy_set_header, add_header, proxy_hide_header and
// mirror only into a level that has none of its own.
func innermost(scopes []crossplane.Directives, name string) crossplane.Directives {
	for _, s := range scopes {
		var out crossplane.Directives
		for _, d := range s {
			if d.Directive == name {
				out = append(out, d)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// requestHeaders reads proxy_set_header: "" removes a header, a literal
// sets it, a map that appends to $http_<name> adds to it. Host is the
// rewrite's hostname when literal; hostVar (hostMaps) passes the
// client's, and gives one to a request without it; without a Host
// directive nginx would send the upstream's name. The upgrade
// pass-through (upgradeHeaders) is no filter.
func (fs filterScope) requestHeaders() (hm *translate.HeaderModifier, host string, err error) {
	hm = &translate.HeaderModifier{}
	hostSet := false
	for _, d := range innermost(fs.scopes, "proxy_set_header") {
		if len(d.Args) != 2 {
			return nil, "", fmt.Errorf("proxy_set_header %q", d.Args)
		}
		name, val := d.Args[0], d.Args[1]
		text, isText := readTextArg(val, fs.consts)
		if strings.EqualFold(name, "host") {
			hostSet = true
			switch {
			case val == hostVar:
				if !fs.isHostVar() {
					return nil, "", fmt.Errorf("proxy_set_header Host %s: its maps are not gwretry's (the client's Host, else $host, else the server's address)", hostVar)
				}
			case val == "$http_host":
				return nil, "", fmt.Errorf("proxy_set_header Host $http_host: an HTTP/1.0 request without Host reaches the backend without one")
			case val == "":
				hm.Remove = append(hm.Remove, name)
			case isText:
				host = text
			default:
				return nil, "", fmt.Errorf("proxy_set_header Host %q", val)
			}
			continue
		}
		if judgedUpgradeHeader(name, val) {
			continue
		}
		switch {
		case val == "":
			hm.Remove = append(hm.Remove, name)
		case isText:
			hm.Set = append(hm.Set, translate.Header{Name: name, Value: text})
		default:
			added, ok := fs.appended(name, val)
			if !ok {
				// Something else: report it as set to the text, which no
				// Gateway API value can be.
				hm.Set = append(hm.Set, translate.Header{Name: name, Value: val})
				continue
			}
			hm.Add = append(hm.Add, translate.Header{Name: name, Value: added})
		}
	}
	if !hostSet {
		return nil, "", fmt.Errorf("no proxy_set_header Host: nginx sends the upstream's name as Host")
	}
	if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
		hm = nil
	}
	return hm, host, nil
}

// appended reads a map variable that is the client's header name with a
// value appended: map $http_<name> VAR { "" VALUE; default $http_<name>,VALUE; }
// (map tries no regex on an empty value, so the empty key is exact).
func (fs filterScope) appended(name, variable string) (string, bool) {
	b, ok := fs.blocks[variable]
	if !ok || b.Directive != "map" || len(b.Block) != 2 {
		return "", false
	}
	src := "$http_" + strings.ReplaceAll(strings.ToLower(name), "-", "_")
	if b.Args[0] != src || strings.ContainsAny(name, "_.") || !fs.v.JoinsHeaderLines {
		// Before 1.23.0 $http_<name> is only the first line of a
		// repeated header: the others are dropped, not appended to.
		return "", false
	}
	empty, def := b.Block[0], b.Block[1]
	if empty.Directive != "" || len(empty.Args) != 1 || def.Directive != "default" || len(def.Args) != 1 {
		return "", false
	}
	v := empty.Args[0]
	text, ok := readTextArg(v, fs.consts)
	if !ok || def.Args[0] != src+","+v {
		return "", false
	}
	return text, true
}

// nginxOwnHeader reports whether nginx writes a response header of this
// name itself, beside any add_header.
func nginxOwnHeader(name string) bool {
	return strings.EqualFold(name, "server") || strings.EqualFold(name, "date")
}

// responseHeaders reads add_header (with always: on every status) and
// proxy_hide_header: a hidden header added again is set, a hidden one
// alone removed.
func (fs filterScope) responseHeaders() *translate.HeaderModifier {
	hm := &translate.HeaderModifier{}
	hidden := map[string]string{}
	var order []string
	passed := passedHeaders(fs.scopes)
	for _, d := range innermost(fs.scopes, "proxy_hide_header") {
		// nginx writes its own Server and Date whatever the backend
		// sent: hiding the backend's removes nothing; and
		// proxy_pass_header of a name undoes its proxy_hide_header.
		if len(d.Args) == 1 && !nginxOwnHeader(d.Args[0]) && !passed[strings.ToLower(d.Args[0])] {
			n := strings.ToLower(d.Args[0])
			if _, ok := hidden[n]; !ok {
				order = append(order, n)
			}
			hidden[n] = d.Args[0]
		}
	}
	set := map[string]bool{}
	for _, d := range innermost(fs.scopes, "add_header") {
		if len(d.Args) != 3 || d.Args[2] != "always" {
			// Without always nginx adds it to a few statuses only.
			continue
		}
		text, ok := readTextArg(d.Args[1], fs.consts)
		if !ok {
			continue
		}
		h := translate.Header{Name: d.Args[0], Value: text}
		if _, ok := hidden[strings.ToLower(h.Name)]; ok && !nginxOwnHeader(h.Name) {
			hm.Set = append(hm.Set, h)
			set[strings.ToLower(h.Name)] = true
		} else {
			hm.Add = append(hm.Add, h)
		}
	}
	for _, n := range order {
		if !set[n] {
			hm.Remove = append(hm.Remove, hidden[n])
		}
	}
	if len(hm.Set)+len(hm.Add)+len(hm.Remove) == 0 {
		return nil
	}
	return hm
}

// locationRE splits a redirect's Location into scheme, host, port and path
// parts.
var locationRE = regexp.MustCompile(`^(\$scheme|http|https)://(\$host|[a-z0-9.-]+)(\$gw_redirect_port|:[0-9]+)?(.*)$`)

// redirect reads return CODE LOCATION; nil when the location does not
// redirect.
func (fs filterScope) redirect(code int, args []string, r *translate.Rule, prefixes []string) *translate.Redirect {
	switch code {
	case 301, 302, 303, 307, 308:
	default:
		return nil
	}
	if len(args) != 2 {
		return nil
	}
	m := locationRE.FindStringSubmatch(args[1])
	if m == nil {
		return &translate.Redirect{StatusCode: code, Hostname: "unreadable Location " + args[1]}
	}
	rd := &translate.Redirect{StatusCode: code}
	if m[1] != "$scheme" {
		rd.Scheme = m[1]
	}
	if m[2] != "$host" {
		rd.Hostname = m[2]
	}
	// The port the Location leads to: -1 for the listener's.
	defaultPort := func(scheme string) int {
		if scheme == "https" || (scheme == "" && fs.tls) {
			return 443
		}
		return 80
	}
	var eff int
	switch {
	case m[3] == redirectPortVar:
		eff = -1
		if !fs.isPortMap() {
			eff = -2 // unknown
		}
	case m[3] != "":
		eff, _ = strconv.Atoi(m[3][1:])
	default:
		eff = defaultPort(rd.Scheme)
	}
	want := r.Filters.Redirect
	wantEff := -1
	if want != nil {
		switch {
		case want.Port != 0:
			wantEff = want.Port
		case want.Scheme != "":
			wantEff = defaultPort(want.Scheme)
		}
	}
	switch {
	case want != nil && eff == wantEff:
		// Equivalent ways to write the same port: the model's.
		rd.Port = want.Port
	case eff == -1:
		rd.Port = 0
	case eff == -2:
		rd.Port = -1
	default:
		rd.Port = eff
	}
	path := m[4]
	switch {
	case path == "$request_uri":
	case strings.HasPrefix(path, "/") && fullPathOK(path, fs.consts):
		v, _ := readValueWith(path, "$is_args$args", fs.consts)
		rd.Path = &translate.PathModifier{Type: translate.ReplaceFullPath, Value: v}
	default:
		var wantPath *translate.PathModifier
		if want != nil {
			wantPath = want.Path
		}
		rd.Path = fs.prefixRedirect(path, args, prefixes, wantPath)
	}
	return rd
}

// fullPathOK reports whether a Location's path is a literal path (as
// textArg writes it) then the request's query ($is_args$args).
func fullPathOK(path string, consts map[string]string) bool {
	_, ok := readValueWith(path, "$is_args$args", consts)
	return ok
}

// isPortMap checks the map behind redirectPortVar: nothing for port 80
// (keyed on $server_port), or nothing for 80 on HTTP and 443 on HTTPS
// (keyed on $scheme:$server_port), and ":$server_port" for any other.
func (fs filterScope) isPortMap() bool {
	b, ok := fs.blocks[redirectPortVar]
	if !ok || len(b.Args) != 2 {
		return false
	}
	want := map[string]string{"80": "", "default": ":$server_port"}
	if b.Args[0] == "$scheme:$server_port" {
		want = map[string]string{"http:80": "", "https:443": "", "default": ":$server_port"}
	} else if b.Args[0] != "$server_port" {
		return false
	}
	if len(b.Block) != len(want) {
		return false
	}
	for _, e := range b.Block {
		if v, ok := want[e.Directive]; !ok || len(e.Args) != 1 || e.Args[0] != v {
			return false
		}
		delete(want, e.Directive)
	}
	return len(want) == 0
}

// unliteral reads a regex written by literal back into the text it
// matches; false when it is not such a literal.
func unliteral(re string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		switch {
		case c == '[' && i+2 < len(re) && re[i+2] == ']' && strings.IndexByte(".$()*+?{}|[", re[i+1]) >= 0:
			b.WriteByte(re[i+1])
			i += 2
		case strings.IndexByte(".$()*+?{}|[]^\\", c) >= 0:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// badPath is a path modifier whose value says what is wrong, which matches
// no Gateway API value.
func badPath(format string, args ...any) *translate.PathModifier {
	return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "<" + fmt.Sprintf(format, args...) + ">"}
}

// modelValue is value in the model's spelling when it is the model's
// ReplacePrefixMatch value less a trailing '/', which is ignored.
func modelValue(value string, want *translate.PathModifier) string {
	if want != nil && want.Type == translate.ReplacePrefixMatch && strings.TrimRight(want.Value, "/") == value {
		return want.Value
	}
	return value
}

// decodedPrefixes are prefixes as nginx decodes them.
func decodedPrefixes(prefixes []string) []string {
	out := make([]string, len(prefixes))
	for i, p := range prefixes {
		out[i] = decodedOrRaw(p)
	}
	return out
}

// prefixMap reads the map of $uri behind a prefix rewrite: one entry per
// prefix of the rule, decoded, longest first, each replacing exactly that
// prefix, element-wise, with the same value, and $uri itself by default.
// It returns the value, or why the map is not that.
func (fs filterScope) prefixMap(variable string, prefixes []string) (string, error) {
	b, ok := fs.blocks[variable]
	if !ok || b.Directive != "map" || b.Args[0] != "$uri" {
		return "", fmt.Errorf("no map of $uri defines %s", variable)
	}
	var seen []string
	value, haveValue := "", false
	exactFor := map[string]string{}
	defaultValue, haveDefault := "", false
	for _, e := range b.Block {
		if len(e.Args) != 1 {
			return "", fmt.Errorf("entry %q", e.Directive)
		}
		if e.Directive == "default" {
			defaultValue, haveDefault = e.Args[0], true
			continue
		}
		key, ok := strings.CutPrefix(e.Directive, "~")
		if !ok {
			return "", fmt.Errorf("entry %q is not a regex", e.Directive)
		}
		if mid, ok := cutBoth(key, "(?s)^", "(/.*)$"); ok {
			p, ok := unliteral(mid)
			if !ok {
				return "", fmt.Errorf("prefix regex %q", mid)
			}
			v, ok := readValueWith(e.Args[0], "$1", fs.consts)
			if !ok || (haveValue && v != value) {
				return "", fmt.Errorf("replacement %q", e.Args[0])
			}
			value, haveValue = v, true
			seen = append(seen, p)
			continue
		}
		if mid, ok := cutBoth(key, "^", "$"); ok {
			p, ok := unliteral(mid)
			if !ok {
				return "", fmt.Errorf("prefix regex %q", mid)
			}
			exactFor[p] = e.Args[0]
			continue
		}
		return "", fmt.Errorf("entry %q", e.Directive)
	}
	if !haveValue {
		return "", fmt.Errorf("no prefix entry")
	}
	for _, p := range seen {
		if p == "" {
			continue
		}
		if got, ok := readTextArg(exactFor[p], fs.consts); !ok || got != orRoot(value) {
			return "", fmt.Errorf("the path equal to prefix %s becomes %q, not %q", p, exactFor[p], orRoot(value))
		}
	}
	if !haveDefault || defaultValue != "$uri" {
		return "", fmt.Errorf("default %q", defaultValue)
	}
	// Every prefix of the rule, longest first (map tries regexes in
	// order), and no other.
	if want := decodedPrefixes(prefixes); !slices.Equal(seen, want) {
		return "", fmt.Errorf("prefixes %q, not %q", seen, want)
	}
	return value, nil
}

// readValueWith reads arg, a text (textArg) followed by suffix.
func readValueWith(arg, suffix string, consts map[string]string) (string, bool) {
	v, ok := strings.CutSuffix(arg, suffix)
	if !ok {
		return "", false
	}
	return readTextArg(v, consts)
}

// prefixIndex checks the map of $uri that says which of the rule's prefixes
// (decoded, longest first) nginx's normalised path begins with, element-wise:
// K from 1 for the K-th, "" for none.
func (fs filterScope) prefixIndex(variable string, prefixes []string) error {
	b, ok := fs.blocks[variable]
	if !ok || b.Directive != "map" || b.Args[0] != "$uri" {
		return fmt.Errorf("no map of $uri defines %s", variable)
	}
	want := decodedPrefixes(prefixes)
	if len(b.Block) != len(want)+1 {
		return fmt.Errorf("%s has %d entries, not one per prefix and a default", variable, len(b.Block))
	}
	for k, e := range b.Block[:len(want)] {
		mid, ok := cutBoth(e.Directive, "~(?s)^", "(/.*)?$")
		p, lit := unliteral(mid)
		if !ok || !lit || p != want[k] || len(e.Args) != 1 || e.Args[0] != strconv.Itoa(k+1) {
			return fmt.Errorf("%s: entry %q %q is not prefix %d, %q", variable, e.Directive, e.Args, k+1, want[k])
		}
	}
	if d := b.Block[len(want)]; d.Directive != "default" || len(d.Args) != 1 || d.Args[0] != "" {
		return fmt.Errorf("%s: the last entry is not default \"\"", variable)
	}
	return nil
}

// rawPath checks the map behind variable, of "INDEX:$request_uri" (INDEX a
// prefixIndex map): the path as the client sent it, whose K-th prefix as
// written is replaced by value, the rest and the query kept, when the
// normalised path begins with that K-th prefix; "" when the path as sent
// has a dot segment (rawDotSegment, tried first) or begins otherwise.
func (fs filterScope) rawPath(variable string, prefixes []string, value string) error {
	b, ok := fs.blocks[variable]
	if !ok || b.Directive != "map" {
		return fmt.Errorf("no map defines %s", variable)
	}
	index, ok := strings.CutSuffix(b.Args[0], ":$request_uri")
	if !ok || !strings.HasPrefix(index, "$") {
		return fmt.Errorf("%s maps %q, not a prefix index and the path as sent", variable, b.Args[0])
	}
	if err := fs.prefixIndex(index, prefixes); err != nil {
		return err
	}
	entries := b.Block
	if len(entries) < 2 || entries[0].Directive != rawDotSegment || len(entries[0].Args) != 1 || entries[0].Args[0] != "" {
		return fmt.Errorf("%s does not first leave out a path with a dot segment", variable)
	}
	entries = entries[1:]
	for k, pre := range prefixes {
		n := strconv.Itoa(k + 1)
		kinds := []struct{ tail, suffix, value string }{{"([?].*)?$", "$1", orRoot(value)}, {"(/[^?]*)([?].*)?$", "$1$2", value}}
		if pre == "" {
			kinds = kinds[1:]
		}
		for _, kind := range kinds {
			if len(entries) == 0 {
				return fmt.Errorf("%s has no entry for prefix %d, %q", variable, k+1, pre)
			}
			e := entries[0]
			entries = entries[1:]
			mid, ok := cutBoth(e.Directive, "~^"+n+":", kind.tail)
			p, lit := unliteral(mid)
			if !ok || !lit || p != pre || len(e.Args) != 1 {
				return fmt.Errorf("%s: entry %q is not prefix %d, %q, as written", variable, e.Directive, k+1, pre)
			}
			if v, ok := readValueWith(e.Args[0], kind.suffix, fs.consts); !ok || v != kind.value {
				return fmt.Errorf("%s: prefix %d becomes %q, not %q", variable, k+1, e.Args[0], kind.value+kind.suffix)
			}
		}
	}
	if len(entries) != 1 || entries[0].Directive != "default" || len(entries[0].Args) != 1 || entries[0].Args[0] != "" {
		return fmt.Errorf("%s: more entries, or no default \"\", after its prefixes", variable)
	}
	return nil
}

// rewritePhase returns the directives of the rewrite module at the top of
// a location, in the order nginx runs them.
func rewritePhase(ds crossplane.Directives) crossplane.Directives {
	var out crossplane.Directives
	for _, d := range ds {
		switch d.Directive {
		case "set", "if", "rewrite", "return", "break":
			out = append(out, d)
		}
	}
	return out
}

// isSet reports whether d is set VARIABLE VALUE.
func isSet(d *crossplane.Directive, variable string) (string, bool) {
	if d.Directive != "set" || len(d.Args) != 2 || d.Args[0] != variable {
		return "", false
	}
	return d.Args[1], true
}

// splitAlternatives splits a regex at the '|' that literal does not hold
// in a class.
func splitAlternatives(re string) []string {
	var out []string
	start := 0
	for i := 0; i < len(re); i++ {
		switch {
		case re[i] == '[' && i+2 < len(re) && re[i+2] == ']':
			i += 2
		case re[i] == '|':
			out = append(out, re[start:i])
			start = i + 1
		}
	}
	return append(out, re[start:])
}

// prefixRedirect reads the path of a prefix redirect: the location's
// rewrite phase is
//
//	set VAR ROOT$is_args$args;
//	if ($uri ~ "(?s)^(?:PREFIX|...)(/.*)$") { set VAR V$1$is_args$args; }
//	if (RAW) { set VAR RAW; }
//	return CODE ...VAR;
//
// (the normalised path, its prefix replaced and the rest escaped again,
// unless RAW, a rawPath map, has it from the path as sent), and nothing
// else. Anything else reads as a modifier that matches no Gateway API
// value.
func (fs filterScope) prefixRedirect(variable string, ret []string, prefixes []string, want *translate.PathModifier) *translate.PathModifier {
	ops := rewritePhase(fs.scopes[0])
	if len(ops) != 4 || ops[3].Directive != "return" || !slices.Equal(ops[3].Args, ret) {
		return badPath("the rewrite phase of the location is not set, if, if, return %s", strings.Join(ret, " "))
	}
	a, ok := isSet(ops[0], variable)
	root, okRoot := readValueWith(a, "$is_args$args", fs.consts)
	if !ok || !okRoot {
		return badPath("%s is not first set to a path and the query", variable)
	}
	norm := ops[1]
	if norm.Directive != "if" || len(norm.Args) != 3 || norm.Args[0] != "$uri" || norm.Args[1] != "~" || len(norm.Block) != 1 {
		return badPath("no if ($uri ~ ...) sets %s from the normalised path", variable)
	}
	alts, ok := cutBoth(norm.Args[2], "(?s)^(?:", ")(/.*)$")
	if !ok {
		return badPath("if regex %q", norm.Args[2])
	}
	var seen []string
	for _, alt := range splitAlternatives(alts) {
		p, ok := unliteral(alt)
		if !ok {
			return badPath("if regex %q", norm.Args[2])
		}
		seen = append(seen, p)
	}
	if want := decodedPrefixes(prefixes); !slices.Equal(seen, want) {
		return badPath("the if replaces prefixes %q, not %q", seen, want)
	}
	b, ok := isSet(norm.Block[0], variable)
	value, okValue := readValueWith(b, "$1$is_args$args", fs.consts)
	if !ok || !okValue {
		return badPath("the if sets %q", norm.Block[0].Args)
	}
	if root != orRoot(value) {
		return badPath("the path equal to a prefix becomes %q, not %q", root, orRoot(value))
	}
	raw := ops[2]
	if raw.Directive != "if" || len(raw.Args) != 1 || len(raw.Block) != 1 {
		return badPath("no if (RAW) sets %s from the path as sent", variable)
	}
	if v, ok := isSet(raw.Block[0], variable); !ok || v != raw.Args[0] {
		return badPath("if (%s) sets %q", raw.Args[0], raw.Block[0].Args)
	}
	if err := fs.rawPath(raw.Args[0], prefixes, value); err != nil {
		return badPath("%v", err)
	}
	return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: modelValue(value, want)}
}

// rewrite reads rewrite ^ PATH break and proxy_set_header Host. pass is
// the variable proxy_pass appends to the upstream's name, or "": it
// reports whether a prefix rewrite reads it as the path as sent.
func (fs filterScope) rewrite(host string, prefixes []string, want *translate.Rewrite, pass string) (*translate.Rewrite, bool) {
	rw := &translate.Rewrite{Hostname: host}
	usesPass := false
	for _, d := range innermost(fs.scopes[:1], "rewrite") {
		if len(d.Args) != 3 || d.Args[0] != "^" || d.Args[2] != "break" {
			rw.Path = &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "<rewrite " + strings.Join(d.Args, " ") + ">"}
			continue
		}
		if strings.HasPrefix(d.Args[1], "$") {
			var wantPath *translate.PathModifier
			if want != nil {
				wantPath = want.Path
			}
			rw.Path, usesPass = fs.prefixRewrite(d, pass, prefixes, wantPath)
		} else if v, ok := readTextArg(d.Args[1], fs.consts); ok {
			rw.Path = &translate.PathModifier{Type: translate.ReplaceFullPath, Value: v}
		} else {
			rw.Path = &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "<rewrite " + strings.Join(d.Args, " ") + ">"}
		}
	}
	if rw.Hostname == "" && rw.Path == nil {
		return nil, false
	}
	return rw, usesPass
}

// prefixRewrite reads a prefix rewrite: the location's rewrite phase is
//
//	set PATH RAW;
//	rewrite ^ MAP break;
//
// and nothing else, MAP a prefixMap, RAW a rawPath map with the same
// value, and proxy_pass appends PATH: nginx sends the path as sent, its
// prefix replaced, when RAW has it, else the normalised path MAP rewrote,
// escaped again, with the query. It reports whether it read pass as PATH.
func (fs filterScope) prefixRewrite(rw *crossplane.Directive, pass string, prefixes []string, want *translate.PathModifier) (*translate.PathModifier, bool) {
	ops := rewritePhase(fs.scopes[0])
	if pass == "" {
		return badPath("proxy_pass appends nothing: every path is rebuilt from the normalised one"), false
	}
	if len(ops) != 2 || ops[1] != rw {
		return badPath("the rewrite phase of the location is not set %s, rewrite", pass), false
	}
	raw, ok := isSet(ops[0], pass)
	if !ok {
		return badPath("%s is not set before the rewrite", pass), false
	}
	// proxy_pass appends PATH, set here: what it holds is read below.
	value, err := fs.prefixMap(rw.Args[1], prefixes)
	if err != nil {
		return badPath("%v", err), true
	}
	if err := fs.rawPath(raw, prefixes, value); err != nil {
		return badPath("%v", err), true
	}
	return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: modelValue(value, want)}, true
}

// mirrors reads the mirror directives: each names an internal exact
// location of the server that proxies to an upstream, for every request
// or for the share split_clients on $request_id leaves in.
func (fs filterScope) mirrors(r *translate.Rule) ([]*translate.Mirror, error) {
	var out []*translate.Mirror
	for _, d := range innermost(fs.scopes, "mirror") {
		if len(d.Args) != 1 || d.Args[0] == "off" {
			continue
		}
		var loc *crossplane.Directive
		for _, l := range fs.server {
			if l.Directive == "location" && len(l.Args) == 2 && l.Args[0] == "=" && l.Args[1] == d.Args[0] {
				loc = l
			}
		}
		if loc == nil {
			return nil, fmt.Errorf("mirror %s: no location = %s in the server", d.Args[0], d.Args[0])
		}
		// nginx would act on the X-Accel-* headers of the mirror's
		// response (an X-Accel-Redirect proxies again).
		if err := checkIgnored([]crossplane.Directives{loc.Block, Leaves(fs.server), fs.scopes[len(fs.scopes)-1]}); err != nil {
			return nil, fmt.Errorf("mirror %s: %w", d.Args[0], err)
		}
		var up string
		num, den := 1, 1
		for _, x := range loc.Block {
			switch x.Directive {
			case "proxy_pass":
				if len(x.Args) == 1 {
					up, _ = strings.CutSuffix(strings.TrimPrefix(x.Args[0], "http://"), "$request_uri")
				}
			case "if":
				n, err := fs.mirrorShare(x)
				if err != nil {
					return nil, fmt.Errorf("mirror %s: %w", d.Args[0], err)
				}
				num, den = n, 10000
			}
		}
		eps, ok := fs.servers[up]
		if !ok {
			return nil, fmt.Errorf("mirror %s: proxy_pass to no upstream (%q)", d.Args[0], up)
		}
		m := &translate.Mirror{Numerator: num, Denominator: den,
			Backend: &translate.BackendRef{Service: "upstream " + up + " " + strings.Join(eps, ",")}}
		for _, want := range r.Filters.Mirrors {
			if want.Backend != nil && slices.Equal(endpointList(want.Backend), eps) {
				m.Backend = want.Backend
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// mirrorShare reads `if ($skip) { return 204; }` over split_clients
// "$request_id" $skip { P% ""; * 1; }: the share in hundredths of a percent
// that is mirrored.
func (fs filterScope) mirrorShare(x *crossplane.Directive) (int, error) {
	if len(x.Args) != 1 || len(x.Block) != 1 || x.Block[0].Directive != "return" || len(x.Block[0].Args) < 1 {
		return 0, fmt.Errorf("if %q is not a skip", x.Args)
	}
	b, ok := fs.blocks[x.Args[0]]
	if !ok || b.Directive != "split_clients" || b.Args[0] != "$request_id" {
		return 0, fmt.Errorf("no split_clients defines %s", x.Args[0])
	}
	share := 0
	for _, e := range b.Block {
		if len(e.Args) != 1 {
			return 0, fmt.Errorf("split_clients entry %q", e.Directive)
		}
		if e.Directive == "*" {
			if e.Args[0] == "" || e.Args[0] == "0" {
				return 0, fmt.Errorf("split_clients leaves the rest in")
			}
			continue
		}
		p, ok := strings.CutSuffix(e.Directive, "%")
		if !ok || (e.Args[0] != "" && e.Args[0] != "0") {
			continue
		}
		whole, frac, _ := strings.Cut(p, ".")
		w, err := strconv.Atoi(whole)
		if err != nil || len(frac) > 2 {
			return 0, fmt.Errorf("split_clients percentage %q", e.Directive)
		}
		f := 0
		if frac != "" {
			f, _ = strconv.Atoi((frac + "0")[:2])
		}
		share += w*100 + f
	}
	return share, nil
}

func endpointList(b *translate.BackendRef) []string {
	var out []string
	for _, e := range b.Endpoints {
		out = append(out, hostPort(e.Host, e.Port))
	}
	slices.Sort(out)
	return out
}

// upstreamServers lists the addresses of each upstream's server entries,
// sorted and unique.
func upstreamServers(http crossplane.Directives) map[string][]string {
	out := map[string][]string{}
	for _, d := range http {
		if d.Directive != "upstream" || len(d.Args) != 1 {
			continue
		}
		var eps []string
		for _, s := range d.Block {
			if s.Directive == "server" && len(s.Args) > 0 && !slices.Contains(s.Args, "down") && !slices.Contains(s.Args, "backup") {
				eps = append(eps, s.Args[0])
			}
		}
		slices.Sort(eps)
		out[d.Args[0]] = slices.Compact(eps)
	}
	return out
}

// variableBlocks indexes the http-level map and split_clients blocks by
// the variable they define.
func variableBlocks(http crossplane.Directives) map[string]*crossplane.Directive {
	out := map[string]*crossplane.Directive{}
	for _, d := range http {
		if (d.Directive == "map" || d.Directive == "split_clients") && len(d.Args) == 2 {
			out[d.Args[1]] = d
		}
	}
	return out
}

// judgePrefixes are the rule's PathPrefix match prefixes as the Gateway API
// reads them (trailing '/' ignored), longest first as nginx decodes them,
// unique.
func judgePrefixes(m *translate.Model, r *translate.Rule) []string {
	var out []string
	for _, pl := range m.PlacementsOf(r) {
		if pl.Match.Match.PathType == translate.PathPrefix {
			if p := strings.TrimRight(pl.Match.Match.Path, "/"); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	sortPrefixes(out)
	return out
}

// cutBoth removes head and tail from s; false when s lacks either.
func cutBoth(s, head, tail string) (string, bool) {
	s, ok := strings.CutPrefix(s, head)
	if !ok {
		return "", false
	}
	return strings.CutSuffix(s, tail)
}
