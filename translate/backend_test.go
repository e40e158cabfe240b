package translate

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
)

// fakeBackend returns canned output, to test Run's contract checks.
type fakeBackend struct {
	name string
	out  func(m *Model) *Output
}

func (f fakeBackend) Name() string       { return f.name }
func (f fakeBackend) Versions() []string { return []string{"1.0", "2.1"} }
func (f fakeBackend) Scope() Scope       { return GatewayScope() }
func (f fakeBackend) Generate(m *Model, _ Options) (*Output, error) {
	return f.out(m), nil
}

// honourAll returns one honoured finding per feature.
func honourAll(m *Model) *Output {
	out := &Output{Files: []File{{Path: "fake/conf", Data: []byte("x")}}}
	for _, r := range m.Rules {
		for _, f := range r.Features() {
			out.Findings = append(out.Findings, statusFinding(r, f, Honoured, ""))
		}
	}
	return out
}

func TestParseTargets(t *testing.T) {
	avail := []Backend{fakeBackend{name: "a"}, fakeBackend{name: "b"}}
	tests := []struct {
		spec, want, err string
	}{
		{spec: "a", want: "a@2.1"},
		{spec: "b@1.0,a", want: "b@1.0 a@2.1"},
		{spec: "a@2.1.7", want: "a@2.1"},
		{spec: "all", want: "a@2.1 b@2.1"},
		{spec: "a@1.0,all", want: "a@1.0 b@2.1"},
		{spec: "c", err: "unknown target"},
		{spec: "a@3.0", err: "supported versions are 1.0, 2.1"},
		{spec: "a@2", err: "unsupported version"},
		{spec: "a@2.1.x", err: "unsupported version"},
		{spec: "a,a@1.0", err: "given twice"},
		{spec: " , ", err: "no target"},
	}
	for _, tt := range tests {
		ts, err := ParseTargets(tt.spec, avail)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseTargets(%q) error %v, want %q", tt.spec, err, tt.err)
			}
			continue
		}
		var got []string
		for _, t := range ts {
			got = append(got, t.Backend.Name()+"@"+t.Version)
		}
		if err != nil || strings.Join(got, " ") != tt.want {
			t.Errorf("ParseTargets(%q) = %q, %v; want %q", tt.spec, got, err, tt.want)
		}
	}
}

func TestRunChecksTheContract(t *testing.T) {
	m := build(t, routeWithRule("    retry: {}\n    timeouts: {request: 1s}\n")+"  - backendRefs: [{name: x, group: g.io, kind: K, port: 1}]\n    retry: {}\n", ResolveOptions{})
	res, err := Run(m, []Target{{Backend: fakeBackend{name: "fake", out: honourAll}, Version: "1.0"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Routes != 1 || r.Rules != 2 || len(r.Findings) != 3+3 || r.Targets[0].Version != "1.0" {
		t.Errorf("report %+v", r)
	}
	for _, f := range r.Findings {
		if f.Target != "fake" {
			t.Errorf("finding without target: %+v", f)
		}
		if f.Rule == 1 && f.Feature == FeatureBackendRefs && f.Status != Honoured {
			t.Errorf("dead rule finding %+v, want the backend's own", f)
		}
	}
	breakers := map[string]func(m *Model) *Output{
		"no finding for": func(m *Model) *Output { o := honourAll(m); o.Findings = o.Findings[1:]; return o },
		"two findings":   func(m *Model) *Output { o := honourAll(m); o.Findings = append(o.Findings, o.Findings[0]); return o },
		"is not in the catalogue": func(m *Model) *Output {
			o := honourAll(m)
			o.Findings[0].AddCaveats(report.NewCaveat("NoSuchCaveat"))
			return o
		},
		"no reason": func(m *Model) *Output {
			o := honourAll(m)
			o.Findings[0].Decision = report.Decision{}
			return o
		},
		"but reason Configured with 0 caveats gives honoured": func(m *Model) *Output {
			o := honourAll(m)
			o.Findings[0].Status = Approximated
			return o
		},
		"does not set": func(m *Model) *Output {
			o := honourAll(m)
			o.Findings = append(o.Findings, statusFinding(m.Rules[0], FeatureRetryBackoff, Honoured, ""))
			return o
		},
		"bad output path": func(m *Model) *Output { o := honourAll(m); o.Files[0].Path = "../etc/passwd"; return o },
	}
	for want, out := range breakers {
		if _, err := Run(m, []Target{{Backend: fakeBackend{name: "fake", out: out}, Version: "1.0"}}, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("broken backend: error %v, want %q", err, want)
		}
	}
}

// judgingBackend honours everything and observes what obs says.
type judgingBackend struct {
	fakeBackend
	obs func(r *Rule) Behaviour
}

func (j judgingBackend) Observe(m *Model, _ Options, _ []File) (map[string]map[MethodClass]Behaviour, error) {
	out := map[string]map[MethodClass]Behaviour{}
	for _, r := range m.Rules {
		out[r.Name] = map[MethodClass]Behaviour{}
		for _, c := range r.MethodClasses() {
			out[r.Name][c] = j.obs(r)
		}
	}
	return out, nil
}

// TestRunJudgesHonouredClaims: a backend whose configuration (as its judge
// reads it) does less than its honoured findings say makes Run fail with an
// internal error that names both sides.
func TestRunJudgesHonouredClaims(t *testing.T) {
	m := build(t, routeWithRule("    retry: {attempts: 2, codes: [503], backoff: 100ms}\n    timeouts: {request: 10s, backendRequest: 1s}\n"), ResolveOptions{})
	exact := func(r *Rule) Behaviour {
		return Behaviour{Retries: 2, Codes: []int{503}, ConnErrors: ConnRetryAll, MaxRetriedBody: -1, MinGap: 100 * time.Millisecond,
			TryTimeout: Timer{TimerTotal, time.Second}, TimeoutRetried: true, RequestTimeout: Timer{TimerTotal, 10 * time.Second}, TimeoutStatus: 504}
	}
	run := func(obs func(r *Rule) Behaviour) error {
		_, err := Run(m, []Target{{Backend: judgingBackend{fakeBackend{name: "fake", out: honourAll}, obs}, Version: "1.0"}}, false)
		return err
	}
	if err := run(exact); err != nil {
		t.Fatalf("exact behaviour rejected: %v", err)
	}
	breaks := map[string]func(b *Behaviour){
		"retries 1 times, not 2":           func(b *Behaviour) { b.Retries = 1 },
		"retries codes":                    func(b *Behaviour) { b.Codes = nil },
		"not all of them":                  func(b *Behaviour) { b.ConnErrors = ConnRetryUnsent },
		"pause of only":                    func(b *Behaviour) { b.MinGap = 0 },
		"cuts each try by idle":            func(b *Behaviour) { b.TryTimeout.Kind = TimerIdle },
		"does not retry a try cut":         func(b *Behaviour) { b.TimeoutRetried = false },
		"cuts the request by none":         func(b *Behaviour) { b.RequestTimeout = Timer{Kind: TimerNone} },
		"larger than 16384 bytes":          func(b *Behaviour) { b.MaxRetriedBody = 16384 },
		"re-send the request on its own":   func(b *Behaviour) { b.ExtraRetries = true },
		"answers 502, not 504":             func(b *Behaviour) { b.TimeoutStatus = 502 },
		"never contacts a backend":         func(b *Behaviour) { b.Answer = 500 },
		"nothing about non-idempotent":     nil,
		"the report claims more than the ": func(b *Behaviour) { b.Retries = 0 },
	}
	for want, mutate := range breaks {
		obs := func(r *Rule) Behaviour { b := exact(r); mutate(&b); return b }
		if mutate == nil {
			continue
		}
		err := run(obs)
		var ie *InternalError
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &ie) {
			t.Errorf("%s: Run error %v", want, err)
		}
	}
	// Observing only one method class of a rule that matches both fails.
	_, err := Run(m, []Target{{Backend: partialJudge{judgingBackend{fakeBackend{name: "fake", out: honourAll}, exact}}, Version: "1.0"}}, false)
	if err == nil || !strings.Contains(err.Error(), "nothing about non-idempotent") {
		t.Errorf("partial observation: %v", err)
	}
}

// TestExplainChecksTheContract: Explain runs a target as Run does, so a
// backend that breaks the findings contract or panics fails there too
// instead of being explained.
func TestExplainChecksTheContract(t *testing.T) {
	m := build(t, routeWithRule("    retry: {attempts: 2}\n"), ResolveOptions{})
	exact := func(r *Rule) Behaviour {
		return Behaviour{Retries: 2, ConnErrors: ConnRetryAll, MaxRetriedBody: -1, TimeoutStatus: 504}
	}
	explain := func(out func(m *Model) *Output) error {
		_, err := Explain(m, []Target{{Backend: judgingBackend{fakeBackend{name: "fake", out: out}, exact}, Version: "1.0"}}, false)
		return err
	}
	if err := explain(honourAll); err != nil {
		t.Fatalf("a backend that keeps the contract: %v", err)
	}
	for want, out := range map[string]func(m *Model) *Output{
		"no finding for": func(m *Model) *Output { o := honourAll(m); o.Findings = o.Findings[1:]; return o },
		"two findings":   func(m *Model) *Output { o := honourAll(m); o.Findings = append(o.Findings, o.Findings[0]); return o },
		"panic: boom":    func(*Model) *Output { panic("boom") },
	} {
		err := explain(out)
		var ie *InternalError
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &ie) {
			t.Errorf("%s: Explain error %v", want, err)
		}
	}
}

type partialJudge struct{ judgingBackend }

func (p partialJudge) Observe(m *Model, o Options, f []File) (map[string]map[MethodClass]Behaviour, error) {
	out, err := p.judgingBackend.Observe(m, o, f)
	for _, byClass := range out {
		delete(byClass, NonIdempotent)
	}
	return out, err
}

func TestLookupVersion(t *testing.T) {
	table := []string{"1.0", "2.1"}
	id := func(s string) string { return s }
	for version, want := range map[string]string{"": "2.1", "1.0": "1.0", "2.1": "2.1"} {
		if got, err := LookupVersion(table, id, version); err != nil || got != want {
			t.Errorf("LookupVersion(%q) = %q, %v; want %q", version, got, err, want)
		}
	}
	if _, err := LookupVersion(table, id, "3.0"); err == nil || !strings.Contains(err.Error(), "supported: 1.0, 2.1") {
		t.Errorf("LookupVersion(3.0) error %v", err)
	}
}

// TestInOrder: outputs are handed on in index order whatever order they
// finish in, at most window are held at once, and the first error in index
// order stops it, whichever failed first.
func TestInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	tests := []struct {
		name     string
		n        int
		window   int
		failGen  int // -1: none
		failThen int // -1: none
		want     string
		handed   int // how many then is called for
	}{
		{name: "all", n: 7, window: 3, failGen: -1, failThen: -1, handed: 7},
		{name: "window 1", n: 4, window: 1, failGen: -1, failThen: -1, handed: 4},
		{name: "wide window", n: 5, window: 9, failGen: -1, failThen: -1, handed: 5},
		{name: "gen fails", n: 6, window: 3, failGen: 3, failThen: -1, want: "gen 3", handed: 3},
		{name: "first gen fails", n: 6, window: 3, failGen: 0, failThen: -1, want: "gen 0", handed: 0},
		{name: "then fails", n: 6, window: 3, failGen: -1, failThen: 2, want: "then 2", handed: 3},
		{name: "then fails before gen", n: 6, window: 3, failGen: 4, failThen: 1, want: "then 1", handed: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			held, maxHeld := 0, 0
			var handed []int
			err := inOrder(tt.n, tt.window, func(i int) (*Output, error) {
				mu.Lock()
				held++
				maxHeld = max(maxHeld, held)
				mu.Unlock()
				// The earlier an index, the longer it takes: they finish
				// out of order.
				time.Sleep(time.Duration(tt.n-i) * 2 * time.Millisecond)
				if i == tt.failGen {
					return nil, fmt.Errorf("gen %d", i)
				}
				return &Output{Notes: []Note{{Text: fmt.Sprint(i)}}}, nil
			}, func(i int, out *Output) error {
				mu.Lock()
				held--
				mu.Unlock()
				if out.Notes[0].Text != fmt.Sprint(i) {
					t.Errorf("then(%d) got the output of %s", i, out.Notes[0].Text)
				}
				handed = append(handed, i)
				if i == tt.failThen {
					return fmt.Errorf("then %d", i)
				}
				return nil
			})
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			for i, h := range handed {
				if h != i {
					t.Fatalf("handed on in order %v", handed)
				}
			}
			if len(handed) != tt.handed {
				t.Errorf("handed on %v, want %d", handed, tt.handed)
			}
			if maxHeld > tt.window {
				t.Errorf("%d outputs held at once, window %d", maxHeld, tt.window)
			}
		})
	}
}

// TestRunToSink: RunTo gives each target's files to the sink in the order
// of the targets, sorted by path, with Parsed dropped; Run collects the
// same files; an error of the sink ends RunTo with that error.
func TestRunToSink(t *testing.T) {
	m := build(t, routeWithRule("    retry: {}\n"), ResolveOptions{})
	files := func(name string) func(m *Model) *Output {
		return func(m *Model) *Output {
			o := honourAll(m)
			o.Files = []File{{Path: name + "/z", Data: []byte("z")}, {Path: name + "/a", Data: []byte("a"), Parsed: NewParsed([]byte("a"), "a")}}
			return o
		}
	}
	var targets []Target
	for _, name := range []string{"c", "a", "b"} {
		targets = append(targets, Target{Backend: fakeBackend{name: name, out: files(name)}, Version: "1.0"})
	}
	var got []string
	res, err := RunTo(m, targets, false, func(tg Target, fs []File) error {
		for _, f := range fs {
			if f.Parsed != nil {
				t.Errorf("%s: Parsed not dropped", f.Path)
			}
			got = append(got, f.Path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "c/a c/z a/a a/z b/a b/z"; strings.Join(got, " ") != want {
		t.Errorf("sink got %q, want %q", strings.Join(got, " "), want)
	}
	if len(res.Files) != 0 || len(res.Report.Targets) != 3 || len(res.Report.Findings) != 3*2 {
		t.Errorf("RunTo result: %d files, report %+v", len(res.Files), res.Report)
	}
	all, err := Run(m, targets, false)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range all.Files {
		paths = append(paths, f.Path)
	}
	if want := "a/a a/z b/a b/z c/a c/z"; strings.Join(paths, " ") != want {
		t.Errorf("Run files %q, want %q", strings.Join(paths, " "), want)
	}
	if !reflect.DeepEqual(all.Report, res.Report) {
		t.Errorf("Run and RunTo reports differ")
	}
	boom := errors.New("disk full")
	calls := 0
	_, err = RunTo(m, targets, false, func(Target, []File) error { calls++; return boom })
	if err != boom || calls != 1 {
		t.Errorf("sink error: RunTo returned %v after %d call(s), want %v after 1", err, calls, boom)
	}
}
