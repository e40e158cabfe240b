//go:build unix

package nginx

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// passBackend is a backend for what nginx must pass through unchanged: it
// records the Host, protocol and headers of each request by path,
// answers /accel... with nginx's X-Accel-* headers and X-Pad, switches
// /ws... requests that ask for a WebSocket upgrade to an echo of bytes
// (after an unprompted "hello"), and answers anything else 200 "ok". It
// is a net/http server, so an HTTP/1.1 request without Host gets 400, as
// from any conforming backend.
type passBackend struct {
	ln   net.Listener
	mu   sync.Mutex
	seen map[string]*http.Request
}

// accelHeaders are the response headers nginx acts on or strips by
// default (ngx_http_proxy_hide_headers, less its own Date and Server),
// as /accel sends them.
var accelHeaders = map[string]string{
	"X-Accel-Redirect":   "/elsewhere",
	"X-Accel-Expires":    "5",
	"X-Accel-Limit-Rate": "1",
	"X-Accel-Buffering":  "no",
	"X-Accel-Charset":    "koi8-r",
	"X-Pad":              "avoid browser bug",
}

func newPassBackend(t *testing.T) *passBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pb := &passBackend{ln: ln, seen: map[string]*http.Request{}}
	srv := &http.Server{Handler: pb, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return pb
}

func (pb *passBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	pb.mu.Lock()
	pb.seen[r.URL.Path] = r.Clone(r.Context())
	pb.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/accel"):
		for k, v := range accelHeaders {
			w.Header().Set(k, v)
		}
		io.WriteString(w, "accel body")
	case strings.HasPrefix(r.URL.Path, "/ws"):
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade") {
			http.Error(w, "no upgrade asked", http.StatusBadRequest)
			return
		}
		c, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nhello")
		rw.Flush()
		buf := make([]byte, 256)
		for {
			n, err := rw.Read(buf)
			if n > 0 {
				rw.Write(buf[:n])
				rw.Flush()
			}
			if err != nil {
				return
			}
		}
	default:
		io.WriteString(w, "ok")
	}
}

// request returns the last request the backend got for path.
func (pb *passBackend) request(t *testing.T, path string) *http.Request {
	t.Helper()
	pb.mu.Lock()
	defer pb.mu.Unlock()
	r, ok := pb.seen[path]
	if !ok {
		t.Fatalf("the backend got no request for %s", path)
	}
	return r
}

// passManifest forwards everything to svc:8080; /ws-timed has a
// backendRequest timeout of 1s, /conn-set sets the Connection header and
// /accel-rm removes X-Accel-Redirect from the response.
// Requests for /match... are routed only with X-Match: v1.
var passManifest = testmodel.Route(`
  - matches: [{path: {type: PathPrefix, value: /accel-rm}}]
    backendRefs: [{name: svc, port: 8080}]
    filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [X-Accel-Redirect]}}]
  - matches: [{path: {type: PathPrefix, value: /ws-timed}}]
    backendRefs: [{name: svc, port: 8080}]
    timeouts: {backendRequest: 1s}
  - matches: [{path: {type: PathPrefix, value: /conn-set}}]
    backendRefs: [{name: svc, port: 8080}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: Connection, value: x-gw}]}}]
  - matches: [{path: {type: PathPrefix, value: /}}]
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /match}, headers: [{name: x-match, value: v1}]}]
    backendRefs: [{name: svc, port: 8080}]
`)

// rawExchange sends req on a new connection to addr and returns the
// connection and a reader positioned after the response head, with the
// status line and the head.
func rawExchange(t *testing.T, addr, req string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil || line == "\r\n" {
			break
		}
	}
	return c, br, head.String()
}

// readN reads exactly n bytes, or fails.
func readN(t *testing.T, br *bufio.Reader, n int) string {
	t.Helper()
	buf := make([]byte, n)
	if _, err := io.ReadFull(br, buf); err != nil {
		t.Fatalf("reading %d bytes: %v (got %q)", n, err, buf)
	}
	return string(buf)
}

// TestLivePassThrough proves, on every installed nginx, that what a
// Gateway passes through reaches the other side, where nginx's defaults
// would act on it: a backend's X-Accel-* and X-Pad response headers reach
// the client as sent (nginx would follow X-Accel-Redirect, which the
// routing's error_page 418 turns into a bare 418, and strip them all);
// client headers with '_' or '.' in the name reach the backend (nginx
// would drop them); a WebSocket upgrade is switched and carries bytes
// both ways (nginx would drop Upgrade and send Connection: close), and an
// upgraded connection is closed after the rule's backendRequest timer
// without data, not while data flows; a rule that sets Connection still
// sends its value; and an HTTP/1.0 request without Host reaches the
// backend with one (nginx would send none, and the backend answers 400),
// while a client's Host is passed as sent.
func TestLivePassThrough(t *testing.T) {
	installedNginx(t, func(t *testing.T, bin string, v version) {
		pb := newPassBackend(t)
		res, addr := serveRoute(t, bin, v.Name, passManifest, pb.ln.Addr().String())
		client := &http.Client{Timeout: 10 * time.Second}
		// The findings say which timer ends an upgraded connection.
		said := false
		for _, f := range res.Report.Findings {
			if f.Rule == 1 && f.Feature == translate.FeatureBackendRequestTimeout {
				said = slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool {
					return c.Reason == report.CaveatUpgradedConnectionIdle && c.Params["timeout"] == "1000ms"
				})
			}
		}
		if !said {
			t.Errorf("no %s finding of /ws-timed has the caveat %s 1000ms", translate.FeatureBackendRequestTimeout, report.CaveatUpgradedConnectionIdle)
		}

		t.Run("X-Accel response headers", func(t *testing.T) {
			resp, err := client.Get("http://" + addr + "/accel")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "accel body" {
				t.Errorf("client got %d %q, want the backend's 200 \"accel body\"", resp.StatusCode, body)
			}
			for k, want := range accelHeaders {
				if got := resp.Header.Values(k); !slices.Equal(got, []string{want}) {
					t.Errorf("client got %s %q, want [%q]", k, got, want)
				}
			}
			if resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("client got Content-Type %q, want the backend's", resp.Header.Get("Content-Type"))
			}
			// A rule that removes one of them: proxy_pass_header would
			// undo its proxy_hide_header.
			resp, err = client.Get("http://" + addr + "/accel-rm")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			for k, want := range accelHeaders {
				if k == "X-Accel-Redirect" {
					want = ""
				}
				if got := resp.Header.Get(k); resp.StatusCode != 200 || got != want {
					t.Errorf("/accel-rm: client got %d, %s %q, want 200 and %q", resp.StatusCode, k, got, want)
				}
			}
		})

		t.Run("header names with _ and .", func(t *testing.T) {
			_, _, head := rawExchange(t, addr, "GET /hdrs HTTP/1.1\r\nHost: x\r\nX_Under: u\r\nX.Dot: d\r\nX-Plain: p\r\nConnection: close\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 200") {
				t.Fatalf("client got %q", head)
			}
			r := pb.request(t, "/hdrs")
			for name, want := range map[string]string{"X_Under": "u", "X.Dot": "d", "X-Plain": "p"} {
				if got := r.Header.Values(name); !slices.Equal(got, []string{want}) {
					t.Errorf("backend got %s %q, want [%q] (all: %v)", name, got, want, r.Header)
				}
			}
			// The routing note: a match on X-Match reads X_Match too
			// (nginx's $http_x_match holds both).
			_, _, head = rawExchange(t, addr, "GET /match/a HTTP/1.1\r\nHost: x\r\nX_Match: v1\r\nConnection: close\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 200") {
				t.Errorf("X_Match: v1 on a match of x-match: client got %q, want the route's 200", head)
			}
		})

		upgrade := func(t *testing.T, path string) (net.Conn, *bufio.Reader) {
			t.Helper()
			c, br, head := rawExchange(t, addr, "GET "+path+" HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 101") {
				rest, _ := io.ReadAll(br)
				t.Fatalf("upgrade of %s: client got %q%q, want 101", path, head, rest)
			}
			if got := readN(t, br, 5); got != "hello" {
				t.Fatalf("upgrade of %s: first bytes %q, want the backend's hello", path, got)
			}
			return c, br
		}

		t.Run("WebSocket upgrade", func(t *testing.T) {
			c, br := upgrade(t, "/ws")
			for _, msg := range []string{"ping", strings.Repeat("x", 200)} {
				io.WriteString(c, msg)
				if got := readN(t, br, len(msg)); got != msg {
					t.Errorf("echo of %q: %q", msg, got)
				}
			}
		})

		t.Run("upgraded connection idle past backendRequest", func(t *testing.T) {
			c, br := upgrade(t, "/ws-timed")
			start := time.Now()
			c.SetReadDeadline(time.Now().Add(8 * time.Second))
			n, err := br.Read(make([]byte, 1))
			if took := time.Since(start); err == nil || took < 800*time.Millisecond || took > 5*time.Second {
				t.Errorf("idle upgraded connection: read %d bytes, %v after %v; want it closed after about 1s", n, err, took)
			}
		})

		t.Run("upgraded connection with data past backendRequest", func(t *testing.T) {
			c, br := upgrade(t, "/ws-timed")
			for i := range 6 { // 6 x 400ms: 2.4s, more than twice the timer
				time.Sleep(400 * time.Millisecond)
				io.WriteString(c, "d")
				if got := readN(t, br, 1); got != "d" {
					t.Fatalf("echo %d: %q", i, got)
				}
			}
		})

		t.Run("Connection set by a rule", func(t *testing.T) {
			_, _, head := rawExchange(t, addr, "GET /conn-set/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 200") {
				t.Fatalf("client got %q", head)
			}
			if got := pb.request(t, "/conn-set/a").Header.Values("Connection"); !slices.Equal(got, []string{"x-gw"}) {
				t.Errorf("backend got Connection %q, want [x-gw]", got)
			}
		})

		t.Run("Host", func(t *testing.T) {
			for _, tc := range []struct {
				name, req, path, want string
			}{
				{"HTTP/1.0 without Host", "GET /h10 HTTP/1.0\r\n\r\n", "/h10", addr},
				{"HTTP/1.0 absolute without Host", "GET http://Abs.Example:83/h10abs HTTP/1.0\r\n\r\n", "/h10abs", "abs.example"},
				{"HTTP/1.0 with Host", "GET /h10host HTTP/1.0\r\nHost: A.Example:81\r\n\r\n", "/h10host", "A.Example:81"},
				{"HTTP/1.1 with Host", "GET /h11 HTTP/1.1\r\nHost: B.Example:82\r\nConnection: close\r\n\r\n", "/h11", "B.Example:82"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, _, head := rawExchange(t, addr, tc.req)
					if !strings.HasPrefix(head, "HTTP/1.1 200") {
						t.Fatalf("client got %q, want the backend's 200", head)
					}
					if got := pb.request(t, tc.path).Host; got != tc.want {
						t.Errorf("backend got Host %q, want %q", got, tc.want)
					}
				})
			}
		})

		// On an IPv6 listener the address a request without Host gets
		// is in brackets.
		t.Run("HTTP/1.0 without Host on IPv6", func(t *testing.T) {
			if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
				t.Skipf("no IPv6 loopback: %v", err)
			} else {
				ln.Close()
			}
			port := proxytest.FreePort(t)
			m := testmodel.LoadText(t, passManifest, translate.ResolveOptions{Listen: &translate.Bind{Address: "::1", Port: port}},
				"svc:8080="+pb.ln.Addr().String())
			b, err := NewWithConfig(Config{Layout: LayoutConfD})
			if err != nil {
				t.Fatal(err)
			}
			res, err := translate.Run(m, []translate.Target{{Backend: b, Version: v.Name}}, false)
			if err != nil {
				t.Fatal(err)
			}
			addr6 := net.JoinHostPort("::1", strconv.Itoa(port))
			startConfDWith(t, bin, &translate.Output{Files: res.Files}, addr6)
			_, _, head := rawExchange(t, addr6, "GET /h10v6 HTTP/1.0\r\n\r\n")
			if !strings.HasPrefix(head, "HTTP/1.1 200") {
				t.Fatalf("client got %q, want the backend's 200", head)
			}
			if got := pb.request(t, "/h10v6").Host; got != addr6 {
				t.Errorf("backend got Host %q, want %q", got, addr6)
			}
		})
	})
}
