package traefik

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
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
// any name below a wildcard hostname ("*.example.com" is a suffix match:
// a.example.com and a.b.example.com, not example.com).
func covered(name, hostname string) bool {
	if name == hostname {
		return true
	}
	d, ok := strings.CutPrefix(hostname, "*")
	return ok && strings.HasPrefix(d, ".") && len(name) > len(d) && strings.HasSuffix(name, d)
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
		if strings.HasPrefix(probe, "*.") && (v.def == nil || *v.def != want) {
			// A certificate's wildcard covers one label; the listener's
			// hostname covers any number.
			out = append(out, fmt.Sprintf("for SNI names two or more labels below %s (as a.b%s), which this listener serves, Traefik presents "+
				"the default certificate, %s, not %s: a wildcard name in a certificate covers one label only",
				probe[2:], probe[1:], certText(v.def), certText(&want)))
		}
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
// names say so. HTTP/2 inside TLS is no difference: an HTTPS listener
// accepts HTTP/1.1 or HTTP/2 sessions. But HTTP/2 clients coalesce
// connections across the names a certificate covers, and Traefik routes
// such a request by its Host header (its 421 check, snicheck, compares TLS
// options only, and every router here has the default ones), where the
// Gateway API says a Gateway SHOULD answer 421 Misdirected Request when
// the Host belongs to another listener than the SNI name: approximated
// wherever a TLS listener of the rule has more than one hostname.
func httpsFinding(r *translate.Rule, sites []site, view tlsStoreView) translate.Finding {
	var eps, certs, diffs []string
	seen := map[*translate.VirtualHost]bool{}
	misdirected := false
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
		certs = append(certs, fmt.Sprintf("%s on %s: %s", hostText(vh.Hostname), l.Name, vh.Certificate.CertFile))
		for _, d := range tlsDiffs(view, l, vh) {
			if !slices.Contains(diffs, d) {
				diffs = append(diffs, d)
			}
		}
	}
	if len(eps) == 0 {
		// The rule's TLS routes were all superseded: nothing to terminate.
		return translate.Decided(r, translate.FeatureListenerHTTPS, report.Decide(report.ReasonNoRequestReachesRule),
			"the route is attached to %s, but no request reaches this rule there (more precise rules take them)",
			strings.Join(r.TLSListeners, ", "))
	}
	msg := fmt.Sprintf("Traefik terminates TLS on entry point %s (its routers have tls: {}; the certificates are in the dynamic tls "+
		"section, read from the PEM files at startup) and routes the requests inside by their Host header as on HTTP; "+
		"its default TLS options offer h2 and http/1.1 by ALPN, so HTTP/2 clients speak HTTP/2, which an HTTPS listener accepts; "+
		"certificates by SNI: %s",
		strings.Join(eps, ", "), strings.Join(certs, "; "))
	d := report.Decide(report.ReasonConfigured).Set("tls on entry point " + strings.Join(eps, ", "))
	if len(diffs) > 0 {
		d = d.With(report.NewCaveat(report.CaveatCertificateChosenByNames))
		msg = fmt.Sprintf("%s; but Traefik picks the certificate by the names in the certificates, not per listener hostname: %s",
			msg, strings.Join(diffs, "; "))
	}
	if misdirected {
		d = d.With(report.NewCaveat(report.CaveatNoMisdirectedAnswer))
		msg += "; and a request whose Host header and SNI name select different hostnames of the entry point (as HTTP/2 " +
			"clients send on a coalesced connection) is routed by its Host, not answered 421 Misdirected Request as the " +
			"Gateway API says a Gateway SHOULD when the two belong to different listeners: Traefik answers 421 only when " +
			"the TLS options differ, and every router here has the default ones"
	}
	if len(r.TLSUnrouted) > 0 {
		d = d.With(report.NewCaveat(report.CaveatUngeneratedListenerSNI, "listeners", strings.Join(r.TLSUnrouted, ", ")))
		msg += "; and gwretry generates nothing for " + strings.Join(r.TLSUnrouted, ", ") + " (no route attaches to it), " +
			"so its SNI names get another certificate and its requests reach this rule, where the Gateway API presents " +
			"that listener's certificate and answers 404"
	}
	if len(r.TLSCertShadowed) > 0 {
		d = d.With(report.NewCaveat(report.CaveatListenerCertificateShadowed, "listeners", shadowedListeners(r)))
		msg += "; and the certificate of " + strings.Join(r.TLSCertShadowed, ", ") + " is not served: another listener " +
			"at the same address has that hostname first, where the Gateway API presents each listener's own certificate"
	}
	if len(diffs) > 0 || misdirected || len(r.TLSUnrouted) > 0 || len(r.TLSCertShadowed) > 0 {
		return translate.Decided(r, translate.FeatureListenerHTTPS, d, "%s", msg)
	}
	return translate.Decided(r, translate.FeatureListenerHTTPS, d,
		"%s; each certificate names its hostnames, so Traefik's pick by SNI is the listener's certificate", msg)
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
			err = decodeStrict(f.Data, &st)
		case dynamicPath:
			err = decodeStrict(f.Data, &d)
		}
		if err != nil {
			return tlsObserved{}, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return observeDecodedTLS(&st, &d)
}

// observeDecodedTLS is observeTLS over files the judge already decoded.
func observeDecodedTLS(st *staticConfig, d *dynamicConfig) (tlsObserved, error) {
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

// routerHost is the hostname a router's rule selects, in the Gateway
// API's spelling: "h" for Host(`h`), "*.d" for the HostRegexp that
// wildcardRegexp writes, "" for a rule without a host matcher.
func routerHost(rule string) (string, error) {
	x, err := parseRule(rule)
	if err != nil {
		return "", err
	}
	parts := []expr{x}
	if x.Op == "&&" {
		parts = x.Subs
	}
	host, found := "", false
	for _, p := range parts {
		if p.Func != "Host" && p.Func != "HostRegexp" {
			continue
		}
		if found || len(p.Args) != 1 {
			return "", fmt.Errorf("rule %q: more than one host", rule)
		}
		found, host = true, strings.ToLower(p.Args[0])
		if p.Func == "HostRegexp" {
			mid, ok := strings.CutPrefix(p.Args[0], "^.+")
			mid, ok2 := strings.CutSuffix(mid, "$")
			w := "*" + strings.ReplaceAll(mid, "[.]", ".")
			if !ok || !ok2 || !strings.HasPrefix(w, "*.") || !sniName(w) || wildcardRegexp(w) != p.Args[0] {
				return "", fmt.Errorf("rule %q: HostRegexp %q is no wildcard hostname", rule, p.Args[0])
			}
			host = w
		}
	}
	return host, nil
}

// presented is the certificate Traefik presents for every SNI name that
// reaches a TLS router of host (routerHost) on an entry point whose TLS
// routers have the hosts others: for an exact host its pick for that
// name; for a wildcard its pick for one label below it and the default
// for deeper names (a certificate's wildcard covers one label); for the
// catch-all the default; and in each case its pick for every name a
// certificate carries that host covers and no more specific host of the
// entry point takes. Where these differ, or a pick is ambiguous or cannot
// be known, the certificate returned names no file and says why.
func (v tlsStoreView) presented(host string, others []string) translate.Certificate {
	if len(v.unreadable) > 0 {
		return translate.Certificate{CertFile: "(unknown: gwretry cannot read the names of " + strings.Join(v.unreadable, ", ") + ")"}
	}
	type at struct {
		names string
		c     *certAndStores
		amb   bool
	}
	var picks []at
	switch {
	case host == "":
		picks = append(picks, at{"names no certificate names", v.def, false})
	case strings.HasPrefix(host, "*."):
		c, amb := v.pick(host)
		picks = append(picks, at{"one label below " + host[2:], c, amb}, at{"deeper names below " + host[2:], v.def, false})
	default:
		c, amb := v.pick(host)
		picks = append(picks, at{host, c, amb})
	}
	for _, sc := range v.certs {
		for _, n := range sc.names {
			if !sniName(n) || n == host || host != "" && !covered(n, host) ||
				slices.ContainsFunc(others, func(o string) bool { return covered(n, o) && moreSpecific(o, host) }) {
				continue
			}
			c, amb := v.pick(n)
			picks = append(picks, at{n, c, amb})
		}
	}
	var why []string
	for _, p := range picks {
		switch {
		case p.amb:
			why = append(why, "either of two certificates for "+p.names)
		case !sameCert(p.c, picks[0].c):
			why = append(why, fmt.Sprintf("%s for %s but %s for %s", certText(picks[0].c), picks[0].names, certText(p.c), p.names))
		}
	}
	switch {
	case len(why) > 0:
		return translate.Certificate{CertFile: "(no one certificate: " + strings.Join(why, "; ") + ")"}
	case picks[0].c == nil:
		return translate.Certificate{CertFile: "(" + certText(nil) + ")"}
	}
	return translate.Certificate{CertFile: picks[0].c.CertFile, KeyFile: picks[0].c.KeyFile}
}

func sameCert(a, b *certAndStores) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
