package haproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestLiveTLS runs HAProxy with an HTTPS listener beside an HTTP one and
// checks, with a Go TLS client that trusts only the test CA, the
// certificate served for each SNI name (exact, wildcard, default, none),
// that requests reach the backend over HTTP/1.1, and that retries,
// timeouts and a scheme-keeping redirect behave on HTTPS.
//
// It changes the working directory to the output directory: haproxy.cfg
// names its crt-list by a path relative to it. It must not run in
// parallel.
func TestLiveTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	proxytest.Require(t, "haproxy")
	// The default certificate also carries the names of the others, so a
	// handshake that gets "a" or "w" proves the crt-list filters win over
	// the names inside the default certificate.
	pki := newTestPKI(t, map[string][]string{
		"def": {"default.example.com", "other.example.com", "y.x.w.example.com", "a.example.com", "x.w.example.com"},
		"a":   {"a.example.com"},
		"w":   {"*.w.example.com"},
	})
	be := flaky.New(t, "a")
	plain := rule(0, nil, translate.Timeouts{})
	retried := rule(1, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{})
	timed := rule(2, nil, translate.Timeouts{BackendRequest: dur("300ms")})
	redirect := rule(3, nil, translate.Timeouts{})
	redirect.Backends, redirect.NoBackendRefs = nil, true
	redirect.Filters.Redirect = &translate.Redirect{Hostname: "example.org", StatusCode: 302}
	m := liveModel(t, be.Addr(), plain, retried, timed, redirect)
	port := proxytest.FreePort(t)
	m = tlsModel(m, pki, port, []string{"a.example.com", "*.w.example.com", ""},
		map[string]string{"a.example.com": "a", "*.w.example.com": "w", "": "def"})

	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: checkedVersion}}, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var cfg []byte
	for _, f := range res.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
		if f.Path == OutputPath {
			cfg = f.Data
		}
	}
	t.Chdir(dir)
	proxytest.HAProxyCheck(t, cfg)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	proxytest.StartHAProxy(t, filepath.Join(dir, OutputPath), addr)

	client := func(sni string) *http.Client {
		return &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Transport: &http.Transport{DisableKeepAlives: true,
				TLSClientConfig: &tls.Config{RootCAs: pki.pool, ServerName: sni},
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, addr)
				}}}
	}
	get := func(sni, path string) *http.Response {
		t.Helper()
		resp, err := client(sni).Get(fmt.Sprintf("https://%s:%d%s", sni, port, path))
		if err != nil {
			t.Fatalf("GET %s with SNI %s: %v", path, sni, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	cn := func(resp *http.Response) string {
		if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
			return "(no TLS)"
		}
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}

	t.Run("certificate per SNI name", func(t *testing.T) {
		for _, tc := range []struct{ sni, want string }{
			{"a.example.com", "a"},         // exact hostname
			{"x.w.example.com", "w"},       // wildcard hostname
			{"other.example.com", "def"},   // no hostname: the catch-all's, the default
			{"default.example.com", "def"}, // a name inside the default certificate only
			{"y.x.w.example.com", "def"},   // two labels below the wildcard: the default (approximated)
			{"A.Example.COM", "a"},         // SNI is case-insensitive
		} {
			path := "/r00/" + tc.sni
			resp := get(tc.sni, path)
			if got := cn(resp); got != tc.want || resp.StatusCode != 200 || resp.Proto != "HTTP/1.1" {
				t.Errorf("SNI %s: certificate %s, status %d, %s; want certificate %s, 200, HTTP/1.1", tc.sni, got, resp.StatusCode, resp.Proto, tc.want)
			}
			be.WaitIdle(5 * time.Second)
			if hits := be.Hits(path); len(hits) != 1 {
				t.Errorf("SNI %s: the backend got %d requests for %s, want 1", tc.sni, len(hits), path)
			}
		}
	})

	t.Run("no SNI gets the default certificate", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // checked below against the test CA
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		certs := conn.ConnectionState().PeerCertificates
		if len(certs) == 0 || certs[0].Subject.CommonName != "def" {
			t.Fatalf("certificates %v, want def", certs)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pki.pool, DNSName: "default.example.com"}); err != nil {
			t.Errorf("default certificate does not verify with the test CA: %v", err)
		}
	})

	t.Run("no HTTP/2 by ALPN", func(t *testing.T) {
		// The finding says the requests inside are HTTP/1.1: a client
		// offering h2 first must not get it.
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool, ServerName: "a.example.com", NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if got := conn.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
			t.Errorf("ALPN negotiated %q, want http/1.1", got)
		}
	})

	t.Run("Host header other than SNI is routed by Host", func(t *testing.T) {
		// The finding says so (no 421 Misdirected Request).
		req, _ := http.NewRequest("GET", fmt.Sprintf("https://a.example.com:%d/r00/cross", port), nil)
		req.Host = "x.w.example.com"
		resp, err := client("a.example.com").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		be.WaitIdle(5 * time.Second)
		if hits := be.Hits("/r00/cross"); resp.StatusCode != 200 || cn(resp) != "a" || len(hits) != 1 || hits[0].Host != "x.w.example.com" {
			t.Errorf("SNI a.example.com, Host x.w.example.com: %d, certificate %s, hits %v", resp.StatusCode, cn(resp), hits)
		}
	})

	t.Run("retry on HTTPS", func(t *testing.T) {
		be.Handle("/r01/x", flaky.FailFirst(1, 503))
		resp := get("a.example.com", "/r01/x")
		be.WaitIdle(5 * time.Second)
		if hits := len(be.Hits("/r01/x")); resp.StatusCode != 200 || hits != 2 {
			t.Errorf("status %d after %d tries, want 200 after 2 (one retry of 503)", resp.StatusCode, hits)
		}
	})

	t.Run("timeout on HTTPS", func(t *testing.T) {
		be.Handle("/r02/x", flaky.DelayAlways(3*time.Second))
		start := time.Now()
		resp := get("x.w.example.com", "/r02/x")
		if took := time.Since(start); resp.StatusCode != 504 || took > 2*time.Second {
			t.Errorf("status %d after %v, want 504 after about 300ms", resp.StatusCode, took)
		}
	})

	t.Run("redirect keeps https", func(t *testing.T) {
		resp := get("a.example.com", "/r03/x?q=1")
		want := fmt.Sprintf("https://example.org:%d/r03/x?q=1", port)
		if got := resp.Header.Get("Location"); resp.StatusCode != 302 || got != want {
			t.Errorf("status %d Location %q, want 302 %q", resp.StatusCode, got, want)
		}
	})

	t.Run("HTTP listener stays plain", func(t *testing.T) {
		got := status(t, oneShotClient(), "GET", fmt.Sprintf("http://127.0.0.1:%d/r00/plain", m.Listeners[0].Port), nil)
		if got != 200 {
			t.Errorf("plain HTTP answered %d, want 200", got)
		}
	})
}

// TestLiveTLSNoCatchAll: without a catch-all hostname the finding says the
// first hostname's certificate is HAProxy's default, for SNI names no
// filter matches and for clients that send none (the handshake is not
// refused). HAProxy 2.6 live. It must not run in parallel.
func TestLiveTLSNoCatchAll(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	proxytest.Require(t, "haproxy")
	pki := newTestPKI(t, map[string][]string{"a": {"a.example.com"}, "w": {"*.w.example.com"}})
	be := flaky.New(t, "a")
	m := liveModel(t, be.Addr(), rule(0, nil, translate.Timeouts{}))
	port := proxytest.FreePort(t)
	m = tlsModel(m, pki, port, []string{"a.example.com", "*.w.example.com"}, map[string]string{"a.example.com": "a", "*.w.example.com": "w"})
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: checkedVersion}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if f.Feature == translate.FeatureListenerHTTPS && (f.Reason != report.ReasonConfigured || f.Configured != "bind ... ssl crt-list") {
			t.Errorf("finding: %s %q %v", f.Reason, f.Configured, f.Caveats)
		}
	}
	dir := t.TempDir()
	for _, f := range res.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	proxytest.StartHAProxy(t, filepath.Join(dir, OutputPath), addr)
	for _, tc := range []struct{ sni, want string }{
		{"a.example.com", "a"}, {"x.w.example.com", "w"}, {"other.example.com", "a"}, {"", "a"},
	} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: tc.sni}) // the CommonName is compared
		if err != nil {
			t.Errorf("SNI %q: %v", tc.sni, err)
			continue
		}
		got := conn.ConnectionState().PeerCertificates[0].Subject.CommonName
		conn.Close()
		if got != tc.want {
			t.Errorf("SNI %q: certificate %s, want %s", tc.sni, got, tc.want)
		}
	}
}
