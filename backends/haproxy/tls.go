package haproxy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// HTTPS listeners terminate TLS on their bind line:
//
//	bind ADDR:PORT ssl crt-list haproxy/LISTENER.crt-list
//
// The crt-list gives each virtual host's certificate an explicit SNI filter
// (its hostname, exact or "*.example.com"), so the certificate is chosen by
// the Gateway listener's hostname and not by the names inside it. HAProxy's
// default certificate, for a client whose SNI name matches no filter (or
// that sends none), is the first line's: the catch-all host's certificate
// when there is one, written with a negative filter only
// (defaultSNIFilter), so that the names inside it never take precedence
// over the explicit filters of the other lines.
//
// HAProxy 2.6 reads the private key from the certificate file, or with
// `ssl-load-extra-files key` and `ssl-load-extra-del-ext` (global) from the
// certificate's path with ".crt" replaced by ".key": DIR/NS/NAME/tls.key
// for DIR/NS/NAME/tls.crt, the layout of --tls-dir.

// defaultSNIFilter is the filter of the catch-all certificate's line: a
// negative filter on a reserved name (RFC 6761 .invalid), which keeps the
// names inside the certificate out of SNI selection. The line then only
// serves as HAProxy's default certificate.
const defaultSNIFilter = "!gwretry-default.invalid"

// tlsALPN is the ALPN list of every HTTPS bind line: HTTP/1.1 only, the
// same on every HAProxy version (2.8 and later default to h2,http/1.1).
const tlsALPN = "http/1.1"

// crtListDir is where crt-list files are written, relative to the output
// directory; haproxy.cfg names them by this relative path, which HAProxy
// resolves from its working directory.
const crtListDir = "haproxy/"

// tlsPlan is the TLS termination of one HTTPS listener.
type tlsPlan struct {
	// crtList is the crt-list's path relative to the output directory, as
	// written in the bind line.
	crtList string
	lines   []crtLine
	// defaultSecret is the Secret of HAProxy's default certificate.
	defaultSecret string
}

// planTLS lays out the crt-list of the HTTPS listener l.
func planTLS(l *translate.Listener, ck *tokenChecker) *tlsPlan {
	p := &tlsPlan{crtList: crtListDir + ck.word("listener name", l.Name) + ".crt-list"}
	var catchAll *translate.VirtualHost
	for _, vh := range l.VirtualHosts {
		if vh.Hostname == "" {
			catchAll = vh
		}
	}
	cert := func(vh *translate.VirtualHost) string {
		c := vh.Certificate
		if c == nil {
			ck.fail(fmt.Errorf("listener %s host %q has no certificate", l.Name, vh.Hostname))
			return ""
		}
		if err := translate.CheckFilePath(c.CertFile); err != nil {
			ck.fail(err)
		}
		if want := keyPath(c.CertFile); c.KeyFile != want {
			ck.fail(fmt.Errorf("Secret %s: HAProxy %s loads the private key of %s from %s (ssl-load-extra-del-ext), not from %s",
				c.Secret, "2.6", c.CertFile, want, c.KeyFile))
		}
		return ck.crtWord("certificate path", c.CertFile)
	}
	if catchAll != nil {
		p.lines = append(p.lines, crtLine{cert: cert(catchAll), filter: defaultSNIFilter})
		p.defaultSecret = catchAll.Certificate.Secret
	}
	for _, vh := range l.VirtualHosts {
		if vh == catchAll {
			continue
		}
		p.lines = append(p.lines, crtLine{cert: cert(vh), filter: ck.crtWord("hostname", vh.Hostname)})
		if p.defaultSecret == "" && vh.Certificate != nil {
			p.defaultSecret = vh.Certificate.Secret
		}
	}
	return p
}

// crtWord checks a crt-list word, on top of word.
func (c *tokenChecker) crtWord(where, s string) string {
	s = c.word(where, s)
	if c.err == nil && (!crtWordRE.MatchString(s) || strings.HasPrefix(s, "!")) {
		c.fail(fmt.Errorf("%s: value %q cannot be written in a crt-list", where, shorten(s)))
	}
	return s
}

// render writes the crt-list and parses it back.
func (p *tlsPlan) render() ([]byte, error) {
	var b strings.Builder
	for _, l := range p.lines {
		fmt.Fprintf(&b, "%s %s\n", l.cert, l.filter)
	}
	out := []byte(b.String())
	got, err := parseCrtList(out)
	if err != nil {
		return nil, fmt.Errorf("internal error: generated %s does not read back: %w", p.crtList, err)
	}
	if !slices.Equal(got, p.lines) {
		return nil, fmt.Errorf("internal error: generated %s reads back as %v, want %v", p.crtList, got, p.lines)
	}
	return out, nil
}

// tlsClaimsJudged reports whether gwretry's shared judge (translate) reads
// TLS termination back, so that listener.https may be claimed honoured.
// translate.Behaviour has no field for it yet: this backend's own judge
// (checkTLS) reads it back and fails on any difference, but the shared one
// refuses an honoured claim it cannot check.
const tlsClaimsJudged = false

// tlsDecision decides listener.https of a rule whose HTTPS listeners are
// all generated: served with TLS terminated by HAProxy, each hostname's
// certificate chosen by an explicit SNI filter of the crt-list, the
// catch-all hostname's (or else the first hostname's) the default, ALPN
// http/1.1 only. It is approximated where HAProxy, as configured, differs
// from the Gateway API: HAProxy's wildcard filter "*.example.com" matches
// one label only, so a name deeper below a wildcard hostname (as
// a.b.example.com) gets the listener's default certificate; and a request
// whose Host names another hostname of the listener than its SNI name is
// routed by its Host, where the Gateway API recommends 421 Misdirected
// Request when the two belong to different Gateway listeners (the Model
// does not say which hostnames share a Gateway listener).
func tlsDecision(m *translate.Model, r *translate.Rule, tls map[string]*tlsPlan) report.Decision {
	var wildcards []string
	misdirected := false
	// One pass over the rule's placements, not over every virtual host of
	// the model for every rule.
	seen := map[*translate.VirtualHost]bool{}
	for _, pl := range m.PlacementsOf(r) {
		l, vh := pl.Listener, pl.VirtualHost
		p := tls[l.Name]
		if !l.TLS || p == nil || seen[vh] {
			continue
		}
		seen[vh] = true
		misdirected = misdirected || len(l.VirtualHosts) > 1
		if !strings.HasPrefix(vh.Hostname, "*.") || vh.Certificate == nil || vh.Certificate.Secret == p.defaultSecret {
			continue
		}
		wildcards = append(wildcards, vh.Hostname)
	}
	d := report.Decide(report.ReasonConfigured).Set("bind ... ssl crt-list")
	if len(wildcards) > 0 {
		d = d.With(report.NewCaveat(report.CaveatWildcardSNIOneLabel, "hostnames", strings.Join(slices.Compact(slices.Sorted(slices.Values(wildcards))), ", ")))
	}
	if misdirected {
		d = d.With(report.NewCaveat(report.CaveatMisdirectedRequestRouted))
	}
	if len(d.Caveats) == 0 && !tlsClaimsJudged {
		// Not claimed honoured: this backend's judge checks the
		// certificate of every SNI name against the Gateway listeners but
		// does not yet report it to the shared check (Behaviour.TLS).
		d = d.With(report.NewCaveat(report.CaveatNotCheckedByJudge))
	}
	return d
}
