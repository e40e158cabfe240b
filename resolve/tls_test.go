package resolve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// tlsDir makes DIR/ns/<name>/tls.crt and tls.key for each name.
func tlsDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		d := filepath.Join(dir, "ns", n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"tls.crt", "tls.key"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("pem"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

const tlsGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any}]}}
---
`

func tlsRoute() string {
	return strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw}]\n  hostnames: [a.example.com, b.example.com]\n", 1)
}

func TestResolveHTTPSListeners(t *testing.T) {
	dir := tlsDir(t, "cert-a", "cert-any")
	m := build(t, tlsGateway+tlsRoute(), translate.ResolveOptions{TLSDir: dir})
	if len(m.Listeners) != 2 || m.Listeners[1].Name != "https-443" || !m.Listeners[1].TLS || m.Listeners[0].TLS {
		t.Fatalf("listeners %+v", m.Listeners)
	}
	certs := map[string]string{}
	for _, vh := range m.Listeners[1].VirtualHosts {
		certs[vh.Hostname] = vh.Certificate.Secret
		if !strings.HasPrefix(vh.Certificate.CertFile, dir) || !strings.HasSuffix(vh.Certificate.KeyFile, "/tls.key") {
			t.Errorf("certificate files %+v", vh.Certificate)
		}
	}
	if certs["a.example.com"] != "ns/cert-a" || certs["b.example.com"] != "ns/cert-any" {
		t.Errorf("certificates by SNI hostname %v, want a.example.com from listener a and b.example.com from any", certs)
	}
	r := m.Rules[0]
	if len(r.TLSListeners) != 2 || len(r.Ungenerated) != 0 || !slices.Contains(r.Features(), translate.FeatureListenerHTTPS) {
		t.Errorf("rule TLS listeners %v ungenerated %v features %v", r.TLSListeners, r.Ungenerated, r.Features())
	}
	if err := m.Check(); err != nil {
		t.Error(err)
	}
}

// TestCertDirPaths: with CertDir the certificates are named under it
// (where the proxy host keeps them) and CertSources maps each name to the
// file read under TLSDir; without, they are the files read.
func TestCertDirPaths(t *testing.T) {
	dir := tlsDir(t, "cert-a", "cert-any")
	for _, c := range []struct {
		certDir, want string
	}{
		{"/etc/gwretry/certs", "/etc/gwretry/certs/ns/cert-a/"},
		{"/srv/x", "/srv/x/ns/cert-a/"},
		{"", filepath.Join(dir, "ns", "cert-a") + string(filepath.Separator)},
	} {
		m := build(t, tlsGateway+tlsRoute(), translate.ResolveOptions{TLSDir: dir, CertDir: c.certDir})
		var cert *translate.Certificate
		for _, vh := range m.Listeners[1].VirtualHosts {
			if vh.Hostname == "a.example.com" {
				cert = vh.Certificate
			}
		}
		if cert == nil || cert.CertFile != c.want+"tls.crt" || cert.KeyFile != c.want+"tls.key" {
			t.Fatalf("CertDir %q: certificate %+v, want under %s", c.certDir, cert, c.want)
		}
		for _, p := range []string{cert.CertFile, cert.KeyFile} {
			if got, want := m.CertSource(p), filepath.Join(dir, "ns", "cert-a", filepath.Base(p)); got != want {
				t.Errorf("CertDir %q: CertSource(%s) = %s, want %s", c.certDir, p, got, want)
			}
		}
		if err := m.Check(); err != nil {
			t.Error(err)
		}
	}
}

func TestResolveHTTPSNotGenerated(t *testing.T) {
	tests := []struct {
		name string
		opts func(dir string) translate.ResolveOptions
		dir  []string
		why  string
	}{
		{"no --tls-dir", func(string) translate.ResolveOptions { return translate.ResolveOptions{} }, nil, "only with --tls-dir"},
		{"certificates missing", func(d string) translate.ResolveOptions { return translate.ResolveOptions{TLSDir: d} }, nil, "not in --tls-dir"},
		{"--listen without --listen-https", func(d string) translate.ResolveOptions {
			return translate.ResolveOptions{TLSDir: d, Listen: &translate.Bind{Address: "127.0.0.1", Port: 8080}}
		}, []string{"cert-a", "cert-any"}, "--listen-https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := build(t, tlsGateway+tlsRoute(), tt.opts(tlsDir(t, tt.dir...)))
			for _, l := range m.Listeners {
				if l.TLS {
					t.Errorf("listener %s generated as TLS", l.Name)
				}
			}
			r := m.Rules[0]
			if len(r.Ungenerated) == 0 || !slices.Contains(r.Features(), translate.FeatureListenerHTTPS) {
				t.Errorf("rule ungenerated %v features %v", r.Ungenerated, r.Features())
			}
			if !strings.Contains(translate.NotesText(m.Notes), tt.why) {
				t.Errorf("notes lack %q:\n%s", tt.why, translate.NotesText(m.Notes))
			}
		})
	}
	// With --listen-https both protocols are generated on their own
	// addresses.
	dir := tlsDir(t, "cert-a", "cert-any")
	m := build(t, tlsGateway+tlsRoute(), translate.ResolveOptions{TLSDir: dir, Listen: &translate.Bind{Address: "127.0.0.1", Port: 8080},
		ListenTLS: &translate.Bind{Address: "127.0.0.1", Port: 8443}})
	if len(m.Listeners) != 2 || m.Listeners[0].Port != 8080 || m.Listeners[1].Port != 8443 || !m.Listeners[1].TLS {
		t.Errorf("--listen and --listen-https: %+v", m.Listeners)
	}
}

func TestCheckFilePath(t *testing.T) {
	for p, ok := range map[string]bool{"/etc/tls/ns/a/tls.crt": true, "relative/x": false, "/a/../b": false, "/a b": false, "/a;b": false, "/a//b": false} {
		if err := translate.CheckFilePath(p); (err == nil) != ok {
			t.Errorf("CheckFilePath(%q) = %v", p, err)
		}
	}
}

// TestJudgeReadsTLSBack: listener.https may be honoured only when the
// judge reads back the model's certificate for every HTTPS host of the rule.
func TestJudgeReadsTLSBack(t *testing.T) {
	dir := tlsDir(t, "cert-a", "cert-any")
	m := build(t, tlsGateway+tlsRoute(), translate.ResolveOptions{TLSDir: dir})
	certs := map[string]translate.Certificate{}
	for _, vh := range m.Listeners[1].VirtualHosts {
		certs[translate.TLSKey(443, vh.Hostname)] = *vh.Certificate
	}
	run := func(tls map[string]translate.Certificate) error {
		obs := func(*translate.Rule) translate.Behaviour {
			return translate.Behaviour{Retries: 0, ConnErrors: translate.ConnRetryNone, TLS: tls}
		}
		only := func(m *translate.Model) *translate.Output {
			out := &translate.Output{Files: []translate.File{{Path: "fake/conf", Data: []byte("x")}}}
			for _, r := range m.Rules {
				for _, f := range r.Features() {
					st := translate.Unsupported
					if f == translate.FeatureListenerHTTPS {
						st = translate.Honoured
					}
					out.Findings = append(out.Findings, statusFinding(r, f, st, "x"))
				}
			}
			return out
		}
		_, err := translate.Run(m, []translate.Target{{Backend: judgingBackend{fakeBackend{name: "fake", out: only}, obs}, Version: "1.0"}}, false)
		return err
	}
	if err := run(certs); err != nil {
		t.Fatalf("the model's certificates rejected: %v", err)
	}
	wrong := map[string]translate.Certificate{}
	for k, c := range certs {
		wrong[k] = translate.Certificate{CertFile: c.CertFile + ".other", KeyFile: c.KeyFile}
	}
	for name, tls := range map[string]map[string]translate.Certificate{"none": nil, "wrong certificate": wrong} {
		if err := run(tls); err == nil || !strings.Contains(err.Error(), "listener.https") {
			t.Errorf("%s: Run error %v, want a listener.https contradiction", name, err)
		}
	}
}

// TestUnroutedHTTPSListener: a listener with a hostname that no route
// attaches to is not generated; rules served on its port learn of it, and
// a listener.https honoured claim for them is a contradiction.
func TestUnroutedHTTPSListener(t *testing.T) {
	gw := strings.Replace(tlsGateway, "  - {name: any, port: 443", "  - {name: lone, port: 443, protocol: HTTPS, hostname: lone.example.com, tls: {certificateRefs: [{name: cert-a}]}}\n  - {name: any, port: 443", 1)
	route := strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw, sectionName: any}]\n", 1)
	m := build(t, gw+route, translate.ResolveOptions{TLSDir: tlsDir(t, "cert-a", "cert-any")})
	r := m.Rules[0]
	want := []string{"Gateway ns/gw listener a (hostname a.example.com)", "Gateway ns/gw listener lone (hostname lone.example.com)"}
	if strings.Join(r.TLSUnrouted, "|") != strings.Join(want, "|") {
		t.Errorf("TLSUnrouted %q, want %q", r.TLSUnrouted, want)
	}
	if !strings.Contains(translate.NotesText(m.Notes), "no route attaches to it") {
		t.Errorf("no warning for the unrouted listeners:\n%s", translate.NotesText(m.Notes))
	}
	// The judge's side, tlsContradiction, is TestTLSContradictionUnrouted
	// in package translate.
}
