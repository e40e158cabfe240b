//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/translate"
)

// timersExample holds timers short enough to observe: see its comment.
const timersExample = "../../testdata/diff-timers/timers.yaml"

// timersPaths are the path prefixes of timersExample's rules, in order.
var timersPaths = []string{"/backoff", "/budget"}

var timersScene = liveScene{file: timersExample, ready: "/budget/ready", backend: "timers",
	timed: func(ruleKey) bool { return true },
	request: func(rule int, methods translate.MethodClass, id string) (string, string) {
		method := http.MethodGet
		if methods == translate.NonIdempotent {
			method = http.MethodPost
		}
		return method, timersPaths[rule] + "/" + id
	}}

// TestDiffTimersLive proves the timer aspects of gwretry diff (the timer
// that cuts a try, the pause between tries, the worst case) on every pair
// of the installed data planes, with the rules of testdata/diff-timers,
// whose timers are all 1s and whose worst cases are at most 4.5s (a pair
// that misses is observed once more, and only that observation counts). Each
// plane runs the rules twice: with a scripted backend, to which every
// scripted failure of TestDiffLive goes at once (each request its own
// path), so that a plane costs the longest of them (a request whose every
// try is silent) rather than their sum; and with endpoints that refuse
// every connection, where a request lasts the sum of the side's pauses
// (the only way to see Traefik's, which retries nothing else). checkPair
// then holds every difference and sameness the diff reports against both
// planes' observations: the first silent try's cut against the timer,
// gaps and refused requests against the pauses, and, where both sides
// retry a try cut by its timer, the times of a request whose every try is
// silent against the worst cases (within worstMargin). A HAProxy whose
// timer was changed in its configuration (the diff, computed from the
// untouched one, says nginx and HAProxy do the same) must be caught.
func TestDiffTimersLive(t *testing.T) {
	if testing.Short() {
		t.Skip("live diff: not in the fast tier (-short)")
	}
	planes := installedPlanes(t)
	backend := flaky.New(t, "timers")
	refused, err := flaky.RefusedAddr()
	if err != nil {
		t.Fatal(err)
	}
	live := []string{"--endpoint", "timers.shop:8080=" + backend.Addr() + "," + backend.Addr()}
	dead := []string{"--endpoint", "timers.shop:8080=" + refused + "," + refused}
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)

	runs := map[string]*planeRun{}
	var mu sync.Mutex
	round := 0 // each observation's paths are its own
	observe := func(t *testing.T, p livePlane, tamper func(t *testing.T, out string)) *planeRun {
		round++
		listen, err := ports.Addr()
		if err != nil {
			t.Fatal(err)
		}
		flags := append([]string{"--listen", listen}, live...)
		r := &planeRun{plane: p, timelines: explainFile(t, p, timersExample, flags), timed: timersScene.timed}
		r.results = runTimers(t, p, round, listen, flags, r.timelines, backend, tamper)
		deadFlags := append([]string{"--listen", listen}, dead...)
		for k, res := range runTimers(t, p, round, listen, deadFlags, r.timelines, nil, tamper) {
			mu.Lock()
			r.results[k][refusedObservation] = res[refusedObservation]
			mu.Unlock()
		}
		t.Logf("observed on %s:\n%s", p.target(), timersText(r))
		return r
	}
	for _, p := range planes {
		t.Run("observe "+p.target(), func(t *testing.T) { runs[p.target()] = observe(t, p, nil) })
	}

	matrix := eachPair(t, runs, func(t *testing.T, a, b string, ra, rb *planeRun) []string {
		d := timersDiff(t, a, b, live)
		// A near miss on a loaded machine: both planes are observed
		// once more, and only the second observation counts.
		rec := &errorRecorder{}
		lines := checkPair(rec, d, ra, rb)
		if len(rec.errs) > 0 {
			t.Logf("observed again after:\n%s", strings.Join(rec.errs, "\n"))
			ra, rb = observe(t, ra.plane, nil), observe(t, rb.plane, nil)
			lines = checkPair(t, d, ra, rb)
		}
		return lines
	})
	t.Run("a changed timer is caught", func(t *testing.T) {
		ng, hp := runs["nginx@1.26"], runs["haproxy@3.0"]
		if ng == nil || hp == nil {
			t.Skip("needs nginx 1.26 and HAProxy 3.0")
		}
		// The backoff rule's timeout server 1000ms becomes 300ms: the diff
		// (of the untouched configuration) says nginx and HAProxy do the
		// same with it; the proxies now cut every try sooner.
		tampered := observe(t, hp.plane, func(t *testing.T, out string) {
			file := filepath.Join(out, "haproxy", "haproxy.cfg")
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s := string(data)
			i := strings.Index(s, "timeout server 1000ms")
			if i < 0 {
				t.Fatalf("no timeout server 1000ms in %s", file)
			}
			s = s[:i] + "timeout server 300ms" + s[i+len("timeout server 1000ms"):]
			if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		rec := &errorRecorder{}
		checkPair(rec, timersDiff(t, "nginx@1.26", "haproxy@3.0", live), ng, tampered)
		for _, want := range []string{"rule 0 other: the diff says try cut by is the same", "rule 0 other: the diff says worst case is the same"} {
			if !slices.ContainsFunc(rec.errs, func(e string) bool { return strings.Contains(e, want) }) {
				t.Errorf("a HAProxy whose timer was changed passed (%q):\n%s", want, strings.Join(rec.errs, "\n"))
			}
		}
	})
	t.Logf("diff timer claims against live observations (same: the diff lists nothing; "+
		"OK: observed as claimed; -: not observed, and why):\n%s", strings.Join(matrix, "\n"))
}

// timersDiff is gwretry diff of timersExample for a pair, checked to be
// the diff users get without the live endpoints.
func timersDiff(t *testing.T, a, b string, endpointFlags []string) *diffReport {
	t.Helper()
	return diffOf(t, timersExample, a, b, endpointFlags)
}

// runTimers generates timersExample's configuration for p (tamper, when
// set, then changes it), runs it, and sends every observation of
// diffObservations to every rule and method class at once; with no
// backend (the endpoints refuse connections), one request per rule and
// method class, as refusedObservation.
func runTimers(t *testing.T, p livePlane, round int, listen string, flags []string, tls map[ruleKey]translate.Timeline, backend *flaky.Server, tamper func(*testing.T, string)) map[ruleKey]map[string]prove.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"translate", timersExample, "--target", p.target(), "-o", out, "--report", "none"}, flags...)
	if code, _, stderr := gwretry(t, "", args...); code != exitOK {
		t.Fatalf("translate: exit %d\n%s", code, stderr)
	}
	if tamper != nil {
		tamper(t, out)
	}
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy, addr, err := prove.StartProxy(ctx, prove.Live{Name: p.name, Bin: p.bin, Version: p.version}, out, listen, t.TempDir(), ports)
	if err != nil {
		t.Fatalf("%s: %v\n%s", p.target(), err, prove.ConfigText(out, p.name))
	}
	defer proxy.Stop()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if backend != nil {
		waitScene(t, client, addr, timersScene)
	} else {
		waitRouted(t, client, addr)
	}

	type sent struct {
		k            ruleKey
		name         string
		method, path string
	}
	var all []sent
	keys := make([]ruleKey, 0, len(tls))
	for k := range tls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ruleKey) int { return strings.Compare(a.String(), b.String()) })
	tag := fmt.Sprintf("%s-%d", strings.ReplaceAll(p.target(), "@", "-"), round)
	for _, k := range keys {
		if backend == nil {
			method, path := timersScene.request(k.rule, k.methods, fmt.Sprintf("%s-%s-refused", tag, k))
			all = append(all, sent{k, refusedObservation, method, strings.ReplaceAll(path, " ", "-")})
			continue
		}
		for i, o := range diffObservations {
			method, path := timersScene.request(k.rule, k.methods, fmt.Sprintf("%s-%d-%d-%s", tag, k.rule, i, k.methods))
			backend.Handle(path, o.script(timerOf(tls[k])))
			all = append(all, sent{k, o.name, method, path})
		}
	}
	results := make([]prove.Result, len(all))
	var wg sync.WaitGroup
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = requestOne(t, client, addr, s.method, s.path)
		}()
	}
	wg.Wait()
	if backend != nil && !backend.WaitIdle(5*time.Second) {
		t.Errorf("%s: backend still busy 5s after the answers", p.target())
	}
	var hits []flaky.Hit
	if backend != nil {
		hits = backend.AllHits()
	}
	out2 := map[ruleKey]map[string]prove.Result{}
	for i, s := range all {
		r := results[i]
		for _, h := range hits {
			if h.Path == s.path {
				r.Hits = append(r.Hits, h)
			}
		}
		slices.SortStableFunc(r.Hits, func(a, b flaky.Hit) int { return a.Start.Compare(b.Start) })
		if out2[s.k] == nil {
			out2[s.k] = map[string]prove.Result{}
		}
		out2[s.k][s.name] = r
	}
	if t.Failed() {
		t.Logf("proxy output:\n%s\nconfiguration:\n%s", proxy.Output(), prove.ConfigText(out, p.name))
	}
	return out2
}

// waitRouted polls until the proxy answers a request of the scene's host
// with an error of its own (its routes are loaded, its endpoints refuse).
func waitRouted(t *testing.T, client *http.Client, addr string) {
	t.Helper()
	deadline := time.Now().Add(dataplane.ReadyTimeout)
	last := ""
	for time.Now().Before(deadline) {
		r := requestOne(t, client, addr, http.MethodGet, timersScene.ready)
		if r.Status >= 500 {
			return
		}
		last = fmt.Sprint(r.Status, r.Err)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the proxy on %s never answered %s with its own error: %s", addr, timersScene.ready, last)
}

// timersText is observedText with the refused requests.
func timersText(r *planeRun) string {
	var lines []string
	for _, k := range []ruleKey{{0, translate.Idempotent}, {0, translate.NonIdempotent}, {1, translate.Idempotent}, {1, translate.NonIdempotent}} {
		res, ok := r.results[k]
		if !ok {
			continue
		}
		s := res["silent every try"]
		f := res[refusedObservation]
		lines = append(lines, fmt.Sprintf("  %-13s silent every try: %d tries, %d in %v, first cut after %v, gaps %v; every try refused: %d in %v",
			k, len(s.Hits), s.Status, s.Duration.Round(10*time.Millisecond), firstCut(res).Round(10*time.Millisecond), s.Gaps(), f.Status, f.Duration.Round(time.Millisecond)))
	}
	return observedText(r) + "\n" + strings.Join(lines, "\n")
}
