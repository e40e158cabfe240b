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

// noRoute is the named location of requests that match no route.
const noRoute = "@no_route"

// configPlan is the whole nginx.conf and what gwretry reports about it.
type configPlan struct {
	// HTTP is what goes inside http {}, each directive built as soon as
	// it was planned: hash sizes, constants, maps, upstreams, then the
	// server blocks.
	HTTP []builtBlock
	// Store holds the texts of HTTP under a spool (nil: they are in
	// HTTP): the caller closes it.
	Store *blockStore
	// Hash names the hash size directives HTTP sets, "" for none.
	Hash     string
	Findings []translate.Finding
	Notes    []translate.Note
}

// planConfig builds the contents of http {} for m. Routing works the same way in every
// server: nginx's own location selection (exact, longest prefix, regex in
// order) cannot express Gateway API precedence with header, method and
// query matches, so one map per match part tests the request, a dispatch
// map picks the first route whose parts all match, and `location /` jumps
// to that rule's named location (error_page 418 = $route; return 418).
// Named locations keep the method, URI and body and cannot be requested by
// a client.
func planConfig(m *translate.Model, v version, opts translate.Options) (_ configPlan, err error) {
	var cp configPlan
	store, err := newBlockStore(opts.Spool)
	if err != nil {
		return cp, err
	}
	defer func() {
		if err != nil {
			store.close()
		}
	}()
	cp.Store = store
	plans := map[*translate.Rule]rulePlan{}
	// Every map, upstream and server is written as soon as it is
	// planned, and only its text is kept (builtBlock); what the directives
	// before them in http {} need to know of them is counted as they
	// come: the longest variable and the number of maps (hash sizes), the
	// constants they use.
	var upstreams, filterMaps, maps, servers []builtBlock
	var vars variableCount
	constUsed := map[string]bool{}
	names := map[string]string{}
	matches := map[*translate.Rule]ruleMatches{}
	served := map[*translate.Rule]schemes{}
	anyTLS := false
	for _, l := range m.Listeners {
		anyTLS = anyTLS || l.TLS
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				matches[rm.Rule] = append(matches[rm.Rule], rm.Match)
				s := served[rm.Rule]
				if l.TLS {
					s.tls = true
				} else {
					s.plain = true
				}
				served[rm.Rule] = s
			}
		}
	}
	portMap := false
	for _, r := range m.Rules {
		lower := strings.ToLower(upstreamName(r))
		if other, dup := names[lower]; dup {
			return cp, fmt.Errorf("rules %s and %s give the same upstream name", other, r.Name)
		}
		names[lower] = r.Name
	}
	// Each rule is planned when the first server block that routes to it
	// is built (or after the last server, for a rule none routes to), so
	// that only the locations of the rules of the servers being built are
	// held (issue 22: planning every rule first held every location, 200
	// MB at 68,000 routes). What it adds to http {} before the servers
	// (its upstreams and filter maps) and its notes are kept by rule and
	// put in the rules' order at the end, as if planned in that order.
	type ruleOut struct {
		upstreams, filterMaps []builtBlock
		notes                 []translate.Note
		hostnames             []string
	}
	ruleIndex := make(map[*translate.Rule]int, len(m.Rules))
	for i, r := range m.Rules {
		ruleIndex[r] = i
	}
	outs := make([]*ruleOut, len(m.Rules))
	plan := func(r *translate.Rule) (rulePlan, error) {
		i, ok := ruleIndex[r]
		if !ok {
			return rulePlan{}, fmt.Errorf("rule %s is routed but not among the model's rules", r.Name)
		}
		if outs[i] != nil {
			return plans[r], nil
		}
		out := &ruleOut{}
		outs[i] = out
		p := planRule(r, v, opts, matches[r], served[r])
		conn, err := ruleConn(m, r)
		if err != nil {
			return p, err
		}
		p.Location = append(p.Location, conn...)
		vars.add(p.Maps)
		for _, ref := range textConstRefs {
			constUsed[ref] = constUsed[ref] || uses(p.Maps, ref)
		}
		if out.filterMaps, err = store.build(nil, p.Maps); err != nil {
			return p, err
		}
		p.Maps = nil
		portMap = portMap || p.PortMap
		if out.upstreams, err = store.build(nil, p.MirrorUpstreams); err != nil {
			return p, err
		}
		p.MirrorUpstreams = nil
		if r.Forwards() && p.Upstream.Servers == nil {
			return p, fmt.Errorf("rule %s has backends but no endpoint", r.Name)
		}
		out.notes = p.Notes
		p.Notes = nil
		if p.Upstream.Servers != nil {
			if out.upstreams, err = store.build(out.upstreams, crossplane.Directives{block("upstream", []string{upstreamName(r)}, p.Upstream.Servers)}); err != nil {
				return p, err
			}
		}
		if p.Upstream.Rounded {
			out.notes = append(out.notes, translate.Warning(translate.RuleObject(r), "backend weights rounded to fit nginx entry weights of at most %d", maxEntryWeight))
		}
		out.hostnames = p.Upstream.Hostnames
		p.Upstream = upstreamPlan{}
		plans[r] = p
		return p, nil
	}

	var usesUpgrade, usesHost bool
	addServer := func(d *crossplane.Directive) error {
		ds := crossplane.Directives{d}
		usesUpgrade = usesUpgrade || usesArg(ds, upgradeVar)
		usesHost = usesHost || usesArg(ds, hostVar)
		for _, ref := range textConstRefs {
			constUsed[ref] = constUsed[ref] || uses(ds, ref)
		}
		servers, err = store.build(servers, ds)
		return err
	}
	addMaps := func(ds crossplane.Directives) error {
		vars.add(ds)
		maps, err = store.build(maps, ds)
		return err
	}
	// A rule's location is copied into each server block whose virtual
	// host routes to it: once the last of them is written, the plan's
	// copy is dropped (left, by rule, is how many are still to come).
	left := map[*translate.Rule]int{}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, r := range rulesOf(vh) {
				left[r]++
			}
		}
	}
	written := func(vh *translate.VirtualHost) {
		for _, r := range rulesOf(vh) {
			if left[r]--; left[r] == 0 {
				p := plans[r]
				p.Location, p.Server = nil, nil
				plans[r] = p
			}
		}
	}
	// routed maps each rule that at least one match reaches to true, and
	// each rule whose matches nginx cannot express to false.
	routed := map[*translate.Rule]bool{}
	serverIndex := 0
	longestName := 0
	for _, l := range m.Listeners {
		listen := hostPort(l.Address, l.Port)
		hasDefault := false
		conn, err := listenerConn(m, l)
		if err != nil {
			return cp, err
		}
		for _, vh := range l.VirtualHosts {
			sb := serverBuilder{prefix: "gw_s" + strconv.Itoa(serverIndex), plan: plan, routed: routed}
			serverIndex++
			listenArgs := []string{listen}
			if vh.Hostname == "" {
				hasDefault = true
				listenArgs = append(listenArgs, "default_server")
			}
			if l.TLS {
				listenArgs = append(listenArgs, "ssl")
			}
			longestName = max(longestName, len(vh.Hostname))
			body := crossplane.Directives{directive("listen", listenArgs...), directive("server_name", vh.Hostname)}
			if l.TLS {
				if vh.Certificate == nil {
					return cp, fmt.Errorf("TLS listener %s host %q has no certificate", l.Name, vh.Hostname)
				}
				body = append(body, directive("ssl_certificate", vh.Certificate.CertFile), directive("ssl_certificate_key", vh.Certificate.KeyFile))
			}
			// The Gateway API sets no limit on a request's body: without
			// this nginx answers 413 to every body over 1m (its default),
			// whatever the route says.
			body = append(body, directive("client_max_body_size", "0"))
			body = append(body, acceptedHeaderNames()...)
			body = append(body, conn...)
			routing, err := sb.routing(l, vh)
			if err != nil {
				return cp, err
			}
			body = append(body, routing...)
			if err := addMaps(sb.maps); err != nil {
				return cp, err
			}
			cp.Notes = append(cp.Notes, sb.notes...)
			if err := addServer(block("server", nil, body)); err != nil {
				return cp, err
			}
			written(vh)
		}
		if !hasDefault {
			// Without it nginx would send unknown hosts to the first server.
			// On a TLS listener it has no certificate: nginx refuses the
			// handshake of a client whose SNI names no virtual host (or
			// that sends none), as no certificate of the Gateway covers it.
			body := crossplane.Directives{directive("listen", listen, "default_server")}
			if l.TLS {
				body = crossplane.Directives{directive("listen", listen, "default_server", "ssl"), directive("ssl_reject_handshake", "on")}
			}
			body = append(body, directive("server_name", ""))
			// nginx reads the request headers with the settings of the
			// listening socket's default server.
			body = append(body, acceptedHeaderNames()...)
			body = append(body, conn...)
			body = append(body,
				block("location", []string{"/"}, crossplane.Directives{directive("return", "404")}))
			if err := addServer(block("server", nil, body)); err != nil {
				return cp, err
			}
		}
	}

	for _, r := range m.Rules {
		if _, err := plan(r); err != nil {
			return cp, err
		}
	}
	var ruleNotes []translate.Note
	hostnames := map[string]bool{}
	for _, out := range outs {
		ruleNotes = append(ruleNotes, out.notes...)
		for _, h := range out.hostnames {
			if !hostnames[h] {
				hostnames[h] = true
				ruleNotes = append(ruleNotes, translate.Info("", "endpoint %s is a DNS name: nginx resolves it once at startup (nginx -t and startup fail if it does not resolve) and makes each address a separate peer, each with the entry's weight", h))
			}
		}
		filterMaps = append(filterMaps, out.filterMaps...)
		upstreams = append(upstreams, out.upstreams...)
	}
	cp.Notes = append(ruleNotes, cp.Notes...)
	for _, r := range m.Rules {
		d := ruleDecisions(m, r, plans[r].Decisions, routed)
		d.Shared = opts.Shared
		cp.Findings = append(cp.Findings, translate.Assess(r, d)...)
	}
	if err := addMaps(passMapsFor(usesUpgrade, usesHost)); err != nil {
		return cp, err
	}
	http := crossplane.Directives{}
	if longestName > 32 {
		http = append(http, directive("server_names_hash_bucket_size", strconv.Itoa(nextPow2(longestName+32))))
	}
	if serverIndex > 128 {
		http = append(http, directive("server_names_hash_max_size", strconv.Itoa(nextPow2(8*serverIndex))))
	}
	// Variable names are hashed too: nginx refuses to start when the
	// longest does not fit a bucket of 64 bytes (with its pointer and
	// length), as rules of long route names make them.
	if vars.longest > 32 {
		http = append(http, directive("variables_hash_bucket_size", strconv.Itoa(nextPow2(vars.longest+32))))
	}
	if vars.n > 256 {
		http = append(http, directive("variables_hash_max_size", strconv.Itoa(nextPow2(4*vars.n))))
	}
	cp.Hash = hashNames(http)
	if portMap {
		if maps, err = store.build(maps, crossplane.Directives{portMapBlock(anyTLS)}); err != nil {
			return cp, err
		}
	}
	http = append(http, textConstBlocksFor(func(ref string) bool { return constUsed[ref] })...)
	head, err := store.build(nil, http)
	if err != nil {
		return cp, err
	}
	cp.HTTP = slices.Concat(head, maps, filterMaps, upstreams, servers)
	return cp, nil
}

// variableCount counts the variables that map, geo and split_clients
// blocks define, and the longest name among them.
type variableCount struct {
	n, longest int
}

// add counts the directives of ds, each a variable's block.
func (c *variableCount) add(ds crossplane.Directives) {
	c.n += len(ds)
	c.longest = max(c.longest, longestVariable(ds))
}

// rulesOf lists the rules vh routes to, each once.
func rulesOf(vh *translate.VirtualHost) []*translate.Rule {
	var out []*translate.Rule
	seen := map[*translate.Rule]bool{}
	for _, rm := range vh.Routes {
		if !seen[rm.Rule] {
			seen[rm.Rule] = true
			out = append(out, rm.Rule)
		}
	}
	return out
}

// hashNames lists the names of the hash size directives in ds.
func hashNames(ds crossplane.Directives) string {
	var names []string
	for _, d := range ds {
		names = append(names, d.Directive)
	}
	return strings.Join(names, ", ")
}

// fullConfig wraps the http {} contents into a complete nginx.conf. It names
// no file and no directory: the pid file, the error log and the temporary
// directories are the distribution's own (Debian: /run/nginx.pid, stderr
// until the main configuration says otherwise, /var/lib/nginx/*), so that
// `nginx -t -c nginx.conf` works with the packaged binary as it is, and
// access logging is off (a relative path would depend on the prefix, and
// /dev/stdout cannot be opened when stdout is a socket, as under systemd).
func fullConfig(http crossplane.Directives) crossplane.Directives {
	return crossplane.Directives{
		block("events", nil, crossplane.Directives{}),
		block("http", nil, append(crossplane.Directives{directive("access_log", "off")}, http...)),
	}
}

// serverBuilder writes the routing of one server block.
type serverBuilder struct {
	prefix string
	// plan returns a rule's plan, planning it the first time.
	plan   func(*translate.Rule) (rulePlan, error)
	maps   crossplane.Directives
	notes  []translate.Note
	routed map[*translate.Rule]bool
}

// routing returns the locations of a server: `location /` that dispatches,
// one named location per rule and the no-route location.
func (sb *serverBuilder) routing(l *translate.Listener, vh *translate.VirtualHost) (crossplane.Directives, error) {
	var matchVars []string
	var targets []string
	var locations crossplane.Directives
	located := map[*translate.Rule]bool{}
	for _, rm := range vh.Routes {
		cs, err := conditions(rm.Match)
		if err != nil {
			sb.notes = append(sb.notes, translate.Warning(translate.RuleObject(rm.Rule), "a match is not routed on listener %s host %q: %v; requests it would select go to the next matching route",
				l.Name, vh.Hostname, err))
			if _, seen := sb.routed[rm.Rule]; !seen {
				sb.routed[rm.Rule] = false
			}
			continue
		}
		matchVars = append(matchVars, sb.matchMap(len(matchVars), cs))
		targets = append(targets, "@"+locationName(rm.Rule))
		sb.routed[rm.Rule] = true
		if !located[rm.Rule] {
			located[rm.Rule] = true
			p, err := sb.plan(rm.Rule)
			if err != nil {
				return nil, err
			}
			locations = append(locations, block("location", []string{"@" + locationName(rm.Rule)}, p.Location))
			locations = append(locations, p.Server...)
		}
	}
	notFound := block("location", []string{noRoute}, crossplane.Directives{directive("return", "404")})
	if len(matchVars) == 0 {
		return crossplane.Directives{block("location", []string{"/"}, crossplane.Directives{directive("return", "404")})}, nil
	}
	route := "$" + sb.prefix + "_route"
	sb.routeMaps(route, matchVars, targets)

	out := crossplane.Directives{block("location", []string{"/"}, crossplane.Directives{
		directive("error_page", "418", "=", route),
		directive("return", "418"),
	})}
	out = append(out, locations...)
	return append(out, notFound), nil
}

// maxMapSource bounds the bytes of the source of a route map: nginx reads
// a configuration token into a buffer of 4096 bytes and refuses a longer
// one ("too long parameter").
const maxMapSource = 3072

// routeMaps adds the maps that set route to the target of the first match
// variable that is "1", or to noRoute. One map over the concatenation of
// every match variable does it while that concatenation fits in one nginx
// token; a host with more matches is split into chunks, each map setting
// its own variable to the target of its first "1" (or ""), and a last map
// takes the first target of their concatenation, so that the first match
// still wins and every map stays linear in its own matches.
func (sb *serverBuilder) routeMaps(route string, matchVars, targets []string) {
	firstOf := func(variable string, vars, targets []string, def string) {
		entries := crossplane.Directives{}
		for i, target := range targets {
			re := "~^1"
			if i > 0 {
				re = "~^0{" + strconv.Itoa(i) + "}1"
			}
			entries = append(entries, directive(re, target))
		}
		entries = append(entries, directive("default", def))
		sb.maps = append(sb.maps, block("map", []string{strings.Join(vars, ""), variable}, entries))
	}
	if len(strings.Join(matchVars, "")) <= maxMapSource {
		firstOf(route, matchVars, targets, noRoute)
		return
	}
	var chunks []string
	for start := 0; start < len(matchVars); {
		end, size := start, 0
		for end < len(matchVars) && (end == start || size+len(matchVars[end]) <= maxMapSource) {
			size += len(matchVars[end])
			end++
		}
		v := route + "_" + strconv.Itoa(len(chunks))
		firstOf(v, matchVars[start:end], targets[start:end], "")
		chunks = append(chunks, v)
		start = end
	}
	// Every target is "@r_<rule name>", and rule names have no '@'.
	sb.maps = append(sb.maps, block("map", []string{strings.Join(chunks, ""), route}, crossplane.Directives{
		directive("~^(@[^@]+)", "$1"),
		directive("default", noRoute),
	}))
}

// matchMap adds the maps for one route match and returns its variable, which
// is "1" when every condition holds and "0" otherwise.
func (sb *serverBuilder) matchMap(k int, cs []condition) string {
	name := "$" + sb.prefix + "_m" + strconv.Itoa(k)
	if len(cs) == 1 && cs[0].Extract == "" {
		sb.maps = append(sb.maps, regexMap(cs[0].Source, name, cs[0].Regex))
		return name
	}
	var parts []string
	for j, c := range cs {
		src := c.Source
		if c.Extract != "" {
			src = name + "_x" + strconv.Itoa(j)
			sb.maps = append(sb.maps, block("map", []string{c.Source, src}, crossplane.Directives{
				directive("~"+c.Extract, "=$1"),
				directive("default", ""),
			}))
		}
		cond := name + "_c" + strconv.Itoa(j)
		sb.maps = append(sb.maps, regexMap(src, cond, c.Regex))
		parts = append(parts, cond)
	}
	sb.maps = append(sb.maps, block("map", []string{strings.Join(parts, ""), name}, crossplane.Directives{
		directive(strings.Repeat("1", len(parts)), "1"),
		directive("default", "0"),
	}))
	return name
}

// regexMap maps source to "1" when it matches re (case-sensitively), else "0".
func regexMap(source, variable, re string) *crossplane.Directive {
	return block("map", []string{source, variable}, crossplane.Directives{
		directive("~"+re, "1"),
		directive("default", "0"),
	})
}

func directive(name string, args ...string) *crossplane.Directive {
	if args == nil {
		args = []string{}
	}
	return &crossplane.Directive{Directive: name, Args: args}
}

func block(name string, args []string, body crossplane.Directives) *crossplane.Directive {
	d := directive(name, args...)
	d.Block = body
	if d.Block == nil {
		d.Block = crossplane.Directives{}
	}
	return d
}

func nextPow2(n int) int {
	p := 64
	for p < n {
		p *= 2
	}
	return p
}

// ruleDecisions completes the decisions planRule made for rule r with
// what is known once every server is written: a rule that no request can
// reach (all its matches are beyond nginx; requests go to the next
// matching route or get 404) is refused as a whole, as nginx applies none
// of its retries or timeouts whatever its location says; and listener.https
// says how nginx terminates TLS for it (tlsDecision). translate.Assess
// decides an ungenerated HTTPS listener before Written.
func ruleDecisions(m *translate.Model, r *translate.Rule, d translate.Decisions, routed map[*translate.Rule]bool) translate.Decisions {
	if reached, ok := routed[r]; ok && !reached {
		d.First = func(translate.Feature) (report.Decision, bool) {
			return report.Decide(report.ReasonNoMatchExpressible), true
		}
	}
	written := d.Written
	d.Written = func(f translate.Feature) (report.Decision, bool) {
		if f == translate.FeatureListenerHTTPS {
			return tlsDecision(m, r), true
		}
		if written == nil {
			return report.Decision{}, false
		}
		return written(f)
	}
	return d
}

// portMapBlock is the map behind redirectPortVar: the listener's port,
// none for port 80 (on HTTP). With TLS listeners it keys on the scheme as
// well: none for 80 on HTTP and 443 on HTTPS, the well-known ports the
// Gateway API leaves out of a Location.
func portMapBlock(tls bool) *crossplane.Directive {
	if !tls {
		return block("map", []string{"$server_port", redirectPortVar}, crossplane.Directives{
			directive("80", ""),
			directive("default", ":$server_port"),
		})
	}
	return block("map", []string{"$scheme:$server_port", redirectPortVar}, crossplane.Directives{
		directive("http:80", ""),
		directive("https:443", ""),
		directive("default", ":$server_port"),
	})
}

// longestVariable is the length of the longest variable name that the map,
// geo and split_clients blocks of ds define.
func longestVariable(ds crossplane.Directives) int {
	longest := 0
	for _, d := range ds {
		if (d.Directive == "map" || d.Directive == "split_clients" || d.Directive == "geo") && len(d.Args) > 0 {
			longest = max(longest, len(d.Args[len(d.Args)-1]))
		}
	}
	return longest
}
