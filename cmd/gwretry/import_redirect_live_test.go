//go:build unix

package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
)

// writeSelfSigned writes a self-signed certificate for host as
// dir/tls.crt and dir/tls.key.
func writeSelfSigned(t *testing.T, dir, host string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

// TestImportRedirectsLive imports an Ingress with tls and a Prefix /foo/
// path, translates it to nginx and checks on the real nginx what
// ingress-nginx answers (lua_ingress.lua redirect_to_https, and nginx's
// 301 for a prefix location ending in /): plain HTTP gets 308 to https,
// HTTPS /foo gets 301 to /foo/, HTTPS /foo/x reaches the backend. Before,
// plain HTTP reached the backend and /foo did too.
func TestImportRedirectsLive(t *testing.T) {
	proxytest.Require(t, "nginx")
	const host = "shop.example.com"
	dir := t.TempDir()
	in := filepath.Join(dir, "ingress.yaml")
	os.WriteFile(in, []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: shop, namespace: default}
spec:
  ingressClassName: nginx
  tls:
  - {hosts: [`+host+`], secretName: shop-tls}
  rules:
  - host: `+host+`
    http:
      paths:
      - {path: /foo/, pathType: Prefix, backend: {service: {name: shop, port: {number: 80}}}}
`), 0o644)
	var routes, stderr bytes.Buffer
	if code := run([]string{"import", "ingress-nginx", in, "--report", "none", "-q"}, nil, &routes, &stderr); code != exitOK {
		t.Fatalf("import: exit %d\n%s", code, stderr.String())
	}
	routesPath := filepath.Join(dir, "routes.yaml")
	os.WriteFile(routesPath, routes.Bytes(), 0o644)
	tlsDir := filepath.Join(dir, "tls")
	writeSelfSigned(t, filepath.Join(tlsDir, "default", "shop-tls"), host)
	backend := flaky.New(t, "shop")
	backend.Handle("/foo/x", flaky.OK())
	listen := "127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t))
	listenTLS := "127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t))
	out := filepath.Join(dir, "out")
	stderr.Reset()
	// The proxy runs here, so the configuration names the certificates
	// where --tls-dir read them (--cert-dir), not the proxy host's default.
	certDir, err := filepath.Abs(tlsDir)
	if err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"translate", routesPath, "--target", "nginx", "--tls-dir", tlsDir, "--cert-dir", certDir, "--listen", listen, "--listen-https", listenTLS,
		"--endpoint", "shop.default:80=" + backend.Addr(), "--output-dir", out, "--report", "none", "-q"}, nil, io.Discard, &stderr); code != exitOK {
		t.Fatalf("translate: exit %d\n%s", code, stderr.String())
	}
	proxytest.StartNginx(t, filepath.Join(out, "nginx", "nginx.conf"), listen)

	client := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: host, InsecureSkipVerify: true}}}
	for _, tc := range []struct {
		scheme, addr, path string
		status             int
		location           string // scheme://host and path of Location, "" for none
	}{
		{"http", listen, "/foo/x", 308, "https://" + host + "/foo/x"},
		{"http", listen, "/foo", 308, "https://" + host + "/foo"},
		{"https", listenTLS, "/foo", 301, "/foo/"},
		{"https", listenTLS, "/foo/x", 200, ""},
	} {
		req, _ := http.NewRequest("GET", tc.scheme+"://"+tc.addr+tc.path, nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.scheme, tc.path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got := ""
		if loc := resp.Header.Get("Location"); loc != "" {
			u, err := url.Parse(loc)
			if err != nil {
				t.Fatalf("Location %q: %v", loc, err)
			}
			got = u.Path
			if tc.scheme == "http" {
				got = u.Scheme + "://" + u.Hostname() + u.Path
			}
		}
		if resp.StatusCode != tc.status || got != tc.location {
			t.Errorf("%s %s: %d, Location %q (%s); want %d, %q", tc.scheme, tc.path, resp.StatusCode, got, resp.Header.Get("Location"), tc.status, tc.location)
		}
	}
	backend.WaitIdle(5 * time.Second)
	if hits := backend.Hits("/foo/x"); len(hits) != 1 {
		t.Errorf("the backend got %d requests for /foo/x, want 1 (over HTTPS only)", len(hits))
	}
}
