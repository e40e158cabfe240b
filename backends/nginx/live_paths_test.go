//go:build unix

package nginx

import (
	"bufio"
	"fmt"
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
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// uriRecorder is a backend that records the request target of every
// request as it arrives (the raw path and query, which net/http's decoded
// URL.Path hides) and answers 503 to the first request of each target that
// contains "retry", 200 otherwise. Two of them share one log, so that a
// retry on the other endpoint is seen in order.
type uriRecorder struct {
	mu      sync.Mutex
	targets []string
	seen    map[string]int
}

func (rc *uriRecorder) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.targets = append(rc.targets, r.RequestURI)
		n := rc.seen[r.RequestURI]
		rc.seen[r.RequestURI] = n + 1
		rc.mu.Unlock()
		if strings.Contains(r.RequestURI, "retry") && n == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
}

// since returns the targets received after the first n.
func (rc *uriRecorder) since(n int) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.targets[n:])
}

func (rc *uriRecorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.targets)
}

// rawGet sends GET target (written as is on the request line: no client
// library cleans or re-encodes it) with Host host on a fresh connection
// and returns the response, whose body has been read.
func rawGet(t *testing.T, addr, target, host string) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	var body strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&body)
	resp.Body.Close()
	return resp
}

// hostilePathModel has a redirect rule on /redir (ReplacePrefixMatch /, to
// http://example.test:8080), a rule on /rw that rewrites the prefix to
// /new and retries a 503 once on its other endpoint, a redirect on /rn and
// /rn/deep (to /to) and a rewrite on /nest, /nest/deep and /enc%41 (to
// /in): the longest prefix the normalised path begins with is replaced.
func hostilePathModel(port int, backends ...translate.Endpoint) *translate.Model {
	pre := func(v string) *translate.PathModifier {
		return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: v}
	}
	redirect := &translate.Rule{Name: "default_paths_r0", Route: "default/paths", Index: 0, NoBackendRefs: true,
		Filters: translate.Filters{Redirect: &translate.Redirect{Hostname: "example.test", Port: 8080, Path: pre("/"), StatusCode: 302}}}
	rewrite := &translate.Rule{Name: "default_paths_r1", Route: "default/paths", Index: 1,
		Filters: translate.Filters{Rewrite: &translate.Rewrite{Path: pre("/new")}},
		Retry:   &translate.Retry{Attempts: 1, Codes: []int{503}},
		Backends: []*translate.BackendRef{{Name: "default_main_80", Service: "default/main", Port: 80, Weight: 1,
			Endpoints: backends}}}
	nestedRedirect := &translate.Rule{Name: "default_paths_r2", Route: "default/paths", Index: 2, NoBackendRefs: true,
		Filters: translate.Filters{Redirect: &translate.Redirect{Hostname: "example.test", Port: 8080, Path: pre("/to"), StatusCode: 307}}}
	nestedRewrite := &translate.Rule{Name: "default_paths_r3", Route: "default/paths", Index: 3,
		Filters: translate.Filters{Rewrite: &translate.Rewrite{Path: pre("/in")}},
		Backends: []*translate.BackendRef{{Name: "default_main_80", Service: "default/main", Port: 80, Weight: 1,
			Endpoints: backends}}}
	route := func(path string, r *translate.Rule) *translate.RouteMatch {
		return &translate.RouteMatch{Match: translate.Match{PathType: translate.PathPrefix, Path: path}, Rule: r}
	}
	vh := &translate.VirtualHost{Name: "any", Routes: []*translate.RouteMatch{
		route("/redir", redirect), route("/rw", rewrite),
		route("/rn/deep", nestedRedirect), route("/rn", nestedRedirect),
		route("/nest/deep", nestedRewrite), route("/nest", nestedRewrite), route("/enc%41", nestedRewrite),
	}}
	return &translate.Model{
		Listeners:  []*translate.Listener{{Name: "http", Address: "127.0.0.1", Port: port, VirtualHosts: []*translate.VirtualHost{vh}}},
		Rules:      []*translate.Rule{redirect, rewrite, nestedRedirect, nestedRewrite},
		RouteCount: 1, RuleCount: 4,
	}
}

// TestLiveHostilePaths proves, on every installed nginx, what a
// ReplacePrefixMatch redirect and rewrite do with paths nginx normalises
// before it matches them (issue 19). A path that begins with the prefix as
// written and has no dot segment keeps the rest of its path and its query
// exactly as sent (/rw/a%2Fb reaches the backend as /new/a%2Fb, not
// /new/a/b; /rw/x//y keeps its two slashes), on a retry too; any other
// (//redir/x, /%72edir/x, /a/../redir/x) is rebuilt from the normalised
// path, its prefix replaced and the rest and the query kept, escaped again
// (a %0D%0A stays escaped in the Location), which the findings record
// (PathRebuiltNormalized). nginx used to build the redirect from the raw
// path alone, so that such a path lost all but the new prefix
// (Location: http://example.test:8080/), and the rewrite from the
// normalised one alone.
func TestLiveHostilePaths(t *testing.T) {
	installedNginx(t, func(t *testing.T, bin string, v version) {
		rec := &uriRecorder{seen: map[string]int{}}
		var eps []translate.Endpoint
		for range 2 {
			srv := &http.Server{Handler: rec.handler()}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			eps = append(eps, translate.Endpoint{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port})
		}
		port := proxytest.FreePort(t)
		m := hostilePathModel(port, eps...)
		b, err := NewWithConfig(Config{Layout: LayoutConfD})
		if err != nil {
			t.Fatal(err)
		}
		res, err := translate.Run(m, []translate.Target{{Backend: b, Version: v.Name}}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Report.Findings {
			if f.Feature != translate.FeatureRequestRedirect && f.Feature != translate.FeatureURLRewrite {
				continue
			}
			want := []report.Caveat{report.NewCaveat(report.CaveatPathRebuiltNormalized)}
			if f.Status != translate.Approximated || !slices.EqualFunc(f.Caveats, want, func(a, b report.Caveat) bool { return a.Reason == b.Reason }) {
				t.Errorf("rule %d %s: %s with %+v, want approximated by %s alone", f.Rule, f.Feature, f.Status, f.Caveats, report.CaveatPathRebuiltNormalized)
			}
			if !translate.Checked(f) {
				t.Errorf("rule %d %s: not checked against the judge", f.Rule, f.Feature)
			}
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		startConfDWith(t, bin, &translate.Output{Files: res.Files}, addr)

		t.Run("redirect", func(t *testing.T) {
			const base = "http://example.test:8080"
			before := rec.count()
			for _, tc := range []struct{ target, loc string }{
				{"/redir/x?q=1", "/x?q=1"},
				{"/redir", "/"},
				{"/redir?q=1", "/?q=1"},
				// As sent: the rest of the path is not decoded or merged.
				{"/redir/a%2Fb?q=1", "/a%2Fb?q=1"},
				{"/redir/x//y?q=1", "/x//y?q=1"},
				{"/redir/a%3Bb", "/a%3Bb"},
				// Normalised: the prefix is not as written, or dot segments.
				{"//redir/x?q=1", "/x?q=1"},
				{"/%72edir/x?q=1", "/x?q=1"},
				{"/a/../redir/x?q=1", "/x?q=1"},
				{"/redir/y/../x?q=1", "/x?q=1"},
				{"/redir/%2e%2e/redir/x?q=1", "/x?q=1"},
				// Escaped again: no header is injected, no space sent bare.
				{"//redir/a%20b%0D%0AX-Injected:%201?q=1", "/a%20b%0D%0AX-Injected:%201?q=1"},
				// Nested prefixes: the longest the normalised path begins
				// with is replaced, as sent only where the path as sent
				// begins with that same prefix.
				{"/rn/deep/x?q=1", "/to/x?q=1"},
				{"/rn/x%2Fy?q=1", "/to/x%2Fy?q=1"},
				{"/rn/%64eep/x?q=1", "/to/x?q=1"},
				{"//rn/deep/a%2Fb", "/to/a/b"}, // decoded: a %2F is a slash in the normalised path
			} {
				resp := rawGet(t, addr, tc.target, "example.test")
				status := 302
				if strings.HasPrefix(tc.loc, "/to") {
					status = 307
				}
				if resp.StatusCode != status || resp.Header.Get("Location") != base+tc.loc {
					t.Errorf("%s: %d Location %q, want %d %q", tc.target, resp.StatusCode, resp.Header.Get("Location"), status, base+tc.loc)
				}
				if got := resp.Header.Get("X-Injected"); got != "" {
					t.Errorf("%s: a header was injected: X-Injected %q", tc.target, got)
				}
			}
			if got := rec.since(before); len(got) != 0 {
				t.Errorf("redirects reached a backend: %q", got)
			}
		})

		t.Run("rewrite", func(t *testing.T) {
			for _, tc := range []struct {
				target string
				tries  []string // the request targets the backends get, in order
			}{
				{"/rw/x?q=1", []string{"/new/x?q=1"}},
				{"/rw", []string{"/new"}},
				{"/rw?q=1", []string{"/new?q=1"}},
				// As sent.
				{"/rw/a%2Fb", []string{"/new/a%2Fb"}},
				{"/rw/a%3Bb", []string{"/new/a%3Bb"}},
				{"/rw/x//y?q=1", []string{"/new/x//y?q=1"}},
				{"/rw/a%20b?q=%2F", []string{"/new/a%20b?q=%2F"}},
				// A retry sends the same path again.
				{"/rw/retry%2Fme?q=1", []string{"/new/retry%2Fme?q=1", "/new/retry%2Fme?q=1"}},
				// Normalised, escaped again by nginx.
				{"//rw/x?q=1", []string{"/new/x?q=1"}},
				{"/%72w/x?q=1", []string{"/new/x?q=1"}},
				{"/a/../rw/x?q=1", []string{"/new/x?q=1"}},
				{"//rw/a%20b?q=1", []string{"/new/a%20b?q=1"}},
				// Nested prefixes, and a prefix written percent-encoded.
				{"/nest/deep/x?q=1", []string{"/in/x?q=1"}},
				{"/nest/other%2Fy", []string{"/in/other%2Fy"}},
				{"/nest/%64eep/x?q=1", []string{"/in/x?q=1"}},
				{"/nest//deep/x", []string{"/in/x"}},
				{"/enc%41/a%2Fb", []string{"/in/a%2Fb"}},
				{"/encA/a%2Fb", []string{"/in/a/b"}},
			} {
				before := rec.count()
				resp := rawGet(t, addr, tc.target, "example.test")
				if resp.StatusCode != 200 {
					t.Errorf("%s: %d, want 200", tc.target, resp.StatusCode)
				}
				if got := rec.since(before); !slices.Equal(got, tc.tries) {
					t.Errorf("%s: the backends got %q, want %q", tc.target, got, tc.tries)
				}
			}
		})

		// On one kept-alive connection, each request gets its own path:
		// nothing of the one before is kept.
		t.Run("kept alive", func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			before := rec.count()
			var locs []string
			for _, target := range []string{"//rw/x?q=1", "/rw/a%2Fb", "/%72edir/x?q=1", "/redir/a%2Fb", "/rw/c"} {
				if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: example.test\r\n\r\n", target); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("GET %s: %v", target, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if loc := resp.Header.Get("Location"); loc != "" {
					locs = append(locs, loc)
				}
			}
			if got, want := rec.since(before), []string{"/new/x?q=1", "/new/a%2Fb", "/new/c"}; !slices.Equal(got, want) {
				t.Errorf("the backends got %q, want %q", got, want)
			}
			if want := []string{"http://example.test:8080/x?q=1", "http://example.test:8080/a%2Fb"}; !slices.Equal(locs, want) {
				t.Errorf("Locations %q, want %q", locs, want)
			}
		})
	})
}
