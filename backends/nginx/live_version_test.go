//go:build unix

package nginx

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// installedNginx runs each installed nginx (the one on PATH and those built
// into the cache, as e2e does) whose MAJOR.MINOR is in the version table as
// a subtest, with that version's table entry: what differs between
// versions is proved on every version at hand, not only on the first.
func installedNginx(t *testing.T, run func(t *testing.T, bin string, v version)) {
	t.Helper()
	proxytest.Require(t, "nginx")
	bins := dataplane.Installed("nginx")
	if len(bins) == 0 {
		bins = []string{proxytest.Require(t, "nginx")}
	}
	for _, bin := range bins {
		short, full, err := dataplane.Version(context.Background(), "nginx", bin)
		if err != nil {
			t.Fatal(err)
		}
		v, err := lookupVersion(short)
		if err != nil {
			t.Logf("%s: nginx %s is not in the version table; skipped", bin, full)
			continue
		}
		t.Run(full, func(t *testing.T) { run(t, bin, v) })
	}
}

// TestLiveResponseFraming proves, on every installed nginx, what the
// connectionErrors finding records of a response whose Content-Length or
// Transfer-Encoding is malformed: nginx 1.23.0 and later take it as an
// invalid header and retry it; nginx 1.22 passes it to the client as the
// backend sent it, which the finding records for that version
// (ResponseFramingNotChecked). The finding used to say "responses with an
// invalid header are retried" on every version; 1.22.1 disproves it.
func TestLiveResponseFraming(t *testing.T) {
	replies := map[string]string{
		"/two-lengths":    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nno",
		"/bad-length":     "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nno",
		"/length-chunked": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n",
		"/gzip-encoding":  "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nno",
		"/bad-header":     "HTTP/1.1 500 Oops\r\nBad Header\r\nContent-Length: 2\r\n\r\nno",
	}
	installedNginx(t, func(t *testing.T, bin string, v version) {
		backend := newRawBackend(t, replies)
		res, addr := serveRoute(t, bin, v.Name, retryOneManifest, backend.ln.Addr().String())
		for _, f := range res.Report.Findings {
			if f.Feature != translate.FeatureRetryConnectionErrors {
				continue
			}
			got := slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool {
				return c.Reason == report.CaveatResponseFramingNotChecked && c.Params["version"] == v.Name && c.Params["fixedIn"] == "1.23.0"
			})
			if got == v.ChecksResponseFraming {
				t.Errorf("nginx %s: %s records ResponseFramingNotChecked: %v, want %v: %+v", v.Name, f.Feature, got, !v.ChecksResponseFraming, f.Decision)
			}
		}
		for path := range replies {
			wantTries, wantBody := 1, "no"
			if v.ChecksResponseFraming || path == "/bad-header" {
				wantTries, wantBody = 2, "ok"
			}
			t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				got, _ := io.ReadAll(bufio.NewReader(c))
				if n := backend.count(path); n != wantTries || !strings.Contains(string(got), wantBody) {
					t.Errorf("%d tries, client got %q; want %d tries and %q in the answer", n, got, wantTries, wantBody)
				}
			})
		}
	})
}

// retryOneManifest retries every GET once on 500.
var retryOneManifest = testmodel.Route(`
  - matches: [{path: {type: PathPrefix, value: /}, method: GET}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {codes: [500], attempts: 1}
`)

// TestLiveRepeatedHeaderMatch proves, on every installed nginx, the routing
// note's word on a header sent on several lines: nginx 1.22 matches its
// first line, nginx 1.23.0 and later match the lines joined with ", ", so
// an Exact match of the first line fails. The note said "first value" on
// every version; 1.26.3 disproves it.
func TestLiveRepeatedHeaderMatch(t *testing.T) {
	installedNginx(t, func(t *testing.T, bin string, v version) {
		backend := newRawBackend(t, nil)
		res, addr := serveRoute(t, bin, v.Name, headerMatchManifest, backend.ln.Addr().String())
		joined := false
		for _, n := range res.Notes {
			joined = joined || strings.Contains(n.Text, "headers as $http_<name>, the lines of a header sent several times joined")
		}
		if joined != v.JoinsHeaderLines {
			t.Errorf("nginx %s: the routing note says repeated header lines are joined: %v, want %v", v.Name, joined, v.JoinsHeaderLines)
		}
		for _, tc := range []struct {
			name  string
			lines []string
			want  int // the status: 200 matched, 404 not
		}{
			{"one line", []string{"v1"}, 200},
			{"first of two", []string{"v1", "v2"}, map[bool]int{false: 200, true: 404}[v.JoinsHeaderLines]},
			{"second of two", []string{"v2", "v1"}, 404},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				req := "GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
				for _, l := range tc.lines {
					req += "X-Version: " + l + "\r\n"
				}
				io.WriteString(c, req+"\r\n")
				line, _ := bufio.NewReader(c).ReadString('\n')
				if want := "HTTP/1.1 " + strconv.Itoa(tc.want); !strings.HasPrefix(line, want) {
					t.Errorf("X-Version lines %q: client got %q, want %s", tc.lines, line, want)
				}
			})
		}
	})
}

// headerMatchManifest routes only requests whose X-Version is exactly v1.
var headerMatchManifest = testmodel.Route(`
  - matches: [{path: {type: PathPrefix, value: /}, headers: [{name: x-version, value: v1}]}]
    backendRefs: [{name: svc, port: 8080}]
`)

// TestLiveInterimResponse proves, on every installed nginx, the
// InterimResponseIsFinal caveat of retry.codes: before 1.29 nginx takes a
// backend's informational response (103 Early Hints, 100 Continue) as the
// final one, so the client gets the 1xx, the listed 500 that follows is
// not retried and reaches the client inside the body. The finding said
// honoured (with an info line) while the red team saw this on 1.22 and
// 1.26.
func TestLiveInterimResponse(t *testing.T) {
	replies := map[string]string{
		"/early-hints": "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno",
		"/continue":    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno",
	}
	installedNginx(t, func(t *testing.T, bin string, v version) {
		backend := newRawBackend(t, replies)
		res, addr := serveRoute(t, bin, v.Name, retryOneManifest, backend.ln.Addr().String())
		var codes *translate.Finding
		for i, f := range res.Report.Findings {
			if f.Feature == translate.FeatureRetryCodes {
				codes = &res.Report.Findings[i]
			}
		}
		if codes == nil {
			t.Fatal("no retry.codes finding")
		}
		want := []report.Caveat{report.NewCaveat(report.CaveatInterimResponseIsFinal, "version", v.Name)}
		if v.ReadsEarlyHints {
			want = nil
		}
		if !slices.EqualFunc(codes.Caveats, want, func(a, b report.Caveat) bool { return a.Reason == b.Reason && maps.Equal(a.Params, b.Params) }) {
			t.Errorf("nginx %s: retry.codes caveats %v, want %v", v.Name, codes.Caveats, want)
		}
		for path, status := range map[string]string{"/early-hints": "HTTP/1.1 103", "/continue": "HTTP/1.1 100"} {
			t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				got, _ := io.ReadAll(bufio.NewReader(c))
				tries := backend.count(path)
				if v.ReadsEarlyHints && path == "/early-hints" {
					if tries != 2 || !strings.Contains(string(got), "HTTP/1.1 200") {
						t.Errorf("nginx %s: %d tries, client got %q; want the 500 retried", v.Name, tries, got)
					}
					return
				}
				if tries != 1 || !strings.HasPrefix(string(got), status) || !strings.Contains(string(got), "HTTP/1.1 500 Oops") {
					t.Errorf("nginx %s: %d tries, client got %q; want 1 try, %s... with the backend's 500 inside the body", v.Name, tries, got, status)
				}
			})
		}
	})
}
