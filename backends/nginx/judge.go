package nginx

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// defaultProxyTimeout is nginx's default proxy_connect_timeout,
// proxy_send_timeout and proxy_read_timeout.
const defaultProxyTimeout = 60 * time.Second

// Observe implements translate.Judge: it parses the generated file back with
// crossplane and the version's directive table and derives, from the
// directives alone, what nginx does with the requests of each rule. Each
// rule's named location (@r_<rule name>) is found in every server, its
// upstream by the proxy_pass target; directives not in the location are
// inherited from the server and http blocks, and absent ones take nginx's
// defaults (proxy_next_upstream error timeout, tries 0 = unlimited, 60s
// proxy timers, request buffering on).
func (b *Backend) Observe(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	v, parts, err := b.readBack(opts, files)
	if err != nil {
		return nil, err
	}
	// http's directives but its server blocks, upstreams and routing
	// maps, which are read a batch at a time (issue 22): what every
	// server reads.
	http := parts.http
	ups := map[string]upstreamSeen{}
	servers := map[string][]string{}
	err = parts.each(partUpstream, func(batch crossplane.Directives) error {
		for _, d := range batch {
			if len(d.Args) == 1 {
				ups[d.Args[0]] = readUpstream(d.Block)
			}
		}
		maps.Copy(servers, upstreamServers(batch))
		return nil
	})
	if err != nil {
		return nil, err
	}
	httpLeaves := Leaves(http)
	blocks, consts := variableBlocks(http), textConsts(http)
	rules := map[string][]*translate.Rule{}
	for _, r := range m.Rules {
		rules["@"+locationName(r)] = append(rules["@"+locationName(r)], r)
	}
	// The errors are reported in the order the whole file's reading
	// reported them: the TLS read back, the servers' header settings in
	// file order, then the rules in the model's order.
	tls := map[string]*tlsSeen{}
	var tlsErr, headerErr error
	ruleErr := map[*translate.Rule]error{}
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	err = parts.eachServers(func(batch crossplane.Directives) error {
		if tlsErr == nil {
			tlsErr = readTLSInto(tls, batch)
		}
		for _, d := range batch {
			serverLeaves := Leaves(d.Block)
			// Every server, the catch-all 404 ones too: nginx reads the
			// request headers with the default server's settings.
			if err := checkServerHeaderNames([]crossplane.Directives{serverLeaves, httpLeaves}); err != nil && headerErr == nil {
				headerErr = fmt.Errorf("server %q: %w", serverListen(d.Block), err)
			}
			for _, l := range d.Block {
				if l.Directive != "location" || len(l.Args) != 1 {
					continue
				}
				for _, r := range rules[l.Args[0]] {
					if ruleErr[r] != nil {
						continue
					}
					fs := filterScope{scopes: []crossplane.Directives{l.Block, serverLeaves, httpLeaves}, server: d.Block,
						blocks: blocks, servers: servers, consts: consts, v: v, tls: listensSSL(d.Block)}
					bh, err := observeRule(r, fs, judgePrefixes(m, r), ups)
					switch first, seen := out[r.Name]; {
					case err != nil:
						ruleErr[r] = err
					case !seen:
						out[r.Name] = bh
					case !reflect.DeepEqual(first, bh):
						ruleErr[r] = errors.New("its locations in two servers behave differently")
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Which listener terminates TLS, with which certificate per SNI name:
	// translate.Behaviour has no field for it, so the judge checks it
	// against the model here and fails on any difference.
	if tlsErr != nil {
		return nil, tlsErr
	}
	if err := checkTLS(m, tls); err != nil {
		return nil, fmt.Errorf("TLS read back from %s: %w", b.path(), err)
	}
	if headerErr != nil {
		return nil, headerErr
	}
	for _, r := range m.Rules {
		if err := ruleErr[r]; err != nil {
			return nil, fmt.Errorf("rule %s: %w", r.Name, err)
		}
	}
	// A rule with no location is reached by no request; it gets no
	// behaviour, so no honoured claim about it can pass.
	return out, nil
}

// serverListen is the address of a server block's (last) listen.
func serverListen(ds crossplane.Directives) string {
	if args, ok := Lookup([]crossplane.Directives{ds}, "listen"); ok && len(args) > 0 {
		return args[0]
	}
	return ""
}

// upstreamSeen is what the judge reads from an upstream block.
type upstreamSeen struct {
	// Entries counts the server entries a request can be sent to (not
	// down, not backup): nginx tries each at most once per request.
	Entries int
	// Keepalive: connections are cached, and nginx re-sends a request
	// whose cached connection failed without counting a try.
	Keepalive bool
}

func readUpstream(ds crossplane.Directives) upstreamSeen {
	var u upstreamSeen
	for _, d := range ds {
		switch d.Directive {
		case "server":
			if !slices.Contains(d.Args, "down") && !slices.Contains(d.Args, "backup") {
				u.Entries++
			}
		case "keepalive":
			u.Keepalive = true
		}
	}
	return u
}

// observeRule derives the behaviour of one rule's location per method class.
func observeRule(r *translate.Rule, fs filterScope, prefixes []string, ups map[string]upstreamSeen) (map[translate.MethodClass]translate.Behaviour, error) {
	scopes := fs.scopes
	// nginx answers 413 to a body over client_max_body_size (1m when
	// unset) without proxying it: a limit the Gateway API does not have,
	// so every rule must lift it.
	if args, ok := Lookup(scopes, "client_max_body_size"); !ok || len(args) != 1 || args[0] != "0" {
		return nil, fmt.Errorf("client_max_body_size %q: nginx refuses larger request bodies with 413 (1m when unset), which the Gateway API does not", args)
	}
	out := map[translate.MethodClass]translate.Behaviour{}
	// `return` runs in the rewrite phase, before any proxying; add_header
	// still applies to its answer.
	for _, s := range scopes[:2] {
		if args, ok := Lookup([]crossplane.Directives{s}, "return"); ok && len(args) > 0 {
			code, err := strconv.Atoi(args[0])
			if err != nil {
				return nil, fmt.Errorf("return %q", args[0])
			}
			bh := translate.Behaviour{Answer: code, MaxRetriedBody: -1}
			bh.Filters.Redirect = fs.redirect(code, args, r, prefixes)
			bh.Filters.ResponseHeaders = fs.responseHeaders()
			for _, c := range r.MethodClasses() {
				out[c] = bh
			}
			return out, nil
		}
	}
	var filters translate.Filters
	reqHeaders, host, err := fs.requestHeaders()
	if err != nil {
		return nil, err
	}
	filters.RequestHeaders = reqHeaders
	filters.ResponseHeaders = fs.responseHeaders()
	pass, ok := Lookup(scopes[:1], "proxy_pass")
	if !ok || len(pass) != 1 || !strings.HasPrefix(pass[0], "http://") {
		return nil, fmt.Errorf("its location neither returns nor proxies to an upstream (proxy_pass %q)", pass)
	}
	// http://NAME, or http://NAME$PATH: nginx then sends PATH, when not
	// empty, as the request's path and query, as it is.
	name, uri, _ := strings.Cut(strings.TrimPrefix(pass[0], "http://"), "$")
	if uri != "" {
		uri = "$" + uri
	}
	var usesPass bool
	filters.Rewrite, usesPass = fs.rewrite(host, prefixes, r.Filters.Rewrite, uri)
	if uri != "" && !usesPass {
		return nil, fmt.Errorf("proxy_pass %s: the location does not set %s to a prefix rewrite's path as sent", pass[0], uri)
	}
	if filters.Mirrors, err = fs.mirrors(r); err != nil {
		return nil, err
	}
	up, ok := ups[name]
	if !ok {
		return nil, fmt.Errorf("proxy_pass %s names no upstream block", pass[0])
	}
	// What the Gateway passes through: nginx must neither act on nor
	// strip the backend's X-Accel-* headers, and must pass upgrades.
	if err := checkIgnored(scopes); err != nil {
		return nil, err
	}
	if err := checkStripped(scopes); err != nil {
		return nil, err
	}
	if err := fs.checkUpgrade(); err != nil {
		return nil, err
	}
	next, ok := Lookup(scopes, "proxy_next_upstream")
	if !ok {
		next = []string{"error", "timeout"}
	}
	tries := 0
	if args, ok := Lookup(scopes, "proxy_next_upstream_tries"); ok && len(args) == 1 {
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("proxy_next_upstream_tries %q", args[0])
		}
		tries = n
	}
	// Every entry is tried at most once, and tries 0 means no limit.
	limit := up.Entries
	if tries > 0 {
		limit = min(tries, up.Entries)
	}
	retries := max(limit-1, 0)
	source := fmt.Sprintf("proxy_next_upstream_tries %d", tries)
	if tries == 0 || tries > up.Entries {
		source = fmt.Sprintf("the upstream's %d entries, each tried at most once (proxy_next_upstream_tries %d)", up.Entries, tries)
	}
	if slices.Contains(next, "off") {
		retries, source = 0, "proxy_next_upstream off"
	}
	// proxy_next_upstream_timeout stops new retries once it has passed
	// since the first try (0: no limit).
	var budget time.Duration
	if args, ok := Lookup(scopes, "proxy_next_upstream_timeout"); ok && len(args) == 1 {
		var err error
		if budget, err = ParseTime(args[0]); err != nil {
			return nil, fmt.Errorf("proxy_next_upstream_timeout %q: %w", args[0], err)
		}
	}
	var try time.Duration
	for i, name := range []string{"proxy_connect_timeout", "proxy_send_timeout", "proxy_read_timeout"} {
		d := defaultProxyTimeout
		if args, ok := Lookup(scopes, name); ok && len(args) == 1 {
			var err error
			if d, err = ParseTime(args[0]); err != nil {
				return nil, fmt.Errorf("%s %q: %w", name, args[0], err)
			}
		}
		// The soonest of the three idle timers is the one that cuts.
		if i == 0 || d < try {
			try = d
		}
	}
	maxBody := int64(-1)
	if args, ok := Lookup(scopes, "proxy_request_buffering"); ok && len(args) == 1 && args[0] == "off" {
		// The body streams to the first try: nothing can be re-sent once
		// it has started.
		maxBody = 0
	}
	codes, conn, timeoutRetried, err := NextUpstream(next)
	if err != nil {
		return nil, err
	}
	base := translate.Behaviour{
		Retries:        retries,
		ExtraRetries:   up.Keepalive && retries > 0,
		Codes:          codes,
		ConnErrors:     conn,
		MaxRetriedBody: maxBody,
		TryTimeout:     translate.Timer{Kind: translate.TimerIdle, Value: try},
		TimeoutRetried: timeoutRetried,
		// proxy_next_upstream_timeout only stops new retries; nothing
		// cuts the whole request.
		RequestTimeout: translate.Timer{Kind: translate.TimerNone},
		TimeoutStatus:  504,
		Filters:        filters,
		RetryBudget:    budget,
		RetriesSource:  source,
	}
	if retries == 0 {
		base.Codes, base.ConnErrors, base.TimeoutRetried, base.RetryBudget = nil, translate.ConnRetryNone, false, 0
	}
	for _, c := range r.MethodClasses() {
		bh := base
		if c == translate.NonIdempotent && !slices.Contains(next, "non_idempotent") {
			// ngx_http_upstream_next: a POST, PATCH or LOCK request
			// already sent is not retried, whatever the failure.
			bh.Codes, bh.TimeoutRetried = nil, false
			if retries > 0 && slices.Contains(next, "error") {
				bh.ConnErrors = translate.ConnRetryUnsent
			}
		}
		out[c] = bh
	}
	return out, nil
}

// readBack reads the generated file back in parts as nginx reads it
// (readParts), for the version of opts, or takes Generate's reading of
// the same bytes for the same layout and version (translate.FileParsed).
func (b *Backend) readBack(opts translate.Options, files []translate.File) (version, *httpParts, error) {
	v, err := lookupVersion(opts.Version)
	if err != nil {
		return v, nil, err
	}
	layout := b.Layout()
	parts, err := translate.FileParsed(files, b.path(), func(data []byte) (*httpParts, error) {
		return readParts(data, layout, v)
	})
	if err != nil {
		return v, nil, err
	}
	if parts.layout != layout || parts.v.Name != v.Name {
		// Generate's reading was for another layout or version.
		data, err := translate.FileData(files, b.path())
		if err != nil {
			return v, nil, err
		}
		parts, err = readParts(data, layout, v)
		return v, parts, err
	}
	return v, parts, nil
}
