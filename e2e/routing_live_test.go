//go:build unix

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/prove"
)

// precedenceRoute is one HTTPRoute of the precedence test: each rule
// forwards to a Service of its own, named by the rule's id.
type precedenceRoute struct {
	name, created string
	hostnames     []string
	// rules are id and the YAML of its matches.
	rules [][2]string
}

// precedenceRoutes are overlapping routes on one listener: an exact
// hostname, two wildcards (one longer), routes for every hostname that tie
// on path, method, headers and query params and are told apart by
// creationTimestamp and by name.
func precedenceRoutes() []precedenceRoute {
	return []precedenceRoute{
		{"exact-host", "2024-01-02T00:00:00Z", []string{"foo.example.com"}, [][2]string{
			{"eh0", "[{path: {type: PathPrefix, value: /api}}]"},
			{"eh1", "[{path: {type: PathPrefix, value: /api/v1}, method: POST}]"},
		}},
		{"wild", "2024-01-01T00:00:00Z", []string{"*.example.com"}, [][2]string{
			{"w0", "[{path: {type: PathPrefix, value: /api/v1}}]"},
			{"w1", "[{path: {type: Exact, value: /exact}}]"},
		}},
		{"wild-sub", "2024-01-01T00:00:00Z", []string{"*.sub.example.com"}, [][2]string{
			{"ws0", "[{path: {type: PathPrefix, value: /}}]"},
		}},
		{"main", "2024-01-01T00:00:00Z", nil, [][2]string{
			{"m0", "[{path: {type: PathPrefix, value: /p}, headers: [{name: x-a, value: '1'}]}]"},
			{"m1", "[{path: {type: PathPrefix, value: /p}, headers: [{name: x-a, value: '1'}, {name: x-b, value: '2'}]}]"},
			{"m2", "[{path: {type: PathPrefix, value: /p}, method: GET}]"},
			{"m3", "[{path: {type: PathPrefix, value: /p}, queryParams: [{name: q, value: '1'}]}]"},
			{"m4", "[{path: {type: Exact, value: /p/x}}]"},
			{"m5", "[{path: {type: PathPrefix, value: /p/long}}]"},
			{"m6", "[{path: {type: PathPrefix, value: /p}, method: GET, queryParams: [{name: q, value: '1'}]}]"},
			{"m7", "[{path: {type: PathPrefix, value: /}}]"},
			{"m8", "[{path: {type: RegularExpression, value: '/re/[a-z]+'}}]"},
			{"m9", "[{path: {type: PathPrefix, value: /case/Up}}]"},
		}},
		// Older than main: wins main's ties.
		{"older", "2023-06-01T00:00:00Z", nil, [][2]string{
			{"o0", "[{path: {type: PathPrefix, value: /p}, method: GET}]"},
		}},
		// As old as main, first by name: wins main's ties.
		{"alpha", "2024-01-01T00:00:00Z", nil, [][2]string{
			{"al0", "[{path: {type: PathPrefix, value: /p}, headers: [{name: x-a, value: '1'}]}]"},
		}},
		{"slash", "2024-01-01T00:00:00Z", nil, [][2]string{
			{"sl0", "[{path: {type: PathPrefix, value: /t/}}]"},
			{"sl1", "[{path: {type: PathPrefix, value: /h}, headers: [{type: RegularExpression, name: x-r, value: 'a+'}]}]"},
		}},
		{"ready", "2024-01-01T00:00:00Z", nil, [][2]string{
			{"ready", "[{path: {type: PathPrefix, value: " + prove.ReadyPath + "}}]"},
		}},
	}
}

func precedenceManifest(routes []precedenceRoute) string {
	var docs []string
	for _, r := range routes {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: %s\n  namespace: %s\n  creationTimestamp: %q\nspec:\n  parentRefs: [{name: same-namespace}]\n", r.name, prove.Namespace, r.created)
		if len(r.hostnames) > 0 {
			fmt.Fprintf(&b, "  hostnames: [%q]\n", strings.Join(r.hostnames, `", "`))
		}
		b.WriteString("  rules:\n")
		for _, rule := range r.rules {
			fmt.Fprintf(&b, "  - matches: %s\n    backendRefs: [{name: %s, port: 8080}]\n", rule[1], rule[0])
		}
		docs = append(docs, b.String())
	}
	return strings.Join(docs, "---\n")
}

// precedenceRequest is a request and the rule the Gateway API sends it to,
// worked out by hand from the HTTPRoute spec's precedence.
type precedenceRequest struct {
	host, method, target string
	header               map[string]string
	want, why            string
}

// undefinedRequest is a request whose rule the Gateway API leaves to the
// data plane: want is what each target does, as its report's notes say.
type undefinedRequest struct {
	method, target string
	want           map[string]string
	why            string
}

// undefinedRequests: the path as sent or percent-decoded and normalized,
// a repeated query parameter (the spec recommends matching the first
// value), and percent-encoded query names and values.
func undefinedRequests() []undefinedRequest {
	type w = map[string]string
	return []undefinedRequest{
		{"GET", "/p/%78", w{"nginx": "m4", "haproxy": "o0", "traefik": "m4"}, "a percent-encoded unreserved character"},
		{"GET", "/p/long%2Fz", w{"nginx": "m5", "haproxy": "o0", "traefik": "o0"}, "an encoded slash"},
		{"GET", "/p/a/../x", w{"nginx": "m4", "haproxy": "o0", "traefik": "m4"}, "a dot segment"},
		{"GET", "/p//x", w{"nginx": "m4", "haproxy": "o0", "traefik": "m4"}, "a double slash"},
		{"POST", "/p/y?q=1&q=2", w{"nginx": "m3", "haproxy": "m3", "traefik": "m3"}, "a repeated query parameter whose first value matches"},
		{"POST", "/p/y?q=2&q=1", w{"nginx": "m7", "haproxy": "m3", "traefik": "m3"}, "a repeated query parameter whose second value matches"},
		{"POST", "/p/y?q=%31", w{"nginx": "m7", "haproxy": "m7", "traefik": "m3"}, "a percent-encoded query value"},
		{"POST", "/p/y?%71=1", w{"nginx": "m7", "haproxy": "m7", "traefik": "m3"}, "a percent-encoded query name"},
	}
}

func precedenceRequests() []precedenceRequest {
	const other = "other.test"
	xa := map[string]string{"X-A": "1"}
	xab := map[string]string{"X-A": "1", "X-B": "2"}
	return []precedenceRequest{
		{"foo.example.com", "GET", "/api/v1/x", nil, "eh0", "an exact hostname before a wildcard's longer prefix"},
		{"foo.example.com", "POST", "/api/v1", nil, "eh1", "longest prefix with method"},
		{"FOO.Example.COM", "GET", "/api/v1/x", nil, "eh0", "hostnames are case-insensitive"},
		{"bar.example.com", "GET", "/api/v1/x", nil, "w0", "wildcard"},
		{"bar.example.com", "GET", "/api", nil, "m7", "no rule of the wildcard route: the catch-all routes"},
		{"bar.example.com", "GET", "/exact", nil, "w1", "exact path"},
		{"bar.example.com", "GET", "/exact/", nil, "m7", "an Exact path is not a prefix"},
		{"example.com", "GET", "/exact", nil, "m7", "a wildcard does not match the apex"},
		{"x.sub.example.com", "GET", "/api/v1", nil, "ws0", "the longer wildcard before the shorter one's longer prefix"},
		{"x.sub.example.com", "GET", "/p/x", nil, "ws0", "a wildcard before the catch-all's Exact path"},
		{"foo.example.com", "GET", "/p/x", nil, "m4", "the exact hostname's routes do not match: the catch-all routes"},
		{other, "GET", "/p/x", nil, "m4", "Exact before PathPrefix with method"},
		{other, "GET", "/p/x/", nil, "o0", "Exact does not match a trailing slash; method ties go to the older route"},
		{other, "GET", "/p", nil, "o0", "prefix matches itself"},
		{other, "GET", "/pfoo", nil, "m7", "PathPrefix matches whole segments"},
		{other, "GET", "/p/long/z", nil, "m5", "longest prefix before method"},
		{other, "GET", "/p/longer", nil, "o0", "/p/long does not match /p/longer"},
		{other, "GET", "/p/y", xa, "o0", "method before headers"},
		{other, "POST", "/p/y", xa, "al0", "header tie: same creationTimestamp, first namespace/name"},
		{other, "POST", "/p/y", xab, "m1", "more headers"},
		{other, "POST", "/p/y?q=1", nil, "m3", "query param"},
		{other, "POST", "/p/y?q=1", xa, "al0", "headers before query params"},
		{other, "GET", "/p/y?q=1", nil, "m6", "method and query before method alone"},
		{other, "GET", "/p/y?q=1", xab, "m6", "method, then query (no header match has a method)"},
		{other, "POST", "/p/y?Q=1", nil, "m7", "query param names are case-sensitive"},
		{other, "POST", "/p/y", map[string]string{"X-A": "2"}, "m7", "header value differs"},
		{other, "GET", "/re/abc", nil, "m8", "regular expression"},
		{other, "GET", "/re/abc1", nil, "m7", "a regular expression matches the whole path"},
		{other, "GET", "/case/Up/x", nil, "m9", "prefix"},
		{other, "GET", "/case/up/x", nil, "m7", "paths are case-sensitive"},
		{other, "GET", "/t", nil, "sl0", "a prefix's trailing slash is ignored"},
		{other, "GET", "/t/u", nil, "sl0", "a prefix's trailing slash is ignored"},
		{other, "GET", "/tu", nil, "m7", "PathPrefix matches whole segments"},
		{"foo.example.com:8080", "GET", "/api/v1/x", nil, "eh0", "the Host header's port is not part of the hostname"},
		{other, "GET", "/h", map[string]string{"X-R": "aa"}, "sl1", "header regex"},
		{other, "GET", "/h", map[string]string{"X-R": "aab"}, "m7", "header regex whole value"},
		{other, "GET", "/h", map[string]string{"X-R": "A"}, "m7", "header values case-sensitive"},
	}
}

// TestPrecedenceLive runs overlapping routes on every installed data plane
// (from the manifest, through the CLI) and checks that each request reaches
// the rule the Gateway API's precedence picks: a request that reaches
// another rule gets that rule's retries and timeouts, so every finding
// about it would be wrong.
func TestPrecedenceLive(t *testing.T) {
	routes := precedenceRoutes()
	manifest := precedenceManifest(routes)
	for _, tg := range liveTargets() {
		t.Run(tg.name, func(t *testing.T) {
			if tg.optional && proxytest.Find(tg.name) == "" {
				t.Skipf("%s not installed", tg.name)
			}
			bin := proxytest.Require(t, tg.name)
			version, _ := tg.version(t, bin)
			dir := t.TempDir()
			var endpoints []string
			for _, r := range routes {
				for _, rule := range r.rules {
					s := flaky.New(t, rule[0])
					endpoints = append(endpoints, fmt.Sprintf("%s.%s:8080=%s", rule[0], prove.Namespace, s.Addr()))
				}
			}
			listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
			generateManifest(t, dir, manifest, tg.name+"@"+version, listen, endpoints)
			addr := tg.start(t, filepath.Join(dir, "out"), listen)
			waitReadyT(t, addr)
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			// reached returns the rule that answered, or the status.
			reached := func(method, host, target string, header map[string]string) string {
				req, err := http.NewRequest(method, "http://"+addr+target, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = host
				for k, v := range header {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					return err.Error()
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got := resp.Header.Get(flaky.EndpointHeader); got != "" {
					return got
				}
				return resp.Status
			}
			for _, rq := range precedenceRequests() {
				if got := reached(rq.method, rq.host, rq.target, rq.header); got != rq.want {
					t.Errorf("%s %s%s %v: reached %s, want %s (%s)", rq.method, rq.host, rq.target, rq.header, got, rq.want, rq.why)
				}
			}
			for _, rq := range undefinedRequests() {
				want, ok := rq.want[tg.name]
				if !ok {
					continue
				}
				if got := reached(rq.method, "other.test", rq.target, nil); got != want {
					t.Errorf("%s %s (%s): reached %s, want %s as the %s notes say", rq.method, rq.target, rq.why, got, want, tg.name)
				}
			}
			if t.Failed() {
				t.Logf("configuration:\n%s", prove.ConfigText(filepath.Join(dir, "out"), tg.name))
			}
		})
	}
}
