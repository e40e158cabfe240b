// Package haproxy writes an HAProxy configuration (haproxy.cfg) for a
// gwretry Model: one frontend per listener that routes with ACLs in Gateway
// API precedence order, and one backend per route rule that carries the
// rule's retries and timeouts.
//
// The file is built and parsed back with the config-parser package of
// github.com/haproxytech/client-native/v5, which does no quoting or
// escaping: every value is checked against the translate allowlists and
// this package's own word check before it is written, and the output is
// parsed back and compared with what was meant before it is returned.
package haproxy

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// OutputPath is where the configuration is written, relative to the output
// directory.
const OutputPath = "haproxy/haproxy.cfg"

// Backend is the HAProxy target. It implements translate.Backend.
type Backend struct{}

// New returns the HAProxy target.
func New() *Backend { return &Backend{} }

// Name returns "haproxy".
func (*Backend) Name() string { return "haproxy" }

// Versions returns the HAProxy versions gwretry knows, oldest first.
// Scope: the routes on the Gateway listeners it generates and their
// connection timeouts.
func (*Backend) Scope() translate.Scope { return translate.GatewayScope() }

// Expresses is translate.Expresser. A match's path, value or regular
// expression is an ACL pattern, written in HAProxy's strong quotes when it
// is not a plain word (tokenChecker.quoted): no control character
// (checkQuotable); a regular expression must also compile and be ASCII
// (HAProxy's PCRE2 reads RE2's syntax alike for what compiles in both).
// A value a filter writes is a log-format string in strong quotes
// (textFmt): any value HTTP carries. The names and the paths filters
// write keep translate.Portable. A rule
// with a value outside is answered 500 here, and written by the other
// targets.
func (*Backend) Expresses(kind, s string) bool {
	switch kind {
	case translate.KindPath:
		return checkQuotable(s) == nil
	case translate.KindHeaderValue:
		return s == "" || checkQuotable(s) == nil // "": -m len 0
	case translate.KindRegex:
		// ASCII only: PCRE2 (no UTF mode) would read a byte where RE2
		// reads a character.
		for i := 0; i < len(s); i++ {
			if s[i] > 0x7e {
				return false
			}
		}
		_, err := regexp.Compile(s)
		return err == nil && checkQuotable(anchored(s)) == nil
	case translate.KindFilterHeaderValue:
		// textFmt writes any value HTTP carries (translate.HTTPExpresses:
		// tabs and spaces inside, bytes that are not ASCII as they are).
		return true
	case translate.KindQueryName:
		// queryFetch writes any token in urlp(): but '&', which splits
		// the query (a name a&b would match ?a&b=1, two parameters), and
		// '#', which no request's query holds.
		return !strings.ContainsAny(s, "&#")
	case translate.KindFilterHeaderName:
		// headerName writes any token the API allows, in strong quotes
		// when it is no plain word.
		return true
	case translate.KindFilterPath:
		// pathFmt writes any path HTTP carries ('$', '%XX', ';', '\''
		// too) in strong quotes, '%' doubled, which set-path and
		// replace-path (then redirect prefix) send as they are. A '//'
		// stays out, as for every target.
		return !strings.Contains(s, "//") && checkQuotable(strings.ReplaceAll(s, "%", "%%")+`\1`) == nil
	}
	return translate.Portable(kind, s)
}

func (*Backend) Versions() []string {
	return translate.VersionNames(supportTable(), func(s versionSupport) string { return s.Version })
}

// Generate writes haproxy.cfg for m and one finding per feature per rule.
func (be *Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	vs, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	if err := m.CheckWith(translate.CheckExpressed(be)); err != nil {
		return nil, err
	}
	var ck tokenChecker
	var frontends []frontendPlan
	tls := map[string]*tlsPlan{}
	for _, l := range m.Listeners {
		f := planFrontend(l, &ck)
		f.conn = planListenerConn(m, l, &ck)
		if f.tls != nil {
			tls[l.Name] = f.tls
		}
		frontends = append(frontends, f)
	}
	var backends []backendPlan
	var findings []translate.Finding
	for _, r := range m.Rules {
		b := planRule(m, r, vs, opts, &ck)
		b.conn = planRuleConn(m, r, &ck)
		backends = append(backends, b)
		d := decisions(m, r, vs, opts, b, tls)
		d.Shared = opts.Shared
		findings = append(findings, translate.Assess(r, d)...)
	}
	findings = append(findings, connFindings(m, vs)...)
	if ck.err != nil {
		return nil, fmt.Errorf("value not allowed in haproxy.cfg: %w", ck.err)
	}
	if err := checkUniqueNames(frontends, backends); err != nil {
		return nil, err
	}
	cfg, parsed, err := buildDocument(frontends, backends).renderParsed()
	if err != nil {
		return nil, err
	}
	// The judges read haproxy.cfg as parsed back here, not a second
	// parse of the same bytes.
	files := []translate.File{{Path: OutputPath, Data: cfg, Parsed: translate.NewParsed(cfg, parsed)}}
	for _, f := range frontends {
		if f.tls == nil {
			continue
		}
		data, err := f.tls.render()
		if err != nil {
			return nil, err
		}
		files = append(files, translate.File{Path: f.tls.crtList, Data: data})
	}
	return &translate.Output{
		Files:    files,
		Findings: findings,
		Notes:    notes(vs, backends, len(tls) > 0),
	}, nil
}

// checkUniqueNames rejects two listeners or two rules that would share a
// section name.
func checkUniqueNames(frontends []frontendPlan, backends []backendPlan) error {
	seen := map[string]bool{noRouteBackend: true}
	for _, f := range frontends {
		if seen[f.name] {
			return fmt.Errorf("two listeners would both be frontend %s", f.name)
		}
		seen[f.name] = true
	}
	for _, b := range backends {
		if seen[b.name] {
			return fmt.Errorf("two rules would both be backend %s", b.name)
		}
		seen[b.name] = true
	}
	return nil
}

// notes are the data-plane-wide lines of the report.
func notes(vs versionSupport, backends []backendPlan, tls bool) []translate.Note {
	n := []string{
		fmt.Sprintf("run with `haproxy -f %s` (HAProxy %s; check it with `haproxy -c -f %s`)", OutputPath, vs.Version, OutputPath),
		fmt.Sprintf("defaults: timeout connect %s, client %s, server %s, http-request %s; a rule without timeouts ends with 504 when its server sends nothing for %s",
			ms(defaultConnectMs), ms(defaultClientMs), ms(defaultServerMs), ms(defaultHTTPRequestMs), ms(defaultServerMs)),
		"rules without retry, or with attempts 0, get `retries 0` and `retry-on none`: HAProxy does not retry them (its own default would be 3 connection retries)",
		fmt.Sprintf("retried requests are read whole before they are sent (option http-buffer-request); HAProxy retries a request only when it fits in one buffer (tune.bufsize, 16384 bytes by default), otherwise only after a connection failure; on rules that retry, a client that takes more than timeout http-request %s to send its headers and that body (or the first buffer of a larger one) gets 408, whatever timeouts.request says (without retries only the headers are timed so)", ms(defaultHTTPRequestMs)),
		"requests that no route matches get 404 (backend " + noRouteBackend + "); a host's routes are tried first, then those of the wildcard and catch-all hostnames that cover it, in the Gateway API's order",
		"DNS endpoints are resolved once at startup (default-server init-addr last,libc,none): a name that does not resolve disables its server until HAProxy reloads; add a resolvers section to follow DNS changes",
		"regular expressions are run by HAProxy's PCRE2 (or libc regex), anchored at both ends; RE2-only syntax may not behave the same",
		"paths are matched as the client sent them (HAProxy's path fetch): no percent-decoding and no merging of dot segments or repeated slashes, so /p/%78, /p/a/../x and /p//x do not match an Exact /p/x (nginx and Traefik decode and normalize first) and go to a PathPrefix /p rule if there is one; query names and values are compared without percent-decoding",
		"a repeated query parameter matches when any of its values matches (the Gateway API recommends the first); header matches compare each whole header line (commas included)",
	}
	if tls {
		n = append(n, "HTTPS listeners name their crt-list by a path relative to the output directory: run HAProxy from there, or with `haproxy -C OUTPUT_DIR -f "+OutputPath+"`; each private key is read from the certificate's path with .crt replaced by .key (ssl-load-extra-files key, ssl-load-extra-del-ext)",
			"HTTPS listeners choose the certificate by SNI name (crt-list filters) and route by the Host header, as HTTP listeners do: a request whose Host differs from its SNI name is routed by its Host; a client without SNI, or whose SNI name matches no hostname, gets the listener's default certificate (the catch-all hostname's, else the first hostname's)")
	}
	n = append(n, "server connections are never reused (option http-server-close): a kept-alive server connection that closes as it is reused cannot fail a request")
	if vs.SilentKeepAliveClose {
		n = append(n, silentCloseNote(vs.Version, "the last try of", "its tries again")+"; this holds for rules without retries too")
	}
	out := translate.InfoNotes(n...)
	for _, b := range backends {
		if b.weightsRounded {
			out = append(out, translate.Warning(b.object, "backendRef weights were rounded to fit HAProxy's server weights (0 to %d)", maxServerWeight))
		}
	}
	return out
}

// NotExpressed is translate.ExpressWhy: why Expresses refuses s.
func (*Backend) NotExpressed(kind, s string) string {
	switch kind {
	case translate.KindPath, translate.KindHeaderValue, translate.KindRegex:
		if kind == translate.KindRegex {
			for i := 0; i < len(s); i++ {
				if s[i] > 0x7e {
					return "HAProxy's PCRE2 runs without UTF mode: a regular expression with a byte that is not ASCII reads bytes where RE2 reads characters"
				}
			}
			if _, err := regexp.Compile(s); err != nil {
				return translate.RE2Why
			}
		}
		if len(s) > maxTokenLen {
			return fmt.Sprintf("longer than the %d bytes gwretry writes as one word of haproxy.cfg", maxTokenLen)
		}
		return "a control character ends a word or a line of haproxy.cfg (config-parser)"
	case translate.KindQueryName:
		return "HAProxy's urlp reads the raw query string, where '&' separates parameters and '#' never appears"
	}
	return translate.PortableWhy(kind)
}
