package traefik

import (
	"crypto/x509"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/tlstest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
	"sigs.k8s.io/yaml"
)

// testCA writes, at test time, a self-signed CA and one leaf per Secret
// name into DIR/ns/NAME/tls.crt and tls.key (the --tls-dir layout). sans
// gives each leaf's DNS names (its common name is "leaf NAME", which no
// SNI matches). It returns DIR, the CA pool and each leaf by name.
func testCA(t *testing.T, sans map[string][]string) (string, *x509.CertPool, map[string]*x509.Certificate) {
	t.Helper()
	ca := tlstest.New(t, "")
	leaves := map[string]*x509.Certificate{}
	for _, name := range slices.Sorted(maps.Keys(sans)) {
		leaves[name] = ca.Sign(t, tlstest.Leaf{Namespace: "ns", Name: name, CommonName: "leaf " + name, DNSNames: sans[name]})
	}
	return ca.Dir, ca.Pool, leaves
}

// tlsManifest: Gateway ns/gw with an HTTP listener and three HTTPS ones
// (exact a.example.com, wildcard *.example.com, catch-all), and a route
// with no hostnames attached to all of them: a retrying rule to Service
// svc, a redirect without scheme and a backendRequest timeout of 300ms on /slow
// to Service slow (the last endpoint only).
const tlsManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
  - {name: wild, port: 443, protocol: HTTPS, hostname: "*.example.com", tls: {certificateRefs: [{name: cert-wild}]}}
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any}]}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  ports: [{port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /redir}}]
    filters: [{type: RequestRedirect, requestRedirect: {statusCode: 302}}]
  - backendRefs: [{name: svc, port: 80}]
    retry: {attempts: 1}
  - matches: [{path: {type: PathPrefix, value: /slow}}]
    backendRefs: [{name: slow, port: 80}]
    timeouts: {backendRequest: 300ms}
---
apiVersion: v1
kind: Service
metadata: {name: slow, namespace: ns}
spec:
  ports: [{port: 80}]
`

// tlsModel resolves tlsManifest with --tls-dir dir, --listen 127.0.0.1:http
// and --listen-https 127.0.0.1:https, Service svc on endpoints.
func tlsModel(t *testing.T, dir string, http, https int, endpoints ...translate.Endpoint) *translate.Model {
	t.Helper()
	in, err := input.Load([]string{"-"}, strings.NewReader(tlsManifest), translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := resolve.Build(in, translate.ResolveOptions{TLSDir: dir,
		Listen:    &translate.Bind{Address: "127.0.0.1", Port: http},
		ListenTLS: &translate.Bind{Address: "127.0.0.1", Port: https},
		Endpoints: []translate.EndpointOverride{{Service: "svc", Port: 80, Endpoints: endpoints},
			{Service: "slow", Port: 80, Endpoints: endpoints[len(endpoints)-1:]}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tlsCases are the certificate sets of the tests: names per Secret, the
// status of listener.https, an SNI value its CertificateChosenByNames
// caveat names (where Traefik's pick differs), and the Secret Traefik
// presents per SNI name ("" for no SNI).
func tlsCases() []struct {
	name    string
	sans    map[string][]string
	status  translate.Status
	sni     string
	present map[string]string
} {
	return []struct {
		name    string
		sans    map[string][]string
		status  translate.Status
		sni     string
		present map[string]string
	}{
		// Each certificate names its listener's hostname, but cert-wild's
		// "*.example.com" covers one label where the listener covers any
		// number (a.b.example.com gets the default, cert-any), and the
		// three hostnames share port 443 without 421 across them.
		{"names match the listeners",
			map[string][]string{"cert-a": {"a.example.com"}, "cert-wild": {"*.example.com"}, "cert-any": {"fallback.test"}},
			translate.Approximated, "*.*.example.com",
			map[string]string{"a.example.com": "cert-a", "b.example.com": "cert-wild", "x.b.example.com": "cert-any", "other.test": "cert-any", "": "cert-any",
				"A.Example.COM": "cert-a", "B.EXAMPLE.com": "cert-wild"}},
		// cert-a does not name a.example.com: Traefik presents cert-wild,
		// which does; and cert-wild also names c.example.com, served by
		// the wildcard listener anyway.
		{"a leaf misses its hostname",
			map[string][]string{"cert-a": {"elsewhere.example.net"}, "cert-wild": {"*.example.com"}, "cert-any": {"fallback.test"}},
			translate.Approximated, "a.example.com",
			map[string]string{"a.example.com": "cert-wild", "b.example.com": "cert-wild", "": "cert-any"}},
		// cert-a also names other.test, which the catch-all listener
		// serves with cert-any: Traefik presents cert-a.
		{"a leaf names a catch-all host",
			map[string][]string{"cert-a": {"a.example.com", "other.test"}, "cert-wild": {"*.example.com"}, "cert-any": {"fallback.test"}},
			translate.Approximated, "other.test",
			map[string]string{"a.example.com": "cert-a", "other.test": "cert-a", "x.test": "cert-any"}},
	}
}

// sniOf is the SNI values of d's CertificateChosenByNames caveat, none
// without it.
func sniOf(d report.Decision) []string {
	for _, c := range d.Caveats {
		if c.Reason == report.CaveatCertificateChosenByNames {
			return strings.Split(c.Params["sni"], ", ")
		}
	}
	return nil
}

// strictOf is d's SNINotChecked or SNIRefused caveat as "Reason sni=…",
// "" without either.
func strictOf(d report.Decision) string {
	var out []string
	for _, c := range d.Caveats {
		if c.Reason == report.CaveatSNINotChecked || c.Reason == report.CaveatSNIRefused {
			out = append(out, string(c.Reason)+" sni="+c.Params["sni"])
		}
	}
	return strings.Join(out, "; ")
}

// TestHTTPSListenerConfig checks the files, the listener.https finding and
// what the TLS judge reads back, without running Traefik.
func TestHTTPSListenerConfig(t *testing.T) {
	for _, tc := range tlsCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, _ := testCA(t, tc.sans)
			m := tlsModel(t, dir, 8080, 8443, translate.Endpoint{Host: "127.0.0.1", Port: 9})
			out := generate(t, m, translate.Options{Version: v36})
			n := 0
			for _, f := range out.Findings {
				if f.Feature != translate.FeatureListenerHTTPS {
					continue
				}
				n++
				if f.Status != tc.status || !slices.Contains(sniOf(f.Decision), tc.sni) {
					t.Errorf("rule %d listener.https: %s %+v, want %s with SNI %q", f.Rule, f.Status, f.Caveats, tc.status, tc.sni)
				}
			}
			if n != len(m.Rules) {
				t.Errorf("%d listener.https findings for %d rules", n, len(m.Rules))
			}
			static, dyn := files(t, out)
			for _, want := range []string{"tls: {}", "certFile: " + dir + "/ns/cert-a/tls.crt", "keyFile: " + dir + "/ns/cert-a/tls.key",
				"defaultCertificate:", "certFile: " + dir + "/ns/cert-any/tls.crt"} {
				if !strings.Contains(string(dyn), want) {
					t.Errorf("dynamic.yaml lacks %q:\n%s", want, dyn)
				}
			}
			if strings.Contains(string(static), "tls") {
				t.Errorf("traefik.yaml mentions tls:\n%s", static)
			}
			// The judge: which entry point terminates TLS, which
			// certificate for which SNI name, read from the files only.
			obs, err := observeTLS(out.Files, m.CertSource)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range m.Listeners {
				if obs.terminates[l.Name] != l.TLS {
					t.Errorf("entry point %s terminates TLS %v, listener TLS %v", l.Name, obs.terminates[l.Name], l.TLS)
				}
			}
			for sni, secret := range tc.present {
				probe := strings.ToLower(sni) // as Traefik does; Gateway hostnames are lowercase
				if probe == "" {
					probe = "127.0.0.1" // Traefik's name for a ClientHello without SNI
				}
				got, amb := obs.store.pick(probe)
				if amb || got == nil || got.CertFile != filepath.Join(dir, "ns", secret, "tls.crt") {
					t.Errorf("SNI %q: judge reads %v (ambiguous %v), want %s", sni, got, amb, secret)
				}
			}
			// What the judge reads back per HTTPS host of each rule:
			// never the model's certificate where it differs.
			obsAll, err := New().Observe(m, translate.Options{Version: v36}, out.Files)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range m.Rules {
				for c, b := range obsAll[r.Name] {
					if len(b.TLS) != 3 {
						t.Errorf("rule %s %s: TLS read back for %d hosts, want 3: %v", r.Name, c, len(b.TLS), b.TLS)
					}
					if got := b.TLS[translate.TLSKey(8443, "*.example.com")]; got.CertFile == dir+"/ns/cert-wild/tls.crt" {
						t.Errorf("rule %s: the judge reads cert-wild for the wildcard host, whose deeper names get cert-any", r.Name)
					}
				}
			}
		})
	}
}

// singleHTTPSManifest: an HTTP listener and one HTTPS listener (HOSTNAME,
// Secret cert-l), with a retrying rule.
const singleHTTPSManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: tls, port: 443, protocol: HTTPS, HOSTNAME tls: {certificateRefs: [{name: cert-l}]}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  ports: [{port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 80}]
    retry: {attempts: 1}
`

// tamperedTLS generates as Traefik does, then points the certificate
// files of dynamic.yaml at other ones.
type tamperedTLS struct {
	*Backend
	from, to string
}

func (b tamperedTLS) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	out, err := b.Backend.Generate(m, opts)
	if err != nil {
		return nil, err
	}
	for i, f := range out.Files {
		if f.Path == dynamicPath {
			out.Files[i].Data = []byte(strings.ReplaceAll(string(f.Data), b.from, b.to))
		}
	}
	return out, nil
}

// TestHTTPSHonouredJudged: with one HTTPS hostname per port and a
// certificate whose names Traefik picks for every SNI name the listener
// serves, listener.https is honoured and the shared judge agrees (Run
// passes); the judge reads the listener's certificate back; and a
// dynamic.yaml whose certificate files were swapped makes Run fail.
// Where Traefik's pick differs, the finding stays approximated.
func TestHTTPSHonouredJudged(t *testing.T) {
	for _, tc := range []struct {
		name, hostname string
		names          []string
		status         translate.Status
		// sni is the CertificateChosenByNames caveat's SNI values, ""
		// without it.
		sni string
		// strict is the SNINotChecked or SNIRefused caveat, "" without.
		strict string
	}{
		{"catch-all", "", []string{"fallback.test"}, translate.Honoured, "", ""},
		// Strict SNI: only a.example.com completes a handshake.
		{"exact name", "a.example.com", []string{"a.example.com"}, translate.Honoured, "", ""},
		// Traefik presents its own generated certificate; strict SNI
		// would refuse the listener's own name, so it is not written
		// and any SNI name reaches the rule.
		{"exact name not in the certificate", "a.example.com", []string{"b.example.com"}, translate.Approximated, "a.example.com", "SNINotChecked sni=any"},
		// Strict SNI refuses what the default certificate got.
		{"wildcard", "*.example.com", []string{"*.example.com"}, translate.Approximated, "", "SNIRefused sni=*.*.example.com"},
		// The certificate also names b.example.com, which strict SNI
		// lets through to the rule by Host.
		{"certificate names another host", "a.example.com", []string{"a.example.com", "b.example.com"}, translate.Approximated, "", "SNINotChecked sni=b.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, _ := testCA(t, map[string][]string{"cert-l": tc.names, "cert-other": {"a.example.com", "fallback.test"}})
			host := ""
			if tc.hostname != "" {
				host = fmt.Sprintf("hostname: %q,", tc.hostname)
			}
			in, err := input.Load([]string{"-"}, strings.NewReader(strings.Replace(singleHTTPSManifest, "HOSTNAME", host, 1)), translate.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			m, err := resolve.Build(in, translate.ResolveOptions{TLSDir: dir,
				Listen:    &translate.Bind{Address: "127.0.0.1", Port: 8080},
				ListenTLS: &translate.Bind{Address: "127.0.0.1", Port: 8443},
				Endpoints: []translate.EndpointOverride{{Service: "svc", Port: 80, Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: 9}}}}})
			if err != nil {
				t.Fatal(err)
			}
			out := generate(t, m, translate.Options{Version: v36}) // runs translate.Run, judge included
			var f *translate.Finding
			for i := range out.Findings {
				if out.Findings[i].Feature == translate.FeatureListenerHTTPS {
					f = &out.Findings[i]
				}
			}
			if f == nil || f.Status != tc.status || strings.Join(sniOf(f.Decision), ", ") != tc.sni || strictOf(f.Decision) != tc.strict {
				t.Fatalf("listener.https: %+v, want %s with SNI %q and %q", f, tc.status, tc.sni, tc.strict)
			}
			_, dyn := files(t, out)
			if want := tc.hostname != "" && tc.strict != "SNINotChecked sni=any"; strings.Contains(string(dyn), "sniStrict: true") != want {
				t.Errorf("dynamic.yaml has sniStrict %v, want %v:\n%s", !want, want, dyn)
			}
			obs, err := New().Observe(m, translate.Options{Version: v36}, out.Files)
			if err != nil {
				t.Fatal(err)
			}
			key := translate.TLSKey(8443, tc.hostname)
			for c, b := range obs[m.Rules[0].Name] {
				got := b.TLS[key]
				if good := got.CertFile == dir+"/ns/cert-l/tls.crt" && got.KeyFile == dir+"/ns/cert-l/tls.key"; good != (tc.status == translate.Honoured) || len(b.TLS) != 1 {
					t.Errorf("%s: judge reads %v, want cert-l only if honoured", c, b.TLS)
				}
			}
			if tc.status != translate.Honoured {
				return
			}
			tampered := tamperedTLS{Backend: New(), from: dir + "/ns/cert-l/", to: dir + "/ns/cert-other/"}
			_, err = translate.Run(m, []translate.Target{{Backend: tampered, Version: v36}}, false)
			if err == nil || !strings.Contains(err.Error(), "listener.https is honoured") {
				t.Errorf("Run with the certificate swapped in dynamic.yaml: %v, want the listener.https claim refused", err)
			}
			if tc.hostname == "" {
				return
			}
			// Without sniStrict any SNI name reaches the rule: the judge
			// refuses the honoured claim.
			tampered = tamperedTLS{Backend: New(), from: "sniStrict: true", to: "sniStrict: false"}
			_, err = translate.Run(m, []translate.Target{{Backend: tampered, Version: v36}}, false)
			if err == nil || !strings.Contains(err.Error(), "listener.https is honoured") || !strings.Contains(err.Error(), "not sniStrict") {
				t.Errorf("Run with sniStrict off in dynamic.yaml: %v, want the listener.https claim refused", err)
			}
		})
	}
}

// TestHTTPSRedirectKeepsScheme: a redirect without scheme on the HTTPS
// listener builds https://host:8443, on the HTTP one http://host:8080; the
// judge reads both back as the model's redirect.
func TestHTTPSRedirectKeepsScheme(t *testing.T) {
	dir, _, _ := testCA(t, tlsCases()[0].sans)
	m := tlsModel(t, dir, 8080, 8443, translate.Endpoint{Host: "127.0.0.1", Port: 9})
	out := generate(t, m, translate.Options{Version: v36})
	var d dynamicConfig
	_, dyn := files(t, out)
	if err := yamlStrict(dyn, &d); err != nil {
		t.Fatal(err)
	}
	got := map[bool]string{}
	for name, rt := range d.HTTP.Routers {
		for _, mw := range rt.Middlewares {
			if rr := d.HTTP.Middlewares[mw].RedirectRegex; rr != nil {
				if old, ok := got[rt.TLS != nil]; ok && old != rr.Replacement {
					t.Errorf("router %s: replacement %q, another router %q", name, rr.Replacement, old)
				}
				got[rt.TLS != nil] = rr.Replacement
			}
		}
	}
	if !strings.HasPrefix(got[true], "${1}://${2}:8443") || !strings.HasPrefix(got[false], "${1}://${2}:8080") {
		t.Errorf("redirect replacements: TLS %q, plain %q", got[true], got[false])
	}
}

// TestHTTPSNotGeneratedStaysUnsupported: without --tls-dir the HTTPS
// listeners are not generated and listener.https stays unsupported.
func TestHTTPSNotGeneratedStaysUnsupported(t *testing.T) {
	m := tlsModel(t, "", 8080, 8443, translate.Endpoint{Host: "127.0.0.1", Port: 9})
	out := generate(t, m, translate.Options{Version: v36})
	for _, f := range out.Findings {
		if f.Feature == translate.FeatureListenerHTTPS && f.Status != translate.Unsupported {
			t.Errorf("listener.https without --tls-dir: %s %s", f.Status, f.Reason)
		}
	}
	_, dyn := files(t, out)
	if strings.Contains(string(dyn), "tls") {
		t.Errorf("dynamic.yaml has tls without TLS listeners:\n%s", dyn)
	}
}

// TestJudgeRefusesPlainTLSListener: an entry point of a TLS listener whose
// routers lost tls (served as plain HTTP) is refused by the judge.
func TestJudgeRefusesPlainTLSListener(t *testing.T) {
	dir, _, _ := testCA(t, tlsCases()[0].sans)
	m := tlsModel(t, dir, 8080, 8443, translate.Endpoint{Host: "127.0.0.1", Port: 9})
	out := generate(t, m, translate.Options{Version: v36})
	static, dyn := files(t, out)
	for _, tc := range []struct {
		name string
		n    int
	}{{"all routers plain", -1}, {"one router plain", 1}} {
		altered := strings.Replace(string(dyn), "      tls: {}\n", "", tc.n)
		_, err := New().Observe(m, translate.Options{Version: v36}, []translate.File{{Path: staticPath, Data: static}, {Path: dynamicPath, Data: []byte(altered)}})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "tls") {
			t.Errorf("%s: Observe = %v, want the TLS listener refused", tc.name, err)
		}
	}
}

func yamlStrict(data []byte, v any) error {
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	return nil
}

// TestHTTPSShadowedCertificate: two HTTPS listeners with the same hostname
// and different Secrets moved to one address (--listen-https) serve only
// the first one's certificate; listener.https, honoured before, says so.
func TestHTTPSShadowedCertificate(t *testing.T) {
	dir, _, _ := testCA(t, map[string][]string{"c1": {"a.example.com"}, "c2": {"a.example.com"}})
	manifest := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: p1, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: c1}]}}
  - {name: p2, port: 8443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: c2}]}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec:
  ports: [{port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 80}]
`
	for _, tc := range []struct {
		name   string
		merged bool
		caveat report.Caveat
	}{
		// p2's certificate is not served: p1 has its hostname first.
		{"one address", true, report.NewCaveat(report.CaveatListenerCertificateShadowed, "listeners", "Gateway ns/gw listener p2")},
		// Two certificates have the same matching name.
		{"own ports", false, report.NewCaveat(report.CaveatCertificateChosenByNames, "sni", "a.example.com")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := input.Load([]string{"-"}, strings.NewReader(manifest), translate.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			opts := translate.ResolveOptions{TLSDir: dir,
				Endpoints: []translate.EndpointOverride{{Service: "svc", Port: 80, Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: 9}}}}}
			if tc.merged {
				opts.ListenTLS = &translate.Bind{Address: "127.0.0.1", Port: 8443}
			}
			m, err := resolve.Build(in, opts)
			if err != nil {
				t.Fatal(err)
			}
			out := generate(t, m, translate.Options{Version: v36})
			n := 0
			for _, f := range out.Findings {
				if f.Feature != translate.FeatureListenerHTTPS {
					continue
				}
				n++
				if f.Status != translate.Approximated {
					t.Errorf("listener.https: %s, want approximated", f.Status)
				}
				if !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return reflect.DeepEqual(c, tc.caveat) }) {
					t.Errorf("listener.https: caveats %v, want %v among them", f.Caveats, tc.caveat)
				}
			}
			if n != 1 {
				t.Errorf("%d listener.https findings, want 1", n)
			}
		})
	}
}
