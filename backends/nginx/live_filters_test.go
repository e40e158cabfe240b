//go:build unix

package nginx

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestLiveFilters runs the filters of filterModel in the real nginx and
// checks every honoured claim: the headers the backend receives, the
// response headers the client gets, each redirect's status and Location,
// the rewritten path and Host, and the mirrored requests (whose answers are
// ignored), including a 50% share.
func TestLiveFilters(t *testing.T) {
	proxytest.Require(t, "nginx")
	main := flaky.New(t, "main")
	mirror := flaky.New(t, "mirror")
	port := proxytest.FreePort(t)
	m := filterModel(port, translate.Endpoint{Host: "127.0.0.1", Port: main.Port()}, translate.Endpoint{Host: "127.0.0.1", Port: mirror.Port()})
	b, err := NewWithConfig(Config{Layout: LayoutConfD})
	if err != nil {
		t.Fatal(err)
	}
	res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.22"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	// What this test proves, per rule prefix and feature.
	honoured := map[string]bool{}
	prefixes := filterRules()
	for _, f := range res.Report.Findings {
		want := translate.Honoured
		if f.Feature == translate.FeatureRequestHeaderModifier && prefixes[f.Rule].prefix == "/hdr" {
			want = translate.Approximated // nginx 1.22 keeps one line of a repeated header for add
		}
		if prefixes[f.Rule].prefix == "/half" && f.Feature == translate.FeatureRequestMirror {
			want = translate.Honoured
		}
		if slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatPathRebuiltNormalized }) {
			// A prefix redirect or rewrite: checked by the judge all the
			// same, and proven below (and by TestLiveHostilePaths).
			want = translate.Approximated
		}
		if f.Status != want {
			t.Errorf("%s %s: %s, want %s (%+v)", prefixes[f.Rule].prefix, f.Feature, f.Status, want, f.Decision)
		}
		if translate.Checked(f) {
			honoured[prefixes[f.Rule].prefix+" "+string(f.Feature)] = true
		}
	}
	out, err := b.Generate(m, translate.Options{Version: "1.22"})
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startConfD(t, out, addr)
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(path string, header map[string][]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range header {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	lastHit := func(s *flaky.Server, path string) flaky.Hit {
		t.Helper()
		s.WaitIdle(5 * time.Second)
		hits := s.Hits(path)
		if len(hits) == 0 {
			t.Fatalf("%s got no request for %s; all: %v", s.Name(), path, s.AllHits())
		}
		return hits[len(hits)-1]
	}

	t.Run("request headers", func(t *testing.T) {
		if !honoured["/hdr "+string(translate.FeatureResponseHeaderModifier)] {
			t.Fatal("response headers not claimed honoured")
		}
		resp := do("/hdr/a", map[string][]string{"X-Set": {"client"}, "X-Remove": {"r"}, "X-Add": {"c1"}, "X-Other": {"o"}})
		h := lastHit(main, "/hdr/a")
		for name, want := range map[string][]string{"X-Set": {"s v"}, "X-Remove": nil, "X-Add": {"c1,added"}, "X-Other": {"o"}} {
			if got := h.Header.Values(name); !slices.Equal(got, want) {
				t.Errorf("backend got %s %q, want %q", name, got, want)
			}
		}
		do("/hdr/b", nil)
		if got := lastHit(main, "/hdr/b").Header.Values("X-Add"); !slices.Equal(got, []string{"added"}) {
			t.Errorf("without the client's header the backend got X-Add %q, want [added]", got)
		}
		// Response: X-Flaky-Endpoint removed, X-Resp-Add added.
		if got := resp.Header.Values(flaky.EndpointHeader); len(got) != 0 {
			t.Errorf("client got %s %q, want it removed", flaky.EndpointHeader, got)
		}
		if got := resp.Header.Values("X-Resp-Add"); !slices.Equal(got, []string{"ra"}) {
			t.Errorf("client got X-Resp-Add %q", got)
		}
		// On an error answer too (add_header ... always).
		main.Handle("/hdr/fail", flaky.AlwaysFail(503))
		resp = do("/hdr/fail", nil)
		if resp.StatusCode != 503 || resp.Header.Get("X-Resp-Add") != "ra" {
			t.Errorf("503: status %d, X-Resp-Add %q", resp.StatusCode, resp.Header.Get("X-Resp-Add"))
		}
	})

	t.Run("response set and add", func(t *testing.T) {
		resp := do("/resp-set", nil)
		if got := resp.Header.Values(flaky.EndpointHeader); !slices.Equal(got, []string{"proxy"}) {
			t.Errorf("set: client got %q, want [proxy]", got)
		}
		resp = do("/resp-add", nil)
		if got := resp.Header.Values(flaky.EndpointHeader); !slices.Equal(got, []string{"main", "added"}) {
			t.Errorf("add: client got %q, want [main added]", got)
		}
	})

	t.Run("redirects", func(t *testing.T) {
		before := len(main.AllHits())
		for _, tc := range []struct {
			path   string
			host   string
			status int
			loc    string
		}{
			{"/rd-full/x?q=1", "", 302, "http://127.0.0.1:" + strconv.Itoa(port) + "/new?q=1"},
			{"/rd-full", "Shop.Example:" + strconv.Itoa(port), 302, "http://shop.example:" + strconv.Itoa(port) + "/new"},
			{"/rd-prefix/x/y?q=1", "", 307, "https://example.com:8443/p2/x/y?q=1"},
			{"/rd-prefix", "", 307, "https://example.com:8443/p2"},
			{"/rd-prefix/", "", 307, "https://example.com:8443/p2/"},
			{"/rd-prefix/a%20b", "", 307, "https://example.com:8443/p2/a%20b"},
			{"/rd-keep/a?b=c", "", 308, "http://h.example/rd-keep/a?b=c"},
			{"/rd-empty/z", "a.example", 301, "https://a.example/z"},
			{"/rd-empty", "a.example", 301, "https://a.example/"},
			{"/rd-port/p", "a.example", 303, "http://a.example:8080/rd-port/p"},
		} {
			var hdr map[string][]string
			req, _ := http.NewRequest("GET", "http://"+addr+tc.path, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			_ = hdr
			if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.loc {
				t.Errorf("%s (Host %q): %d %q, want %d %q", tc.path, tc.host, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.loc)
			}
			if strings.HasPrefix(tc.path, "/rd-prefix") && resp.Header.Get("X-Redirected") != "yes" {
				t.Errorf("%s: the redirect lacks X-Redirected: %v", tc.path, resp.Header)
			}
		}
		if n := len(main.AllHits()) - before; n != 0 {
			t.Errorf("redirects reached the backend %d times", n)
		}
	})

	t.Run("rewrites", func(t *testing.T) {
		for _, tc := range []struct {
			path, wantPath, wantQuery, wantHost string
		}{
			{"/rw-prefix/a%20b?q=1", "/inner/a b", "q=1", "rw.example"},
			{"/rw-prefix", "/inner", "", "rw.example"},
			{"/rw-prefix/", "/inner/", "", "rw.example"},
			{"/rw-full/x/y?q=1&r=2", "/full", "q=1&r=2", "127.0.0.1:" + strconv.Itoa(port)},
			{"/rw-root/x", "/x", "", "127.0.0.1:" + strconv.Itoa(port)},
			{"/rw-root", "/", "", "127.0.0.1:" + strconv.Itoa(port)},
		} {
			before := len(main.AllHits())
			resp := do(tc.path, nil)
			main.WaitIdle(5 * time.Second)
			hits := main.AllHits()
			if resp.StatusCode != 200 || len(hits) != before+1 {
				t.Errorf("%s: %d with %d backend hits", tc.path, resp.StatusCode, len(hits)-before)
				continue
			}
			h := hits[len(hits)-1]
			if h.Path != tc.wantPath || h.RawQuery != tc.wantQuery || h.Host != tc.wantHost {
				t.Errorf("%s: backend got path %q query %q host %q, want %q %q %q", tc.path, h.Path, h.RawQuery, h.Host, tc.wantPath, tc.wantQuery, tc.wantHost)
			}
		}
	})

	t.Run("mirrors", func(t *testing.T) {
		mirror.Handle("/mirror/x", flaky.AlwaysFail(500))
		resp := do("/mirror/x?q=1", map[string][]string{"X-Set": {"client"}})
		if resp.StatusCode != 200 {
			t.Errorf("mirrored request: %d, want the backend's 200 (the mirror's 500 is ignored)", resp.StatusCode)
		}
		deadline := time.Now().Add(5 * time.Second)
		for len(mirror.Hits("/mirror/x")) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		mh := lastHit(mirror, "/mirror/x")
		h := lastHit(main, "/mirror/x")
		if mh.RawQuery != "q=1" || mh.Header.Get("X-Set") != "m" || h.Header.Get("X-Set") != "m" || mh.Host != h.Host {
			t.Errorf("mirror got query %q X-Set %q host %q; backend X-Set %q host %q", mh.RawQuery, mh.Header.Get("X-Set"), mh.Host, h.Header.Get("X-Set"), h.Host)
		}
		const n = 200
		for i := range n {
			do("/half/"+strconv.Itoa(i), nil)
		}
		time.Sleep(200 * time.Millisecond)
		mirror.WaitIdle(5 * time.Second)
		got := 0
		for _, h := range mirror.AllHits() {
			if strings.HasPrefix(h.Path, "/half/") {
				got++
			}
		}
		// Binomial(200, 1/2): 60..140 is more than 5 standard deviations.
		if got < 60 || got > 140 {
			t.Errorf("a 50%% mirror got %d of %d requests", got, n)
		}
		if resp := do("/_gwretry_mirror_default_filters_r11_0", nil); resp.StatusCode != 404 {
			t.Errorf("a client request to the mirror location: %d, want 404", resp.StatusCode)
		}
	})
}
