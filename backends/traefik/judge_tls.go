package traefik

// The judge's reading of TLS: which entry points terminate it and which
// certificate Traefik presents for each router's host, derived from the
// decoded files by the judge's own emulation of Traefik's certificate
// store (pkg/tls/certificate_store.go), not by the planner's (tls.go),
// so that the two are independent.

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// tlsObserved is what the files say about TLS: which entry points
// terminate it (every router on them has tls), and the default store.
type tlsObserved struct {
	terminates map[string]bool
	store      certStore
}

// observeTLS reads the TLS settings back from traefik.yaml and
// dynamic.yaml, in Traefik's terms only: an entry point terminates TLS when
// its routers have tls; one whose routers disagree is an error (a TLS
// listener would be served as plain HTTP for some requests). src maps a
// certificate path the files name to the file to read (Model.CertSource).
func observeTLS(files []translate.File, src func(string) string) (tlsObserved, error) {
	var st staticConfig
	var d dynamicConfig
	for _, f := range files {
		if f.Path != staticPath && f.Path != dynamicPath {
			continue
		}
		data, err := f.Bytes()
		if err == nil && f.Path == staticPath {
			err = decodeStrict(data, &st)
		} else if err == nil {
			err = decodeStrict(data, &d)
		}
		if err != nil {
			return tlsObserved{}, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return observeDecodedTLS(&st, &d, src)
}

// observeDecodedTLS is observeTLS over files the judge already decoded.
func observeDecodedTLS(st *staticConfig, d *dynamicConfig, src func(string) string) (tlsObserved, error) {
	o := tlsObserved{terminates: map[string]bool{}, store: loadStore(d.TLS, src)}
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

// certStore is Traefik's default store as it loads a dynamic tls section:
// each certificate under the comma-joined key of its names (a later one
// with the same key is not added), and the default certificate.
type certStore struct {
	byKey map[string]certAndStores
	def   *certAndStores
	// unreadable names the certificate files whose names could not be
	// read: where they count, nothing can be said.
	unreadable []string
	// strict: the TLS options named "default", which every router
	// without options of its own uses, have sniStrict: a handshake
	// whose name no certificate holds is refused, the default
	// certificate is never presented.
	strict bool
}

// loadStore loads tc as Traefik's file provider does, reading each
// certificate from src(its path): where the proxy host keeps it is not
// where gwretry read it (--cert-dir, --tls-dir).
func loadStore(tc *tlsConfig, src func(string) string) certStore {
	s := certStore{byKey: map[string]certAndStores{}}
	if tc == nil {
		return s
	}
	if st := tc.Stores[defaultStore]; st != nil {
		s.def = st.DefaultCertificate
	}
	if o := tc.Options["default"]; o != nil {
		s.strict = o.SniStrict
	}
	for _, c := range tc.Certificates {
		key, err := storeKey(src(c.CertFile))
		if err != nil {
			s.unreadable = append(s.unreadable, c.CertFile)
			continue
		}
		if _, dup := s.byKey[key]; !dup {
			s.byKey[key] = *c
		}
	}
	return s
}

// storeKey is the key Traefik files a certificate under: the leaf's
// common name, DNS and IP SANs, lowercased, sorted, each once, joined by
// commas.
func storeKey(certFile string) (string, error) {
	rest, err := os.ReadFile(certFile)
	if err != nil {
		return "", err
	}
	for len(rest) > 0 {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return "", fmt.Errorf("%s: %w", certFile, err)
		}
		set := map[string]bool{}
		if cn := leaf.Subject.CommonName; cn != "" {
			set[strings.ToLower(cn)] = true
		}
		for _, n := range leaf.DNSNames {
			set[strings.ToLower(n)] = true
		}
		for _, ip := range leaf.IPAddresses {
			set[ip.String()] = true
		}
		return strings.Join(slices.Sorted(maps.Keys(set)), ","), nil
	}
	return "", fmt.Errorf("%s holds no PEM CERTIFICATE", certFile)
}

// names are every name some certificate of s holds, sorted.
func (s certStore) names() []string {
	set := map[string]bool{}
	for key := range s.byKey {
		for _, n := range strings.Split(key, ",") {
			set[n] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// pick is Traefik's GetBestCertificate for serverName: every certificate
// with a name that matches it, by that name; the one under the greatest
// name wins; none, the default (nil: Traefik's own generated
// certificate). ambiguous is true when different certificates hold the
// winning name: Traefik's map order then picks either.
func (s certStore) pick(serverName string) (c *certAndStores, ambiguous bool) {
	matched := map[string][]certAndStores{}
	for _, key := range slices.Sorted(maps.Keys(s.byKey)) {
		for _, n := range strings.Split(key, ",") {
			if nameMatches(serverName, n) && !slices.Contains(matched[n], s.byKey[key]) {
				matched[n] = append(matched[n], s.byKey[key])
			}
		}
	}
	if len(matched) == 0 {
		return s.def, false
	}
	best := slices.Max(slices.Collect(maps.Keys(matched)))
	got := matched[best][0]
	return &got, len(matched[best]) > 1
}

// nameMatches is Traefik's matchDomain, restated: the certificate name is
// the server name, or (trailing dots aside) the server name with one or
// more leading labels each written "*".
func nameMatches(serverName, certName string) bool {
	if serverName == certName {
		return true
	}
	cl := strings.Split(strings.TrimRight(certName, "."), ".")
	sl := strings.Split(serverName, ".")
	if len(cl) != len(sl) {
		return false
	}
	i := 0
	for i < len(cl) && cl[i] == "*" {
		i++
	}
	return i > 0 && slices.Equal(cl[i:], sl[i:])
}

// hostTakes says whether a router host (the Gateway API's spelling: a
// name, "*.d", or "" for any) serves SNI name n: the host itself, or, for
// a wildcard, any name with one or more labels before its suffix.
func hostTakes(host, n string) bool {
	if host == "" || n == host {
		return true
	}
	suffix, ok := strings.CutPrefix(host, "*")
	return ok && strings.HasPrefix(suffix, ".") && strings.HasSuffix(n, suffix) && len(n) > len(suffix)
}

// narrower says whether router host a takes the names it covers from
// host b on the same entry point (Traefik orders routers by rule length
// and gwretry's hosts by the Gateway API's precedence: an exact name over
// a wildcard, a longer wildcard over a shorter, anything over none).
func narrower(a, b string) bool {
	switch {
	case a == b || a == "":
		return false
	case b == "":
		return true
	case !strings.HasPrefix(b, "*."):
		return false
	}
	return !strings.HasPrefix(a, "*.") || len(a) > len(b)
}

// serverName says whether a certificate name can be sent as SNI.
func serverName(n string) bool {
	return n != "" && strings.IndexFunc(n, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '*')
	}) < 0
}

// presented is the certificate Traefik presents for every SNI name that
// reaches a TLS router of host (routerHost) on an entry point whose TLS
// routers have the hosts others: for an exact host its pick for that
// name; for a wildcard its pick for one label below it (a literal "*"
// label, which only a certificate's wildcard matches) and the default for
// deeper names (a certificate's wildcard covers one label); for the
// catch-all the default; and in each case its pick for every name a
// certificate holds that host serves and no narrower host of the entry
// point takes. Where these differ, or a pick is ambiguous or cannot be
// known, the certificate returned names no file and says why; so it does
// for a host with a hostname where the SNI name is not matched against
// the entry point's hosts (the default TLS options are not sniStrict, or
// a certificate holds a name none of them serves), and where strict SNI
// refuses names the host serves.
func (s certStore) presented(host string, others []string) translate.Certificate {
	if len(s.unreadable) > 0 {
		return translate.Certificate{CertFile: "(unknown: gwretry cannot read the names of " + strings.Join(s.unreadable, ", ") + ")"}
	}
	type at struct {
		names string
		c     *certAndStores
		amb   bool
	}
	var picks []at
	var why []string
	switch {
	case host == "" && s.strict:
		why = append(why, "the handshake of names no certificate names is refused (sniStrict)")
	case host == "":
		picks = append(picks, at{"names no certificate names", s.def, false})
	case strings.HasPrefix(host, "*."):
		c, amb := s.pick(host)
		picks = append(picks, at{"one label below " + host[2:], c, amb})
		if s.strict {
			why = append(why, "the handshake of deeper names below "+host[2:]+" is refused (sniStrict)")
		} else {
			picks = append(picks, at{"deeper names below " + host[2:], s.def, false})
		}
	default:
		c, amb := s.pick(host)
		picks = append(picks, at{host, c, amb})
	}
	// The hosts served on the TLS routers' entry point match the SNI
	// name only where strict SNI refuses every name no certificate
	// holds and the certificates hold none that those hosts do not
	// serve: else a handshake with such a name (none, or another) is
	// completed and its requests are routed to host by Host alone.
	if host != "" && !s.strict {
		why = append(why, "any SNI name, or none, reaches it by Host: the default TLS options are not sniStrict")
	}
	if host != "" && s.strict {
		for _, n := range s.names() {
			if serverName(n) && n != host && !hostTakes(host, n) && !slices.ContainsFunc(others, func(o string) bool { return o == "" || hostTakes(o, n) }) {
				why = append(why, "SNI "+n+" completes the handshake (a certificate names it) and reaches it by Host")
			}
		}
	}
	if len(picks) == 0 {
		return translate.Certificate{CertFile: "(no one certificate: " + strings.Join(why, "; ") + ")"}
	}
	for _, n := range s.names() {
		if !serverName(n) || n == host || !hostTakes(host, n) ||
			slices.ContainsFunc(others, func(o string) bool { return hostTakes(o, n) && narrower(o, host) }) {
			continue
		}
		c, amb := s.pick(n)
		picks = append(picks, at{n, c, amb})
	}
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

// certText names a certificate by its files.
func certText(c *certAndStores) string {
	if c == nil {
		return "Traefik's own generated certificate (TRAEFIK DEFAULT CERT)"
	}
	return "the certificate of " + c.CertFile
}

// routerHost is the hostname a router's rule selects, in the Gateway
// API's spelling: "h" for Host(`h`), "*.d" for a HostRegexp `^.+[.]d$`
// (d's dots written [.]), "" for a rule without a host matcher.
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
			if !ok || !ok2 || !strings.HasPrefix(w, "*.") || !serverName(w) || strings.Count(w, "*") != 1 ||
				"^.+"+strings.ReplaceAll(w[1:], ".", "[.]")+"$" != p.Args[0] {
				return "", fmt.Errorf("rule %q: HostRegexp %q is no wildcard hostname", rule, p.Args[0])
			}
			host = w
		}
	}
	return host, nil
}
