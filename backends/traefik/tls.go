package traefik

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/translate"
	"sigs.k8s.io/yaml"
)

// buildTLS builds the dynamic tls section for the TLS listeners of m: every
// certificate of a virtual host with a hostname in tls.certificates (once
// each, in the model's order), and the certificate of the first TLS
// listener's catch-all host as the default store's defaultCertificate.
// Traefik chooses among them by SNI against each certificate's own names
// (see tlsConfig); tlsVerdicts says where that differs from the Gateway
// API's per-listener choice. It returns nil when m has no TLS listener.
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
	return &tc, nil
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
}

type storedCert struct {
	cert  certAndStores
	names []string
}

// storeView reads the certificates of tc as Traefik loads them: a
// certificate whose set of names equals an earlier one's is skipped.
func storeView(tc *tlsConfig) tlsStoreView {
	var v tlsStoreView
	if tc == nil {
		return v
	}
	if s := tc.Stores[defaultStore]; s != nil {
		v.def = s.DefaultCertificate
	}
	keys := map[string]bool{}
	for _, c := range tc.Certificates {
		names, err := certNames(c.CertFile)
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
// a one-label name under a wildcard hostname.
func covered(name, hostname string) bool {
	if name == hostname {
		return true
	}
	d, ok := strings.CutPrefix(hostname, "*.")
	if !ok {
		return false
	}
	label, rest, ok := strings.Cut(name, ".")
	return ok && label != "" && label != "*" && rest == d
}

// certText names a certificate by its files.
func certText(c *certAndStores) string {
	if c == nil {
		return "Traefik's own generated certificate (TRAEFIK DEFAULT CERT)"
	}
	return "the certificate of " + c.CertFile
}

// tlsDiffs says, for the virtual host vh of TLS listener l, where the
// certificate Traefik presents differs from the one the Gateway API
// chooses (vh's): empty when they agree for every SNI name vh serves.
func tlsDiffs(v tlsStoreView, l *translate.Listener, vh *translate.VirtualHost) []string {
	want := certAndStores{CertFile: vh.Certificate.CertFile, KeyFile: vh.Certificate.KeyFile}
	var out []string
	if len(v.unreadable) > 0 {
		return []string{fmt.Sprintf("gwretry could not read the names of %s, so it cannot tell which certificate Traefik presents for %s",
			strings.Join(v.unreadable, ", "), hostText(vh.Hostname))}
	}
	probe := vh.Hostname
	if probe == "" {
		if v.def == nil || *v.def != want {
			out = append(out, fmt.Sprintf("for SNI names no certificate names, Traefik presents the default certificate, %s, not %s: "+
				"Traefik has one default certificate for all entry points", certText(v.def), certText(&want)))
		}
	} else {
		got, amb := v.pick(probe)
		switch {
		case amb:
			out = append(out, fmt.Sprintf("for %s two certificates have the same matching name and Traefik presents either", hostText(probe)))
		case got == nil || *got != want:
			out = append(out, fmt.Sprintf("for %s Traefik presents %s, not %s: it picks by the names in the certificates, and %s",
				hostText(probe), certText(got), certText(&want), whyNot(v, probe, want)))
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
			out = append(out, fmt.Sprintf("for SNI %s, which this listener serves with %s, Traefik presents %s, which names it",
				n, certText(&want), certText(&sc.cert)))
		}
	}
	return out
}

// whyNot explains why want is not Traefik's pick for serverName.
func whyNot(v tlsStoreView, serverName string, want certAndStores) string {
	for _, sc := range v.certs {
		if sc.cert == want {
			return fmt.Sprintf("the names of %s (%s) do not win for it", want.CertFile, strings.Join(sc.names, ", "))
		}
	}
	return want.CertFile + " is not loaded for it"
}

// coveredElsewhere reports whether name is served on l by a virtual host
// more specific than vh (whose certificate decides it instead).
func coveredElsewhere(l *translate.Listener, vh *translate.VirtualHost, name string) bool {
	for _, o := range l.VirtualHosts {
		if o == vh || o.Hostname == "" {
			continue
		}
		if covered(name, o.Hostname) && (vh.Hostname == "" || strings.HasPrefix(vh.Hostname, "*.") && !strings.HasPrefix(o.Hostname, "*.")) {
			return true
		}
	}
	return false
}

func hostText(h string) string {
	if h == "" {
		return "the catch-all host"
	}
	return "SNI " + h
}

// httpsFinding answers listener.https for a rule whose HTTPS listeners are
// all generated: its routers on TLS entry points terminate TLS, and the
// certificate per SNI name is Traefik's pick among the loaded ones, which
// is the Gateway API's per-listener choice only where the certificates'
// names say so.
func httpsFinding(r *translate.Rule, sites []site, view tlsStoreView) translate.Finding {
	var eps, certs, diffs []string
	seen := map[*translate.VirtualHost]bool{}
	for _, s := range sites {
		l, vh := s.listener, s.vhost
		if !l.TLS || vh == nil || seen[vh] {
			continue
		}
		seen[vh] = true
		if !slices.Contains(eps, l.Name) {
			eps = append(eps, l.Name)
		}
		certs = append(certs, fmt.Sprintf("%s on %s: %s", hostText(vh.Hostname), l.Name, vh.Certificate.CertFile))
		for _, d := range tlsDiffs(view, l, vh) {
			if !slices.Contains(diffs, d) {
				diffs = append(diffs, d)
			}
		}
	}
	if len(eps) == 0 {
		// The rule's TLS routes were all superseded: nothing to terminate.
		return translate.NewFinding(r, translate.FeatureListenerHTTPS, translate.Honoured,
			"the route is attached to %s, but no request reaches this rule there (more precise rules take them)",
			strings.Join(r.TLSListeners, ", "))
	}
	msg := fmt.Sprintf("Traefik terminates TLS on entry point %s (its routers have tls: {}; the certificates are in the dynamic tls "+
		"section, read from the PEM files at startup) and routes the requests inside by their Host header as on HTTP; "+
		"its default TLS options offer h2 and http/1.1 by ALPN, so HTTP/2 clients speak HTTP/2; certificates by SNI: %s",
		strings.Join(eps, ", "), strings.Join(certs, "; "))
	if len(diffs) > 0 {
		return translate.NewFinding(r, translate.FeatureListenerHTTPS, translate.Approximated,
			"%s; but Traefik picks the certificate by the names in the certificates, not per listener hostname: %s",
			msg, strings.Join(diffs, "; "))
	}
	// translate's judge has no Behaviour field for TLS yet and refuses an
	// honoured listener.https it cannot read back: until it has one, the
	// claim that would be honoured is reported approximated, saying why.
	// observeTLS reads it back for this package's tests.
	return translate.NewFinding(r, translate.FeatureListenerHTTPS, httpsAgreeing,
		"%s; each certificate names its hostnames, so Traefik's pick by SNI is the listener's certificate%s", msg, httpsAgreeingNote)
}

// httpsAgreeing is the status of listener.https where Traefik's choice of
// certificate is the Gateway API's: Honoured once translate's judge reads
// TLS back (translate.Behaviour has no field for it yet).
const httpsAgreeing = translate.Approximated

const httpsAgreeingNote = " (reported approximated only because gwretry's judge does not read listener.https back yet)"

// tlsObserved is what the files say about TLS: which entry points
// terminate it (every router on them has tls), and the default store.
type tlsObserved struct {
	terminates map[string]bool
	store      tlsStoreView
}

// observeTLS reads the TLS settings back from traefik.yaml and
// dynamic.yaml, in Traefik's terms only: an entry point terminates TLS when
// its routers have tls; one whose routers disagree is an error (a TLS
// listener would be served as plain HTTP for some requests).
func observeTLS(files []translate.File) (tlsObserved, error) {
	var st staticConfig
	var d dynamicConfig
	for _, f := range files {
		var err error
		switch f.Path {
		case staticPath:
			err = yaml.UnmarshalStrict(f.Data, &st)
		case dynamicPath:
			err = yaml.UnmarshalStrict(f.Data, &d)
		}
		if err != nil {
			return tlsObserved{}, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	o := tlsObserved{terminates: map[string]bool{}, store: storeView(d.TLS)}
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(d.HTTP.Routers)) {
		rt := d.HTTP.Routers[name]
		for _, ep := range rt.EntryPoints {
			if _, ok := st.EntryPoints[ep]; !ok {
				return o, fmt.Errorf("router %s: entry point %s is not defined", name, ep)
			}
			tls := rt.TLS != nil
			if seen[ep] && o.terminates[ep] != tls {
				return o, fmt.Errorf("entry point %s has routers with and without tls", ep)
			}
			seen[ep], o.terminates[ep] = true, tls
		}
	}
	return o, nil
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
