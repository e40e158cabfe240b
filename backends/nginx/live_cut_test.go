//go:build unix

package nginx

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestLiveCutAfterHeaders proves what the timeout findings say about a try
// that nginx's proxy timers cut: before the response headers it is retried
// (when the rule retries) or answers 504; after them nginx has already sent
// the status, so the try is not retried, no 504 is sent, and the client
// gets a truncated body. The findings used to say "a try cut by them
// answers 504" and "is retried" without the second case, which a backend
// that sends its headers and then stalls disproves.
func TestLiveCutAfterHeaders(t *testing.T) {
	proxytest.Require(t, "nginx")
	backend := flaky.New(t, "a")
	res, addr := serveRoute(t, proxytest.Require(t, "nginx"), "1.22", testmodel.Route(`
  - matches: [{path: {type: PathPrefix, value: /retried}, method: GET}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {codes: [500], attempts: 2}
    timeouts: {backendRequest: 500ms}
  - matches: [{path: {type: PathPrefix, value: /once}, method: GET}]
    backendRefs: [{name: svc, port: 8080}]
    timeouts: {backendRequest: 500ms}
  - matches: [{path: {type: PathPrefix, value: /zero}, method: GET}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 0}
    timeouts: {backendRequest: 500ms}
  - matches: [{path: {type: PathPrefix, value: /request}, method: GET}]
    backendRefs: [{name: svc, port: 8080}]
    timeouts: {request: 500ms}
`), backend.Addr())

	// Every finding of a timer that cuts tries records that a try cut
	// after the response headers is neither retried nor answered 504
	// (NoAnswerAfterHeaders); rule 0's retries one cut before them
	// (timeout in proxy_next_upstream).
	for _, f := range res.Report.Findings {
		switch f.Feature {
		case translate.FeatureRetryBackendTimeout, translate.FeatureBackendRequestTimeout, translate.FeatureRequestTimeout:
		default:
			continue
		}
		if !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatNoAnswerAfterHeaders }) {
			t.Errorf("rule %d %s (%s) lacks the NoAnswerAfterHeaders caveat: %+v", f.Rule, f.Feature, f.Status, f.Decision)
		}
		if f.Feature == translate.FeatureRetryBackendTimeout && f.Rule == 0 && !strings.HasPrefix(f.Configured, "proxy_next_upstream timeout,") {
			t.Errorf("rule 0 %s does not record that a try cut before the headers is retried: %+v", f.Feature, f.Decision)
		}
	}

	stall := flaky.Action{Chunks: 2, ChunkEvery: 3 * time.Second}
	client := &http.Client{Timeout: 20 * time.Second}
	for _, tc := range []struct {
		name, path   string
		script       flaky.Script
		wantStatus   int
		wantTries    int
		wantComplete bool // the body arrives whole
	}{
		{"stall before headers, retried", "/retried/before", flaky.DelayFirst(1, 3*time.Second), 200, 2, true},
		{"stall after headers, not retried", "/retried/after", flaky.Script{First: []flaky.Action{stall}}, 200, 1, false},
		{"stall before headers, no retry", "/once/before", flaky.DelayAlways(3 * time.Second), 504, 1, false},
		{"stall after headers, no retry", "/once/after", flaky.Script{Then: stall}, 200, 1, false},
		{"stall after headers, attempts 0", "/zero/after", flaky.Script{Then: stall}, 200, 1, false},
		{"request timer, stall before headers", "/request/before", flaky.DelayAlways(3 * time.Second), 504, 1, false},
		{"request timer, stall after headers", "/request/after", flaky.Script{Then: stall}, 200, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend.Handle(tc.path, tc.script)
			start := time.Now()
			resp, err := client.Get("http://" + addr + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			_, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			backend.WaitIdle(5 * time.Second)
			hits := backend.Hits(tc.path)
			if resp.StatusCode != tc.wantStatus || len(hits) != tc.wantTries {
				t.Errorf("%d after %d tries, want %d after %d: %v", resp.StatusCode, len(hits), tc.wantStatus, tc.wantTries, hits)
			}
			if complete := rerr == nil && tc.wantStatus == 200; complete != tc.wantComplete {
				t.Errorf("body complete %v (read error %v), want %v", complete, rerr, tc.wantComplete)
			}
			// The 500ms timers cut each stalled try long before the
			// backend's 3s stall ends.
			if took > 2500*time.Millisecond*time.Duration(tc.wantTries) {
				t.Errorf("took %v: the 500ms timers did not cut the stalled try", took)
			}
		})
	}
}
