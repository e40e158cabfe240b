//go:build unix

package e2e

import (
	"encoding/json"
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

// filterPathValues are paths a rewrite or redirect writes that HTTP
// carries but the portable grammar does not (issue 21): '$' in every
// form a replacement template or an nginx variable would read, and
// percent-escapes, ';' and '\”.
var filterPathValues = []string{"/d$1/$x$$/a$", "/p/%2F%41%25;q='s'", "/q'u;o=t$e"}

// TestFilterPathsLive: each proxy that writes a ReplaceFullPath or
// ReplacePrefixMatch rewrite or redirect with a filterPathValues path
// sends it byte for byte: the backend gets it as its request target, the
// client as its Location's path; a rule reported ValueNotExpressible
// (only nginx's, for a path with '%', which its rewrite would escape
// again) answers 500 and reaches no backend.
func TestFilterPathsLive(t *testing.T) {
	type rule struct {
		prefix, filter, send, want string
		redirect                   bool
	}
	var rules []rule
	for i, v := range filterPathValues {
		q, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules,
			rule{fmt.Sprintf("/rw%d", i), fmt.Sprintf("{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: %s}}}", q), fmt.Sprintf("/rw%d/t", i), v, false},
			rule{fmt.Sprintf("/rp%d", i), fmt.Sprintf("{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: %s}}}", q), fmt.Sprintf("/rp%d/t", i), v + "/t", false},
			rule{fmt.Sprintf("/rd%d", i), fmt.Sprintf("{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: %s}}}", q), fmt.Sprintf("/rd%d/t", i), v, true},
			rule{fmt.Sprintf("/rdp%d", i), fmt.Sprintf("{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: %s}}}", q), fmt.Sprintf("/rdp%d/t", i), v + "/t", true})
	}
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "  - matches: [{path: {type: PathPrefix, value: %s}}]\n    filters: [%s]\n", r.prefix, r.filter)
		if !r.redirect {
			b.WriteString("    backendRefs: [{name: paths, port: 8080}]\n")
		}
	}
	manifest := prove.RouteManifest("paths", b.String()) + "---\n" +
		prove.RouteManifest("ready", fmt.Sprintf("  - matches: [{path: {type: PathPrefix, value: %s}}]\n    backendRefs: [{name: ready, port: 8080}]\n", prove.ReadyPath))
	for _, tg := range liveTargets() {
		t.Run(tg.name, func(t *testing.T) {
			eachInstalled(t, tg, func(t *testing.T, bin, version string) {
				dir := t.TempDir()
				be := flaky.New(t, "paths")
				ready := flaky.New(t, "ready")
				listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
				rep := generateManifest(t, dir, manifest, tg.name+"@"+version, listen,
					[]string{fmt.Sprintf("paths.%s:8080=%s", prove.Namespace, be.Addr()), fmt.Sprintf("ready.%s:8080=%s", prove.Namespace, ready.Addr())})
				unwritten := func(k int) bool {
					for _, f := range prove.RuleFindings(rep, tg.name, prove.Namespace+"/paths", k) {
						if f.Reason == report.ReasonValueNotExpressible {
							return true
						}
					}
					return false
				}
				addr := tg.startBin(t, bin, filepath.Join(dir, "out"), listen)
				waitReadyT(t, addr)
				client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
					CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				for k, r := range rules {
					before := len(be.AllHits())
					resp, err := client.Get("http://" + addr + r.send)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					be.WaitIdle(5 * time.Second)
					hits := be.AllHits()[before:]
					got := resp.Status
					switch {
					case unwritten(k):
						if !strings.Contains(r.want, "%") {
							t.Errorf("GET %s: rule reported ValueNotExpressible, want it written (only '%%' is left out, on nginx)", r.send)
						}
						if resp.StatusCode != http.StatusInternalServerError || len(hits) != 0 {
							t.Errorf("GET %s (unwritten): %s and %d backend requests, want 500 and none", r.send, resp.Status, len(hits))
						}
						t.Logf("GET %s: %s (ValueNotExpressible)", r.send, got)
						continue
					case r.redirect:
						loc := resp.Header.Get("Location")
						_, rest, _ := strings.Cut(loc, "://")
						if i := strings.IndexByte(rest, '/'); i >= 0 {
							got = rest[i:]
						} else {
							got = resp.Status + " Location " + loc
						}
					case len(hits) == 1:
						got = hits[0].URI
					default:
						got = fmt.Sprintf("%s, %d backend requests", resp.Status, len(hits))
					}
					t.Logf("GET %s: %s", r.send, got)
					if got != r.want {
						t.Errorf("GET %s: got %q, want %q", r.send, got, r.want)
					}
				}
				if t.Failed() {
					t.Logf("configuration:\n%s", prove.ConfigText(filepath.Join(dir, "out"), tg.name))
				}
			})
		})
	}
}
