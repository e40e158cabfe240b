package traefik

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// closingBackend answers the first request on each connection with 200
// and keeps the connection open without saying so; a later request on the
// same connection is read, counted, and answered by closing the
// connection. A proxy that reuses its upstream connections thus meets a
// kept-alive connection that closes before any response.
type closingBackend struct {
	ln   net.Listener
	mu   sync.Mutex
	hits map[string]int // by X-Req header
}

func newClosingBackend(t *testing.T) *closingBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &closingBackend{ln: ln, hits: map[string]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	return b
}

func (b *closingBackend) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		b.mu.Lock()
		b.hits[req.Header.Get("X-Req")]++
		b.mu.Unlock()
		if n > 0 {
			return // close a reused connection without answering
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

func (b *closingBackend) port() int { return b.ln.Addr().(*net.TCPAddr).Port }

func (b *closingBackend) count(req string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits[req]
}

// startFiles starts the real Traefik on static and dynamic files and waits
// until it has loaded them.
func startFiles(t *testing.T, static, dyn []byte) *proxytest.TraefikConfig {
	t.Helper()
	cfg := proxytest.WriteTraefikConfig(t, static, dyn, nil)
	p := proxytest.StartTraefik(t, cfg.StaticPath, cfg.API)
	t.Cleanup(p.Stop)
	if err := cfg.WaitLoaded(p, 10*time.Second); err != nil {
		t.Fatalf("Traefik did not load: %v\n%s", err, p.Output())
	}
	return cfg
}

// TestTraefik36KeptAliveConnectionsAreNotResent proves, with the real
// Traefik v3.6.12, trap 16 and its fix: with upstream keep-alive on, Go's
// transport re-sends a GET by itself when the reused upstream connection
// closes before answering, although the rule has attempts 0 (no Retry
// middleware); with maxIdleConnsPerHost -1, as generated, the backend sees
// exactly one try per request.
func TestTraefik36KeptAliveConnectionsAreNotResent(t *testing.T) {
	proxytest.Require(t, "traefik")
	for _, tc := range []struct {
		name      string
		keepAlive bool
	}{{"as generated", false}, {"keep-alive put back", true}} {
		t.Run(tc.name, func(t *testing.T) {
			be := newClosingBackend(t)
			r := &translate.Rule{Name: "default_ka_r0", Route: "default/ka", Retry: &translate.Retry{Attempts: 0},
				Backends: []*translate.BackendRef{{Name: "default_ka_80", Weight: 1,
					Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: be.port()}}}}}
			m := single(r)
			m.Listeners[0].Address = "127.0.0.1"
			out := generate(t, m, translate.Options{Version: v36})
			static, dyn := files(t, out)
			for _, f := range out.Findings {
				if f.Feature == translate.FeatureRetryAttempts && f.Status != translate.Honoured {
					t.Fatalf("attempts 0 is %s: %s", f.Status, f.Reason)
				}
			}
			if tc.keepAlive {
				var d dynamicConfig
				if err := yaml.UnmarshalStrict(dyn, &d); err != nil {
					t.Fatal(err)
				}
				d.HTTP.ServersTransports["default_ka_r0-transport"].MaxIdleConnsPerHost = 0
				var err error
				if dyn, err = yaml.Marshal(&d); err != nil {
					t.Fatal(err)
				}
			}
			cfg := startFiles(t, static, dyn)
			// One kept-alive client connection for every request.
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			resent := 0
			for i := range 4 {
				id := strconv.Itoa(i)
				req, _ := http.NewRequest(http.MethodGet, "http://"+cfg.EntryPoints["http-8080"]+"/", nil)
				req.Header.Set("X-Req", id)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch n := be.count(id); {
				case n == 1:
				case n == 2 && tc.keepAlive:
					resent++
				default:
					t.Errorf("request %d reached the backend %d times (status %d), want 1", i, n, resp.StatusCode)
				}
			}
			if tc.keepAlive && resent == 0 {
				t.Errorf("with keep-alive on, Go's transport never re-sent a request: the test does not reproduce trap 16")
			}
		})
	}
}

// TestTraefik36AnswersDeadRulesAnd500Shares checks with the real Traefik
// v3.6.12 that a dead rule answers 500 to every method without falling
// through to the catch-all rule, and that the share of invalid backendRefs
// of a partly invalid rule is answered 500 while the rest reaches the
// valid backend.
func TestTraefik36AnswersDeadRulesAnd500Shares(t *testing.T) {
	proxytest.Require(t, "traefik")
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	mk := func(name string, weight int) *translate.Rule {
		return &translate.Rule{Name: "default_" + name + "_r0", Route: "default/" + name,
			Backends: []*translate.BackendRef{{Name: "default_" + name + "_80", Weight: weight,
				Endpoints: []translate.Endpoint{{Host: host, Port: p}}}}}
	}
	dead := &translate.Rule{Name: "default_dead_r0", Route: "default/dead", Retry: &translate.Retry{Attempts: 2},
		Invalid: []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}}
	part := mk("part", 1)
	part.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "kind Bucket is not a Service"}}
	all := mk("all", 1)
	m := &translate.Model{Rules: []*translate.Rule{all, dead, part}, Listeners: []*translate.Listener{{
		Name: "web", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{{Name: "any", Routes: []*translate.RouteMatch{
			{Rule: dead, Match: translate.Match{PathType: translate.PathPrefix, Path: "/dead"}},
			{Rule: part, Match: translate.Match{PathType: translate.PathPrefix, Path: "/part"}},
			{Rule: all, Match: prefixRoot},
		}}}}}}
	cfg := startLoaded(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	do := func(method, path string) int {
		req, _ := http.NewRequest(method, "http://"+cfg.EntryPoints["web"]+path, strings.NewReader("body"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, method := range []string{"GET", "POST", "PATCH", "DELETE", "HEAD"} {
		for _, path := range []string{"/dead", "/dead/x"} {
			if got := do(method, path); got != 500 {
				t.Errorf("%s %s: status %d, want 500", method, path, got)
			}
		}
	}
	mu.Lock()
	if hits != 0 {
		t.Errorf("the dead rule's requests reached a backend %d times", hits)
	}
	mu.Unlock()
	if got := do("GET", "/other"); got != 200 {
		t.Errorf("catch-all: status %d, want 200", got)
	}
	ok, failed := 0, 0
	for range 20 {
		switch do("GET", "/part") {
		case 200:
			ok++
		case 500:
			failed++
		default:
			t.Errorf("partly invalid rule answered neither 200 nor 500")
		}
	}
	// Traefik's weighted round robin is deterministic: half and half.
	if ok != 10 || failed != 10 {
		t.Errorf("partly invalid rule (weights 1 valid, 1 invalid): %d ok, %d answered 500; want 10 and 10", ok, failed)
	}
}

// TestTraefik36RetriesUnsentBodiesOfAnySize checks with the real Traefik
// v3.6.12 that its retry before sending covers POST, PATCH and bodies of
// 4 KB and 100 KB: on 3.6 retry.attempts is approximated only because a
// request that was sent and then failed is not retried, never because of
// the method or the body size.
func TestTraefik36RetriesUnsentBodiesOfAnySize(t *testing.T) {
	proxytest.Require(t, "traefik")
	var mu sync.Mutex
	sizes := map[int]int{}
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		sizes[int(n)]++
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(live.Close)
	_, livePort, _ := net.SplitHostPort(live.Listener.Addr().String())
	lp, _ := strconv.Atoi(livePort)
	dead := proxytest.FreePort(t)
	r := &translate.Rule{Name: "default_body_r0", Route: "default/body", Retry: &translate.Retry{Attempts: 1},
		Methods: []string{"POST", "PATCH"},
		Backends: []*translate.BackendRef{{Name: "default_body_80", Weight: 1,
			Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: dead}, {Host: "127.0.0.1", Port: lp}}}}}
	m := single(r)
	m.Listeners[0].Address = "127.0.0.1"
	out := generate(t, m, translate.Options{Version: v36})
	for _, f := range out.Findings {
		if f.Feature != translate.FeatureRetryAttempts {
			continue
		}
		if f.Status != translate.Approximated || !hasCaveat(f.Decision, report.CaveatSentRequestNotRetried) ||
			hasCaveat(f.Decision, report.CaveatNonIdempotentExempt) || hasCaveat(f.Decision, report.CaveatBodyBufferLimit) {
			t.Fatalf("attempts on 3.6: %s %+v; want approximated for sent requests only, with no method or body exemption",
				f.Status, f.Caveats)
		}
	}
	cfg := startLoaded(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, size := range []int{4 << 10, 100 << 10} {
		for _, method := range []string{"POST", "PATCH"} {
			for range 4 {
				req, _ := http.NewRequest(method, "http://"+cfg.EntryPoints["http-8080"]+"/", strings.NewReader(strings.Repeat("x", size)))
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("%s with a %d-byte body: status %d, want 200 (retried onto the live endpoint)", method, size, resp.StatusCode)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if sizes[4<<10] != 8 || sizes[100<<10] != 8 {
		t.Errorf("bodies received whole, by size: %v; want 8 of each", sizes)
	}
}

// TestTraefik36ReadTimeoutCutsUntimedRequests proves with the real Traefik
// v3.6.12 why request 0s and backendRequest 0s are approximated, not
// honoured: the entry point's respondingTimeouts.readTimeout (Go's
// http.Server ReadTimeout) cuts a request whose body is still arriving,
// which Traefik answers 499 or 504 while the backend gets a truncated body. With a
// ConnectionTimeoutPolicy clientTimeout of 1s the cut shows within a
// second; without one, Traefik's API shows its default 60s in effect, and
// the findings name it.
func TestTraefik36ReadTimeoutCutsUntimedRequests(t *testing.T) {
	proxytest.Require(t, "traefik")
	const route = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: up, namespace: shop}
spec:
  parentRefs: [{name: gw}]
  rules:
  - timeouts: {request: 0s, backendRequest: 0s}
    backendRefs: [{name: up, port: 8080}]
`
	const policy = `---
apiVersion: gwretry.io/v1alpha1
kind: ConnectionTimeoutPolicy
metadata: {name: tuning, namespace: shop, creationTimestamp: "2024-01-01T00:00:00Z"}
spec:
  targetRefs:
  - {group: gateway.networking.k8s.io, kind: Gateway, name: gw}
  clientTimeout: 1s
`
	for _, tc := range []struct {
		name     string
		manifest string
		read     string // the readTimeout in effect, as Traefik's API and the findings write it
		upload   bool   // send a body over 2s and expect it cut
	}{
		{"clientTimeout 1s", route + policy, "1s", true},
		{"Traefik's default", route, "1m0s", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				n   int64
				err error
			}
			got := make(chan seen, 1)
			be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, err := io.Copy(io.Discard, r.Body)
				got <- seen{n, err}
				io.WriteString(w, "ok")
			}))
			t.Cleanup(be.Close)
			m := testmodel.LoadText(t, tc.manifest, translate.ResolveOptions{}, "up:8080="+be.Listener.Addr().String())
			out := generate(t, m, translate.Options{Version: v36})
			for _, f := range out.Findings {
				if f.Feature != translate.FeatureRequestTimeout && f.Feature != translate.FeatureBackendRequestTimeout {
					continue
				}
				i := slices.IndexFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatReadTimeoutCutsUpload })
				if f.Status != translate.Approximated || i < 0 || f.Caveats[i].Params["timeout"] != tc.read {
					t.Errorf("%s: %s %+v; want approximated, naming readTimeout %s", f.Feature, f.Status, f.Caveats, tc.read)
				}
			}
			static, dyn := files(t, out)
			cfg := startFiles(t, static, dyn)
			if len(cfg.EntryPoints) != 1 {
				t.Fatalf("entry points %v, want one", cfg.EntryPoints)
			}
			for name, addr := range cfg.EntryPoints {
				var ep struct {
					Transport struct {
						RespondingTimeouts struct {
							ReadTimeout string `json:"readTimeout"`
						} `json:"respondingTimeouts"`
					} `json:"transport"`
				}
				resp, err := http.Get("http://" + cfg.API + "/api/entrypoints/" + name)
				if err != nil {
					t.Fatal(err)
				}
				err = json.NewDecoder(resp.Body).Decode(&ep)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if r := ep.Transport.RespondingTimeouts.ReadTimeout; r != tc.read {
					t.Errorf("entry point %s: Traefik reports readTimeout %q, want %q", name, r, tc.read)
				}
				if !tc.upload {
					continue
				}
				// 20 bytes, one every 100ms: still arriving when 1s passes.
				start := time.Now()
				status := slowUpload(t, addr, "/", 20)
				select {
				case s := <-got:
					if s.n >= 20 || s.err == nil || (status != 499 && status != 504) {
						t.Errorf("a 2s upload through readTimeout 1s: client got %d after %v, backend read %d bytes (%v); want it cut (499 or 504, as the findings say)",
							status, time.Since(start), s.n, s.err)
					}
				case <-time.After(5 * time.Second):
					t.Errorf("the backend never finished reading the request (client got %d)", status)
				}
			}
		})
	}
}

// TestTraefik36SentRequestsFailOnce checks with the real Traefik v3.6.12
// what retry.connectionErrors says of a request that reached the backend
// and then failed, with attempts 2: it is tried once, whatever the method;
// a reset before the response headers is answered 502; a reset after them
// is never a 502: the client gets the 200 response cut short once Traefik
// has flushed it (flushInterval 100ms), and before that no answer at all.
func TestTraefik36SentRequestsFailOnce(t *testing.T) {
	proxytest.Require(t, "traefik")
	var mu sync.Mutex
	hits := map[string]int{}
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		hits[r.Header.Get("X-Req")]++
		mu.Unlock()
		c, bw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if strings.HasPrefix(r.URL.Path, "/after-headers") {
			_, _ = bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
			_ = bw.Flush()
			if r.URL.Path == "/after-headers-flushed" {
				time.Sleep(500 * time.Millisecond)
			}
		}
		_ = c.(*net.TCPConn).SetLinger(0) // reset, not a clean close
		c.Close()
	}))
	t.Cleanup(be.Close)
	_, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	r := &translate.Rule{Name: "default_sent_r0", Route: "default/sent", Retry: &translate.Retry{Attempts: 2},
		Backends: []*translate.BackendRef{{Name: "default_sent_80", Weight: 1,
			Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: p}}}}}
	m := single(r)
	m.Listeners[0].Address = "127.0.0.1"
	for _, f := range generate(t, m, translate.Options{Version: v36}).Findings {
		if f.Feature == translate.FeatureRetryConnectionErrors &&
			(f.Status != translate.Approximated || !hasCaveat(f.Decision, report.CaveatSentRequestNotRetried)) {
			t.Fatalf("connectionErrors: %s %+v; want approximated: a sent request that fails is not retried", f.Status, f.Caveats)
		}
	}
	cfg := startLoaded(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		path     string
		status   int // 0: no answer
		complete bool
	}{
		{"/before-headers", 502, true},
		{"/after-headers-flushed", 200, false},
		{"/after-headers", 0, false},
	} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			id := method + tc.path
			req, _ := http.NewRequest(method, "http://"+cfg.EntryPoints["http-8080"]+tc.path, strings.NewReader("body"))
			req.Header.Set("X-Req", id)
			status, complete := 0, false
			resp, err := client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status, complete = resp.StatusCode, err == nil
			}
			if status != tc.status || complete != tc.complete {
				t.Errorf("%s: status %d, complete %v (%v); want %d, complete %v", id, status, complete, err, tc.status, tc.complete)
			}
			mu.Lock()
			if n := hits[id]; n != 1 {
				t.Errorf("%s reached the backend %d times, want once (attempts 2 does not cover a sent request)", id, n)
			}
			mu.Unlock()
		}
	}
}

// slowUpload sends a POST to path at addr with an n-byte body, one byte
// every 100ms, and returns the status of the answer (0 for none).
func slowUpload(t *testing.T, addr, path string, n int) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(n)+"\r\n\r\n")
	for range n {
		if _, err := c.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTraefik36BackendRequestStartsAfterTheUpload checks with the real
// Traefik v3.6.12 what timeouts.backendRequest says: responseHeaderTimeout
// starts once the request has been sent, so a try whose upload lasts 2s
// through backendRequest 500ms is not cut (the backend answers at once),
// while a backend that takes 2s to answer is cut with 504.
func TestTraefik36BackendRequestStartsAfterTheUpload(t *testing.T) {
	proxytest.Require(t, "traefik")
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow" {
			time.Sleep(2 * time.Second)
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(be.Close)
	_, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	r := &translate.Rule{Name: "default_bt_r0", Route: "default/bt",
		Timeouts: translate.Timeouts{BackendRequest: dur("500ms")},
		Backends: []*translate.BackendRef{{Name: "default_bt_80", Weight: 1,
			Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: p}}}}}
	m := single(r)
	m.Listeners[0].Address = "127.0.0.1"
	for _, f := range generate(t, m, translate.Options{Version: v36}).Findings {
		if f.Feature == translate.FeatureBackendRequestTimeout &&
			(f.Status != translate.Approximated || !hasCaveat(f.Decision, report.CaveatTimerEndsAtResponseHeaders)) {
			t.Fatalf("backendRequest: %s %+v; want approximated: the timer ends at the response headers, a slow upload is not cut", f.Status, f.Caveats)
		}
	}
	cfg := startLoaded(t, m)
	addr := cfg.EntryPoints["http-8080"]
	if got := slowUpload(t, addr, "/upload", 20); got != 200 {
		t.Errorf("a 2s upload answered at once: status %d, want 200 (the timer starts after the upload)", got)
	}
	if got := slowUpload(t, addr, "/slow", 1); got != 504 {
		t.Errorf("a backend answering after 2s: status %d, want 504", got)
	}
}
