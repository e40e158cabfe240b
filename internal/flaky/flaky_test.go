package flaky

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// get sends one request and returns the status (0 on a transport error).
func get(t *testing.T, client *http.Client, method, url, id string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(RequestHeader, id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func newClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestScripts(t *testing.T) {
	tests := []struct {
		name   string
		script Script
		want   []int // status per request; 0 = transport error
	}{
		{"ok", OK(), []int{200, 200}},
		{"fail first two", FailFirst(2, 500), []int{500, 500, 200, 200}},
		{"always fail", AlwaysFail(503), []int{503, 503, 503}},
		{"close first", CloseFirst(1), []int{0, 200}},
		{"close always", CloseAlways(), []int{0, 0}},
		{"steps", Steps(Action{Status: 502}, Action{Close: true}, Action{Status: 504}), []int{502, 0, 504, 200}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t, "a")
			s.Handle("/p", tc.script)
			client := newClient(5 * time.Second)
			for i, want := range tc.want {
				got, _, err := get(t, client, http.MethodGet, "http://"+s.Addr()+"/p?x=1", "r")
				if got != want {
					t.Errorf("request %d: status %d (err %v), want %d", i, got, err, want)
				}
			}
			if !s.WaitIdle(time.Second) {
				t.Fatal("server not idle")
			}
			hits := s.Hits("/p")
			if len(hits) != len(tc.want) {
				t.Fatalf("%d hits, want %d: %v", len(hits), len(tc.want), hits)
			}
			for i, h := range hits {
				if h.N != i || h.Endpoint != "a" || h.Method != http.MethodGet || h.Request != "r" || h.End.IsZero() || h.Cancelled {
					t.Errorf("hit %d = %+v", i, h)
				}
			}
		})
	}
}

func TestUnscriptedPathAnswers200AndIsCountedApart(t *testing.T) {
	s := New(t, "a")
	s.Handle("/p", AlwaysFail(500))
	client := newClient(5 * time.Second)
	if got, body, _ := get(t, client, http.MethodPost, "http://"+s.Addr()+"/other", ""); got != 200 || !strings.Contains(body, "a: 200") {
		t.Errorf("unscripted path: %d %q", got, body)
	}
	if n := len(s.Hits("/p")); n != 0 {
		t.Errorf("/p has %d hits, want 0", n)
	}
	if h := s.Hits("/other"); len(h) != 1 || h[0].Method != http.MethodPost {
		t.Errorf("/other hits = %v", h)
	}
}

func TestDelayIsCutByClient(t *testing.T) {
	s := New(t, "a")
	s.Handle("/slow", DelayFirst(1, 2*time.Second))
	client := newClient(150 * time.Millisecond)
	if got, _, err := get(t, client, http.MethodGet, "http://"+s.Addr()+"/slow", "1"); got != 0 || err == nil {
		t.Fatalf("first request: status %d, err %v; want a client timeout", got, err)
	}
	if !s.WaitIdle(time.Second) {
		t.Fatal("the delayed hit did not notice that the client went away")
	}
	start := time.Now()
	if got, _, err := get(t, client, http.MethodGet, "http://"+s.Addr()+"/slow", "2"); got != 200 {
		t.Fatalf("second request: status %d, err %v", got, err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("second request took %v, want it fast", d)
	}
	hits := s.Hits("/slow")
	if len(hits) != 2 {
		t.Fatalf("hits = %v", hits)
	}
	if !hits[0].Cancelled || hits[0].Duration() < 100*time.Millisecond || hits[0].Duration() > time.Second {
		t.Errorf("first hit = %v, want cut after about 150ms", hits[0])
	}
	if hits[1].Cancelled {
		t.Errorf("second hit = %v, want complete", hits[1])
	}
}

func TestDelayAlways(t *testing.T) {
	s := New(t, "a")
	s.Handle("/slow", DelayAlways(80*time.Millisecond))
	client := newClient(5 * time.Second)
	for i := 0; i < 2; i++ {
		start := time.Now()
		if got, _, err := get(t, client, http.MethodGet, "http://"+s.Addr()+"/slow", ""); got != 200 {
			t.Fatalf("status %d, err %v", got, err)
		}
		if d := time.Since(start); d < 80*time.Millisecond {
			t.Errorf("request %d took %v, want at least 80ms", i, d)
		}
	}
}

func TestSlowBody(t *testing.T) {
	s := New(t, "a")
	s.Handle("/trickle", Script{Then: Action{Chunks: 3, ChunkEvery: 50 * time.Millisecond}})
	client := newClient(5 * time.Second)
	start := time.Now()
	got, body, err := get(t, client, http.MethodGet, "http://"+s.Addr()+"/trickle", "")
	if got != 200 || err != nil || body != strings.Repeat(ChunkedBody(3), 3) {
		t.Fatalf("got %d %q %v", got, body, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("slow body took %v, want at least 100ms", d)
	}

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr()+"/trickle", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	if !s.WaitIdle(time.Second) {
		t.Fatal("server not idle")
	}
	if h := s.Hits("/trickle"); len(h) != 2 || !h[1].Cancelled {
		t.Errorf("hits = %v, want the second cut", h)
	}
}

func TestMergeOrdersEndpoints(t *testing.T) {
	a, b := New(t, "a"), New(t, "b")
	client := newClient(5 * time.Second)
	for _, s := range []*Server{a, b, a} {
		if got, _, err := get(t, client, http.MethodGet, "http://"+s.Addr()+"/p", ""); got != 200 {
			t.Fatalf("status %d, err %v", got, err)
		}
	}
	var names []string
	for _, h := range Merge(a, b) {
		names = append(names, h.Endpoint)
	}
	if got := strings.Join(names, ","); got != "a,b,a" {
		t.Errorf("merged endpoints = %s, want a,b,a", got)
	}
}

func TestRefusedAddr(t *testing.T) {
	addr, err := RefusedAddr()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
		t.Fatalf("dial %s succeeded, want refused", addr)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("dial error %v is not a network error", err)
	}
}

func TestScriptString(t *testing.T) {
	tests := []struct {
		script Script
		want   string
	}{
		{OK(), "always 200"},
		{FailFirst(2, 500), "500, 500, then 200"},
		{CloseAlways(), "always close"},
		{DelayFirst(1, time.Second), "delay 1s then 200, then 200"},
		{Script{Then: Action{Chunks: 2, ChunkEvery: time.Second}}, "always 200 in 2 chunks every 1s"},
	}
	for _, tc := range tests {
		if got := tc.script.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// TestCloseIfReused: a keep-alive server answers the first request of a
// connection and closes the connection on the next one without answering.
func TestCloseIfReused(t *testing.T) {
	s, err := StartKeepAlive("a")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Handle("/p", Script{Then: Action{CloseIfReused: true}})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	post := func() error {
		resp, err := client.Post("http://"+s.Addr()+"/p", "text/plain", strings.NewReader(strings.Repeat("x", 4096)))
		if err == nil {
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		return err
	}
	if err := post(); err != nil {
		t.Fatalf("first request on a fresh connection: %v", err)
	}
	// A POST is not re-sent by Go's transport, so the close shows.
	if err := post(); err == nil {
		t.Fatal("second request on the kept-alive connection was answered, want a close")
	}
	hits := s.Hits("/p")
	if len(hits) != 2 || hits[0].Reused || !hits[1].Reused || hits[1].BodyBytes != 4096 {
		t.Errorf("hits %v, want a fresh then a reused one with a 4096-byte body", hits)
	}
}

// TestHitRecordsRequest: a hit keeps the Host, query and headers the
// backend received, so a test can check what a proxy rewrote or added.
func TestHitRecordsRequest(t *testing.T) {
	s := New(t, "a")
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/p?x=1", nil)
	req.Host = "rewritten.example.com"
	req.Header.Set("X-Added", "yes")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := s.AllHits()[0]
	if h.Host != "rewritten.example.com" || h.RawQuery != "x=1" || h.Header.Get("X-Added") != "yes" {
		t.Errorf("hit %+v", h)
	}
}
