//go:build unix

package nginx

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/tlstest"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// testPKI is a self-signed CA made at test time and the leaf certificates
// it signed, written as --tls-dir DIR/ns/NAME/tls.crt and tls.key.
type testPKI struct {
	dir  string
	pool *x509.CertPool
	ca   *tlstest.CA
	// serials are the serial numbers of the leaves by Secret name.
	serials map[string]*big.Int
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca := tlstest.New(t, sharedDir(t))
	return &testPKI{dir: ca.Dir, pool: ca.Pool, ca: ca, serials: map[string]*big.Int{}}
}

// leaf writes the certificate of Secret ns/name for the DNS names (and
// 127.0.0.1).
func (p *testPKI) leaf(t *testing.T, name string, dnsNames ...string) {
	t.Helper()
	c := p.ca.Sign(t, tlstest.Leaf{Namespace: "ns", Name: name, DNSNames: dnsNames,
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Serial: int64(100 + len(p.serials))})
	p.serials[name] = c.SerialNumber
}

// tlsGateway has an HTTP listener and three HTTPS listeners on one port:
// an exact hostname, a wildcard and (with catchAll) one without hostname.
func tlsGateway(catchAll bool) string {
	s := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: exact, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
  - {name: wild, port: 443, protocol: HTTPS, hostname: "*.example.com", tls: {certificateRefs: [{name: cert-wild}]}}
`
	if catchAll {
		s += "  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any}]}}\n"
	}
	return s + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /retry}}]
    backendRefs: [{name: echo, port: 8080}]
    retry: {attempts: 2, codes: [503]}
  - matches: [{path: {type: PathPrefix, value: /slow}}]
    backendRefs: [{name: echo, port: 8080}]
    timeouts: {request: 300ms}
  - matches: [{path: {type: PathPrefix, value: /moved}}]
    filters: [{type: RequestRedirect, requestRedirect: {statusCode: 302}}]
  - backendRefs: [{name: echo, port: 8080}]
`
}

// TestLiveTLS runs HTTPS listeners in the real nginx, in both layouts:
// each SNI name gets its listener's certificate (exact, wildcard, the
// catch-all's for other names and for clients without SNI; refused when
// there is no catch-all), requests reach the backend over HTTP/1.1, a
// retry and a request timeout behave as on HTTP, a redirect without
// scheme keeps https, and the HTTP listener stays plain.
func TestLiveTLS(t *testing.T) {
	proxytest.Require(t, "nginx")
	pki := newTestPKI(t)
	pki.leaf(t, "cert-a", "a.example.com")
	pki.leaf(t, "cert-wild", "*.example.com")
	pki.leaf(t, "cert-any", "default.test")
	backend := flaky.New(t, "echo")
	for _, tc := range []struct {
		layout   string
		catchAll bool
	}{{LayoutFull, true}, {LayoutConfD, false}} {
		t.Run(tc.layout, func(t *testing.T) {
			if tc.layout == LayoutFull && os.Geteuid() != 0 {
				// The full file uses the distribution's temporary
				// directories, which only root may write.
				t.Skip("the full layout runs live as root only")
			}
			httpPort, httpsPort := proxytest.FreePort(t), proxytest.FreePort(t)
			in, err := input.Load([]string{writeInputFile(t, tlsGateway(tc.catchAll))}, nil, translate.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			ep, err := translate.ParseEndpoint("echo.ns:8080=" + backend.Addr())
			if err != nil {
				t.Fatal(err)
			}
			m, err := resolve.Build(in, translate.ResolveOptions{TLSDir: pki.dir, Endpoints: []translate.EndpointOverride{ep},
				Listen: &translate.Bind{Address: "127.0.0.1", Port: httpPort}, ListenTLS: &translate.Bind{Address: "127.0.0.1", Port: httpsPort}})
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewWithConfig(Config{Layout: tc.layout})
			if err != nil {
				t.Fatal(err)
			}
			res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.22"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Report.Findings {
				// The certificate each SNI name gets is in the file, which
				// the judge reads back (checkTLS) and the test drives.
				if f.Feature == translate.FeatureListenerHTTPS && (f.Status != translate.Approximated || f.Configured != "listen ssl, ssl_certificate per server_name") {
					t.Errorf("rule %d %s: %s (%+v)", f.Rule, f.Feature, f.Status, f.Decision)
				}
			}
			out, err := b.Generate(m, translate.Options{Version: "1.22"})
			if err != nil {
				t.Fatal(err)
			}
			httpsAddr := "127.0.0.1:" + strconv.Itoa(httpsPort)
			if tc.layout == LayoutConfD {
				startConfD(t, out, httpsAddr)
			} else {
				conf := filepath.Join(sharedDir(t), "nginx.conf")
				writeFile(t, conf, out.Files[0].Data)
				proxytest.StartNginx(t, conf, httpsAddr)
			}

			// The certificate per SNI name; "" sends no SNI.
			certs := map[string]string{"a.example.com": "cert-a", "b.example.com": "cert-wild", "x.y.example.com": "cert-wild",
				"other.test": "cert-any", "": "cert-any", "example.com": "cert-any"}
			for sni, want := range certs {
				conf := &tls.Config{ServerName: sni, RootCAs: pki.pool, MinVersion: tls.VersionTLS12}
				if sni == "" {
					conf.ServerName = "127.0.0.1" // an IP: Go sends no SNI
				}
				if want == "cert-any" || sni == "x.y.example.com" {
					// The catch-all's certificate does not name them, and
					// an X.509 wildcard covers one label only, while
					// server_name *.example.com (like the Gateway API
					// wildcard) covers several: the serial tells.
					conf.InsecureSkipVerify = true
				}
				conn, err := tls.Dial("tcp", httpsAddr, conf)
				if !tc.catchAll && want == "cert-any" {
					if err == nil {
						conn.Close()
						t.Errorf("SNI %q: handshake accepted without a catch-all listener", sni)
					}
					continue
				}
				if err != nil {
					t.Errorf("SNI %q: %v", sni, err)
					continue
				}
				got := conn.ConnectionState().PeerCertificates[0].SerialNumber
				conn.Close()
				if got.Cmp(pki.serials[want]) != 0 {
					t.Errorf("SNI %q: certificate serial %v, want %s's %v", sni, got, want, pki.serials[want])
				}
			}

			// HTTP/2 is not offered: a client offering h2 and http/1.1
			// by ALPN gets HTTP/1.1, as the finding says ("serves
			// HTTP/1.1 inside").
			{
				conn, err := tls.Dial("tcp", httpsAddr, &tls.Config{ServerName: "a.example.com", RootCAs: pki.pool, NextProtos: []string{"h2", "http/1.1"}})
				if err != nil {
					t.Fatalf("ALPN h2: %v", err)
				}
				if got := conn.ConnectionState().NegotiatedProtocol; got == "h2" {
					t.Errorf("ALPN: nginx negotiated %q, the finding says HTTP/1.1", got)
				}
				conn.Close()
			}

			client := func(sni string) *http.Client {
				return &http.Client{Timeout: 10 * time.Second,
					CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
					Transport: &http.Transport{
						TLSClientConfig: &tls.Config{ServerName: sni, RootCAs: pki.pool},
						DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
							return (&net.Dialer{}).DialContext(ctx, network, httpsAddr)
						},
					}}
			}
			get := func(sni, path string) (*http.Response, string) {
				t.Helper()
				resp, err := client(sni).Get("https://" + sni + ":" + strconv.Itoa(httpsPort) + path)
				if err != nil {
					t.Fatalf("GET https://%s%s: %v", sni, path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp, string(body)
			}
			prefix := "/" + strings.ReplaceAll(tc.layout, ".", "")
			// Reaches the backend, over HTTP/1.1 on the client side too.
			for _, sni := range []string{"a.example.com", "b.example.com"} {
				path := prefix + "/plain/" + sni
				resp, _ := get(sni, path)
				backend.WaitIdle(5 * time.Second)
				hits := backend.Hits(path)
				if resp.StatusCode != 200 || resp.ProtoMajor != 1 || len(hits) != 1 || hits[0].Host != sni+":"+strconv.Itoa(httpsPort) {
					t.Errorf("%s %s: %d %s, backend hits %v", sni, path, resp.StatusCode, resp.Proto, hits)
				}
			}
			// nginx routes by Host, whatever the SNI name was (no 421).
			{
				path := prefix + "/cross"
				req, _ := http.NewRequest("GET", "https://a.example.com:"+strconv.Itoa(httpsPort)+path, nil)
				req.Host = "x.example.com"
				resp, err := client("a.example.com").Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				backend.WaitIdle(5 * time.Second)
				if hits := backend.Hits(path); resp.StatusCode != 200 || len(hits) != 1 || hits[0].Host != "x.example.com" {
					t.Errorf("SNI a.example.com, Host x.example.com: %d, hits %v", resp.StatusCode, hits)
				}
			}
			// A Host that names no hostname of the listener is answered 404
			// (the catch-all routes it when there is one) and never
			// reaches the backend, whatever the SNI name.
			{
				path := prefix + "/stray"
				req, _ := http.NewRequest("GET", "https://a.example.com:"+strconv.Itoa(httpsPort)+path, nil)
				req.Host = "stray.test"
				resp, err := client("a.example.com").Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				backend.WaitIdle(5 * time.Second)
				hits := backend.Hits(path)
				want, wantHits := 404, 0
				if tc.catchAll {
					want, wantHits = 200, 1
				}
				if resp.StatusCode != want || len(hits) != wantHits {
					t.Errorf("SNI a.example.com, Host stray.test: %d, hits %v, want %d and %d hits", resp.StatusCode, hits, want, wantHits)
				}
			}
			// One retry scenario: two 503s, then 200.
			path := "/retry" + prefix
			backend.Handle(path, flaky.FailFirst(2, 503))
			resp, _ := get("a.example.com", path)
			backend.WaitIdle(5 * time.Second)
			if resp.StatusCode != 200 || len(backend.Hits(path)) != 3 {
				t.Errorf("retry over HTTPS: %d after %d tries, want 200 after 3", resp.StatusCode, len(backend.Hits(path)))
			}
			// The request timeout: 504 after 300ms.
			path = "/slow" + prefix
			backend.Handle(path, flaky.DelayAlways(3*time.Second))
			start := time.Now()
			resp, _ = get("b.example.com", path)
			if took := time.Since(start); resp.StatusCode != 504 || took > 2*time.Second {
				t.Errorf("timeout over HTTPS: %d after %v, want 504 after about 300ms", resp.StatusCode, took)
			}
			// A redirect without scheme keeps https and the port.
			resp, _ = get("a.example.com", "/moved/x?q=1")
			if want := "https://a.example.com:" + strconv.Itoa(httpsPort) + "/moved/x?q=1"; resp.StatusCode != 302 || resp.Header.Get("Location") != want {
				t.Errorf("redirect over HTTPS: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}
			// The HTTP listener stays plain HTTP.
			plain := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err = plain.Get("http://127.0.0.1:" + strconv.Itoa(httpPort) + "/moved/y")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := "http://127.0.0.1:" + strconv.Itoa(httpPort) + "/moved/y"; resp.StatusCode != 302 || resp.Header.Get("Location") != want {
				t.Errorf("redirect over HTTP: %d %q, want 302 %q", resp.StatusCode, resp.Header.Get("Location"), want)
			}
		})
	}
}

// writeInputFile writes YAML input into a temporary file.
func writeInputFile(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSNginxAccepts runs nginx -t on a TLS configuration with real
// certificate files, in both layouts.
func TestTLSNginxAccepts(t *testing.T) {
	proxytest.Require(t, "nginx")
	pki := newTestPKI(t)
	for _, n := range []string{"cert-a", "cert-wild", "cert-any"} {
		pki.leaf(t, n, "x.example.com")
	}
	for _, catchAll := range []bool{true, false} {
		out, err := New().Generate(tlsModel(pki.dir, catchAll, rule(0, nil, translate.Timeouts{})), translate.Options{Version: "1.22"})
		if err != nil {
			t.Fatal(err)
		}
		proxytest.NginxCheck(t, out.Files[0].Data)
	}
}
