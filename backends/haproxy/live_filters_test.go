package haproxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/translate"
)

// TestLiveFilters proves every honoured filter claim of filterRules on the
// real HAProxy: the headers, path and Host the backend receives, the
// response headers the client gets (also on HAProxy's own 503), and each
// redirect's status and Location.
func TestLiveFilters(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	be := flaky.New(t, "a")
	rules := filterRules()
	rules[0].Filters.ResponseHeaders.Remove = []string{flaky.EndpointHeader}
	refused := rule(len(rules), nil, translate.Timeouts{})
	refused.Name = "default_web_r" + itoa(refused.Index)
	refused.Filters.ResponseHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Own", Value: "own answer"}}}
	rules = append(rules, refused)
	m := liveModel(t, be.Addr(), rules...)
	dead, err := flaky.RefusedAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(dead)
	var p int
	fmt.Sscan(port, &p)
	refused.Backends[0].Endpoints[0] = ep(host, p)
	url := startLive(t, m, translate.Options{Version: checkedVersion})
	listenerPort := m.Listeners[0].Port
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(path string, hdr map[string][]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range hdr {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		req.Host = "example.test"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	lastHit := func(path string) flaky.Hit {
		t.Helper()
		be.WaitIdle(5 * time.Second)
		hs := be.Hits(path)
		if len(hs) == 0 {
			t.Fatalf("the backend got no request for %s", path)
		}
		return hs[len(hs)-1]
	}

	t.Run("header modifiers", func(t *testing.T) {
		resp := do("/r00/h", map[string][]string{"X-Gone": {"1"}, "X-Set": {"old", "older"}, "X-Add": {"first"}, "X-If": {"x"}})
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		h := lastHit("/r00/h").Header
		for name, want := range map[string][]string{
			"X-Gone": nil, "X-Set": {"set value", "more"}, "X-If": {"if"}, "X-Add": {"first", "a,b <c> [d]|^e"},
		} {
			if got := h.Values(name); !slices.Equal(got, want) {
				t.Errorf("backend got %s %q, want %q", name, got, want)
			}
		}
		for name, want := range map[string][]string{
			"X-Resp": {"r1"}, "X-Resp-Add": {"r2"}, flaky.EndpointHeader: nil,
		} {
			if got := resp.Header.Values(name); !slices.Equal(got, want) {
				t.Errorf("client got %s %q, want %q", name, got, want)
			}
		}
		own := do(fmt.Sprintf("/r%02d/x", refused.Index), nil)
		if own.StatusCode != 503 || own.Header.Get("X-Own") != "own answer" {
			t.Errorf("HAProxy's own answer: %d with X-Own %q, want 503 with the header", own.StatusCode, own.Header.Get("X-Own"))
		}
	})

	t.Run("rewrite", func(t *testing.T) {
		tests := []struct{ path, wantPath, wantQuery, wantHost string }{
			{"/r01/a/b?q=1", "/new/a/b", "q=1", "rewritten.example"},
			{"/r01", "/new", "", "rewritten.example"},
			{"/r01/", "/new/", "", "rewritten.example"},
			{"/r02/x/y?z", "/x/y", "z", "example.test"},
			{"/r02", "/", "", "example.test"},
			{"/r02/", "/", "", "example.test"},
			{"/r03/x?z=1", "/full(1)", "z=1", "example.test"},
			{"/r08/x", "/r08/x", "", "rewritten.example"},
		}
		for _, tt := range tests {
			before := len(be.AllHits())
			if resp := do(tt.path, nil); resp.StatusCode != 200 {
				t.Errorf("%s: status %d", tt.path, resp.StatusCode)
				continue
			}
			be.WaitIdle(5 * time.Second)
			all := be.AllHits()
			if len(all) != before+1 {
				t.Errorf("%s: %d backend hits, want 1", tt.path, len(all)-before)
				continue
			}
			h := all[len(all)-1]
			if h.Path != tt.wantPath || h.RawQuery != tt.wantQuery || h.Host != tt.wantHost {
				t.Errorf("%s: backend got path %q query %q host %q, want %q %q %q", tt.path, h.Path, h.RawQuery, h.Host, tt.wantPath, tt.wantQuery, tt.wantHost)
			}
		}
	})

	t.Run("redirect", func(t *testing.T) {
		tests := []struct {
			path     string
			code     int
			location string
		}{
			{"/r04/p?q=1", 302, fmt.Sprintf("http://example.test:%d/r04/p?q=1", listenerPort)},
			{"/r05/x?y", 301, "https://example.org/to/x?y"},
			{"/r05", 301, "https://example.org/to"},
			{"/r06/a?b=c", 308, "http://example.test:8443/full?b=c"},
			{"/r07/z", 307, "http://example.test/r07/z"},
		}
		before := len(be.AllHits())
		for _, tt := range tests {
			resp := do(tt.path, nil)
			if got := resp.Header.Get("Location"); resp.StatusCode != tt.code || got != tt.location {
				t.Errorf("%s: %d Location %q, want %d %q", tt.path, resp.StatusCode, got, tt.code, tt.location)
			}
			if strings.HasPrefix(tt.path, "/r05") && resp.Header.Get("X-Redirected") != "yes" {
				t.Errorf("%s: the redirect lacks X-Redirected", tt.path)
			}
		}
		// A Host with a port: the redirect keeps the host, not its port.
		req, _ := http.NewRequest("GET", url+"/r07/p", nil)
		req.Host = "example.test:1234"
		if resp, err := c.Do(req); err != nil {
			t.Error(err)
		} else {
			resp.Body.Close()
			if got := resp.Header.Get("Location"); got != "http://example.test/r07/p" {
				t.Errorf("Host with port: Location %q", got)
			}
		}
		if n := len(be.AllHits()) - before; n != 0 {
			t.Errorf("redirects reached the backend %d times", n)
		}
	})
}
