package traefik

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// buildTLS builds the dynamic tls section for the TLS listeners of m: every
// certificate of a virtual host with a hostname in tls.certificates (once
// each, in the model's order), and the certificate of the first TLS
// listener's catch-all host as the default store's defaultCertificate.
// Traefik chooses among them by SNI against each certificate's own names
// (see tlsConfig); tlsVerdicts says where that differs from the Gateway
// API's per-listener choice. The default TLS options are sniStrict where
// that refuses no client the Gateway API serves with a certificate naming
// its SNI (see strictSNI). It returns nil when m has no TLS listener.
func buildTLS(m *translate.Model) (*tlsConfig, error) {
	var tc tlsConfig
	seen := map[certAndStores]bool{}
	for _, l := range m.Listeners {
		if !l.TLS {
			continue
		}
		for _, vh := range l.VirtualHosts {
			c := vh.Certificate
			if c == nil {
				return nil, fmt.Errorf("TLS listener %s host %q has no certificate", l.Name, vh.Hostname)
			}
			for _, p := range []string{c.CertFile, c.KeyFile} {
				if err := translate.CheckFilePath(p); err != nil {
					return nil, fmt.Errorf("listener %s host %q: %w", l.Name, vh.Hostname, err)
				}
			}
			ca := certAndStores{CertFile: c.CertFile, KeyFile: c.KeyFile}
			if vh.Hostname == "" {
				if tc.Stores == nil {
					tc.Stores = map[string]*tlsStore{defaultStore: {DefaultCertificate: &ca}}
				}
				continue
			}
			if !seen[ca] {
				seen[ca] = true
				tc.Certificates = append(tc.Certificates, &ca)
			}
		}
	}
	if tc.Certificates == nil && tc.Stores == nil {
		return nil, nil
	}
	if strictSNI(m, storeView(&tc, m.CertSource)) {
		tc.Options = map[string]*tlsOptions{defaultOptions: {SniStrict: true}}
	}
	return &tc, nil
}

// strictSNI reports whether the default TLS options can be sniStrict:
// without it Traefik completes a handshake for any SNI name (or none) with
// its default certificate and routes the request by its Host header alone,
// where the Gateway API matches an HTTPS listener's hostname against the
// SNI name too. The options are global (every TLS entry point shares
// them), and strict SNI refuses every name no loaded certificate holds, so
// it is written only when no TLS listener has a catch-all host (which
// serves any name, with the default certificate) and Traefik picks a
// certificate for every TLS hostname (for a wildcard, one label below it):
// then it refuses only names two or more labels below a wildcard hostname
// that no certificate holds (CaveatSNIRefused), for which the Gateway
// API's certificate, a one-label wildcard, is no valid one either.
func strictSNI(m *translate.Model, v tlsStoreView) bool {
	if len(v.unreadable) > 0 {
		return false
	}
	for _, l := range m.Listeners {
		if !l.TLS {
			continue
		}
		for _, vh := range l.VirtualHosts {
			if vh.Hostname == "" {
				return false
			}
			if c, _ := v.pick(vh.Hostname); c == nil || v.def != nil && c == v.def {
				return false
			}
		}
	}
	return true
}

// certNames are the names Traefik matches SNI against for a certificate
// file: the leaf's common name, DNS SANs and IP SANs, lowercased
// (pkg/tls/certificate_store.go parseCertificate).
func certNames(certFile string) ([]string, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%s holds no PEM CERTIFICATE", certFile)
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certFile, err)
		}
		var names []string
		if leaf.Subject.CommonName != "" {
			names = append(names, strings.ToLower(leaf.Subject.CommonName))
		}
		for _, n := range leaf.DNSNames {
			names = append(names, strings.ToLower(n))
		}
		for _, ip := range leaf.IPAddresses {
			names = append(names, ip.String())
		}
		slices.Sort(names)
		return slices.Compact(names), nil
	}
}

// matchDomain is Traefik's (pkg/tls/certificate_store.go): serverName is
// certDomain, or certDomain is serverName with some leading labels
// replaced by "*" (so "*.example.com" covers one label only).
func matchDomain(serverName, certDomain string) bool {
	if serverName == certDomain {
		return true
	}
	certDomain = strings.TrimRight(certDomain, ".")
	labels := strings.Split(serverName, ".")
	for i := range labels {
		labels[i] = "*"
		if certDomain == strings.Join(labels, ".") {
			return true
		}
	}
	return false
}

// tlsStoreView is what Traefik's default store holds, read from a dynamic
// tls section: the certificates with their names, and the default one.
type tlsStoreView struct {
	certs []storedCert
	def   *certAndStores
	// unreadable names the certificate files whose names could not be
	// read: where they count, nothing can be said.
	unreadable []string
	// strict: the default TLS options are sniStrict.
	strict bool
}

type storedCert struct {
	cert  certAndStores
	names []string
}

// storeView reads the certificates of tc as Traefik loads them: a
// certificate whose set of names equals an earlier one's is skipped. Each
// is read from src(its path) (Model.CertSource).
func storeView(tc *tlsConfig, src func(string) string) tlsStoreView {
	var v tlsStoreView
	if tc == nil {
		return v
	}
	if s := tc.Stores[defaultStore]; s != nil {
		v.def = s.DefaultCertificate
	}
	if o := tc.Options[defaultOptions]; o != nil {
		v.strict = o.SniStrict
	}
	keys := map[string]bool{}
	for _, c := range tc.Certificates {
		names, err := certNames(src(c.CertFile))
		if err != nil {
			v.unreadable = append(v.unreadable, c.CertFile)
			continue
		}
		k := strings.Join(names, ",")
		if keys[k] {
			continue
		}
		keys[k] = true
		v.certs = append(v.certs, storedCert{cert: *c, names: names})
	}
	return v
}

// pick is the certificate Traefik presents for SNI serverName (a literal
// "*.d" stands for any one label under d that no certificate names
// exactly): the one with the greatest matching name, else the default
// (nil: Traefik's own generated certificate). ambiguous is true when two
// certificates share the deciding name: Traefik then picks either.
func (v tlsStoreView) pick(serverName string) (c *certAndStores, ambiguous bool) {
	best := ""
	for i := range v.certs {
		for _, n := range v.certs[i].names {
			if !matchDomain(serverName, n) {
				continue
			}
			switch {
			case c == nil || n > best:
				c, best, ambiguous = &v.certs[i].cert, n, false
			case n == best && *c != v.certs[i].cert:
				ambiguous = true
			}
		}
	}
	if c == nil {
		return v.def, false
	}
	return c, ambiguous
}

// covered reports whether name is one the Gateway API gives the
// certificate of virtual host hostname on a listener: hostname itself, or
// any name below a wildcard hostname ("*.example.com" is a suffix match:
// a.example.com and a.b.example.com, not example.com).
func covered(name, hostname string) bool {
	if name == hostname {
		return true
	}
	d, ok := strings.CutPrefix(hostname, "*")
	return ok && strings.HasPrefix(d, ".") && len(name) > len(d) && strings.HasSuffix(name, d)
}

// tlsDiffs lists, for the virtual host vh of TLS listener l, the SNI
// names for which the certificate Traefik presents differs from the one
// the Gateway API chooses (vh's), each as a short value: a name; "*" for
// the names no certificate holds (the catch-all host gets Traefik's one
// default certificate for all entry points, not its own); "*.*.d" for
// names two or more labels below a wildcard hostname *.d (a wildcard in a
// certificate covers one label only); "unknown" when gwretry could not
// read a certificate's names. Empty when they agree for every SNI name vh
// serves.
func tlsDiffs(v tlsStoreView, l *translate.Listener, vh *translate.VirtualHost) []string {
	want := certAndStores{CertFile: vh.Certificate.CertFile, KeyFile: vh.Certificate.KeyFile}
	if len(v.unreadable) > 0 {
		return []string{"unknown"}
	}
	var out []string
	probe := vh.Hostname
	notDefault := v.def == nil || *v.def != want
	switch {
	case probe == "" && notDefault:
		out = append(out, "*")
	case probe == "":
	default:
		if strings.HasPrefix(probe, "*.") && notDefault {
			out = append(out, "*."+probe)
		}
		// Traefik picks by the names in the certificates; two with the
		// same matching name make it present either.
		if got, amb := v.pick(probe); amb || got == nil || *got != want {
			out = append(out, probe)
		}
	}
	// A name that another certificate carries and that no more specific
	// virtual host of l covers: the Gateway API gives it vh's certificate,
	// Traefik the certificate that names it.
	for _, sc := range v.certs {
		if sc.cert == want {
			continue
		}
		for _, n := range sc.names {
			if !sniName(n) || !(vh.Hostname == "" || covered(n, vh.Hostname)) || n == vh.Hostname {
				continue
			}
			if coveredElsewhere(l, vh, n) {
				continue
			}
			out = append(out, n)
		}
	}
	return out
}

// coveredElsewhere reports whether name is served on l by a virtual host
// more specific than vh (whose certificate decides it instead).
func coveredElsewhere(l *translate.Listener, vh *translate.VirtualHost, name string) bool {
	for _, o := range l.VirtualHosts {
		if o == vh || o.Hostname == "" {
			continue
		}
		if covered(name, o.Hostname) && moreSpecific(o.Hostname, vh.Hostname) {
			return true
		}
	}
	return false
}

// moreSpecific reports whether hostname a takes the names it covers from
// b, a distinct hostname covering them too: b is the catch-all, or a
// wildcard and a an exact name or a longer wildcard.
func moreSpecific(a, b string) bool {
	switch {
	case a == b || a == "":
		return false
	case b == "":
		return true
	}
	return strings.HasPrefix(b, "*.") && (!strings.HasPrefix(a, "*.") || len(a) > len(b))
}

// httpsDecision decides listener.https for a rule whose HTTPS listeners
// are all generated: its routers on TLS entry points terminate TLS (the
// certificates are in the dynamic tls section, read from the PEM files at
// startup; the default TLS options offer h2 and http/1.1 by ALPN, which an
// HTTPS listener accepts), and the certificate per SNI name is Traefik's
// pick among the loaded ones, which is the Gateway API's per-listener
// choice only where the certificates' names say so. HTTP/2 clients
// coalesce connections across the names a certificate covers, and Traefik
// routes such a request by its Host header (its 421 check, snicheck,
// compares TLS options only, and every router here has the default ones),
// where the Gateway API says a Gateway SHOULD answer 421 Misdirected
// Request when the Host belongs to another listener than the SNI name:
// approximated wherever a TLS listener of the rule has more than one
// hostname. The Gateway API also matches an HTTPS listener's hostname
// against the SNI name (or an implementation documents that it does not):
// without sniStrict Traefik completes any handshake and routes by Host
// (CaveatSNINotChecked "any"); with it (strictSNI), the names that some
// loaded certificate holds and the listener does not serve still do
// (CaveatSNINotChecked with them), and names deeper than a wildcard
// hostname's one label are refused (CaveatSNIRefused). A listener gwretry
// does not generate (no route attaches to it) has its SNI names served
// another certificate and its requests reach this rule.
func httpsDecision(r *translate.Rule, sites []site, view tlsStoreView) report.Decision {
	var eps, diffs, refused, foreign []string
	seen := map[*translate.VirtualHost]bool{}
	misdirected, anySNI := false, false
	for _, s := range sites {
		l, vh := s.listener, s.vhost
		if !l.TLS || vh == nil || seen[vh] {
			continue
		}
		seen[vh] = true
		if !slices.Contains(eps, l.Name) {
			eps = append(eps, l.Name)
		}
		misdirected = misdirected || len(l.VirtualHosts) > 1
		for _, d := range tlsDiffs(view, l, vh) {
			list := &diffs
			if view.strict && strings.HasPrefix(d, "*.*.") {
				// Strict SNI refuses the names the default
				// certificate would get.
				list = &refused
			}
			if !slices.Contains(*list, d) {
				*list = append(*list, d)
			}
		}
		if vh.Hostname == "" {
			// A catch-all host serves any SNI name.
			continue
		}
		if !view.strict {
			anySNI = true
			continue
		}
		for _, n := range foreignSNI(view, l) {
			if !slices.Contains(foreign, n) {
				foreign = append(foreign, n)
			}
		}
	}
	if len(eps) == 0 {
		// The rule's TLS routes were all superseded: nothing to terminate.
		return report.Decide(report.ReasonNoRequestReachesRule)
	}
	d := report.Decide(report.ReasonConfigured).Set("tls on entry point " + strings.Join(eps, ", "))
	if len(diffs) > 0 {
		d = d.With(report.NewCaveat(report.CaveatCertificateChosenByNames, "sni", strings.Join(diffs, ", ")))
	}
	if len(refused) > 0 {
		d = d.With(report.NewCaveat(report.CaveatSNIRefused, "sni", strings.Join(refused, ", ")))
	}
	switch {
	case anySNI:
		d = d.With(report.NewCaveat(report.CaveatSNINotChecked, "sni", sniAny))
	case len(foreign) > 0:
		slices.Sort(foreign)
		d = d.With(report.NewCaveat(report.CaveatSNINotChecked, "sni", strings.Join(foreign, ", ")))
	}
	if misdirected {
		d = d.With(report.NewCaveat(report.CaveatNoMisdirectedAnswer))
	}
	if len(r.TLSUnrouted) > 0 {
		d = d.With(report.NewCaveat(report.CaveatUngeneratedListenerSNI, "listeners", strings.Join(r.TLSUnrouted, ", ")))
	}
	if len(r.TLSCertShadowed) > 0 {
		d = d.With(report.NewCaveat(report.CaveatListenerCertificateShadowed, "listeners", shadowedListeners(r)))
	}
	return d
}

// sniAny is CaveatSNINotChecked's sni where the default TLS options are
// not sniStrict: any name, or none, completes the handshake.
const sniAny = "any"

// foreignSNI lists the names that complete a strict handshake on TLS
// listener l (a loaded certificate holds them; an IP address stands for a
// ClientHello without SNI sent to it) that no hostname of l covers: a
// request with such an SNI name reaches l's routes by its Host header,
// where the Gateway API matches none of l's listeners.
func foreignSNI(v tlsStoreView, l *translate.Listener) []string {
	var out []string
	for _, sc := range v.certs {
		for _, n := range sc.names {
			if !sniName(n) || slices.Contains(out, n) || slices.ContainsFunc(l.VirtualHosts, func(o *translate.VirtualHost) bool {
				return o.Hostname == "" || covered(n, o.Hostname)
			}) {
				continue
			}
			out = append(out, n)
		}
	}
	return out
}

// shadowedListeners names the listeners of r.TLSCertShadowed, without
// the hostnames and Secrets each entry explains.
func shadowedListeners(r *translate.Rule) string {
	var ls []string
	for _, s := range r.TLSCertShadowed {
		l, _, _ := strings.Cut(s, " (hostname ")
		if !slices.Contains(ls, l) {
			ls = append(ls, l)
		}
	}
	return strings.Join(ls, ", ")
}

// sniName reports whether a certificate name can be a TLS server name
// (a common name such as "My Site" cannot); Traefik also matches an IP
// name against the local address of a ClientHello without SNI.
func sniName(n string) bool {
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '*') {
			return false
		}
	}
	return n != ""
}
