//go:build unix

package nginx

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

// recorder is a backend that counts the requests it gets and answers with
// its name; paths containing /fail answer 502, /e501 answer 501.
type recorder struct {
	name string
	mu   sync.Mutex
	hits map[string]int // "METHOD path"
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.hits[r.Method+" "+r.URL.Path]++
	rc.mu.Unlock()
	switch {
	case strings.Contains(r.URL.Path, "/fail"):
		w.WriteHeader(http.StatusBadGateway)
	case strings.Contains(r.URL.Path, "/e501"):
		w.WriteHeader(http.StatusNotImplemented)
	}
	io.WriteString(w, rc.name)
}

func (rc *recorder) count(key string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.hits[key]
}

// TestLive runs a generated configuration in the real nginx: Gateway API
// precedence with header, query and method matches, and the retry counts
// the findings call honoured.
func TestLive(t *testing.T) {
	proxytest.Require(t, "nginx")
	recorders := map[string]*recorder{}
	rule := func(index int, rt *translate.Retry) *translate.Rule {
		name := "default_route_r" + strconv.Itoa(index)
		rc := &recorder{name: name, hits: map[string]int{}}
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		recorders[name] = rc
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
		p, _ := strconv.Atoi(port)
		return &translate.Rule{Name: name, Route: "default/route", Index: index, Retry: rt,
			Backends: []*translate.BackendRef{{Name: "b" + strconv.Itoa(index), Weight: 1,
				Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: p}}}}}
	}
	rs := []*translate.Rule{
		rule(0, nil),
		rule(1, &translate.Retry{Attempts: 2, Codes: []int{502}}),
		rule(2, nil),
		rule(3, &translate.Retry{Attempts: 2, Codes: []int{501, 502}}),
		rule(4, &translate.Retry{Attempts: 0, Codes: []int{502}}),
	}
	rm := func(m translate.Match, r *translate.Rule) *translate.RouteMatch {
		return &translate.RouteMatch{Match: m, Rule: r}
	}
	port := proxytest.FreePort(t)
	m := &translate.Model{
		Listeners: []*translate.Listener{{Name: "http", Address: "127.0.0.1", Port: port, VirtualHosts: []*translate.VirtualHost{{
			Name: "any", Routes: []*translate.RouteMatch{
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/p", Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "x-version", Value: "v1"}}}, rs[0]),
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/p", Query: []translate.ValueMatch{{Type: translate.StringRegex, Name: "q", Value: "a.*"}}}, rs[1]),
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/p", Method: "PUT"}, rs[3]),
				rm(translate.Match{PathType: translate.PathExact, Path: "/p/x"}, rs[2]),
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/retry"}, rs[1]),
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/codes"}, rs[3]),
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/zero"}, rs[4]),
				rm(translate.Match{PathType: translate.PathPrefix, Path: "/none"}, rs[2]),
			},
		}}}},
		Rules: rs,
	}
	out, err := New().Generate(m, translate.Options{Version: "1.22"})
	if err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(t.TempDir(), "nginx.conf")
	if err := os.WriteFile(confPath, out.Files[0].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proxytest.StartNginx(t, confPath, addr)

	for _, tc := range []struct {
		method, target string
		header         map[string]string
		wantStatus     int
		wantRule       string // body, "" for none
		countKey       string // recorder hits to check
		wantHits       int
	}{
		{"GET", "/p/x", map[string]string{"X-Version": "v1"}, 200, "default_route_r0", "", 0},
		{"GET", "/p/x", map[string]string{"X-Version": "V1"}, 200, "default_route_r2", "", 0},
		{"GET", "/p/x?z=1&q=abc", nil, 200, "default_route_r1", "", 0},
		{"GET", "/p/x?q=b&q=abc", nil, 200, "default_route_r2", "", 0},
		{"GET", "/p/x?Q=abc", nil, 200, "default_route_r2", "", 0},
		{"PUT", "/p/y", nil, 200, "default_route_r3", "", 0},
		{"GET", "/p/y", nil, 404, "", "", 0},
		{"GET", "/px", nil, 404, "", "", 0},
		{"GET", "/p/x/", nil, 404, "", "", 0},
		{"GET", "/retry/fail", nil, 502, "default_route_r1", "GET /retry/fail", 3},
		{"POST", "/retry/fail", nil, 502, "default_route_r1", "POST /retry/fail", 1},
		{"GET", "/codes/e501", nil, 501, "default_route_r3", "GET /codes/e501", 1},
		{"GET", "/codes/fail", nil, 502, "default_route_r3", "GET /codes/fail", 3},
		{"GET", "/zero/fail", nil, 502, "default_route_r4", "GET /zero/fail", 1},
		{"GET", "/none/fail", nil, 502, "default_route_r2", "GET /none/fail", 1},
	} {
		req, err := http.NewRequest(tc.method, "http://"+addr+tc.target, strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.target, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus || (tc.wantRule != "" && string(body) != tc.wantRule) {
			t.Errorf("%s %s %v: got %d %q, want %d %q", tc.method, tc.target, tc.header, resp.StatusCode, body, tc.wantStatus, tc.wantRule)
		}
		if tc.countKey != "" {
			if got := recorders[tc.wantRule].count(tc.countKey); got != tc.wantHits {
				t.Errorf("%s %s: backend got %d tries, want %d", tc.method, tc.target, got, tc.wantHits)
			}
		}
	}
}
