//go:build unix

package haproxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// startConnPolicy runs in the real HAProxy the configuration of
// testmodel.ConnectionPolicy(spec...) with Service svc at backend
// ("host:port"), after checking that the report claims every feature
// in honoured, and returns the proxy's address.
func startConnPolicy(t *testing.T, backend string, honoured []translate.Feature, spec ...string) string {
	t.Helper()
	return startConnPolicyOn(t, installedHAProxy{}, backend, honoured, spec...)
}

// startConnPolicyOn is startConnPolicy on HAProxy h, with the output of
// h's version; the zero h is the one on PATH with checkedVersion.
func startConnPolicyOn(t *testing.T, h installedHAProxy, backend string, honoured []translate.Feature, spec ...string) string {
	t.Helper()
	version := checkedVersion
	if h.bin != "" {
		version = h.version
	}
	port := proxytest.FreePort(t)
	m := testmodel.LoadText(t, testmodel.ConnectionPolicy(spec...),
		translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: port}}, "svc:8080="+backend)
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: version}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		for _, h := range honoured {
			if f.Feature == h && f.Status != translate.Honoured {
				t.Fatalf("%s is %s, the test proves an honoured claim: %s", f.Feature, f.Status, report.WithParams(f.Reason, f.Params))
			}
		}
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, res.Files[0].Data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if h.bin == "" {
		proxytest.StartHAProxy(t, file, addr)
		return addr
	}
	p, err := dataplane.StartHAProxy(h.bin, file, addr)
	if err != nil {
		t.Fatalf("HAProxy %s: %v", h.full, err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("haproxy %s output:\n%s", h.full, p.Output())
		}
	})
	return addr
}

// TestLiveConnectionTimeouts runs a ConnectionTimeoutPolicy in the real
// HAProxy: a backend that stays silent is cut after serverTimeout (3s:
// 504), long before the defaults (60s). It also pins down what the
// OpenShift router's clientTimeout (HAProxy's timeout client) does not
// do, which the other targets' findings rely on: a client that stops
// sending its body while the backend has not answered is not cut after
// clientTimeout (1s); serverTimeout ends the request (504 after 3s).
// HAProxy 3.0 differs there: timeout client cuts the stalled body (400
// after 1s, termination state cH), so the other targets' findings that
// compare with HAProxy's timeout client describe 2.6 (seen with 3.0.11).
func TestLiveConnectionTimeouts(t *testing.T) {
	forEachHAProxy(t, testConnectionTimeouts)
}

func testConnectionTimeouts(t *testing.T, h installedHAProxy) {
	t.Parallel() // mostly waiting for timers
	honoured := []translate.Feature{translate.FeatureConnClientTimeout}
	if vs, _ := lookupVersion(h.version); !vs.ServerTimeoutDuringUpload {
		// 2.6's is approximated: TestLiveServerTimeoutStalledUpload.
		honoured = append(honoured, translate.FeatureConnServerTimeout)
	}
	addr := startConnPolicyOn(t, h, proxytest.SilentBackend(t, 6*time.Second), honoured,
		"clientTimeout: 1s", "serverTimeout: 3s")

	// serverTimeout: the backend never answers.
	start := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusGatewayTimeout || took < 2500*time.Millisecond || took > 10*time.Second {
		t.Errorf("silent backend: %d after %v, want 504 after about 3s", resp.StatusCode, took)
	}

	// clientTimeout: the client sends 2 of 10 body bytes and stops.
	rest, took, _ := proxytest.StallBody(t, addr)
	if atLeast(h.full, "3.0") {
		if !strings.HasPrefix(rest, "HTTP/1.1 400") || took > 2500*time.Millisecond {
			t.Errorf("stalled body: %q after %v, want HAProxy %s's 400 after clientTimeout (1s)", rest, took, h.full)
		}
	} else if !strings.HasPrefix(rest, "HTTP/1.1 504") || took < 2500*time.Millisecond {
		t.Errorf("stalled body: %q after %v, want HAProxy's 504 after serverTimeout (3s), not a close after clientTimeout (1s)", rest, took)
	}
}

// bigServer is a backend that answers every request with a response
// body it writes for up to 30s; ended receives how long it could write.
func bigServer(t *testing.T) (addr string, ended chan time.Duration) {
	ended = make(chan time.Duration, 1)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		chunk := make([]byte, 1<<16)
		for time.Since(start) < 30*time.Second {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		ended <- time.Since(start)
	}))
	t.Cleanup(big.Close)
	return strings.TrimPrefix(big.URL, "http://"), ended
}

// TestLiveConnectionTimeoutsIdleSides proves the honoured clientTimeout
// and tunnelTimeout claims in the real HAProxy, and pins down why
// clientFinTimeout, serverFinTimeout and tlsInspectDelay are only
// approximated. In each case only the field under test is short and every
// other timer is 30s (HAProxy's defaults in gwretry's configuration are
// 60s), so a cut within 10s is that field's doing.
//   - clientTimeout (1s): a client that stops reading a large response is
//     cut.
//   - tunnelTimeout (1s): a WebSocket tunnel (101) where neither side
//     sends is closed.
//   - clientFinTimeout, serverFinTimeout (3s): a tunnel one side of which
//     shuts down its sending side is closed at once, not after the fin
//     timeout; a client that half-closes and stops reading a response is
//     cut after timeout client (3s), not after client-fin (1s).
//   - tlsInspectDelay (3s): a complete request is answered at once.
func TestLiveConnectionTimeoutsIdleSides(t *testing.T) {
	proxytest.Require(t, "haproxy")
	const within = 10 * time.Second
	for _, c := range []struct {
		name     string
		spec     []string
		closeCli bool // the client shuts down its sending side
	}{
		{"clientTimeout", []string{"clientTimeout: 1s", "serverTimeout: 30s"}, false},
		{"clientFinTimeout-unread", []string{"clientFinTimeout: 1s", "clientTimeout: 3s", "serverTimeout: 30s"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			backend, ended := bigServer(t)
			var honoured []translate.Feature
			if !c.closeCli {
				honoured = []translate.Feature{translate.FeatureConnClientTimeout}
			}
			addr := startConnPolicy(t, backend, honoured, c.spec...)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			// The client reads nothing: once the buffers are full, HAProxy
			// waits for it to acknowledge data.
			if c.closeCli {
				time.Sleep(100 * time.Millisecond)
				if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			took := <-ended
			switch {
			case !c.closeCli && took > within:
				t.Errorf("unread response: the backend could write for %v, want HAProxy to cut the client after clientTimeout (1s)", took)
			case c.closeCli && (took < 2500*time.Millisecond || took > within):
				t.Errorf("half-closed client, unread response: the backend could write for %v, want HAProxy to cut the client after clientTimeout (3s), not clientFinTimeout (1s)", took)
			}
		})
	}
	for _, c := range []struct {
		field    translate.Feature
		spec     []string
		closeCli bool // the client shuts down its sending side
		closeSrv bool // the backend shuts down its sending side
	}{
		{translate.FeatureConnTunnelTimeout, []string{"tunnelTimeout: 1s", "clientTimeout: 30s", "serverTimeout: 30s"}, false, false},
		{translate.FeatureConnClientFinTimeout, []string{"clientFinTimeout: 3s", "tunnelTimeout: 30s", "clientTimeout: 30s", "serverTimeout: 30s"}, true, false},
		{translate.FeatureConnServerFinTimeout, []string{"serverFinTimeout: 3s", "tunnelTimeout: 30s", "clientTimeout: 30s", "serverTimeout: 30s"}, false, true},
	} {
		t.Run(c.field.Field()+"-tunnel", func(t *testing.T) {
			t.Parallel()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			// ended is when HAProxy closed the backend's connection.
			ended := make(chan time.Duration, 1)
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				br := bufio.NewReader(conn)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				start := time.Now()
				if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"); err != nil {
					return
				}
				if c.closeSrv {
					_ = conn.(*net.TCPConn).CloseWrite()
				}
				_ = conn.SetReadDeadline(time.Now().Add(40 * time.Second))
				_, _ = io.Copy(io.Discard, br) // until HAProxy closes or forwards the client's shutdown
				if c.closeCli {
					_, _ = conn.Read(make([]byte, 1)) // then until it closes
				}
				ended <- time.Since(start)
			}()
			var honoured []translate.Feature
			if c.field == translate.FeatureConnTunnelTimeout {
				honoured = []translate.Feature{c.field}
			}
			addr := startConnPolicy(t, ln.Addr().String(), honoured, c.spec...)
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
				t.Fatalf("upgrade: %v %v", resp, err)
			}
			start := time.Now()
			if c.closeCli {
				if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			_ = conn.SetReadDeadline(time.Now().Add(40 * time.Second))
			_, _ = io.Copy(io.Discard, br)
			if c.closeSrv {
				_, _ = conn.Read(make([]byte, 1))
			}
			took, srv := time.Since(start), <-ended
			switch {
			case c.field == translate.FeatureConnTunnelTimeout && (took < 900*time.Millisecond || took > within || srv > within):
				t.Errorf("idle tunnel: client closed after %v, backend after %v, want HAProxy to close both after tunnelTimeout (1s)", took, srv)
			case c.field != translate.FeatureConnTunnelTimeout && (took > 2*time.Second || srv > 2*time.Second):
				t.Errorf("half-closed tunnel: client closed after %v, backend after %v, want HAProxy to close both at once, not after %s (3s)", took, srv, c.field.Field())
			}
		})
	}
	t.Run("tlsInspectDelay", func(t *testing.T) {
		t.Parallel()
		backend := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		t.Cleanup(backend.Close)
		addr := startConnPolicy(t, strings.TrimPrefix(backend.URL, "http://"), nil, "tlsInspectDelay: 3s")
		start := time.Now()
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != http.StatusOK || took > 2*time.Second {
			t.Errorf("complete request: %d after %v, want 200 at once: the delay holds nothing in an HTTP frontend", resp.StatusCode, took)
		}
	})
}

// uploadBackend accepts one connection, reads the request head and
// whatever body arrives, and never answers; got receives the body bytes
// read before HAProxy closed the connection, and when.
func uploadBackend(t *testing.T) (addr string, got chan string, closed chan time.Time) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got, closed = make(chan string, 1), make(chan time.Time, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(conn)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body) // until the declared length, or HAProxy closes
		closed <- time.Now()
		got <- string(body)
	}()
	return ln.Addr().String(), got, closed
}

// TestLiveServerTimeoutStalledUpload proves, on every installed HAProxy,
// the per-version serverTimeout finding: with serverTimeout 1s and
// clientTimeout 6s, a client that sends 2 of its 10 body bytes and stalls
// gets 504 from HAProxy 2.6 after about 1s, and the backend gets the 2
// bytes and a closed connection (a truncated body), so the 2.6 finding is
// approximated with ServerTimerRunsDuringUpload; HAProxy 3.0 does not time
// the server while the upload is unfinished (haproxy/haproxy f4b89f162,
// 2.8-dev5): no 504, the stall is HAProxy's timeout client's (400 after
// 6s or later), and its finding stays honoured.
func TestLiveServerTimeoutStalledUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	forEachHAProxy(t, func(t *testing.T, h installedHAProxy) {
		t.Parallel() // mostly waiting for timers
		vs, _ := lookupVersion(h.version)
		backend, got, closed := uploadBackend(t)
		port := proxytest.FreePort(t)
		m := testmodel.LoadText(t, testmodel.ConnectionPolicy("clientTimeout: 6s", "serverTimeout: 1s"),
			translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: port}}, "svc:8080="+backend)
		res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: h.version}}, false)
		if err != nil {
			t.Fatal(err)
		}
		var server *translate.Finding
		for i, f := range res.Report.Findings {
			if f.Feature == translate.FeatureConnServerTimeout {
				server = &res.Report.Findings[i]
			}
		}
		c, caveated := report.Caveat{}, false
		if server != nil {
			c, caveated = caveatOf(*server, report.CaveatServerTimerRunsDuringUpload)
		}
		switch {
		case server == nil:
			t.Fatal("no connection.serverTimeout finding")
		case caveated != vs.ServerTimeoutDuringUpload || (caveated && c.Params["version"] != h.version):
			t.Errorf("HAProxy %s: serverTimeout caveats %v, want ServerTimerRunsDuringUpload{version %s}: %v", h.full, server.Caveats, h.version, vs.ServerTimeoutDuringUpload)
		case !caveated && server.Status != translate.Honoured:
			t.Errorf("HAProxy %s: serverTimeout is %s, want honoured: %v", h.full, server.Status, server.Caveats)
		}
		addr := startConnPolicyOn(t, h, backend, nil, "clientTimeout: 6s", "serverTimeout: 1s")
		start := time.Now()
		rest, took, _ := proxytest.StallBody(t, addr)
		var body string
		var after time.Duration
		select {
		case when := <-closed:
			body, after = <-got, when.Sub(start)
		case <-time.After(5 * time.Second):
			after = -1
		}
		t.Logf("HAProxy %s: client got %q after %v; backend got body %q, closed after %v", h.full, strings.SplitN(rest, "\r\n", 2)[0], took, body, after)
		if vs.ServerTimeoutDuringUpload {
			if !strings.HasPrefix(rest, "HTTP/1.1 504") || took > 4*time.Second || body != "ab" || after < 0 || after > 4*time.Second {
				t.Errorf("HAProxy %s: client got %q after %v, backend body %q closed after %v; want 504 after serverTimeout (1s) and the backend's body cut at \"ab\"",
					h.full, rest, took, body, after)
			}
			return
		}
		if strings.HasPrefix(rest, "HTTP/1.1 504") || took < 5*time.Second {
			t.Errorf("HAProxy %s: client got %q after %v; want no 504 from serverTimeout (1s), the stall timed by clientTimeout (6s)", h.full, rest, took)
		}
	})
}
