package nginx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// redirectPortVar is the http-level map that writes the listener's port
// into a redirect's Location when neither scheme nor port is set: nothing
// for port 80 (the port of http), else ":PORT".
const redirectPortVar = "$gw_redirect_port"

// filterPlan is what a rule's filters add to the configuration.
type filterPlan struct {
	// Location are directives for the rule's named location, after
	// proxy_pass (or the return of a redirect).
	Location crossplane.Directives
	// Headers are the proxy_set_header directives of the rule (Host first),
	// for its location and its mirror locations.
	Headers crossplane.Directives
	// Pass are the response header directives of its location: nginx
	// acts on no X-Accel-* header and strips none the rule does not hide
	// (passDirectives).
	Pass crossplane.Directives
	// Maps are http-level maps and split_clients blocks of this rule.
	Maps crossplane.Directives
	// PortMap: the rule needs the shared redirectPortVar map.
	PortMap bool
	// PassURI is the variable proxy_pass appends to the upstream's name
	// (a prefix rewrite's path as sent), or "".
	PassURI string
	// Upstreams are the upstream blocks of the mirror backends.
	Upstreams crossplane.Directives
	// Server are locations each server that routes to the rule needs (the
	// mirror locations).
	Server crossplane.Directives
	// Decisions are the decisions of the filters it writes, by feature.
	Decisions map[translate.Feature]report.Decision
}

// written returns the Written hook of translate.Decisions: the decision
// of a filter the plan writes. It holds the decisions alone, not the
// plan's directives, which are let go of once written (planConfig).
func (p filterPlan) written() func(translate.Feature) (report.Decision, bool) {
	decisions := p.Decisions
	return func(f translate.Feature) (report.Decision, bool) {
		d, ok := decisions[f]
		return d, ok
	}
}

// decide records the decision of feature f.
func (p *filterPlan) decide(f translate.Feature, d report.Decision) {
	if p.Decisions == nil {
		p.Decisions = map[translate.Feature]report.Decision{}
	}
	p.Decisions[f] = d
}

// schemes says on which kinds of listener a rule is served.
type schemes struct{ plain, tls bool }

// ruleMatches are the matches that select a rule, in precedence order,
// on any listener and virtual host.
type ruleMatches []translate.Match

// specialRequestHeaders are the request headers nginx writes or handles
// itself when it proxies: a filter on them does not act as the Gateway API
// defines.
var specialRequestHeaders = []string{"host", "connection", "content-length", "transfer-encoding", "te", "upgrade", "keep-alive", "expect", "proxy-connection"}

// specialResponseHeaders are the response headers nginx writes itself or
// treats apart from the others (its own Server and Date, the framing
// headers, and those add_header replaces instead of adding).
var specialResponseHeaders = []string{"server", "date", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive",
	"last-modified", "etag", "cache-control", "link", "location", "refresh", "accept-ranges", "content-encoding", "expires"}

// headerNames are the lower-case names a modifier touches, and those named
// in more than one of its lists.
func headerNames(hm *translate.HeaderModifier) (all, twice []string) {
	count := map[string]int{}
	var order []string
	note := func(n string) {
		n = strings.ToLower(n)
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	for _, h := range hm.Set {
		note(h.Name)
	}
	for _, h := range hm.Add {
		note(h.Name)
	}
	for _, n := range hm.Remove {
		note(n)
	}
	for _, n := range order {
		if count[n] > 1 {
			twice = append(twice, n)
		}
	}
	return order, twice
}

func intersect(names, special []string) []string {
	var out []string
	for _, n := range names {
		if slices.Contains(special, n) {
			out = append(out, n)
		}
	}
	return out
}

// nginxHeaderVar returns the variable $http_<name> that holds the client's
// header of this name, and false when nginx has none: a variable name has
// no '.', and $http_x_y holds both X-Y and X_Y, so a name with '_' or '.'
// has no variable of its own (the servers pass such headers:
// acceptedHeaderNames).
func nginxHeaderVar(name string) (string, bool) {
	if strings.ContainsAny(name, "_.") {
		return "", false
	}
	return "$http_" + strings.ReplaceAll(strings.ToLower(name), "-", "_"), true
}

// addVar is the map variable that appends the k-th added request header.
func addVar(r *translate.Rule, k int) string { return ruleVar(r, "add"+strconv.Itoa(k)) }

// ruleVar is the name of rule r's variable suffix: "$gw_", the rule's
// name, '_' and suffix. nginx variable names hold only letters, digits and
// '_', so the rule's name is escaped one to one ('_' as "__", '-' as
// "_h", '.' as "_d"): two rules never share a variable.
func ruleVar(r *translate.Rule, suffix string) string {
	var b strings.Builder
	b.WriteString("$gw_")
	for i := 0; i < len(r.Name); i++ {
		switch c := r.Name[i]; c {
		case '_':
			b.WriteString("__")
		case '-':
			b.WriteString("_h")
		case '.':
			b.WriteString("_d")
		default:
			b.WriteByte(c)
		}
	}
	return b.String() + "_" + suffix
}

// planFilters maps the rule-level filters of rule r, which forwards or
// redirects, to nginx directives and findings. It writes nothing for the
// filters it reports unsupported.
func planFilters(r *translate.Rule, v version, matches ruleMatches, served schemes) filterPlan {
	var p filterPlan
	fl := &r.Filters

	// Request headers: one proxy_set_header per name, Host first, then
	// the upgrade pass-through, which a modifier of the same name replaces.
	host := hostVar
	if fl.Rewrite != nil && fl.Rewrite.Hostname != "" && r.Forwards() {
		host = fl.Rewrite.Hostname
	}
	p.Headers = append(crossplane.Directives{directive("proxy_set_header", "Host", host)}, upgradeHeaders()...)
	if hm := fl.RequestHeaders; hm != nil && r.Forwards() {
		var cs []report.Caveat
		var dropped, oneLine []string
		names, twice := headerNames(hm)
		for _, h := range hm.Set {
			if strings.EqualFold(h.Name, "host") {
				p.Headers[0] = directive("proxy_set_header", "Host", textArg(h.Value))
				continue
			}
			p.Headers = append(p.Headers, directive("proxy_set_header", h.Name, textArg(h.Value)))
		}
		for k, h := range hm.Add {
			src, ok := nginxHeaderVar(h.Name)
			if !ok {
				// nginx has no variable for the client's header
				// ($http_<name> would also read the name with '-'):
				// the add replaces the client's value.
				p.Headers = append(p.Headers, directive("proxy_set_header", h.Name, textArg(h.Value)))
				dropped = append(dropped, h.Name)
				continue
			}
			vr := addVar(r, k)
			p.Maps = append(p.Maps, block("map", []string{src, vr}, crossplane.Directives{
				directive("", textArg(h.Value)),
				directive("default", src+","+textArg(h.Value)),
			}))
			p.Headers = append(p.Headers, directive("proxy_set_header", h.Name, vr))
			if !v.JoinsHeaderLines {
				// $http_<name> holds only the first line of a header
				// sent on several lines before nginx 1.23.0.
				oneLine = append(oneLine, h.Name)
			}
		}
		for _, n := range hm.Remove {
			if strings.EqualFold(n, "host") {
				p.Headers[0] = directive("proxy_set_header", "Host", "")
				continue
			}
			p.Headers = append(p.Headers, directive("proxy_set_header", n, ""))
		}
		if len(dropped) > 0 {
			cs = append(cs, report.NewCaveat(report.CaveatClientHeaderDropped, "headers", strings.Join(dropped, ", ")))
		}
		if len(oneLine) > 0 {
			cs = append(cs, report.NewCaveat(report.CaveatRepeatedHeaderFirstLineOnly, "headers", strings.Join(oneLine, ", "), "version", v.Name, "fixedIn", "1.23.0"))
		}
		// nginx writes or handles these itself when it proxies (Host,
		// Connection and the framing headers); a value set or removed for
		// Connection or Upgrade replaces the upgrade pass-through.
		if sp := intersect(names, specialRequestHeaders); len(sp) > 0 {
			cs = append(cs, report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", strings.Join(sp, ", ")))
		}
		// nginx sends one value per name, the last of set, add, remove.
		if len(twice) > 0 {
			cs = append(cs, report.NewCaveat(report.CaveatHeaderInSeveralLists, "headers", strings.Join(twice, ", ")))
		}
		p.decide(translate.FeatureRequestHeaderModifier, report.Decide(report.ReasonConfigured).Set("proxy_set_header "+strings.Join(names, ", ")).With(cs...))
	}
	// Order for a stable file: Host, then by name.
	slices.SortStableFunc(p.Headers[1:], func(a, b *crossplane.Directive) int {
		return strings.Compare(strings.ToLower(a.Args[0]), strings.ToLower(b.Args[0]))
	})
	p.Headers = dedupeHeaders(p.Headers)

	// Response headers: add_header ... always; set hides the backend's
	// header first; remove hides it. Every other header nginx would act
	// on or strip passes (passDirectives).
	hiddenByRule := map[string]bool{}
	if hm := fl.ResponseHeaders; hm != nil {
		for _, h := range hm.Set {
			hiddenByRule[strings.ToLower(h.Name)] = true
		}
		for _, n := range hm.Remove {
			hiddenByRule[strings.ToLower(n)] = true
		}
	}
	p.Pass = passDirectives(hiddenByRule)
	if hm := fl.ResponseHeaders; hm != nil {
		hidden := map[string]bool{}
		hide := func(n string) {
			if !hidden[strings.ToLower(n)] {
				hidden[strings.ToLower(n)] = true
				p.Location = append(p.Location, directive("proxy_hide_header", n))
			}
		}
		for _, h := range hm.Set {
			hide(h.Name)
			p.Location = append(p.Location, directive("add_header", h.Name, textArg(h.Value), "always"))
		}
		// An added header is a further line after the backend's, which
		// HTTP reads as the values joined by commas.
		for _, h := range hm.Add {
			p.Location = append(p.Location, directive("add_header", h.Name, textArg(h.Value), "always"))
		}
		for _, n := range hm.Remove {
			hide(n)
		}
		names, twice := headerNames(hm)
		var cs []report.Caveat
		// nginx writes or treats these itself (its own Server and Date,
		// the framing headers, and headers add_header replaces).
		if sp := intersect(names, specialResponseHeaders); len(sp) > 0 {
			cs = append(cs, report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", strings.Join(sp, ", ")))
		}
		// nginx hides the backend's header and sends every value set or
		// added.
		if len(twice) > 0 {
			cs = append(cs, report.NewCaveat(report.CaveatHeaderInSeveralLists, "headers", strings.Join(twice, ", ")))
		}
		p.decide(translate.FeatureResponseHeaderModifier, report.Decide(report.ReasonConfigured).Set("add_header/proxy_hide_header "+strings.Join(names, ", ")).With(cs...))
	}

	if rd := fl.Redirect; rd != nil && !r.Forwards() {
		p.planRedirect(r, rd, matches, served)
	}
	if rw := fl.Rewrite; rw != nil && r.Forwards() {
		p.planRewrite(r, rw, matches)
	}
	if len(fl.Mirrors) > 0 && r.Forwards() {
		p.planMirrors(r)
	}
	return p
}

// dedupeHeaders keeps the last proxy_set_header of each name (Host stays
// first).
func dedupeHeaders(ds crossplane.Directives) crossplane.Directives {
	last := map[string]int{}
	for i, d := range ds {
		last[strings.ToLower(d.Args[0])] = i
	}
	var out crossplane.Directives
	for i, d := range ds {
		if last[strings.ToLower(d.Args[0])] == i {
			out = append(out, d)
		}
	}
	return out
}

// prefixes returns the path prefixes (trailing '/' removed) of the rule's
// matches, longest first (by their length as nginx decodes them, the path
// it matches), and whether one of them, nested in a shorter one, belongs to
// a match with other conditions: then the longest prefix that fits the
// path may not be the one of the match that selected the request. ok is
// false when some match is not a PathPrefix.
func (ms ruleMatches) prefixes() (raw []string, ambiguous, ok bool) {
	cond := map[string]bool{}
	for _, m := range ms {
		if m.PathType != translate.PathPrefix {
			return nil, false, false
		}
		p := strings.TrimRight(m.Path, "/")
		if _, seen := cond[p]; !seen {
			raw = append(raw, p)
		}
		cond[p] = cond[p] || m.Method != "" || len(m.Headers) > 0 || len(m.Query) > 0
	}
	sortPrefixes(raw)
	for i, long := range raw {
		for _, short := range raw[i+1:] {
			if cond[long] && (short == "" || strings.HasPrefix(long, short+"/")) {
				ambiguous = true
			}
		}
	}
	return raw, ambiguous, true
}

// trimmedValue is a ReplacePrefixMatch value without its trailing '/'.
func trimmedValue(p *translate.PathModifier) string { return strings.TrimRight(p.Value, "/") }

// prefixMapName is the variable of the rule's prefix replacement map.
func prefixMapName(r *translate.Rule, kind string) string { return ruleVar(r, kind) }

// rawDotSegment is the first entry of a raw path map (rawPathMaps): a
// path as sent with a dot segment ("." or "..", each dot perhaps
// percent-encoded, after '/' or %2F and before '/', %2F, '?' or the end),
// which nginx resolves before it matches, is not rebuilt from the path as
// sent.
const rawDotSegment = "~^[^:]*:[^?]*(/|%2[fF])([.]|%2[eE])([.]|%2[eE])?(/|%2[fF]|[?]|$)"

// Suffixes of the variables of a ReplacePrefixMatch (after "rd" or "rw"):
// the index map, the raw path map and, for a rewrite, the variable
// proxy_pass appends.
const (
	pfxSuffix  = "_pfx"
	rawSuffix  = "_raw"
	pathSuffix = "_path"
)

// rawPathMaps writes the two maps that rebuild a ReplacePrefixMatch by
// value v from the path as the client sent it ($request_uri) and returns
// the variable of the second:
//
//	map $uri KIND_pfx { "~(?s)^PREFIX(/.*)?$" K; ... default ""; }
//	map "KIND_pfx:$request_uri" KIND_raw {
//	    rawDotSegment "";
//	    "~^K:PREFIX([?].*)?$" ROOT$1;
//	    "~^K:PREFIX(/[^?]*)([?].*)?$" V$1$2;
//	    ...
//	    default "";
//	}
//
// The first says which prefix, longest first (K from 1), nginx's
// normalised path $uri begins with (the one the rule's $uri map replaces);
// the second is the new path and query built from the raw path when it
// begins with that same prefix as written and has no dot segment, else
// "". prefixes are as written.
func (p *filterPlan) rawPathMaps(r *translate.Rule, kind string, prefixes []string, v string) string {
	pfx, raw := ruleVar(r, kind+pfxSuffix), ruleVar(r, kind+rawSuffix)
	index := crossplane.Directives{}
	entries := crossplane.Directives{directive(rawDotSegment, "")}
	for k, pre := range prefixes {
		n := strconv.Itoa(k + 1)
		index = append(index, directive("~(?s)^"+literal(decodedOrRaw(pre))+"(/.*)?$", n))
		if pre != "" {
			entries = append(entries, directive("~^"+n+":"+literal(pre)+"([?].*)?$", textArg(orRoot(v))+"$1"))
		}
		entries = append(entries, directive("~^"+n+":"+literal(pre)+"(/[^?]*)([?].*)?$", textArg(v)+"$1$2"))
	}
	index = append(index, directive("default", ""))
	entries = append(entries, directive("default", ""))
	p.Maps = append(p.Maps,
		block("map", []string{"$uri", pfx}, index),
		block("map", []string{pfx + ":$request_uri", raw}, entries))
	return raw
}

// checkPrefixes reports the first prefix nginx's regexes cannot hold.
func checkPrefixes(prefixes []string) (string, bool) {
	for _, pre := range prefixes {
		if _, err := decodePath(pre); err != nil {
			return pre, false
		}
	}
	return "", true
}

// planRedirect answers the rule's requests with return CODE LOCATION.
func (p *filterPlan) planRedirect(r *translate.Rule, rd *translate.Redirect, matches ruleMatches, served schemes) {
	scheme, host, port := "$scheme", "$host", ""
	if rd.Scheme != "" {
		scheme = rd.Scheme
	}
	if rd.Hostname != "" {
		host = rd.Hostname
	}
	// effective is the scheme of the Location: "" when it is the
	// request's and the rule is served on HTTP and HTTPS listeners.
	effective := rd.Scheme
	switch {
	case effective != "":
	case served.tls && !served.plain:
		effective = "https"
	case !served.tls:
		effective = "http"
	}
	switch {
	case rd.Port != 0 && !(effective == "http" && rd.Port == 80) && !(effective == "https" && rd.Port == 443):
		port = ":" + strconv.Itoa(rd.Port)
	case rd.Port == 0 && rd.Scheme == "":
		port, p.PortMap = redirectPortVar, true
	}
	path := "$request_uri"
	d := report.Decide(report.ReasonConfigured)
	var rewrites crossplane.Directives
	if rd.Path != nil {
		switch rd.Path.Type {
		case translate.ReplaceFullPath:
			path = textArg(rd.Path.Value) + "$is_args$args"
		case translate.ReplacePrefixMatch:
			raw, ambiguous, ok := matches.prefixes()
			if !ok {
				// The Gateway API rejects such a route; nginx answers 500.
				p.decide(translate.FeatureRequestRedirect, report.Decide(report.ReasonPrefixRewriteWithoutPrefixMatch))
				p.Location = crossplane.Directives{directive("return", "500")}
				return
			}
			v := trimmedValue(rd.Path)
			// The path of the Location, in the rewrite phase before
			// return:
			//   set VAR ROOT$is_args$args;
			//   if ($uri ~ "(?s)^(?:PREFIX|...)(/.*)$") { set VAR V$1$is_args$args; }
			//   if (RAW) { set VAR RAW; }
			// nginx matched the normalised path $uri: the first two
			// rebuild it from $uri, the prefix replaced, the rest and the
			// query kept; a capture set in the rewrite phase is escaped
			// again (NGX_ESCAPE_ARGS) when the request's path had a
			// percent-escape, so no decoded byte reaches the Location
			// bare. RAW (rawPathMaps) replaces that by the path as sent
			// when it begins with the same prefix as written and has no
			// dot segment.
			variable := ruleVar(r, "rd")
			rawVar := p.rawPathMaps(r, "rd", raw, v)
			var alts []string
			for _, pre := range raw {
				alts = append(alts, literal(decodedOrRaw(pre)))
			}
			rewrites = crossplane.Directives{
				directive("set", variable, textArg(orRoot(v))+"$is_args$args"),
				block("if", []string{"$uri", "~", "(?s)^(?:" + strings.Join(alts, "|") + ")(/.*)$"}, crossplane.Directives{
					directive("set", variable, textArg(v)+"$1$is_args$args"),
				}),
				block("if", []string{rawVar}, crossplane.Directives{directive("set", variable, rawVar)}),
			}
			path = variable
			if ambiguous {
				d = d.With(report.NewCaveat(report.CaveatLongestPrefixReplaced))
			}
			d = d.With(report.NewCaveat(report.CaveatPathRebuiltNormalized))
		}
	}
	// A port equal to the default of the scheme is written only when the
	// rule is served on HTTP and HTTPS listeners (the same URL).
	loc := scheme + "://" + host + port + path
	p.Location = append(append(rewrites, directive("return", strconv.Itoa(rd.StatusCode), loc)), p.Location...)
	p.decide(translate.FeatureRequestRedirect, d.Set(fmt.Sprintf("return %d %s", rd.StatusCode, loc)))
}

// planRewrite rewrites the path with rewrite ... break (nginx escapes the
// new path when it proxies it) and the host with proxy_set_header Host.
func (p *filterPlan) planRewrite(r *translate.Rule, rw *translate.Rewrite, matches ruleMatches) {
	d := report.Decide(report.ReasonConfigured)
	var facts []string
	if rw.Hostname != "" {
		facts = append(facts, "proxy_set_header Host "+rw.Hostname)
	}
	if pm := rw.Path; pm != nil {
		switch pm.Type {
		case translate.ReplaceFullPath:
			// textArg: a '$' is the constant ${gwretry_dollar}; nginx
			// escapes none of '$', '\'' and ';' when it proxies the path.
			p.Location = append(p.Location, directive("rewrite", "^", textArg(pm.Value), "break"))
			facts = append(facts, "rewrite ^ "+pm.Value+" break")
		case translate.ReplacePrefixMatch:
			raw, ambiguous, ok := matches.prefixes()
			if !ok {
				// The Gateway API rejects such a route; nginx proxies the
				// path unchanged.
				p.decide(translate.FeatureURLRewrite, report.Decide(report.ReasonPrefixRewriteWithoutPrefixMatch))
				return
			}
			if pre, ok := checkPrefixes(raw); !ok {
				p.decide(translate.FeatureURLRewrite, report.Decide(report.ReasonPrefixNotWritable, "prefix", pre))
				return
			}
			v := trimmedValue(pm)
			entries := crossplane.Directives{}
			for _, pre := range raw {
				dec, _ := decodePath(pre)
				lit := literal(dec)
				if dec != "" {
					entries = append(entries, directive("~^"+lit+"$", textArg(orRoot(v))))
				}
				entries = append(entries, directive("~(?s)^"+lit+"(/.*)$", textArg(v)+"$1"))
			}
			entries = append(entries, directive("default", "$uri"))
			p.Maps = append(p.Maps, block("map", []string{"$uri", prefixMapName(r, "rw")}, entries))
			// nginx matched the normalised path $uri: the rewrite
			// replaces its prefix, and nginx escapes the new path again
			// when it proxies it, with the query. proxy_pass appends
			// PATH, set before the rewrite changes $uri: the new path and
			// query built from the path as sent (rawPathMaps), which
			// nginx then sends as is in place of the rewritten one; ""
			// when the path as sent does not begin with the same prefix
			// as written or has a dot segment.
			pathVar := ruleVar(r, "rw"+pathSuffix)
			rawVar := p.rawPathMaps(r, "rw", raw, v)
			p.Location = append(p.Location,
				directive("set", pathVar, rawVar),
				directive("rewrite", "^", prefixMapName(r, "rw"), "break"))
			p.PassURI = pathVar
			facts = append(facts, "rewrite ^ "+prefixMapName(r, "rw")+" break", "proxy_pass http://"+upstreamName(r)+pathVar)
			// With nested prefixes whose longer one has other conditions,
			// the longest that fits the path is replaced, which may not be
			// the prefix of the match that selected the request.
			if ambiguous {
				d = d.With(report.NewCaveat(report.CaveatLongestPrefixReplaced))
			}
			d = d.With(report.NewCaveat(report.CaveatPathRebuiltNormalized))
		}
	}
	p.decide(translate.FeatureURLRewrite, d.Set(strings.Join(facts, ", ")))
}

// mirrorLocation is the exact location a rule's k-th mirror subrequest
// goes to. It is internal: a client that requests it gets 404.
func mirrorLocation(r *translate.Rule, k int) string {
	return "/_gwretry_mirror_" + r.Name + "_" + strconv.Itoa(k)
}

// mirrorUpstream names the upstream of a rule's k-th mirror.
func mirrorUpstream(r *translate.Rule, k int) string { return r.Name + "_mirror" + strconv.Itoa(k) }

// mirrorSkipVar is 1 for the requests the k-th mirror leaves out.
func mirrorSkipVar(r *translate.Rule, k int) string {
	return ruleVar(r, "mirror"+strconv.Itoa(k)+"_skip")
}

// planMirrors writes a mirror directive per valid RequestMirror, its
// internal location and its upstream; a share below 100% is drawn per
// request by split_clients on $request_id.
func (p *filterPlan) planMirrors(r *translate.Rule) {
	var mirrors, shares, percents []string
	d := report.Decide(report.ReasonConfigured)
	for k, m := range r.Filters.Mirrors {
		if m.Backend == nil {
			// Nothing is mirrored for an invalid mirror, as the Gateway
			// API asks.
			continue
		}
		loc := mirrorLocation(r, k)
		up := mirrorUpstream(r, k)
		var servers crossplane.Directives
		for _, e := range m.Backend.Endpoints {
			servers = append(servers, directive("server", hostPort(e.Host, e.Port), "max_fails=0"))
		}
		if len(servers) == 0 {
			continue
		}
		p.Upstreams = append(p.Upstreams, block("upstream", []string{up}, servers))
		p.Location = append(p.Location, directive("mirror", loc))
		mirrors = append(mirrors, loc)
		body := crossplane.Directives{directive("internal")}
		if m.Numerator < m.Denominator {
			// split_clients takes percentages with two decimals.
			hundredths := (m.Numerator*10000 + m.Denominator/2) / m.Denominator
			skip := mirrorSkipVar(r, k)
			entries := crossplane.Directives{}
			if hundredths > 0 {
				entries = append(entries, directive(percentText(hundredths), ""))
			}
			entries = append(entries, directive("*", "1"))
			p.Maps = append(p.Maps, block("split_clients", []string{"$request_id", skip}, entries))
			body = append(body, block("if", []string{skip}, crossplane.Directives{directive("return", "204")}))
			if m.Numerator*10000%m.Denominator != 0 {
				shares = append(shares, fmt.Sprintf("%d/%d", m.Numerator, m.Denominator))
				percents = append(percents, percentText(hundredths))
			}
		}
		body = append(body, directive("proxy_pass", "http://"+up+"$request_uri"), directive("proxy_http_version", "1.1"))
		// Without the upgrade pass-through: a mirror never upgrades
		// (nginx refuses an upgrade in a subrequest), so it gets nginx's
		// Upgrade "" and Connection close; and nginx acts on no X-Accel-*
		// header of its discarded responses.
		for _, h := range p.Headers {
			if !isUpgradeHeader(h) {
				body = append(body, h)
			}
		}
		body = append(body, ignoreDirective(), directive("proxy_next_upstream", "off"))
		p.Server = append(p.Server, block("location", []string{"=", loc}, body))
	}
	if len(shares) > 0 {
		d = d.With(report.NewCaveat(report.CaveatMirrorShareRounded, "share", strings.Join(shares, ", "), "rounded", strings.Join(percents, ", ")))
	}
	// A mirror gets $request_uri, the path as the client sent it.
	if r.Filters.Rewrite != nil {
		d = d.With(report.NewCaveat(report.CaveatMirrorGetsClientPath))
	}
	if len(mirrors) > 0 {
		d = d.Set("mirror " + strings.Join(mirrors, ", "))
	}
	p.decide(translate.FeatureRequestMirror, d)
}

// percentText writes hundredths of a percent as split_clients reads them.
func percentText(h int) string {
	if h%100 == 0 {
		return strconv.Itoa(h/100) + "%"
	}
	return fmt.Sprintf("%d.%02d%%", h/100, h%100)
}
