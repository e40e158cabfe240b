// Package nginx writes an NGINX configuration that routes like a set of
// Gateway API HTTPRoutes and retries and times out their rules as closely as
// nginx can, and reports, per rule and feature, how close that is.
//
// The configuration is built as crossplane directives, checked against an
// allowlist, written with nginx-go-crossplane and parsed back before it is
// returned. Two layouts are offered (Config.Layout):
//
//   - LayoutFull (the default) writes a complete nginx/nginx.conf that the
//     packaged nginx runs as it is: `nginx -t -c DIR/nginx.conf`, then
//     `nginx -c DIR/nginx.conf`. It names no file or directory of its own:
//     the pid file, the error log and the temporary directories are the
//     distribution's (Debian: /run/nginx.pid, stderr, /var/lib/nginx/*),
//     and access logging is off (a relative path would depend on nginx's
//     prefix; /dev/stdout cannot be opened when stdout is a socket, as under
//     systemd). An ordinary user also needs a pid file it can write
//     (-g 'pid /writable/nginx.pid;') and the distribution's temporary
//     directories to exist (the packaged nginx creates them the first time
//     it starts as root).
//   - LayoutConfD writes only what goes inside http {} (maps, upstreams,
//     servers) to nginx/gwretry.conf, for the `include
//     /etc/nginx/conf.d/*.conf;` of the distribution's nginx.conf, which
//     keeps its own logs, pid file and temporary directories.
//
// HTTPS listeners (translate.Listener.TLS) become `listen ADDR:PORT ssl`
// servers, one per hostname with its certificate files (SNI by
// server_name: exact, wildcard, default_server for the catch-all).
//
// The Backend is also a translate.Judge: it reads its files back with
// crossplane and derives what nginx does with each rule's requests.
package nginx

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// Output layouts.
const (
	// LayoutFull writes a complete nginx.conf (ConfigPath).
	LayoutFull = "full"
	// LayoutConfD writes only the contents of http {} (ConfDPath), for
	// `include /etc/nginx/conf.d/*.conf;`.
	LayoutConfD = "conf.d"
)

// ConfigPath is the path of the complete configuration (LayoutFull) in the
// output directory.
const ConfigPath = "nginx/nginx.conf"

// ConfDPath is the path of the http {} fragment (LayoutConfD) in the output
// directory.
const ConfDPath = "nginx/gwretry.conf"

// Config chooses how the backend writes its output.
type Config struct {
	// Layout is LayoutFull (also when empty) or LayoutConfD.
	Layout string
}

// Backend generates NGINX configurations.
type Backend struct {
	layout string
}

// New returns the NGINX backend with the full layout.
func New() *Backend { return &Backend{layout: LayoutFull} }

// NewWithConfig returns the NGINX backend with the layout c names.
func NewWithConfig(c Config) (*Backend, error) {
	switch c.Layout {
	case "", LayoutFull:
		return New(), nil
	case LayoutConfD:
		return &Backend{layout: LayoutConfD}, nil
	}
	return nil, fmt.Errorf("unknown nginx layout %q: choose %s or %s", c.Layout, LayoutFull, LayoutConfD)
}

// Layout returns the layout the backend writes.
func (b *Backend) Layout() string {
	if b == nil || b.layout == "" {
		return LayoutFull
	}
	return b.layout
}

// path is the output path of the layout's one file.
func (b *Backend) path() string {
	if b.Layout() == LayoutConfD {
		return ConfDPath
	}
	return ConfigPath
}

// Name returns "nginx".
func (*Backend) Name() string { return "nginx" }

// Versions returns the nginx versions gwretry knows, oldest first.
// Scope: the routes on the Gateway listeners it generates and their
// connection timeouts.
func (*Backend) Scope() translate.Scope { return translate.GatewayScope() }

// Expresses is translate.Expresser. A match becomes PCREs in map keys,
// which nginx-go-crossplane quotes when they hold a quote, space, ';' or
// brace: a path the API accepts whose percent-escapes nginx decodes to
// characters literal writes; any exact header or query value
// (valueLiteral); a regular expression that compiles, with its escapes
// rewritten (nginxRegex) and no "${" (a variable to crossplane). A value
// a filter writes is any value HTTP carries (textArg); a query name any
// but '&' and '#'. Header names and the paths filters write keep
// translate.Portable. A rule with
// a value outside is answered 500 here, and written by the other targets.
func (*Backend) Expresses(kind, s string) bool {
	switch kind {
	case translate.KindPath:
		// The portable paths include percent-escapes nginx does not
		// decode to a character it matches: the routing leaves that
		// match out itself, with a note (conditions).
		// Any percent-escape but %00 (which nginx refuses with 400):
		// a control byte such as %0A's line feed is in the decoded $uri
		// nginx matches, and PCRE compares it as \xHH (pathLiteral).
		_, err := decodeMatchPath(s)
		return err == nil || translate.Portable(kind, s)
	case translate.KindHeaderValue:
		// valueLiteral writes any byte, one that is not ASCII as \xHH,
		// which nginx's PCRE (no UTF mode) compares byte by byte: the
		// exact value as the client's bytes hold it.
		return true // "" too: conditions says nginx cannot tell it from a missing header
	case translate.KindQueryName:
		// Any name the API allows, as valueLiteral writes it, on the raw
		// $args: but '&', which splits $args (a name "a&b" would match
		// ?a&b=1, two parameters), and '#', which no request's query
		// holds raw.
		return !strings.ContainsAny(s, "&#")
	case translate.KindFilterHeaderValue:
		// textArg writes any byte HTTP carries in a field value (a byte
		// that is not ASCII as it is: nginx's tokenizer and crossplane
		// pass it through).
		return true
	case translate.KindFilterPath:
		// textArg writes '$' as the constant ${gwretry_dollar}, and
		// crossplane quotes '\'' and ';'; nginx's rewrite escapes none of
		// them when it proxies the path. A '%' it escapes to %25 there:
		// not written (a proxy_pass variable could carry it).
		return !strings.Contains(s, "%") && translate.Portable(kind, strings.NewReplacer("$", "_", "'", "_", ";", "_").Replace(s))
	case translate.KindRegex:
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				return false // checkArg: written as it is, it must be printable ASCII
			}
		}
		// checkRegexes: a brace only in a repetition count.
		_, err := regexp.Compile(s)
		return err == nil && !strings.Contains(s, "${") && !strings.ContainsAny(quantifierRE.ReplaceAllString(s, ""), "{}")
	}
	return translate.Portable(kind, s)
}

func (*Backend) Versions() []string {
	return translate.VersionNames(versionTable(), func(v version) string { return v.Name })
}

// Generate writes the layout's file for m and one finding per feature of
// every rule.
func (b *Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	v, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	if err := m.CheckWith(translate.CheckExpressed(b)); err != nil {
		return nil, err
	}
	if err := checkRegexes(m); err != nil {
		return nil, err
	}
	cp, err := planConfig(m, v, opts)
	if err != nil {
		return nil, &translate.InternalError{Err: err}
	}
	defer cp.Store.close()
	var ds crossplane.Directives
	if b.Layout() == LayoutFull {
		ds = fullConfig(nil)
	}
	// renderLayoutParsed drops the text of http's directives once
	// written: nothing else may hold it.
	blocks := cp.HTTP
	cp.HTTP = nil
	// Both are second lines of defence behind the allowlists (the
	// directives built were checked by buildBlock): a failure is a bug in
	// gwretry, not a problem with the input.
	if err := checkArgs(ds); err != nil {
		return nil, &translate.InternalError{Err: err}
	}
	var file translate.File
	if opts.Spool != "" {
		// Written to disk as it goes and read back from there
		// (translate.Options.Spool): the file is not held.
		path, parsed, err := renderSpooled(ds, blocks, cp.Store, b.Layout(), v, opts.Spool)
		if err != nil {
			return nil, &translate.InternalError{Err: err}
		}
		file = translate.File{Path: b.path(), Spooled: path, Parsed: translate.NewSpooledParsed(path, parsed)}
	} else {
		conf, parsed, err := renderLayoutParsed(ds, blocks, b.Layout(), v)
		if err != nil {
			return nil, &translate.InternalError{Err: err}
		}
		file = translate.File{Path: b.path(), Data: conf, Parsed: translate.NewParsed(conf, parsed)}
	}
	var run []string
	if b.Layout() == LayoutConfD {
		run = []string{"run: copy gwretry.conf into the directory the main nginx.conf includes inside http {} (Debian: /etc/nginx/conf.d/), then nginx -t && nginx -s reload; it has only maps, upstreams and servers, so the main file's logs, pid file and temporary directories apply (its listeners must not clash with the main file's servers)"}
		if hasResponseHeaderFilter(m) {
			run = append(run, "a rule with a ResponseHeaderModifier sets add_header and proxy_hide_header in its own location, so nginx does not apply the add_header and proxy_hide_header of the main nginx.conf's http {} to that rule's responses")
		}
		if cp.Hash != "" {
			run = append(run, "gwretry.conf sets "+cp.Hash+" (needed for these names and routes): remove the same directive from the main nginx.conf if it sets one, nginx rejects a duplicate")
		}
	} else {
		run = []string{"run: nginx -t -c DIR/nginx.conf && nginx -c DIR/nginx.conf (no -p needed: the file names no path, so the pid file, error log and temporary directories are the distribution's, e.g. Debian's /run/nginx.pid, stderr and /var/lib/nginx; access logging is off, add access_log to the http block to keep one); as an ordinary user add -g 'pid /writable/path/nginx.pid;', and the distribution's temporary directories must exist (the packaged nginx creates them when it first starts as root); --nginx-layout conf.d writes a file for /etc/nginx/conf.d/ instead"}
	}
	notes := []string{
		"rules without a retry stanza or with attempts 0 get proxy_next_upstream off (nginx would otherwise retry errors and timeouts on another server)",
		"nothing is retried once part of a response has reached the client; after the last try nginx returns the last response, or 502/504 on a connection error or timeout",
		"a backend's informational response (1xx, such as 103 Early Hints) is taken by nginx before 1.29 as the final one: the client gets it, and the status that follows (a listed retry code included) is neither retried nor passed on",
		"routing: each match becomes nginx maps (path on the decoded, normalized $uri; headers as $http_<name>, " + headerValueText(v) + ", and a header named with '_' where the match's name has '-' is read as the same header (nginx's $http_x_y holds both X-Y and X_Y), so a match on a name with '_' or '.' cannot be expressed; query parameters on the raw $args, first occurrence, compared without percent-decoding); regular expressions must match the whole value and are run by nginx's PCRE, not RE2",
		"a header regex matches only a non-empty header (nginx cannot tell an empty header from a missing one)",
		"the Host header is passed to backends as the client sent it (unless a URLRewrite hostname or a RequestHeaderModifier sets it); a request without one (HTTP/1.0) gets the host of an absolute request line, or else the address and port it was sent to; requests that match no route get 404",
		"passed through where nginx's defaults would act on them: request headers with '_' or '.' in the name (underscores_in_headers on, ignore_invalid_headers off in every server); the backend's X-Accel-* and X-Pad response headers, which nginx neither obeys nor strips (proxy_ignore_headers, proxy_pass_header; nginx still writes its own Server and Date); and upgrades such as WebSocket (proxy_set_header Upgrade $http_upgrade and Connection upgrade, or close without one): an upgraded connection is closed once no data has passed either way for the rule's proxy_read_timeout (its backendRequest or request timer, or else a ConnectionTimeoutPolicy's serverTimeout, or else 60s)",
	}
	if hasTLS(m) {
		notes = append(notes, "HTTPS listeners: listen ... ssl with each hostname's ssl_certificate and ssl_certificate_key (by the absolute paths under --cert-dir, where the proxy host keeps them; nginx's master process reads them at start and on reload, so nginx -t fails while one is missing or unreadable); SNI selects the server_name's certificate, HTTP/1.1 inside; a listener without a catch-all hostname refuses the handshake of other SNI names (ssl_reject_handshake on)")
	}
	return &translate.Output{
		// The judges read the file as parsed back here, not a second
		// parse of the same bytes.
		Files:    []translate.File{file},
		Findings: append(cp.Findings, connFindings(m)...),
		Notes:    slices.Concat(translate.InfoNotes(run...), translate.InfoNotes(notes...), cp.Notes),
	}, nil
}

// headerValueText says which value of a header sent on several lines a
// header match sees in nginx v.
func headerValueText(v version) string {
	if v.JoinsHeaderLines {
		return "the lines of a header sent several times joined with \", \" (\"; \" for Cookie), so an Exact match of one of them fails"
	}
	return "first value"
}

// hasResponseHeaderFilter reports whether some rule has a
// ResponseHeaderModifier.
func hasResponseHeaderFilter(m *translate.Model) bool {
	for _, r := range m.Rules {
		if r.Filters.ResponseHeaders != nil {
			return true
		}
	}
	return false
}

// hasTLS reports whether some listener of m terminates TLS.
func hasTLS(m *translate.Model) bool {
	return slices.ContainsFunc(m.Listeners, func(l *translate.Listener) bool { return l.TLS })
}

// NotExpressed is translate.ExpressWhy: why Expresses refuses s.
func (*Backend) NotExpressed(kind, s string) string {
	switch kind {
	case translate.KindPath:
		if _, err := decodeMatchPath(s); err != nil && strings.Contains(s, "%00") {
			return "nginx refuses a request path whose escape decodes to NUL (400)"
		}
	case translate.KindRegex:
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] > 0x7e {
				return "nginx's PCRE runs without UTF mode: a regular expression with a byte that is not printable ASCII reads bytes where RE2 reads characters"
			}
		}
		if _, err := regexp.Compile(s); err != nil {
			return translate.RE2Why
		}
		if strings.Contains(s, "${") {
			return "'${' in an nginx argument is a variable reference"
		}
		return "nginx's parser reads a brace outside a repetition count as a block"
	case translate.KindQueryName:
		return "nginx matches a query name on the raw query string, where '&' separates parameters and '#' never appears"
	case translate.KindFilterPath:
		if strings.Contains(s, "%") && !strings.Contains(s, "//") {
			// gwretry's limit, not nginx's: said as such.
			return "gwretry writes no '%' in a rewrite or redirect path for nginx yet: nginx's rewrite escapes it again (%25) when it proxies the path, and a proxy_pass variable that would carry it is not written"
		}
	}
	return translate.PortableWhy(kind)
}
