//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/translate"
)

// diffPlanes are the data planes installed on this project's machines
// (nginx 1.22 from the distribution, 1.26 built into the cache, HAProxy
// likewise, Traefik from the Go module proxy): TestDiffLive proves the diff
// of every pair of them.
var diffPlanes = []string{"nginx@1.22", "nginx@1.26", "haproxy@2.6", "haproxy@3.0", "traefik@3.6"}

// livePlane is one installed data plane binary.
type livePlane struct {
	name, version, bin string
}

func (p livePlane) target() string { return p.name + "@" + p.version }

// exampleRequest is the request that rule index of the example selects
// (testdata/examples/retry.yaml): PathPrefix /catalogue, POST
// /checkout, and everything else. id makes the path of each observation
// its own, so that the backend's script counts that observation's tries
// alone.
func exampleRequest(rule int, methods translate.MethodClass, id string) (method, path string) {
	method = http.MethodGet
	if methods == translate.NonIdempotent {
		method = http.MethodPost
	}
	switch rule {
	case 0:
		return method, "/catalogue/" + id
	case 1:
		return http.MethodPost, "/checkout/" + id
	}
	return method, "/shop/" + id
}

// liveScene is what the live observations need of the manifests they run:
// the HTTPRoutes, the request that selects each rule, the rules whose
// timers are observed, and a path that reaches the scripted backend.
type liveScene struct {
	file    string
	request func(rule int, methods translate.MethodClass, id string) (method, path string)
	timed   func(ruleKey) bool
	// ready is routed to the backend whose name ready names.
	ready, backend string
}

// exampleScene is the shipped example's.
var exampleScene = liveScene{file: example, request: exampleRequest, timed: timedRule, ready: "/ready", backend: "catalogue"}

// diffLiveBudget is the longest timer a try may have for the timer and
// worst-case observations: a rule whose timers are all longer is not
// observed there (the test would wait minutes).
const diffLiveBudget = 2 * time.Second

// observation is one scripted failure: the script the backend plays for
// every try of one request.
type observation struct {
	name   string
	script func(timer time.Duration) flaky.Script
	// timed observations need a try timer within diffLiveBudget.
	timed bool
}

// slowStep is how much longer than the try timer a scripted silence lasts.
const slowStep = 800 * time.Millisecond

var diffObservations = []observation{
	{name: "503 every try", script: func(time.Duration) flaky.Script { return flaky.AlwaysFail(503) }},
	{name: "503 then 200", script: func(time.Duration) flaky.Script { return flaky.FailFirst(1, 503) }},
	{name: "429 every try", script: func(time.Duration) flaky.Script { return flaky.AlwaysFail(429) }},
	{name: "429 then 200", script: func(time.Duration) flaky.Script { return flaky.FailFirst(1, 429) }},
	{name: "closed every try", script: func(time.Duration) flaky.Script { return flaky.CloseAlways() }},
	{name: "closed then 200", script: func(time.Duration) flaky.Script { return flaky.CloseFirst(1) }},
	// Every try silent past the timer: is it cut, is a cut try retried,
	// and does the request end within the worst case.
	{name: "silent every try", timed: true, script: func(d time.Duration) flaky.Script { return flaky.DelayAlways(d + slowStep) }},
	// Headers at once, then a silence past the timer before the rest of
	// the body: an idle or total timer cuts it, a headers timer does not.
	{name: "body stalls", timed: true, script: func(d time.Duration) flaky.Script {
		return flaky.Script{Then: flaky.Action{Chunks: 2, ChunkEvery: d + slowStep}}
	}},
	// A body that keeps coming, each chunk within the timer, for twice the
	// timer: only a total timer cuts it.
	{name: "body steady", timed: true, script: func(d time.Duration) flaky.Script {
		return flaky.Script{Then: flaky.Action{Chunks: 5, ChunkEvery: d / 2}}
	}},
}

// ruleKey names a rule and method class.
type ruleKey struct {
	rule    int
	methods translate.MethodClass
}

func (k ruleKey) String() string {
	m := "other"
	if k.methods == translate.NonIdempotent {
		m = "POST"
	}
	return fmt.Sprintf("rule %d %s", k.rule, m)
}

// planeRun is what one data plane did: its timelines as explain reads its
// configuration, and each observation's result per rule and method class.
type planeRun struct {
	plane     livePlane
	timelines map[ruleKey]translate.Timeline
	results   map[ruleKey]map[string]prove.Result
	// timed says which rules' timers were observed (timedRule when nil).
	timed func(ruleKey) bool
}

func (r *planeRun) isTimed(k ruleKey) bool {
	if r.timed != nil {
		return r.timed(k)
	}
	return timedRule(k)
}

// TestDiffLive proves gwretry diff on the shipped example for every pair of
// the installed data planes: each runs the example's configuration (the
// catalogue Service's two endpoints both on one scripted backend, so that
// the backend's script counts every try of a request whichever endpoint
// it goes to), the same scripted failures are sent to every rule and
// method class, and every aspect the diff calls different must be
// observed different, every one it leaves out observed the same, where
// the observations can tell: retries and what is retried from the tries
// the backend sees and whether the client gets the answer of a retry;
// the try timer from silent tries and stalling or steady bodies; the
// pause from the gaps between tries, each side's within its own claimed
// pause; the worst case as a bound on a request whose every try is silent.
// Timers longer than diffLiveBudget are not observed, and say so.
func TestDiffLive(t *testing.T) {
	if testing.Short() {
		t.Skip("live diff: not in the fast tier (-short)")
	}
	planes := installedPlanes(t)
	catalogue := flaky.New(t, "catalogue")
	checkout := flaky.New(t, "checkout")
	endpointFlags := []string{
		"--endpoint", "catalogue.shop:8080=" + catalogue.Addr() + "," + catalogue.Addr(),
		"--endpoint", "checkout.shop:8080=" + checkout.Addr(),
	}
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)

	runs := map[string]*planeRun{}
	for _, p := range planes {
		t.Run("observe "+p.target(), func(t *testing.T) {
			listen, err := ports.Addr()
			if err != nil {
				t.Fatal(err)
			}
			flags := append([]string{"--listen", listen}, endpointFlags...)
			r := &planeRun{plane: p, timelines: explainTimelines(t, p, flags)}
			r.results = observePlane(t, p, listen, flags, r.timelines, []*flaky.Server{catalogue, checkout})
			runs[p.target()] = r
			t.Logf("observed on %s:\n%s", p.target(), observedText(r))
		})
	}

	matrix := eachPair(t, runs, func(t *testing.T, a, b string, ra, rb *planeRun) []string {
		return checkPair(t, liveDiff(t, a, b, endpointFlags), ra, rb)
	})
	t.Run("a lying diff is caught", func(t *testing.T) { checkTampered(t, runs) })
	t.Logf("diff claims against live observations (same: the diff lists nothing; "+
		"OK: observed as claimed; -: not observed, and why):\n%s", strings.Join(matrix, "\n"))
}

// eachPair runs check in a subtest on every pair of diffPlanes that both
// ran, and returns the lines of the matrix: check's, and for a pair not
// run, why.
func eachPair(t *testing.T, runs map[string]*planeRun, check func(t *testing.T, a, b string, ra, rb *planeRun) []string) []string {
	var matrix []string
	for i, a := range diffPlanes {
		for _, b := range diffPlanes[i+1:] {
			pair := a + " -> " + b
			ra, rb := runs[a], runs[b]
			if ra == nil || rb == nil {
				matrix = append(matrix, pair+": not run ("+missingOf(runs, a, b)+")")
				continue
			}
			t.Run(pair, func(t *testing.T) { matrix = append(matrix, check(t, a, b, ra, rb)...) })
		}
	}
	return matrix
}

func missingOf(runs map[string]*planeRun, targets ...string) string {
	var out []string
	for _, tg := range targets {
		if runs[tg] == nil {
			out = append(out, tg+" not installed or not observed")
		}
	}
	return strings.Join(out, ", ")
}

// installedPlanes finds the binaries of diffPlanes as the live tests do
// (dataplane.Installed: the variable GWRETRY_<NAME>, the cache, PATH and
// /usr/sbin). A missing one is logged, or fails the test under CI=true.
func installedPlanes(t *testing.T) []livePlane {
	t.Helper()
	found := map[string]livePlane{}
	for _, name := range []string{"nginx", "haproxy", "traefik"} {
		k := dataplane.KindOf(name)
		for _, bin := range k.Installed() {
			short, _, err := k.Version(context.Background(), bin)
			if err != nil {
				t.Fatal(err)
			}
			p := livePlane{name: name, version: short, bin: bin}
			if _, ok := found[p.target()]; !ok {
				found[p.target()] = p
			}
		}
	}
	var out []livePlane
	for _, tg := range diffPlanes {
		p, ok := found[tg]
		switch {
		case ok:
			out = append(out, p)
		case os.Getenv("CI") == "true":
			t.Errorf("%s is required in CI but was not found (run `make test`)", tg)
		default:
			t.Logf("%s not installed: the pairs with it are skipped", tg)
		}
	}
	return out
}

// explainTimelines is gwretry explain's reading of the example's
// configuration on p, by rule and method class.
func explainTimelines(t *testing.T, p livePlane, flags []string) map[ruleKey]translate.Timeline {
	t.Helper()
	return explainFile(t, p, example, flags)
}

// explainFile is gwretry explain's reading of file's configuration on p.
func explainFile(t *testing.T, p livePlane, file string, flags []string) map[ruleKey]translate.Timeline {
	t.Helper()
	code, stdout, stderr := gwretry(t, "", append([]string{"explain", file, "--target", p.target(), "-o", "json"}, flags...)...)
	if code != exitOK {
		t.Fatalf("explain: exit %d\n%s", code, stderr)
	}
	var ex translate.Explanation
	if err := json.Unmarshal([]byte(stdout), &ex); err != nil {
		t.Fatal(err)
	}
	out := map[ruleKey]translate.Timeline{}
	for _, tl := range ex.Timelines {
		out[ruleKey{tl.Rule, tl.Methods}] = tl
	}
	return out
}

// timerOf is the timer that cuts a try ("idle 1s" -> 1s), or 0 for none
// or one that cannot be read.
func timerOf(tl translate.Timeline) time.Duration {
	if len(tl.Tries) == 0 {
		return 0
	}
	_, v, _ := strings.Cut(tl.Tries[0].Timeout, " ")
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0
	}
	return d
}

// observePlane generates the example's configuration for p, runs it, and
// sends every observation to every rule and method class.
func observePlane(t *testing.T, p livePlane, listen string, flags []string, tls map[ruleKey]translate.Timeline, servers []*flaky.Server) map[ruleKey]map[string]prove.Result {
	t.Helper()
	return observeScene(t, p, exampleScene, listen, flags, tls, servers)
}

// observeScene generates sc's configuration for p, runs it, and sends
// every observation to every rule and method class.
func observeScene(t *testing.T, p livePlane, sc liveScene, listen string, flags []string, tls map[ruleKey]translate.Timeline, servers []*flaky.Server) map[ruleKey]map[string]prove.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	args := append([]string{"translate", sc.file, "--target", p.target(), "-o", out, "--report", "none"}, flags...)
	if code, _, stderr := gwretry(t, "", args...); code != exitOK {
		t.Fatalf("translate: exit %d\n%s", code, stderr)
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
	results := observeRules(t, p.target(), addr, sc, tls, servers)
	if t.Failed() {
		t.Logf("proxy output:\n%s\nconfiguration:\n%s", proxy.Output(), prove.ConfigText(out, p.name))
	}
	return results
}

// observeRules sends every observation to every rule and method class of
// tls to the proxy on addr, which runs sc's configuration.
func observeRules(t *testing.T, target, addr string, sc liveScene, tls map[ruleKey]translate.Timeline, servers []*flaky.Server) map[ruleKey]map[string]prove.Result {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	waitScene(t, client, addr, sc)

	// Every plane's timer must be within budget for a timed
	// observation of a rule; the pairs compare the same observations.
	keys := make([]ruleKey, 0, len(tls))
	for k := range tls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ruleKey) int { return strings.Compare(a.String(), b.String()) })
	results := map[ruleKey]map[string]prove.Result{}
	for _, k := range keys {
		timer := timerOf(tls[k])
		results[k] = map[string]prove.Result{}
		for i, o := range diffObservations {
			if o.timed && !sc.timed(k) {
				continue
			}
			id := fmt.Sprintf("%s-%d-%d-%s", strings.ReplaceAll(target, "@", "-"), k.rule, i, k.methods)
			method, path := sc.request(k.rule, k.methods, id)
			budget := timer
			if budget == 0 {
				budget = time.Second
			}
			for _, s := range servers {
				s.Handle(path, o.script(budget))
			}
			results[k][o.name] = sendOne(t, client, addr, method, path, servers)
		}
	}
	return results
}

// timedRules are the example's rules whose try timer is within
// diffLiveBudget on every data plane the diff is run on (the catalogue
// rule, 1s); checkPair checks this against the timelines.
var timedRules = []int{0}

func timedRule(k ruleKey) bool { return slices.Contains(timedRules, k.rule) }

// waitScene polls sc's ready path until the proxy routes it to the
// scripted backend.
func waitScene(t *testing.T, client *http.Client, addr string, sc liveScene) {
	t.Helper()
	deadline := time.Now().Add(dataplane.ReadyTimeout)
	last := ""
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+sc.ready, nil)
		req.Host = "shop.example.com"
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && resp.Header.Get(flaky.EndpointHeader) == sc.backend {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the proxy on %s never routed %s to the %s backend: %s", addr, sc.ready, sc.backend, last)
}

// sendOne sends one request of the example's host and records what the
// client and the backends saw.
func sendOne(t *testing.T, client *http.Client, addr, method, path string, servers []*flaky.Server) prove.Result {
	t.Helper()
	r := requestOne(t, client, addr, method, path)
	for _, s := range servers {
		if !s.WaitIdle(5 * time.Second) {
			t.Errorf("%s %s: backend %s still busy 5s after the answer", method, path, s.Name())
		}
	}
	for _, h := range flaky.Merge(servers...) {
		if h.Path == path {
			r.Hits = append(r.Hits, h)
		}
	}
	return r
}

// requestOne sends one request of the example's host and records what the
// client saw: the status, whether the body came whole, and how long it
// took.
func requestOne(t errorer, client *http.Client, addr, method, path string) prove.Result {
	body := ""
	if method == http.MethodPost {
		body = `{"order":"diff-live"}`
	}
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Errorf("%v", err)
		return prove.Result{Method: method, Path: path, Err: err.Error()}
	}
	req.Host = "shop.example.com"
	r := prove.Result{Method: method, Path: path, BodyBytes: len(body)}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		r.Err = err.Error()
	} else {
		r.Status = resp.StatusCode
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		// A slow body is complete when all its chunks arrived.
		want := ""
		var n int
		if _, err := fmt.Sscanf(string(data), "chunk of %d\n", &n); err == nil && n > 0 {
			want = strings.Repeat(flaky.ChunkedBody(n), n)
		}
		r.Complete = err == nil && (want == "" || string(data) == want)
		if err != nil {
			r.Err = err.Error()
		}
	}
	r.Duration = time.Since(start)
	return r
}

// liveDiff runs gwretry diff on the example for a pair, with the endpoints
// the live runs use, and checks that it is the diff of the example as it
// stands (the same claims, so the live runs prove what users read).
func liveDiff(t *testing.T, a, b string, endpointFlags []string) *diffReport {
	t.Helper()
	return diffOf(t, example, a, b, endpointFlags)
}

// diffOf runs gwretry diff on file for a pair, with the endpoints the live
// runs use, and checks that it is the diff of file as it stands.
func diffOf(t *testing.T, file, a, b string, endpointFlags []string) *diffReport {
	t.Helper()
	get := func(flags ...string) (*diffReport, string) {
		code, stdout, stderr := gwretry(t, "", append([]string{"diff", file, "--from", a, "--to", b, "-o", "json"}, flags...)...)
		if code != exitOK {
			t.Fatalf("diff %s %s: exit %d\n%s", a, b, code, stderr)
		}
		var d diffReport
		if err := json.Unmarshal([]byte(stdout), &d); err != nil {
			t.Fatal(err)
		}
		return &d, stdout
	}
	d, live := get(endpointFlags...)
	if _, plain := get(); plain != live {
		t.Errorf("the diff with the live endpoints is not the example's diff:\n%s\nwant\n%s", live, plain)
	}
	return d
}

// Slack of the duration checks on loopback on a loaded machine: a pause
// can only be seen longer than the proxy's (earlySlack covers rounding),
// and each try may start lateSlack late.
const (
	earlySlack = 5 * time.Millisecond
	lateSlack  = 250 * time.Millisecond
)

// checkPair holds the diff of a pair against both runs, rule by rule and
// method class, and returns the matrix lines of the pair.
func checkPair(t errorer, d *diffReport, a, b *planeRun) []string {
	pair := a.plane.target() + " -> " + b.plane.target()
	claimed := map[ruleKey]map[string]difference{}
	for _, rd := range d.Rules {
		k := ruleKey{rd.Rule, rd.Methods}
		claimed[k] = map[string]difference{}
		for _, x := range rd.Differences {
			claimed[k][x.What] = x
		}
		if _, ok := a.timelines[k]; !ok {
			t.Errorf("the diff names %s, which explain does not", k)
		}
	}
	keys := make([]ruleKey, 0, len(a.timelines))
	for k := range a.timelines {
		keys = append(keys, k)
		if _, ok := b.timelines[k]; !ok {
			t.Errorf("%s: %s has no timeline on %s", pair, k, b.plane.target())
		}
	}
	slices.SortFunc(keys, func(x, y ruleKey) int { return strings.Compare(x.String(), y.String()) })
	var lines []string
	for _, k := range keys {
		c := aspectCheck{t: t, pair: pair, key: k, claimed: claimed[k], a: a, b: b}
		c.check()
		state := "same"
		if len(claimed[k]) > 0 {
			state = "differs"
		}
		lines = append(lines, fmt.Sprintf("%-28s %-14s %-7s %s", pair, k, state, strings.Join(c.cells, "; ")))
	}
	return lines
}

// errorer is the part of testing.T the checks report to (a recorder in
// the tamper check).
type errorer interface {
	Errorf(format string, args ...any)
}

// errorRecorder records the errors of a check instead of failing.
type errorRecorder struct{ errs []string }

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// aspectCheck checks the aspects of one rule and method class of a pair.
type aspectCheck struct {
	t       errorer
	pair    string
	key     ruleKey
	claimed map[string]difference
	a, b    *planeRun
	cells   []string
}

// verdict records one aspect: differ says whether the diff calls it
// different; seen whether the observations can tell, and if so obsDiffer
// whether they differ; why says what was (or could not be) observed.
func (c *aspectCheck) verdict(what string, seen, obsDiffer bool, why string) {
	x, differ := c.claimed[what]
	claim := "same"
	if differ {
		claim = "DIFF"
	}
	switch {
	case !seen:
		c.cells = append(c.cells, fmt.Sprintf("%s %s -(%s)", what, claim, why))
	case differ != obsDiffer:
		c.cells = append(c.cells, fmt.Sprintf("%s %s FALSE", what, claim))
		if differ {
			c.t.Errorf("%s, %s: the diff says %s differs (%q | %q), the proxies behave the same: %s", c.pair, c.key, what, x.From, x.To, why)
		} else {
			c.t.Errorf("%s, %s: the diff says %s is the same, the proxies behave differently: %s", c.pair, c.key, what, why)
		}
	default:
		c.cells = append(c.cells, fmt.Sprintf("%s %s OK", what, claim))
	}
}

func (c *aspectCheck) results(r *planeRun) map[string]prove.Result { return r.results[c.key] }

func (c *aspectCheck) check() {
	ra, rb := c.results(c.a), c.results(c.b)
	ta, tb := c.a.timelines[c.key], c.b.timelines[c.key]
	na, nb := c.a.plane.target(), c.b.plane.target()
	if ta.Unread || tb.Unread {
		c.verdict("read back", false, false, "a side is not read back")
		return
	}
	sides := func(f func(map[string]prove.Result) string) (string, string) { return f(ra), f(rb) }

	// answer: every request reached the backend, or the proxy answered.
	sa, sb := sides(answerSeen)
	c.verdict("answer", true, sa != sb, fmt.Sprintf("%s %s, %s %s", na, sa, nb, sb))

	// retried on: which scripted failures are retried, and whether the
	// client then gets the answer of the retry.
	sa, sb = sides(retriedSeen)
	c.verdict("retried on", true, sa != sb, fmt.Sprintf("%s: %s; %s: %s", na, sa, nb, sb))

	// retries: the tries of the failures both retry.
	var both []string
	triesDiffer := false
	for _, o := range diffObservations {
		x, okx := ra[o.name]
		y, oky := rb[o.name]
		if okx && oky && !o.timed && strings.HasSuffix(o.name, "every try") && len(x.Hits) > 1 && len(y.Hits) > 1 {
			both = append(both, fmt.Sprintf("%s %d|%d tries", o.name, len(x.Hits), len(y.Hits)))
			triesDiffer = triesDiffer || len(x.Hits) != len(y.Hits)
		}
	}
	if len(both) == 0 {
		c.verdict("retries", false, false, "no scripted failure is retried by both")
	} else {
		c.verdict("retries", true, triesDiffer, strings.Join(both, ", "))
	}

	// try cut by, worst case: rules whose timers are within budget.
	timerA, timerB := timerOf(ta), timerOf(tb)
	timed := c.a.isTimed(c.key)
	inBudget := timerA > 0 && timerB > 0 && timerA <= diffLiveBudget && timerB <= diffLiveBudget
	if timed != inBudget {
		c.t.Errorf("%s, %s: timers %v and %v, yet the test %s observe it (timedRules is stale)", c.pair, c.key, timerA, timerB, map[bool]string{true: "does", false: "does not"}[timed])
	}
	if !timed {
		why := fmt.Sprintf("timers %q|%q: longer than the test waits", tryTimerText(ta), tryTimerText(tb))
		c.verdict("try cut by", false, false, why)
	} else {
		sa, sb = sides(cutSeen)
		differ := sa != sb
		fa, fb := firstCut(ra), firstCut(rb)
		c.cutWithin(na, timerA, fa)
		c.cutWithin(nb, timerB, fb)
		if fa > 0 && fb > 0 && (fa-fb > worstMargin || fb-fa > worstMargin) {
			differ = true
		}
		sa += fmt.Sprintf(" (first cut after %v)", fa.Round(10*time.Millisecond))
		sb += fmt.Sprintf(" (first cut after %v)", fb.Round(10*time.Millisecond))
		c.verdict("try cut by", true, differ, fmt.Sprintf("%s: %s; %s: %s", na, sa, nb, sb))
	}

	// pause between tries: each side's gaps within its own claim; they
	// tell the sides apart only when one falls outside the other's. A
	// request whose every try is refused (observed where the test runs the
	// scene a second time with refused endpoints) shows the pauses of a side
	// that retries nothing else (Traefik): it lasts the sum of its pauses.
	ga, gb := triesGaps(ra), triesGaps(rb)
	c.pauseWithin(na, ta, ga)
	c.pauseWithin(nb, tb, gb)
	fa, okA := ra[refusedObservation]
	fb, okB := rb[refusedObservation]
	refused := okA && okB
	if refused {
		c.refusedWithin(na, ta, fa)
		c.refusedWithin(nb, tb, fb)
	}
	gaps := len(ga) > 0 && len(gb) > 0
	switch {
	case !gaps && !refused:
		none := na
		if len(ga) > 0 {
			none = nb
		}
		c.verdict("pause between tries", false, false, none+" retries none of the scripted failures")
	default:
		apart := gaps && (outsideClaim(ga, tb) || outsideClaim(gb, ta)) ||
			refused && (outsideRefused(fa, tb) || outsideRefused(fb, ta))
		seen := fmt.Sprintf("gaps %v|%v", ga, gb)
		if refused {
			seen += fmt.Sprintf(", every try refused %v|%v", fa.Duration.Round(time.Millisecond), fb.Duration.Round(time.Millisecond))
		}
		_, differ := c.claimed["pause between tries"]
		if differ && !apart {
			c.verdict("pause between tries", false, false, seen+": within both claims")
		} else {
			c.verdict("pause between tries", true, apart, seen)
		}
	}

	// worst case: each side's silent request must end within its own worst
	// case; where both sides retry a try cut by its timer, a request whose
	// every try is silent is the worst case itself, and the sides' times
	// must differ by more than worstMargin exactly when the diff says they
	// differ. Elsewhere (a side that does not retry a cut try: the worst
	// case of every try cut cannot happen there) it is a bound.
	if !timed {
		c.verdict("worst case", false, false, fmt.Sprintf("%s|%s: longer than the test waits", ta.WorstCase, tb.WorstCase))
		return
	}
	sa0, sb0 := ra["silent every try"], rb["silent every try"]
	c.worstWithin(na, ta, sa0)
	c.worstWithin(nb, tb, sb0)
	if len(sa0.Hits) > 1 && len(sb0.Hits) > 1 {
		d := sa0.Duration - sb0.Duration
		c.verdict("worst case", true, d > worstMargin || -d > worstMargin, fmt.Sprintf("every try silent: %v|%v (claimed %s|%s)",
			sa0.Duration.Round(10*time.Millisecond), sb0.Duration.Round(10*time.Millisecond), ta.WorstCase, tb.WorstCase))
		return
	}
	_, differ := c.claimed["worst case"]
	claim := map[bool]string{true: "DIFF", false: "same"}[differ]
	c.cells = append(c.cells, fmt.Sprintf("worst case %s bound(%v<=%s, %v<=%s)", claim,
		sa0.Duration.Round(10*time.Millisecond), ta.WorstCase, sb0.Duration.Round(10*time.Millisecond), tb.WorstCase))
}

// refusedObservation is the name of the result of a request whose every
// try is refused (TestDiffTimersLive's second run of each plane).
const refusedObservation = "refused every try"

// worstMargin is how far apart two sides' times of a request whose every
// try is silent must be to tell their worst cases apart (and how close to
// call them the same).
const worstMargin = 300 * time.Millisecond

// refusedWindow is how long a request whose every try is refused takes on
// tl's side: the sum of its pauses (the turn-around included at most),
// or at once when it does not retry a refused connection.
func refusedWindow(tl translate.Timeline) (lo, hi time.Duration) {
	if tl.Retries == 0 || !slices.ContainsFunc(tl.RetriedOn, func(s string) bool { return strings.HasPrefix(s, "connection failures") }) {
		return 0, lateSlack
	}
	for _, try := range tl.Tries[1:] {
		lo += try.PauseMin.D
		hi += try.PauseMax.D
	}
	return lo, hi + lateSlack + time.Duration(len(tl.Tries))*20*time.Millisecond
}

// outsideRefused reports whether r, a request whose every try was
// refused, took a time outside tl's pauses.
func outsideRefused(r prove.Result, tl translate.Timeline) bool {
	lo, hi := refusedWindow(tl)
	return r.Duration < lo-earlySlack || r.Duration > hi
}

// refusedWithin fails the test when a request whose every try was refused
// took a time its own side's pauses do not allow.
func (c *aspectCheck) refusedWithin(name string, tl translate.Timeline, r prove.Result) {
	if outsideRefused(r, tl) {
		lo, hi := refusedWindow(tl)
		c.t.Errorf("%s, %s: on %s a request whose every try was refused took %v, its pauses (%v) allow %v to %v",
			c.pair, c.key, name, r.Duration.Round(time.Millisecond), pauses(tl), lo, hi)
	}
}

func tryTimerText(tl translate.Timeline) string {
	if len(tl.Tries) == 0 {
		return "-"
	}
	return tl.Tries[0].Timeout
}

// answerSeen: "proxies" when every request reached the backend, else the
// status the proxy answered by itself.
func answerSeen(rs map[string]prove.Result) string {
	for _, o := range diffObservations {
		if r, ok := rs[o.name]; ok && len(r.Hits) == 0 {
			return fmt.Sprintf("answers %d itself", r.Status)
		}
	}
	return "proxies"
}

// retriedSeen lists, per scripted failure, whether it was retried (the
// backend saw more than one try) or, for a first try that fails alone,
// the status the client got.
func retriedSeen(rs map[string]prove.Result) string {
	var parts []string
	for _, o := range diffObservations {
		r, ok := rs[o.name]
		switch {
		case !ok || strings.HasPrefix(o.name, "body"):
		case strings.HasSuffix(o.name, "every try"):
			s := "not retried"
			if len(r.Hits) > 1 {
				s = "retried"
			}
			parts = append(parts, o.name+" "+s)
		default:
			parts = append(parts, fmt.Sprintf("%s: client %d", o.name, r.Status))
		}
	}
	return strings.Join(parts, ", ")
}

// cutSeen says which silences cut the try: a silent try, a body that
// stalls past the timer, a steady body longer than the timer.
func cutSeen(rs map[string]prove.Result) string {
	silent := rs["silent every try"]
	cut := func(b bool) string {
		if b {
			return "cut"
		}
		return "not cut"
	}
	return fmt.Sprintf("silent try %s, stalled body %s, steady body %s",
		cut(len(silent.Hits) > 0 && silent.Hits[0].Cancelled), cut(!rs["body stalls"].Complete), cut(!rs["body steady"].Complete))
}

// cutEarly is how much sooner than its timer the backend may see a try
// cut: the proxy starts the timer before the backend reads the request
// (Traefik's once it has written it; seen 10ms early).
const cutEarly = 100 * time.Millisecond

// cutWithin fails the test when a side's first silent try was cut other
// than by its own timer: more than cutEarly sooner, or more than lateSlack
// later.
func (c *aspectCheck) cutWithin(name string, timer, cut time.Duration) {
	if cut > 0 && (cut < timer-cutEarly || cut > timer+lateSlack) {
		c.t.Errorf("%s, %s: on %s the first silent try was cut after %v, its timer is %v", c.pair, c.key, name, cut.Round(time.Millisecond), timer)
	}
}

// firstCut is how long the first silent try lasted when it was cut.
func firstCut(rs map[string]prove.Result) time.Duration {
	r := rs["silent every try"]
	if len(r.Hits) == 0 || !r.Hits[0].Cancelled {
		return 0
	}
	return r.Hits[0].Duration()
}

// triesGaps are the pauses between the tries of every failure scripted on
// every try, by try: gaps[i] are those before try i+2.
func triesGaps(rs map[string]prove.Result) [][]time.Duration {
	var out [][]time.Duration
	for _, o := range diffObservations {
		r, ok := rs[o.name]
		if !ok || !strings.HasSuffix(o.name, "every try") {
			continue
		}
		for i, g := range r.Gaps() {
			for len(out) <= i {
				out = append(out, nil)
			}
			out[i] = append(out[i], g.Round(time.Millisecond))
		}
	}
	return out
}

// outsideClaim reports whether some gap falls outside tl's pause before
// that try.
func outsideClaim(gs [][]time.Duration, tl translate.Timeline) bool {
	for i, g := range gs {
		if i+1 >= len(tl.Tries) {
			return true
		}
		try := tl.Tries[i+1]
		for _, d := range g {
			if d < try.PauseMin.D-earlySlack || !try.PauseMax.Unbounded && d > try.PauseMax.D+lateSlack {
				return true
			}
		}
	}
	return false
}

// pauseWithin fails the test when a side's gaps leave its own claimed
// pause: the diff would be comparing a reading that is not what runs.
func (c *aspectCheck) pauseWithin(name string, tl translate.Timeline, gs [][]time.Duration) {
	if outsideClaim(gs, tl) {
		c.t.Errorf("%s, %s: %s paused %v between tries, explain (and so the diff) says %v", c.pair, c.key, name, gs, pauses(tl))
	}
}

func pauses(tl translate.Timeline) []string {
	var out []string
	for _, try := range tl.Tries[1:] {
		out = append(out, try.PauseMin.String()+" to "+try.PauseMax.String())
	}
	return out
}

// worstWithin fails the test when a request whose every try is silent
// outlives the side's worst case.
func (c *aspectCheck) worstWithin(name string, tl translate.Timeline, r prove.Result) {
	late := time.Duration(len(r.Hits)+1) * lateSlack
	if !tl.WorstCase.Unbounded && r.Duration > tl.WorstCase.D+late {
		c.t.Errorf("%s, %s: on %s a request whose every try was silent took %v, the diff's worst case is %s (+%v):\n%s",
			c.pair, c.key, name, r.Duration.Round(time.Millisecond), tl.WorstCase, late, r)
	}
}

// checkTampered holds doctored diffs against the same observations: one
// that leaves out what nginx and Traefik do differently with rule 2, one
// that says nginx and HAProxy differ where they do not. Both must fail.
func checkTampered(t *testing.T, runs map[string]*planeRun) {
	ng, tr, hp := runs["nginx@1.26"], runs["traefik@3.6"], runs["haproxy@3.0"]
	if ng == nil || tr == nil || hp == nil {
		t.Skip("needs nginx 1.26, HAProxy 3.0 and Traefik 3.6")
	}
	rec := &errorRecorder{}
	checkPair(rec, &diffReport{Rules: []ruleDiff{}}, ng, tr)
	if !slices.ContainsFunc(rec.errs, func(e string) bool {
		return strings.Contains(e, "rule 2 other: the diff says retried on is the same, the proxies behave differently")
	}) {
		t.Errorf("a diff that says nginx and Traefik do the same passed:\n%s", strings.Join(rec.errs, "\n"))
	}
	rec = &errorRecorder{}
	lie := &diffReport{Rules: []ruleDiff{{Route: "shop/storefront", Rule: 0, Methods: translate.NonIdempotent,
		Differences: []difference{{What: "retried on", From: "nothing", To: "responses 503"}, {What: "try cut by", From: "idle 1s", To: "headers 1s"}}}}}
	checkPair(rec, lie, ng, hp)
	for _, want := range []string{"rule 0 POST: the diff says retried on differs", "rule 0 POST: the diff says try cut by differs"} {
		if !slices.ContainsFunc(rec.errs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("a diff that says nginx and HAProxy differ where they do not passed (%q):\n%s", want, strings.Join(rec.errs, "\n"))
		}
	}
}

// observedText shows a plane's observations: per rule and method class,
// each scripted failure's tries, the client's status and how long it
// waited.
func observedText(r *planeRun) string {
	keys := make([]ruleKey, 0, len(r.results))
	for k := range r.results {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ruleKey) int { return strings.Compare(a.String(), b.String()) })
	var lines []string
	for _, k := range keys {
		var parts []string
		for _, o := range diffObservations {
			res, ok := r.results[k][o.name]
			if !ok {
				continue
			}
			s := fmt.Sprintf("%s: %d tries, %d", o.name, len(res.Hits), res.Status)
			if !res.Complete {
				s += " cut"
			}
			parts = append(parts, s+fmt.Sprintf(" in %v", res.Duration.Round(10*time.Millisecond)))
		}
		lines = append(lines, fmt.Sprintf("  %-13s %s", k, strings.Join(parts, "; ")))
	}
	return strings.Join(lines, "\n")
}
