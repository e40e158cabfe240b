package haproxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// liveModel puts rules behind /rNN on a loopback listener, each rule's one
// backend pointing at addr.
func liveModel(t *testing.T, addr string, rules ...*translate.Rule) *translate.Model {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var p int
	fmt.Sscan(port, &p)
	for _, r := range rules {
		for _, b := range r.Backends {
			for i := range b.Endpoints {
				b.Endpoints[i] = ep(host, p)
			}
		}
	}
	m := modelOf(rules...)
	m.Listeners[0].Port = proxytest.FreePort(t)
	return m
}

// startLive generates haproxy.cfg for m and runs HAProxy on it; it returns
// the proxy's base URL.
func startLive(t *testing.T, m *translate.Model, opts translate.Options) string {
	t.Helper()
	proxytest.Require(t, "haproxy")
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: opts.Version}}, opts.RetryNonIdempotent)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, res.Files[0].Data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", m.Listeners[0].Port)
	proxytest.StartHAProxy(t, file, addr)
	return "http://" + addr
}

func oneShotClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func status(t *testing.T, c *http.Client, method, url string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestLiveDeadRuleAndInvalidShare(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	be := flaky.New(t, "a")
	dead := deadRules()[2]
	dead.Index, dead.Name = 0, "default_web_r00"
	partial := rule(1, nil, translate.Timeouts{})
	partial.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "gone"}}
	url := startLive(t, liveModel(t, be.Addr(), dead, partial), translate.Options{Version: checkedVersion})
	c := oneShotClient()
	if got := status(t, c, "GET", url+"/r00/x", nil); got != 500 {
		t.Errorf("dead rule answered %d, want 500", got)
	}
	counts := map[int]int{}
	const n = 200
	for i := 0; i < n; i++ {
		counts[status(t, c, "GET", url+"/r01/x", nil)]++
	}
	// Half the requests are the invalid share; a binomial(200, 0.5)
	// falls outside [50, 150] with negligible probability.
	if counts[500] < 50 || counts[200] < 50 || counts[200]+counts[500] != n {
		t.Errorf("answers %v, want about half 500 and half 200", counts)
	}
	if hits := len(be.Hits("/r01/x")); hits != counts[200] {
		t.Errorf("backend got %d hits for %d answers 200: the 500s must not reach it", hits, counts[200])
	}
}

// TestLiveBodyLimit: HAProxy L7-retries a request only when it fits in one
// buffer, whatever the method and the opt-in; without the opt-in POST is
// not retried on a status code at all.
func TestLiveBodyLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	small, large := bytes.Repeat([]byte("a"), 4<<10), bytes.Repeat([]byte("a"), 100<<10)
	// 15000 and 15200 bytes with short headers: both fit in bufsize minus
	// maxrewrite (15360), but HAProxy's internal framing takes the rest;
	// the finding names the limit (RetryBufferLimitedByHeaders).
	fits, over := bytes.Repeat([]byte("a"), 15000), bytes.Repeat([]byte("a"), 15200)
	for _, optIn := range []bool{true, false} {
		t.Run(fmt.Sprintf("opt-in=%v", optIn), func(t *testing.T) {
			be := flaky.New(t, "a")
			r := rule(0, &translate.Retry{Attempts: 2, Codes: []int{500}}, translate.Timeouts{})
			m := liveModel(t, be.Addr(), r)
			url := startLive(t, m, translate.Options{Version: checkedVersion, RetryNonIdempotent: optIn})
			_, findings := generate(t, m, translate.Options{Version: checkedVersion, RetryNonIdempotent: optIn})
			if f := findings[0][translate.FeatureRetryCodes]; !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return cmp.Equal(c, oneBuffer) }) {
				t.Errorf("retry.codes does not say where the buffer ends: %v, want %v", f.Caveats, oneBuffer)
			}
			c := oneShotClient()
			tests := []struct {
				method string
				body   []byte
				hits   int
			}{
				{"POST", small, map[bool]int{true: 3, false: 1}[optIn]},
				{"POST", large, 1},
				{"PUT", small, 3},
				{"PUT", large, 1},
				{"PUT", fits, 3},
				{"PUT", over, 1},
			}
			for i, tt := range tests {
				path := fmt.Sprintf("/r00/%d", i)
				be.Handle(path, flaky.AlwaysFail(500))
				if got := status(t, c, tt.method, url+path, tt.body); got != 500 {
					t.Errorf("%s %d bytes: answer %d, want the backend's 500", tt.method, len(tt.body), got)
				}
				be.WaitIdle(5 * time.Second)
				if got := len(be.Hits(path)); got != tt.hits {
					t.Errorf("%s %d bytes: %d tries, want %d", tt.method, len(tt.body), got, tt.hits)
				}
			}
		})
	}
}

// keepAliveBackend answers the first request of each connection with 200
// and keeps the connection open, then closes it without answering when a
// second request arrives on it: a kept-alive connection that the server
// closes just as it is reused.
type keepAliveBackend struct {
	ln       net.Listener
	mu       sync.Mutex
	firsts   int // requests that were the first on their connection
	reused   int // requests that arrived on a reused connection (and were dropped)
	closeAll bool
}

func startKeepAliveBackend(t *testing.T) *keepAliveBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &keepAliveBackend{ln: ln}
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

func (b *keepAliveBackend) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		b.mu.Lock()
		if n == 0 {
			b.firsts++
		} else {
			b.reused++
		}
		b.mu.Unlock()
		if n > 0 {
			return // close without answering
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"); err != nil {
			return
		}
	}
}

// TestLiveKeepAlive sends requests over one kept-alive client connection
// to a backend that closes its kept-alive connections when they are
// reused: HAProxy must never reuse a server connection (option
// http-server-close), so every request gets 200, also for rules without
// retries.
func TestLiveKeepAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	be := startKeepAliveBackend(t)
	noRetry := rule(0, nil, translate.Timeouts{})
	zero := rule(1, &translate.Retry{Attempts: 0}, translate.Timeouts{})
	retrying := rule(2, &translate.Retry{Attempts: 1}, translate.Timeouts{})
	url := startLive(t, liveModel(t, be.ln.Addr().String(), noRetry, zero, retrying), translate.Options{Version: checkedVersion})
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	reusedClient := 0
	for i := 0; i < 9; i++ {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reusedClient++
			}
		}}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", fmt.Sprintf("%s/r%02d/x", url, i%3), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("request %d: %d, want 200", i, resp.StatusCode)
		}
	}
	if reusedClient == 0 {
		t.Error("the client never reused its connection: the test proves nothing")
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.firsts != 9 || be.reused != 0 {
		t.Errorf("backend saw %d first requests and %d on reused connections, want 9 and 0", be.firsts, be.reused)
	}
}

// TestLiveKeepAliveLastTryFails records what remains on the installed
// HAProxy (versionSupport.SilentKeepAliveClose): when every try of a
// request that is not the first on its client connection ends with the
// server closing, HAProxy closes the client connection without an answer;
// the first request on a connection gets 502.
func TestLiveKeepAliveLastTryFails(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	forEachHAProxy(t, testKeepAliveLastTryFails)
}

func testKeepAliveLastTryFails(t *testing.T, h installedHAProxy) {
	vs, _ := lookupVersion(h.version)
	be := flaky.New(t, "a")
	be.Handle("/r00/x", flaky.CloseAlways())
	url := startLiveOn(t, h, liveModel(t, be.Addr(), rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})), translate.Options{Version: h.version})
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	var answers []string
	for i := 0; i < 2; i++ {
		if _, err := io.WriteString(conn, "GET /r00/x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			answers = append(answers, "closed")
			break
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			answers = append(answers, "closed")
			break
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		answers = append(answers, fmt.Sprint(resp.StatusCode))
	}
	want := "502 502"
	if vs.SilentKeepAliveClose {
		want = "502 closed"
	}
	if got := strings.Join(answers, " "); got != want {
		t.Errorf("answers %q, want %q", got, want)
	}
	be.WaitIdle(5 * time.Second)
	if hits := len(be.Hits("/r00/x")); hits != 4 {
		t.Errorf("%d tries, want 2 per request", hits)
	}
}

// TestLiveSilentCloseResend: on a kept-alive client connection, a request
// after a successful one whose every try ends with the server closing
// without an answer. HAProxy versions with SilentKeepAliveClose close the
// client connection without any answer, and Go's net/http (as curl and
// browsers) then sends a GET again on a new connection: the backend gets
// the tries twice. So "retries 0: HAProxy does not retry" may not be
// claimed honoured there, and a retrying rule's message must say it.
func TestLiveSilentCloseResend(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	forEachHAProxy(t, testSilentCloseResend)
}

func testSilentCloseResend(t *testing.T, h installedHAProxy) {
	vs, _ := lookupVersion(h.version)
	tests := []struct {
		name  string
		retry *translate.Retry
	}{
		{"attempts 0", &translate.Retry{Attempts: 0}},
		{"attempts 1", &translate.Retry{Attempts: 1}},
	}
	var rules []*translate.Rule
	for i, tt := range tests {
		rules = append(rules, rule(i, tt.retry, translate.Timeouts{}))
	}
	be := flaky.New(t, "a")
	m := liveModel(t, be.Addr(), rules...)
	url := startLiveOn(t, h, m, translate.Options{Version: h.version})
	_, findings := generate(t, m, translate.Options{Version: h.version})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failing := fmt.Sprintf("/r%02d/fail", i)
			be.Handle(failing, flaky.CloseAlways())
			c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			if got := status(t, c, "GET", fmt.Sprintf("%s/r%02d/ok", url, i), nil); got != 200 {
				t.Fatalf("first request: %d, want 200", got)
			}
			// Where HAProxy closes silently, the answer (502 on the
			// re-sent request's fresh connection, or an error) does not
			// matter: the tries do. Elsewhere it must be HAProxy's 502.
			answer := "closed"
			if resp, err := c.Get(url + failing); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answer = fmt.Sprint(resp.StatusCode)
			}
			if !vs.SilentKeepAliveClose && answer != "502" {
				t.Errorf("answer %s, want 502: HAProxy %s is said to answer 502 on kept-alive client connections", answer, h.full)
			}
			be.WaitIdle(5 * time.Second)
			tries, want := len(be.Hits(failing)), tt.retry.Attempts+1
			if vs.SilentKeepAliveClose && tries != 2*want {
				t.Errorf("%d tries, want %d: the silent close and the client's re-send are not what this test records", tries, 2*want)
			}
			if tries == want {
				return
			}
			for _, feat := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryConnectionErrors} {
				f := findings[i][feat]
				if f.Status == translate.Honoured || !hasCaveat(f, report.CaveatKeepAliveClosedUnanswered) {
					t.Errorf("the backend got %d tries for attempts %d, but %s is %s: %v, want the KeepAliveClosedUnanswered caveat (clients re-send)", tries, tt.retry.Attempts, feat, f.Status, f.Caveats)
				}
			}
		})
	}
}

// TestLiveTimeoutAfterHeaders: timeout server cuts a server that falls
// silent after its response headers, but the client then gets the headers
// and a truncated body, not 504, and the try is not retried; the
// timeouts.backendRequest message must say so.
func TestLiveTimeoutAfterHeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	tests := []struct {
		name  string
		retry *translate.Retry
	}{
		{"no retry", nil},
		{"attempts 2", &translate.Retry{Attempts: 2}},
	}
	var rules []*translate.Rule
	for i, tt := range tests {
		rules = append(rules, rule(i, tt.retry, translate.Timeouts{BackendRequest: dur("300ms")}))
	}
	be := flaky.New(t, "a")
	m := liveModel(t, be.Addr(), rules...)
	url := startLive(t, m, translate.Options{Version: checkedVersion})
	_, findings := generate(t, m, translate.Options{Version: checkedVersion})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("/r%02d/stall", i)
			be.Handle(path, flaky.Script{Then: flaky.Action{Chunks: 2, ChunkEvery: 1500 * time.Millisecond}})
			resp, err := oneShotClient().Get(url + path)
			if err != nil {
				t.Fatal(err)
			}
			_, readErr := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			be.WaitIdle(5 * time.Second)
			if resp.StatusCode != 200 || readErr == nil {
				t.Errorf("answer %d, body error %v: want 200 and a truncated body", resp.StatusCode, readErr)
			}
			if n := len(be.Hits(path)); n != 1 {
				t.Errorf("%d tries, want 1: a response already begun is not retried", n)
			}
			if f := findings[i][translate.FeatureBackendRequestTimeout]; f.Status == translate.Honoured || !hasCaveat(f, report.CaveatNoAnswerAfterHeaders) {
				t.Errorf("timeouts.backendRequest is %s: %v, want the NoAnswerAfterHeaders caveat (a truncated body, not 504)", f.Status, f.Caveats)
			}
		})
	}
}
