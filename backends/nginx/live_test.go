//go:build unix

package nginx

import (
	"fmt"
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
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
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
	// The conf.d layout in a main file of the test's own, so that nginx
	// runs as root and as an ordinary user.
	b, err := NewWithConfig(Config{Layout: LayoutConfD})
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Generate(m, translate.Options{Version: "1.22"})
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startConfD(t, out, addr)

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

// startConfD runs nginx on the conf.d file of out, included in a small main
// nginx.conf whose temporary directories are in a directory nginx's
// workers can write, so that the test works as root and as an ordinary
// user.
func startConfD(t *testing.T, out *translate.Output, addr string) *proxytest.Proxy {
	t.Helper()
	return startConfDWith(t, proxytest.Require(t, "nginx"), out, addr)
}

// serveRoute runs manifest (svc:8080 served at backend) through
// translate.Run for nginx version, starts the nginx binary bin on its
// conf.d file and returns the result and the address nginx listens on.
func serveRoute(t *testing.T, bin, version, manifest, backend string) (*translate.Result, string) {
	t.Helper()
	port := proxytest.FreePort(t)
	m := testmodel.LoadText(t, manifest, translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: port}},
		"svc:8080="+backend)
	b, err := NewWithConfig(Config{Layout: LayoutConfD})
	if err != nil {
		t.Fatal(err)
	}
	res, err := translate.Run(m, []translate.Target{{Backend: b, Version: version}}, false)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startConfDWith(t, bin, &translate.Output{Files: res.Files}, addr)
	return res, addr
}

// startConfDWith is startConfD with the nginx binary bin.
func startConfDWith(t *testing.T, bin string, out *translate.Output, addr string) *proxytest.Proxy {
	t.Helper()
	dir := sharedDir(t)
	writeFile(t, filepath.Join(dir, "conf.d", "gwretry.conf"), out.Files[0].Data)
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "nginx.conf")
	writeFile(t, main, []byte("events {}\nhttp {\n    access_log off;\n"+
		"    client_body_temp_path "+tmp+"/body;\n    proxy_temp_path "+tmp+"/proxy;\n    fastcgi_temp_path "+tmp+"/fastcgi;\n"+
		"    uwsgi_temp_path "+tmp+"/uwsgi;\n    scgi_temp_path "+tmp+"/scgi;\n"+
		"    include "+filepath.Join(dir, "conf.d")+"/*.conf;\n}\n"))
	p, err := dataplane.StartNginx(bin, main, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("nginx output:\n%s", p.Output())
		}
	})
	return p
}

// TestLiveNonIdempotentBodies proves what the report claims with
// --retry-non-idempotent: nginx reads the whole request body before the
// first try and sends it again on every retry, so POST and PATCH requests
// with 4 KB (in memory) and 100 KB (in a temporary file) bodies are retried
// on 502 and 503 like GET; and without the opt-in they are not. A dead rule
// answers 500 without contacting anything.
func TestLiveNonIdempotentBodies(t *testing.T) {
	proxytest.Require(t, "nginx")
	backend := flaky.New(t, "a")
	host, portText, _ := net.SplitHostPort(backend.Addr())
	bport, _ := strconv.Atoi(portText)
	for _, optIn := range []bool{true, false} {
		t.Run(fmt.Sprintf("opt-in %v", optIn), func(t *testing.T) {
			prefix := "/no"
			if optIn {
				prefix = "/yes"
			}
			r := &translate.Rule{Name: "default_bodies_r0", Route: "default/bodies", Index: 0,
				Retry:    &translate.Retry{Attempts: 2, Codes: []int{502, 503}},
				Backends: []*translate.BackendRef{{Name: "a", Weight: 1, Endpoints: []translate.Endpoint{{Host: host, Port: bport}}}}}
			dead := &translate.Rule{Name: "default_bodies_r1", Route: "default/bodies", Index: 1,
				Retry: &translate.Retry{Attempts: 1}, NoBackendRefs: true}
			port := proxytest.FreePort(t)
			m := &translate.Model{
				Listeners: []*translate.Listener{{Name: "http", Address: "127.0.0.1", Port: port, VirtualHosts: []*translate.VirtualHost{{
					Name: "any", Routes: []*translate.RouteMatch{
						{Match: translate.Match{PathType: translate.PathPrefix, Path: "/dead"}, Rule: dead},
						{Match: translate.Match{PathType: translate.PathPrefix, Path: "/"}, Rule: r},
					},
				}}}},
				Rules: []*translate.Rule{r, dead}, RouteCount: 1, RuleCount: 2,
			}
			b, err := NewWithConfig(Config{Layout: LayoutConfD})
			if err != nil {
				t.Fatal(err)
			}
			res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.22"}}, optIn)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Report.Findings {
				want := translate.Approximated
				switch {
				case f.Rule == 1 && f.Feature == translate.FeatureBackendRefs:
					want = translate.Honoured
				case f.Rule == 1:
					want = translate.Unsupported
				case optIn && f.Feature == translate.FeatureRetryCodes:
					// With the opt-in only nginx 1.22's 1xx caveat is left.
					if len(f.Caveats) != 1 || f.Caveats[0].Reason != report.CaveatInterimResponseIsFinal {
						t.Errorf("rule %d %s: caveats %v, want only InterimResponseIsFinal", f.Rule, f.Feature, f.Caveats)
					}
				case optIn && f.Feature == translate.FeatureRetryConnectionErrors:
					// With the opt-in only nginx 1.22's framing caveat is left.
					if len(f.Caveats) != 1 || f.Caveats[0].Reason != report.CaveatResponseFramingNotChecked {
						t.Errorf("rule %d %s: caveats %v, want only ResponseFramingNotChecked", f.Rule, f.Feature, f.Caveats)
					}
				case optIn:
					want = translate.Honoured
				}
				if f.Status != want {
					t.Errorf("rule %d %s: %s, want %s (%+v)", f.Rule, f.Feature, f.Status, want, f.Decision)
				}
			}
			out, err := b.Generate(m, translate.Options{Version: "1.22", RetryNonIdempotent: optIn})
			if err != nil {
				t.Fatal(err)
			}
			addr := "127.0.0.1:" + strconv.Itoa(port)
			startConfD(t, out, addr)
			client := &http.Client{Timeout: 20 * time.Second}
			for _, method := range []string{"POST", "PATCH", "PUT"} {
				for _, size := range []int{4 << 10, 100 << 10} {
					for _, code := range []int{502, 503} {
						path := fmt.Sprintf("%s/%s/%d/%d", prefix, strings.ToLower(method), size, code)
						backend.Handle(path, flaky.FailFirst(2, code))
						body := strings.Repeat("x", size)
						req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
						if err != nil {
							t.Fatal(err)
						}
						resp, err := client.Do(req)
						if err != nil {
							t.Fatalf("%s %s: %v", method, path, err)
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						backend.WaitIdle(5 * time.Second)
						hits := backend.Hits(path)
						wantHits, wantStatus := 3, 200
						if !optIn && method != "PUT" {
							wantHits, wantStatus = 1, code
						}
						if len(hits) != wantHits || resp.StatusCode != wantStatus {
							t.Errorf("%s %s: %d, %d tries, want %d, %d tries: %v", method, path, resp.StatusCode, len(hits), wantStatus, wantHits, hits)
						}
						for _, h := range hits {
							if h.BodyBytes != int64(size) {
								t.Errorf("%s %s: a try carried %d body bytes, want %d", method, path, h.BodyBytes, size)
							}
						}
					}
				}
			}
			before := len(backend.AllHits())
			resp, err := client.Get("http://" + addr + "/dead/x")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 500 || len(backend.AllHits()) != before {
				t.Errorf("dead rule: %d with %d backend hits, want 500 and none", resp.StatusCode, len(backend.AllHits())-before)
			}
		})
	}
}
