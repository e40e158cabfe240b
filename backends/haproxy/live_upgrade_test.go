package haproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// wsBackend answers every request with 101 Switching Protocols and then,
// by the last path segment: "idle" sends nothing, "push" sends a byte
// every 200ms; it reads (and drops) whatever the client sends, until
// HAProxy closes the connection.
func wsBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"); err != nil {
					return
				}
				done := make(chan struct{})
				if strings.HasSuffix(req.URL.Path, "/push") {
					go func() {
						for {
							select {
							case <-done:
								return
							case <-time.After(200 * time.Millisecond):
								if _, err := conn.Write([]byte("p")); err != nil {
									return
								}
							}
						}
					}()
				}
				_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, _ = io.Copy(io.Discard, br)
				close(done)
			}()
		}
	}()
	return ln.Addr().String()
}

// upgradedLifetime opens a WebSocket through HAProxy at addr to path and
// returns how long the upgraded connection lasted, up to limit: the
// client sends a byte every 200ms when send is true, nothing else.
func upgradedLifetime(t *testing.T, addr, path string, send bool, limit time.Duration) time.Duration {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade %s: %v %v", path, resp, err)
	}
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	if send {
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(200 * time.Millisecond):
					if _, err := conn.Write([]byte("c")); err != nil {
						return
					}
				}
			}
		}()
	}
	_ = conn.SetReadDeadline(start.Add(limit))
	_, _ = io.Copy(io.Discard, br)
	return time.Since(start)
}

// TestLiveUpgradedConnectionIdle proves, on every installed HAProxy, what
// the timeout claims say of an upgraded (WebSocket) connection of the
// rule: a rule's backendRequest or request timeout (500ms) is written as
// timeout server, and without timeout tunnel HAProxy's timeout server
// also times the tunnel. Each claim that carries UpgradedConnectionIdle
// with the timeout must see an idle WebSocket closed after about that
// long and (checked once per version) one with data one way only, every
// 200ms, kept open; a claim
// without it, the idle WebSocket kept open well past the timeout.
func TestLiveUpgradedConnectionIdle(t *testing.T) {
	forEachHAProxy(t, func(t *testing.T, h installedHAProxy) {
		rules := []*translate.Rule{
			rule(0, nil, translate.Timeouts{BackendRequest: dur("500ms")}),
			rule(1, nil, translate.Timeouts{Request: dur("500ms")}),
			rule(2, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("500ms")}),
		}
		m := liveModel(t, wsBackend(t), rules...)
		_, findings := generate(t, m, translate.Options{Version: h.version})
		url := startLiveOn(t, h, m, translate.Options{Version: h.version})
		addr := strings.TrimPrefix(url, "http://")
		const limit = 4 * time.Second
		for i, r := range rules {
			for _, feat := range []translate.Feature{translate.FeatureBackendRequestTimeout, translate.FeatureRequestTimeout, translate.FeatureRetryBackendTimeout} {
				f, ok := findings[r.Index][feat]
				if !ok || f.Reason != report.ReasonConfigured {
					continue
				}
				t.Run(fmt.Sprintf("r%02d-%s", i, feat), func(t *testing.T) {
					cut := ""
					for _, c := range f.Caveats {
						if c.Reason == report.CaveatUpgradedConnectionIdle {
							cut = c.Params["timeout"]
						}
					}
					idle := upgradedLifetime(t, addr, fmt.Sprintf("/r%02d/idle", i), false, limit)
					switch {
					case cut == "" && idle < limit:
						t.Errorf("idle WebSocket closed after %v; the %s claim (%s, %v) does not say its 500ms timer ends it", idle, feat, f.Status, f.Caveats)
					case cut != "" && (cut != "500ms" || idle < 400*time.Millisecond || idle > 2*time.Second):
						t.Errorf("idle WebSocket closed after %v; the claim says after %s", idle, cut)
					}
					if cut == "" || i > 0 || feat != translate.FeatureBackendRequestTimeout {
						return
					}
					for _, side := range []struct {
						name string
						path string
						send bool
					}{{"client sends", "idle", true}, {"backend sends", "push", false}} {
						if took := upgradedLifetime(t, addr, fmt.Sprintf("/r%02d/%s", i, side.path), side.send, 2*time.Second); took < 2*time.Second {
							t.Errorf("%s every 200ms: WebSocket closed after %v; the claim says only %s with no data either way ends it", side.name, took, cut)
						}
					}
				})
			}
		}
		// A Gateway's tunnelTimeout writes timeout tunnel into the
		// rule's backend: the rule's timer no longer times the tunnel,
		// and its claim says nothing of it.
		t.Run("tunnelTimeout", func(t *testing.T) {
			manifest := strings.Replace(testmodel.ConnectionPolicy("tunnelTimeout: 30s"),
				"port: 8080}]\n", "port: 8080}]\n    timeouts: {backendRequest: 500ms}\n", 1)
			m := testmodel.LoadText(t, manifest, translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: proxytest.FreePort(t)}},
				"svc:8080="+wsBackend(t))
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: h.version}}, false)
			if err != nil {
				t.Fatal(err)
			}
			if cfg := string(res.Files[0].Data); !strings.Contains(cfg, "timeout tunnel 30s") {
				t.Fatalf("no timeout tunnel 30s:\n%s", cfg)
			}
			n := 0
			for _, f := range res.Report.Findings {
				if f.Feature != translate.FeatureBackendRequestTimeout {
					continue
				}
				n++
				for _, c := range f.Caveats {
					if c.Reason == report.CaveatUpgradedConnectionIdle {
						t.Errorf("backendRequest claim %v: timeout tunnel times the upgraded connection, not the rule's timer", f.Caveats)
					}
				}
			}
			if n != 1 {
				t.Errorf("%d backendRequest findings, want 1", n)
			}
			addr := strings.TrimPrefix(startLiveOn(t, h, m, translate.Options{Version: h.version}), "http://")
			if took := upgradedLifetime(t, addr, "/idle", false, 2*time.Second); took < 2*time.Second {
				t.Errorf("idle WebSocket with timeout tunnel 30s closed after %v", took)
			}
		})
	})
}
