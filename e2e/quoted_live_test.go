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
	"github.com/gwretry/gwretry/report"
)

// quotedRules are rules with values the API server accepts that some
// formats cannot write as they are (issue 21): id, matches, and filters.
// "fallback" catches what a target leaves out.
var quotedRules = [][3]string{
	{"quote", `[{path: {type: Exact, value: "/a'b;c"}}]`, ""},
	{"digits", `[{path: {type: PathPrefix, value: /h}, headers: [{type: RegularExpression, name: x-id, value: '\d+'}]}]`, ""},
	{"twice", `[{path: {type: PathPrefix, value: /twice}, headers: [{name: x-t, value: a}, {name: X-T, value: b}]}]`, ""},
	{"noslash", `[{path: {type: Exact, value: /rw}}]`, `[{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: foo}}}]`},
	{"exactvalue", `[{path: {type: PathPrefix, value: /v}, headers: [{name: x-v, value: 'a "b'' \c^ {d};#'}]}]`, ""},
	{"escapes", `[{path: {type: PathPrefix, value: /e}, headers: [{type: RegularExpression, name: x-e, value: '\"\d+\\\'''}]}]`, ""},
	{"spaces", `[{path: {type: PathPrefix, value: /s}, headers: [{name: x-s, value: 'a  b'}]}]`, ""},
	{"utf8", `[{path: {type: PathPrefix, value: /u}, headers: [{name: x-u, value: 'café'}]}]`, ""},
	{"linefeed", `[{path: {type: Exact, value: "/abc/123'/d@gmail/%0A"}}]`, ""},
	{"escaped", `[{path: {type: Exact, value: "/p/%78%3F%25"}}]`, ""},
	{"queryname", `[{path: {type: PathPrefix, value: /qn}, queryParams: [{name: "x!$'*^|~", value: "1"}]}]`, ""},
	{"fallback", `[{path: {type: PathPrefix, value: /}}]`, ""},
	{"ready", `[{path: {type: PathPrefix, value: ` + prove.ReadyPath + `}}]`, ""},
}

// TestQuotedValuesLive: each proxy writes rules whose values its format
// must quote (nginx through crossplane, HAProxy's strong quotes, Traefik's
// backtick strings, Envoy's protobuf), and its data plane does with them
// what its report says: the path with "'" and ";", the header regex \d+,
// an exact value with quotes, a backslash, '^', braces, ';' and '#', a
// regex with the escapes \" \\ \', and the first of a header matched
// twice (v1.7.0: the second is ignored), an exact value with two spaces in
// a row and one that is not ASCII, and a path whose %0A nginx decodes to
// a line feed before matching, and one with %78, %3F and %25 (which
// Traefik compares decoded but for %25) are each reached by the request
// they match and not by a near miss. A rule reported ValueNotExpressible
// answers 500, as the rewrite to a path without a leading slash does on
// every target (a MatchNotExpressible match would send its requests to the
// fallback).
func TestQuotedValuesLive(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: quoted\n  namespace: %s\nspec:\n  parentRefs: [{name: same-namespace}]\n  rules:\n", prove.Namespace)
	for _, r := range quotedRules {
		fmt.Fprintf(&b, "  - matches: %s\n    backendRefs: [{name: %s, port: 8080}]\n", r[1], r[0])
		if r[2] != "" {
			fmt.Fprintf(&b, "    filters: %s\n", r[2])
		}
	}
	manifest := b.String()
	requests := []struct {
		target string
		header map[string]string
		rule   int
	}{
		{"/a'b;c", nil, 0},
		{"/h/x", map[string]string{"x-id": "123"}, 1},
		{"/h/x", map[string]string{"x-id": "abc"}, 11},
		{"/twice", map[string]string{"x-t": "a"}, 2},
		{"/twice", map[string]string{"x-t": "b"}, 11},
		{"/rw", nil, 3},
		{"/v", map[string]string{"x-v": `a "b' \c^ {d};#`}, 4},
		{"/v", map[string]string{"x-v": `a "b' \c^ {d};`}, 11},
		{"/e", map[string]string{"x-e": `"42\'`}, 5},
		{"/e", map[string]string{"x-e": `"42'`}, 11},
		{"/s", map[string]string{"x-s": "a  b"}, 6},
		{"/s", map[string]string{"x-s": "a b"}, 11},
		{"/u", map[string]string{"x-u": "café"}, 7},
		{"/u", map[string]string{"x-u": "cafe"}, 11},
		{"/abc/123'/d@gmail/%0A", nil, 8},
		{"/abc/123'/d@gmail/", nil, 11},
		{"/abc/123'/d@gmail/%0D", nil, 11},
		{"/p/%78%3F%25", nil, 9},
		{"/p/%78%3F", nil, 11},
		{"/qn?x!$'*^|~=1", nil, 10},
		{"/qn?x!$'*^|~=2", nil, 11},
		{"/qn?x=1", nil, 11},
	}
	for _, tg := range liveTargets() {
		t.Run(tg.name, func(t *testing.T) {
			eachInstalled(t, tg, func(t *testing.T, bin, version string) {
				dir := t.TempDir()
				var endpoints []string
				for _, r := range quotedRules {
					s := flaky.New(t, r[0])
					endpoints = append(endpoints, fmt.Sprintf("%s.%s:8080=%s", r[0], prove.Namespace, s.Addr()))
				}
				listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
				rep := generateManifest(t, dir, manifest, tg.name+"@"+version, listen, endpoints)
				reason := func(rule int) report.Reason {
					for _, f := range prove.RuleFindings(rep, tg.name, prove.Namespace+"/quoted", rule) {
						if f.Reason == report.ReasonMatchNotExpressible || f.Reason == report.ReasonValueNotExpressible {
							return f.Reason
						}
					}
					return ""
				}
				if got := reason(3); got != report.ReasonValueNotExpressible {
					t.Errorf("rewrite to a path without '/': %q, want ValueNotExpressible", got)
				}
				// Every proxy's format quotes these: each writes them.
				for _, i := range []int{0, 1, 2, 4, 5, 6, 7, 8, 9} {
					if got := reason(i); got != "" {
						t.Errorf("rule %s: %s, want it written", quotedRules[i][0], got)
					}
				}
				addr := tg.startBin(t, bin, filepath.Join(dir, "out"), listen)
				waitReadyT(t, addr)
				client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
				for _, rq := range requests {
					want := quotedRules[rq.rule][0]
					switch reason(rq.rule) {
					case report.ReasonMatchNotExpressible:
						want = "fallback"
					case report.ReasonValueNotExpressible:
						want = "500 Internal Server Error"
					}
					req, err := http.NewRequest("GET", "http://"+addr+rq.target, nil)
					if err != nil {
						t.Fatal(err)
					}
					for k, v := range rq.header {
						req.Header.Set(k, v)
					}
					got := ""
					resp, err := client.Do(req)
					if err != nil {
						got = err.Error()
					} else {
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if got = resp.Header.Get(flaky.EndpointHeader); got == "" {
							got = resp.Status
						}
					}
					t.Logf("GET %s %v: reached %s", rq.target, rq.header, got)
					if got != want {
						t.Errorf("GET %s %v: reached %s, want %s (rule %s: %q)", rq.target, rq.header, got, want, quotedRules[rq.rule][0], reason(rq.rule))
					}
				}
				if t.Failed() {
					t.Logf("configuration:\n%s", prove.ConfigText(filepath.Join(dir, "out"), tg.name))
				}
			})
		})
	}
}
