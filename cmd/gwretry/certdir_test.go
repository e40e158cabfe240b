package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/tlstest"
)

// certManifest has HTTPS listeners whose certificates are Secrets in two
// namespaces, one by a ReferenceGrant.
const certManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any, namespace: certs}]}}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: gw-certs, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: ns}]
  to: [{group: "", kind: Secret}]
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
    retry: {attempts: 2, codes: [503]}
    timeouts: {request: 2s}
`

// copyTree copies the files under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		write(t, filepath.Join(dst, rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCertDirOutputsIdentical: the configurations name the certificates
// where the proxy host keeps them (--cert-dir, /etc/gwretry/certs by
// default), not where --tls-dir read them: translate from two working
// directories, with a relative --tls-dir and with two different absolute
// ones, writes byte-identical outputs (report.json included), which name
// no --tls-dir path; the judges (Traefik's reads each certificate's
// names) still find the files.
func TestCertDirOutputsIdentical(t *testing.T) {
	ca := tlstest.New(t, "")
	ca.Sign(t, tlstest.Leaf{Namespace: "ns", Name: "cert-a", DNSNames: []string{"a.example.com"}})
	ca.Sign(t, tlstest.Leaf{Namespace: "certs", Name: "cert-any", DNSNames: []string{"*.example.com"}})
	input := filepath.Join(t.TempDir(), "route.yaml")
	write(t, input, certManifest)
	// Two machines: the same certificates under two absolute paths, and
	// each under a working directory as ./tls.
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		copyTree(t, ca.Dir, filepath.Join(d, "tls"))
	}
	const targets = "envoy,haproxy@3.0,nginx@1.26,traefik@3.6"
	for _, c := range []struct {
		name    string
		certDir []string
		// want is a path every configuration names.
		want string
	}{
		{name: "default", want: "/etc/gwretry/certs/ns/cert-a/tls.crt"},
		{name: "given", certDir: []string{"--cert-dir", "/srv/tls/"}, want: "/srv/tls/certs/cert-any/tls.crt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var snaps []string
			run := func(wd, tlsDir string) {
				t.Chdir(wd)
				out := t.TempDir()
				args := append([]string{"translate", input, "--target", targets, "--tls-dir", tlsDir, "--output-dir", out, "--report", "none"}, c.certDir...)
				if code, _, stderr := gwretry(t, "", args...); code != exitOK {
					t.Fatalf("%v in %s: exit %d\n%s", args, wd, code, stderr)
				}
				for _, f := range []string{"envoy", "haproxy", "nginx", "traefik"} {
					data := snapshot(t, filepath.Join(out, f))
					if !strings.Contains(data, c.want) {
						t.Errorf("%s does not name %s", f, c.want)
					}
					for _, d := range dirs {
						if strings.Contains(data, d) {
							t.Errorf("%s names the --tls-dir %s", f, d)
						}
					}
				}
				snaps = append(snaps, strings.ReplaceAll(snapshot(t, out), out, "OUT"))
			}
			run(dirs[0], "tls")
			run(dirs[1], "tls")
			run(dirs[1], filepath.Join(dirs[0], "tls"))
			run(t.TempDir(), filepath.Join(dirs[1], "tls"))
			for i, s := range snaps[1:] {
				if s != snaps[0] {
					t.Errorf("run %d differs from run 0", i+1)
				}
			}
		})
	}
}

// TestCertDirChecked: --cert-dir is an absolute path that passes the
// path allowlist; anything else is a usage error.
func TestCertDirChecked(t *testing.T) {
	for _, c := range []struct {
		dir  string
		code int
	}{
		{"/etc/gwretry/certs", exitOK},
		{"/etc/ssl/../gwretry", exitOK},
		{"certs", exitUsage},
		{"./certs", exitUsage},
		{"", exitOK}, // the default
		{"/etc/cert dir", exitUsage},
		{"/etc/certs;x", exitUsage},
	} {
		code, _, stderr := gwretry(t, "", "check", example, "--target", "nginx@1.26", "--cert-dir", c.dir, "--report", "none")
		if code != c.code {
			t.Errorf("--cert-dir %q: exit %d, want %d\n%s", c.dir, code, c.code, stderr)
		}
	}
}

// TestCertDirLiveNginx: --cert-dir pointing at the real directory gives a
// configuration the installed nginx loads (nginx -t opens every
// certificate and key), from a relative --tls-dir.
func TestCertDirLiveNginx(t *testing.T) {
	ca := tlstest.New(t, "")
	ca.Sign(t, tlstest.Leaf{Namespace: "ns", Name: "cert-a", DNSNames: []string{"a.example.com"}})
	ca.Sign(t, tlstest.Leaf{Namespace: "certs", Name: "cert-any", DNSNames: []string{"*.example.com"}})
	input := filepath.Join(t.TempDir(), "route.yaml")
	write(t, input, certManifest)
	t.Chdir(filepath.Dir(ca.Dir))
	for _, v := range []string{"1.22", "1.26"} {
		code, stdout, stderr := gwretry(t, "", "translate", input, "--target", "nginx@"+v, "--tls-dir", filepath.Base(ca.Dir),
			"--cert-dir", ca.Dir, "--listen-https", "127.0.0.1:8443", "--endpoint", "svc.ns:80=127.0.0.1:9", "--report", "none")
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if !strings.Contains(stdout, "ssl_certificate "+filepath.Join(ca.Dir, "ns", "cert-a", "tls.crt")) {
			t.Fatalf("nginx@%s: the configuration does not name the certificate under --cert-dir:\n%s", v, stdout)
		}
		proxytest.NginxCheck(t, []byte(stdout))
	}
}
