package traefik

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// filterModel is one listener with a rule per filter case, every rule on
// its own path prefix, proxied to main (or mirrored to mirror).
func filterModel(main, mirror *flaky.Server) (*translate.Model, map[string]*translate.Rule) {
	be := func(s *flaky.Server) *translate.BackendRef {
		return &translate.BackendRef{Name: "default_" + s.Name() + "_80", Service: "default/" + s.Name(), Port: 80, Weight: 1,
			Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: s.Port()}}}
	}
	rules := map[string]*translate.Rule{}
	mk := func(path string, fl translate.Filters, methods []string, forwards bool) *translate.Rule {
		name := strings.Trim(strings.ReplaceAll(path, "/", ""), "-")
		r := &translate.Rule{Name: "default_" + name + "_r0", Route: "default/" + name, Filters: fl, Methods: methods}
		if forwards {
			r.Backends = []*translate.BackendRef{be(main)}
		} else {
			r.NoBackendRefs = true
		}
		rules[path] = r
		return r
	}
	mk("/hdr", translate.Filters{
		RequestHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Set", Value: "set value"}},
			Remove: []string{"X-Del"}},
		ResponseHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Resp", Value: "r <v>"}},
			Remove: []string{flaky.EndpointHeader}},
	}, nil, true)
	// Traefik omits X-Forwarded-For only for a key spelt exactly so.
	mk("/xff", translate.Filters{RequestHeaders: &translate.HeaderModifier{Remove: []string{"x-forwarded-for", "x-real-ip"}}}, nil, true)
	mk("/add", translate.Filters{RequestHeaders: &translate.HeaderModifier{Add: []translate.Header{{Name: "X-Add", Value: "added"}}}}, nil, true)
	mk("/rw", translate.Filters{Rewrite: &translate.Rewrite{Hostname: "rewritten.example",
		Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/new/"}}}, nil, true)
	mk("/rwhost", translate.Filters{Rewrite: &translate.Rewrite{Hostname: "host-only.example"}}, nil, true)
	mk("/rwfull", translate.Filters{Rewrite: &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/full"}}}, nil, true)
	mk("/rwroot", translate.Filters{Rewrite: &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/"}}}, nil, true)
	mk("/redir", translate.Filters{Redirect: &translate.Redirect{Scheme: "https", Hostname: "redirect.example", StatusCode: 301,
		Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/to"}},
		ResponseHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "X-On-Redirect", Value: "yes"}}}}, []string{"GET"}, false)
	mk("/redirport", translate.Filters{Redirect: &translate.Redirect{Port: 9090, StatusCode: 302}}, nil, false)
	mk("/redirfull", translate.Filters{Redirect: &translate.Redirect{StatusCode: 308, Hostname: "same.example",
		Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/redirfull"}}}, []string{"POST"}, false)
	half := mk("/mirror", translate.Filters{Mirrors: []*translate.Mirror{{Backend: be(mirror), Numerator: 1, Denominator: 2}}}, nil, true)
	_ = half
	m := &translate.Model{Listeners: []*translate.Listener{{Name: "web", Address: "127.0.0.1", Port: 8080,
		VirtualHosts: []*translate.VirtualHost{{Name: "any"}}}}}
	for _, p := range sortedKeys(rules) {
		r := rules[p]
		m.Rules = append(m.Rules, r)
		match := translate.Match{PathType: translate.PathPrefix, Path: p}
		if len(r.Methods) == 1 {
			match.Method = r.Methods[0]
		}
		m.Listeners[0].VirtualHosts[0].Routes = append(m.Listeners[0].VirtualHosts[0].Routes, &translate.RouteMatch{Rule: r, Match: match})
	}
	return m, rules
}

// TestTraefik36FiltersLive checks with the real Traefik v3.6.12 that every
// filter claim holds: what the backend receives, what the client gets,
// redirect codes and Locations, and the mirrored requests. Every honoured
// finding of the model is listed in want and proven below.
func TestTraefik36FiltersLive(t *testing.T) {
	proxytest.Require(t, "traefik")
	main, mirror := flaky.New(t, "main"), flaky.New(t, "mirror")
	m, rules := filterModel(main, mirror)
	out := generate(t, m, translate.Options{Version: v36})
	want := map[string]map[translate.Feature]translate.Status{
		"/hdr":       {translate.FeatureRequestHeaderModifier: H, translate.FeatureResponseHeaderModifier: H},
		"/add":       {translate.FeatureRequestHeaderModifier: A},
		"/xff":       {translate.FeatureRequestHeaderModifier: H},
		"/rw":        {translate.FeatureURLRewrite: A},
		"/rwhost":    {translate.FeatureURLRewrite: H},
		"/rwfull":    {translate.FeatureURLRewrite: A},
		"/rwroot":    {translate.FeatureURLRewrite: A},
		"/redir":     {translate.FeatureRequestRedirect: H, translate.FeatureResponseHeaderModifier: H},
		"/redirport": {translate.FeatureRequestRedirect: A},
		"/redirfull": {translate.FeatureRequestRedirect: H},
		"/mirror":    {translate.FeatureRequestMirror: H},
	}
	for path, fs := range want {
		r := rules[path]
		for f, st := range fs {
			found := false
			for _, fd := range out.Findings {
				if fd.Route == r.Route && fd.Feature == f {
					found = true
					if fd.Status != st {
						t.Errorf("%s %s: %s (%s), want %s", path, f, fd.Status, report.WithParams(fd.Reason, fd.Params), st)
					}
				}
			}
			if !found {
				t.Errorf("%s: no %s finding", path, f)
			}
		}
	}
	static, dyn := files(t, out)
	cfg := startFiles(t, static, dyn)
	addr := cfg.EntryPoints["web"]
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	do := func(method, target, host string, hdr map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+target, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		req.Header.Set(flaky.RequestHeader, method+" "+target)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	lastHit := func(id string) flaky.Hit {
		t.Helper()
		for _, h := range main.AllHits() {
			if h.Request == id {
				return h
			}
		}
		t.Fatalf("%s never reached the backend", id)
		return flaky.Hit{}
	}

	// RequestHeaderModifier and ResponseHeaderModifier (honoured).
	resp := do("GET", "/hdr/x", "", map[string]string{"X-Set": "old", "X-Del": "gone"})
	h := lastHit("GET /hdr/x")
	if got := h.Header.Values("X-Set"); len(got) != 1 || got[0] != "set value" {
		t.Errorf("/hdr: backend got X-Set %q, want [set value]", got)
	}
	if got := h.Header.Values("X-Del"); len(got) != 0 {
		t.Errorf("/hdr: backend got X-Del %q, want none", got)
	}
	if got := resp.Header.Values("X-Resp"); len(got) != 1 || got[0] != "r <v>" {
		t.Errorf("/hdr: client got X-Resp %q, want [r <v>]", got)
	}
	if got := resp.Header.Values(flaky.EndpointHeader); len(got) != 0 {
		t.Errorf("/hdr: client got %s %q, want it removed", flaky.EndpointHeader, got)
	}
	// remove of x-forwarded-for in lower case: Go's reverse proxy would
	// write the client's address again.
	do("GET", "/xff", "", map[string]string{"X-Forwarded-For": "192.0.2.1", "X-Real-Ip": "192.0.2.2"})
	for _, n := range []string{"X-Forwarded-For", "X-Real-Ip"} {
		if got := lastHit("GET /xff").Header.Values(n); len(got) != 0 {
			t.Errorf("/xff: backend got %s %q, want it removed", n, got)
		}
	}
	// add is approximated: the value replaces the request's own.
	do("GET", "/add", "", map[string]string{"X-Add": "mine"})
	if got := lastHit("GET /add").Header.Values("X-Add"); len(got) != 1 || got[0] != "added" {
		t.Errorf("/add: backend got X-Add %q, want [added] (replaced, as the finding says)", got)
	}

	// URLRewrite.
	for _, tc := range []struct{ target, path, query, host string }{
		{"/rw/a/b?q=1", "/new/a/b", "q=1", "rewritten.example"},
		{"/rw", "/new", "", "rewritten.example"},
		{"/rw/", "/new/", "", "rewritten.example"},
		{"/rwhost/p?z=2", "/rwhost/p", "z=2", "host-only.example"},
		{"/rwfull/x?k=v", "/full", "k=v", "client.example"},
		{"/rwroot/a", "/a", "", "client.example"},
		{"/rwroot", "/", "", "client.example"},
		{"/rwroot/", "/", "", "client.example"},
	} {
		resp := do("GET", tc.target, "client.example", nil)
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", tc.target, resp.StatusCode)
			continue
		}
		h := lastHit("GET " + tc.target)
		if h.Path != tc.path || h.RawQuery != tc.query || h.Host != tc.host {
			t.Errorf("%s: backend got path %q query %q host %q, want %q %q %q", tc.target, h.Path, h.RawQuery, h.Host,
				tc.path, tc.query, tc.host)
		}
		if got := h.Header.Values("X-Replaced-Path"); len(got) != 0 {
			t.Errorf("%s: backend got X-Replaced-Path %q", tc.target, got)
		}
	}

	// RequestRedirect.
	for _, tc := range []struct {
		method, target, host string
		status               int
		location             string
	}{
		{"GET", "/redir/x?y=1", "a.example:8080", 301, "https://redirect.example/to/x?y=1"},
		{"GET", "/redir", "a.example", 301, "https://redirect.example/to"},
		{"GET", "/redir/", "a.example", 301, "https://redirect.example/to/"},
		// Approximated: 302 for GET, 307 for other methods.
		{"GET", "/redirport/p?q", "b.example:8080", 302, "http://b.example:9090/redirport/p?q"},
		{"HEAD", "/redirport/p", "b.example", 307, "http://b.example:9090/redirport/p"},
		// The Location is the request's own URL: still redirected.
		{"POST", "/redirfull", "same.example:8080", 308, "http://same.example:8080/redirfull"},
	} {
		resp := do(tc.method, tc.target, tc.host, nil)
		if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s %s (Host %s): %d %q, want %d %q", tc.method, tc.target, tc.host, resp.StatusCode,
				resp.Header.Get("Location"), tc.status, tc.location)
		}
		if strings.HasPrefix(tc.target, "/redir/") || tc.target == "/redir" {
			if resp.Header.Get("X-On-Redirect") != "yes" {
				t.Errorf("%s: the redirect has no X-On-Redirect header", tc.target)
			}
		}
	}
	for _, h := range main.AllHits() {
		if strings.HasPrefix(h.Path, "/redir") {
			t.Errorf("a redirected request reached the backend: %s", h)
		}
	}

	// RequestMirror: 1/2 of the requests, 50%.
	for range 6 {
		if resp := do("GET", "/mirror/m", "", nil); resp.StatusCode != 200 {
			t.Errorf("/mirror: status %d", resp.StatusCode)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(mirror.Hits("/mirror/m")) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n, m := len(main.Hits("/mirror/m")), len(mirror.Hits("/mirror/m")); n != 6 || m != 3 {
		t.Errorf("/mirror: main got %d, mirror %d; want 6 and 3", n, m)
	}
}
