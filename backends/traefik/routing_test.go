package traefik

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

// TestTraefik36RoutesInPrecedenceOrder sends requests through the real
// Traefik v3.6.12 and checks which rule answers: priorities keep the Model's
// order, PathPrefix is element-wise, a wildcard host is a suffix but not the
// apex, regular expressions match the whole value.
func TestTraefik36RoutesInPrecedenceOrder(t *testing.T) {
	proxytest.Require(t, "traefik")
	rules := map[string]*translate.Rule{}
	newRule := func(name string) *translate.Rule {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, name)
		}))
		t.Cleanup(srv.Close)
		host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		p, _ := strconv.Atoi(port)
		r := &translate.Rule{Name: "default_" + name + "_r0", Route: "default/" + name,
			Backends: []*translate.BackendRef{{Name: "default_" + name + "_80", Weight: 1,
				Endpoints: []translate.Endpoint{{Host: host, Port: p}}}}}
		rules[name] = r
		return r
	}
	exact, api, wild, hdr, regex, all := newRule("exact"), newRule("api"), newRule("wild"), newRule("hdr"),
		newRule("regex"), newRule("all")
	m := &translate.Model{Rules: []*translate.Rule{all, api, exact, hdr, regex, wild}, Listeners: []*translate.Listener{{
		Name: "web", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{
			{Name: "a", Hostname: "a.example.com", Routes: []*translate.RouteMatch{
				{Rule: exact, Match: translate.Match{PathType: translate.PathExact, Path: "/exact"}},
				{Rule: api, Match: translate.Match{PathType: translate.PathPrefix, Path: "/api"}},
			}},
			{Name: "wild", Hostname: "*.example.com", Routes: []*translate.RouteMatch{{Rule: wild, Match: prefixRoot}}},
			{Name: "any", Routes: []*translate.RouteMatch{
				{Rule: hdr, Match: translate.Match{PathType: translate.PathExact, Path: "/h", Headers: []translate.ValueMatch{
					{Type: translate.StringExact, Name: "x-env", Value: "canary"}}}},
				{Rule: regex, Match: translate.Match{PathType: translate.PathRegex, Path: "/v[0-9]+"}},
				{Rule: all, Match: prefixRoot},
			}},
		}}}}
	cfg := startLoaded(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		host, path, header, want string
	}{
		{"a.example.com", "/exact", "", "exact"},
		{"a.example.com", "/exact/", "", "wild"},
		{"a.example.com", "/api", "", "api"},
		{"a.example.com", "/api/", "", "api"},
		{"a.example.com", "/api/x", "", "api"},
		{"a.example.com", "/apix", "", "wild"},
		{"A.Example.com:8080", "/api", "", "api"},
		{"b.example.com", "/exact", "", "wild"},
		{"x.y.example.com", "/", "", "wild"},
		{"example.com", "/", "", "all"},
		{"notexample.com", "/", "", "all"},
		{"other.org", "/h", "canary", "hdr"},
		{"other.org", "/h", "canary2", "all"},
		{"other.org", "/h", "", "all"},
		{"other.org", "/v12", "", "regex"},
		{"other.org", "/v12/x", "", "all"},
		{"other.org", "/xv1", "", "all"},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+cfg.EntryPoints["web"]+tc.path, nil)
		req.Host = tc.host
		if tc.header != "" {
			req.Header.Set("X-Env", tc.header)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s%s: %v", tc.host, tc.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tc.want {
			t.Errorf("%s%s (x-env %q): answered by %q (status %d), want %q", tc.host, tc.path, tc.header, body, resp.StatusCode, tc.want)
		}
	}
}

// TestTraefik36RetriesRefusedConnections checks, with the real Traefik
// v3.6.12, that a rule with a retry stanza survives a refusing endpoint (the
// retry re-enters the load balancer) while a rule without one does not.
func TestTraefik36RetriesRefusedConnections(t *testing.T) {
	proxytest.Require(t, "traefik")
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(live.Close)
	_, livePort, _ := net.SplitHostPort(live.Listener.Addr().String())
	lp, _ := strconv.Atoi(livePort)
	dead := proxytest.FreePort(t) // nothing listens: connections are refused
	endpoints := []translate.Endpoint{{Host: "127.0.0.1", Port: dead}, {Host: "127.0.0.1", Port: lp}}
	mk := func(name string, rt *translate.Retry) *translate.Rule {
		return &translate.Rule{Name: "default_" + name + "_r0", Route: "default/" + name, Retry: rt,
			Backends: []*translate.BackendRef{{Name: "default_" + name + "_80", Weight: 1, Endpoints: endpoints}}}
	}
	withRetry, without := mk("retry", &translate.Retry{Attempts: 1}), mk("noretry", nil)
	m := &translate.Model{Rules: []*translate.Rule{without, withRetry}, Listeners: []*translate.Listener{{
		Name: "web", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{{Name: "any", Routes: []*translate.RouteMatch{
			{Rule: withRetry, Match: translate.Match{PathType: translate.PathPrefix, Path: "/retry"}},
			{Rule: without, Match: prefixRoot},
		}}}}}}
	cfg := startLoaded(t, m)
	client := &http.Client{Timeout: 5 * time.Second}
	count := func(path string) (ok, bad int) {
		for range 10 {
			resp, err := client.Get("http://" + cfg.EntryPoints["web"] + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok++
			} else {
				bad++
			}
		}
		return ok, bad
	}
	if ok, bad := count("/retry"); bad != 0 {
		t.Errorf("with retry: %d ok, %d failed; want every request retried onto the live endpoint", ok, bad)
	}
	if ok, bad := count("/plain"); bad == 0 {
		t.Errorf("without retry: %d ok, none failed; want the refusing endpoint's 502 to reach the client", ok)
	}
}

// startLoaded generates m for Traefik 3.6, starts the real Traefik on it
// and waits until it has loaded the dynamic configuration; Traefik is
// stopped when the test ends.
func startLoaded(t *testing.T, m *translate.Model) *proxytest.TraefikConfig {
	t.Helper()
	static, dyn := files(t, generate(t, m, translate.Options{Version: v36}))
	cfg := proxytest.WriteTraefikConfig(t, static, dyn, nil)
	p := proxytest.StartTraefik(t, cfg.StaticPath, cfg.API)
	t.Cleanup(p.Stop)
	if err := cfg.WaitLoaded(p, 10*time.Second); err != nil {
		t.Fatalf("Traefik did not load: %v\n%s", err, p.Output())
	}
	return cfg
}
