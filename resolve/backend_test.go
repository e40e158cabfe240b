package resolve

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// fakeBackend returns canned output, to test Run's contract checks.
type fakeBackend struct {
	name string
	out  func(m *translate.Model) *translate.Output
}

func (f fakeBackend) Name() string           { return f.name }
func (f fakeBackend) Versions() []string     { return []string{"1.0", "2.1"} }
func (f fakeBackend) Scope() translate.Scope { return translate.GatewayScope() }
func (f fakeBackend) Generate(m *translate.Model, _ translate.Options) (*translate.Output, error) {
	return f.out(m), nil
}

// honourAll returns one honoured finding per feature.
func honourAll(m *translate.Model) *translate.Output {
	out := &translate.Output{Files: []translate.File{{Path: "fake/conf", Data: []byte("x")}}}
	for _, r := range m.Rules {
		for _, f := range r.Features() {
			out.Findings = append(out.Findings, statusFinding(r, f, translate.Honoured, ""))
		}
	}
	return out
}

// provenBackend is a fakeBackend whose default version (the one the live
// tests prove) is not its newest.
type provenBackend struct {
	fakeBackend
	def string
}

func (p provenBackend) DefaultVersion() string { return p.def }

func TestParseTargets(t *testing.T) {
	avail := []translate.Backend{fakeBackend{name: "a"}, fakeBackend{name: "b"},
		provenBackend{fakeBackend{name: "p"}, "1.0"}, provenBackend{fakeBackend{name: "q"}, "9.9"}}
	tests := []struct {
		spec, want, err string
	}{
		{spec: "a", want: "a@2.1"},
		{spec: "b@1.0,a", want: "b@1.0 a@2.1"},
		{spec: "a@2.1.7", want: "a@2.1"},
		{spec: "all", want: "a@2.1 b@2.1 p@1.0 q@2.1"},
		{spec: "p", want: "p@1.0"},
		{spec: "p@2.1", want: "p@2.1"},
		{spec: "q", want: "q@2.1"}, // a default it does not know is not assumed
		{spec: "a@1.0,all", want: "a@1.0 b@2.1 p@1.0 q@2.1"},
		{spec: "c", err: "unknown target"},
		{spec: "a@3.0", err: "supported versions are 1.0, 2.1"},
		{spec: "a@2", err: "unsupported version"},
		{spec: "a@2.1.x", err: "unsupported version"},
		{spec: "a,a@1.0", err: "given twice"},
		{spec: " , ", err: "no target"},
	}
	for _, tt := range tests {
		ts, err := translate.ParseTargets(tt.spec, avail)
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
	m := build(t, routeWithRule("    retry: {}\n    timeouts: {request: 1s}\n")+"  - backendRefs: [{name: x, group: g.io, kind: K, port: 1}]\n    retry: {}\n", translate.ResolveOptions{})
	res, err := translate.Run(m, []translate.Target{{Backend: fakeBackend{name: "fake", out: honourAll}, Version: "1.0"}}, false)
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
		if f.Rule == 1 && f.Feature == translate.FeatureBackendRefs && f.Status != translate.Honoured {
			t.Errorf("dead rule finding %+v, want the backend's own", f)
		}
	}
	breakers := map[string]func(m *translate.Model) *translate.Output{
		"no finding for": func(m *translate.Model) *translate.Output { o := honourAll(m); o.Findings = o.Findings[1:]; return o },
		"two findings": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Findings = append(o.Findings, o.Findings[0])
			return o
		},
		"is not in the catalogue": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Findings[0].AddCaveats(report.NewCaveat("NoSuchCaveat"))
			return o
		},
		"no reason": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Findings[0].Decision = report.Decision{}
			return o
		},
		"but reason Configured with 0 caveats gives honoured": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Findings[0].Status = translate.Approximated
			return o
		},
		"does not set": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Findings = append(o.Findings, statusFinding(m.Rules[0], translate.FeatureRetryBackoff, translate.Honoured, ""))
			return o
		},
		"bad output path": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Files[0].Path = "../etc/passwd"
			return o
		},
	}
	for want, out := range breakers {
		if _, err := translate.Run(m, []translate.Target{{Backend: fakeBackend{name: "fake", out: out}, Version: "1.0"}}, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("broken backend: error %v, want %q", err, want)
		}
	}
}

// judgingBackend honours everything and observes what obs says.
type judgingBackend struct {
	fakeBackend
	obs func(r *translate.Rule) translate.Behaviour
}

func (j judgingBackend) Observe(m *translate.Model, _ translate.Options, _ []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	for _, r := range m.Rules {
		out[r.Name] = map[translate.MethodClass]translate.Behaviour{}
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
	m := build(t, routeWithRule("    retry: {attempts: 2, codes: [503], backoff: 100ms}\n    timeouts: {request: 10s, backendRequest: 1s}\n"), translate.ResolveOptions{})
	exact := func(r *translate.Rule) translate.Behaviour {
		return translate.Behaviour{Retries: 2, Codes: []int{503}, ConnErrors: translate.ConnRetryAll, MaxRetriedBody: -1, MinGap: 100 * time.Millisecond,
			TryTimeout: translate.Timer{Kind: translate.TimerTotal, Value: time.Second}, TimeoutRetried: true, RequestTimeout: translate.Timer{Kind: translate.TimerTotal, Value: 10 * time.Second}, TimeoutStatus: 504}
	}
	run := func(obs func(r *translate.Rule) translate.Behaviour) error {
		_, err := translate.Run(m, []translate.Target{{Backend: judgingBackend{fakeBackend{name: "fake", out: honourAll}, obs}, Version: "1.0"}}, false)
		return err
	}
	if err := run(exact); err != nil {
		t.Fatalf("exact behaviour rejected: %v", err)
	}
	breaks := map[string]func(b *translate.Behaviour){
		"retries 1 times, not 2":           func(b *translate.Behaviour) { b.Retries = 1 },
		"retries codes":                    func(b *translate.Behaviour) { b.Codes = nil },
		`"unsent", not "all"`:              func(b *translate.Behaviour) { b.ConnErrors = translate.ConnRetryUnsent },
		"pause of only":                    func(b *translate.Behaviour) { b.MinGap = 0 },
		"cuts each try by idle":            func(b *translate.Behaviour) { b.TryTimeout.Kind = translate.TimerIdle },
		"does not retry a try cut":         func(b *translate.Behaviour) { b.TimeoutRetried = false },
		"cuts the request by none":         func(b *translate.Behaviour) { b.RequestTimeout = translate.Timer{Kind: translate.TimerNone} },
		"larger than 16384 bytes":          func(b *translate.Behaviour) { b.MaxRetriedBody = 16384 },
		"re-send the request on its own":   func(b *translate.Behaviour) { b.ExtraRetries = true },
		"answers 502, not 504":             func(b *translate.Behaviour) { b.TimeoutStatus = 502 },
		"never contacts a backend":         func(b *translate.Behaviour) { b.Answer = 500 },
		"nothing about non-idempotent":     nil,
		"the report claims more than the ": func(b *translate.Behaviour) { b.Retries = 0 },
	}
	for want, mutate := range breaks {
		obs := func(r *translate.Rule) translate.Behaviour { b := exact(r); mutate(&b); return b }
		if mutate == nil {
			continue
		}
		err := run(obs)
		var ie *translate.InternalError
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &ie) {
			t.Errorf("%s: Run error %v", want, err)
		}
	}
	// A BackendTrafficPolicy's retry condition is the intent: fewer
	// failures retried is exact, more is a contradiction.
	for _, r := range m.Rules {
		r.Retry.On = &translate.RetryOn{Policy: "BackendTrafficPolicy ns/p", Triggers: []string{"connect-failure"}, ConnErrors: translate.ConnRetryUnsent}
	}
	narrow := func(r *translate.Rule) translate.Behaviour {
		b := exact(r)
		b.ConnErrors, b.TimeoutRetried = translate.ConnRetryUnsent, false
		return b
	}
	if err := run(narrow); err != nil {
		t.Errorf("the policy's narrower retry rejected: %v", err)
	}
	for want, mutate := range map[string]func(b *translate.Behaviour){
		`retries connection failures "all", not "unsent"`:   func(b *translate.Behaviour) { b.ConnErrors = translate.ConnRetryAll },
		"which the rule's retry condition does not ask for": func(b *translate.Behaviour) { b.TimeoutRetried = true },
	} {
		err := run(func(r *translate.Rule) translate.Behaviour { b := narrow(r); mutate(&b); return b })
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Run error %v", want, err)
		}
	}
	for _, r := range m.Rules {
		r.Retry.On = nil
	}
	// Observing only one method class of a rule that matches both fails.
	_, err := translate.Run(m, []translate.Target{{Backend: partialJudge{judgingBackend{fakeBackend{name: "fake", out: honourAll}, exact}}, Version: "1.0"}}, false)
	if err == nil || !strings.Contains(err.Error(), "nothing about non-idempotent") {
		t.Errorf("partial observation: %v", err)
	}
}

// TestExplainChecksTheContract: Explain runs a target as Run does, so a
// backend that breaks the findings contract or panics fails there too
// instead of being explained.
func TestExplainChecksTheContract(t *testing.T) {
	m := build(t, routeWithRule("    retry: {attempts: 2}\n"), translate.ResolveOptions{})
	exact := func(r *translate.Rule) translate.Behaviour {
		return translate.Behaviour{Retries: 2, ConnErrors: translate.ConnRetryAll, MaxRetriedBody: -1, TimeoutStatus: 504}
	}
	explain := func(out func(m *translate.Model) *translate.Output) error {
		_, err := translate.Explain(m, []translate.Target{{Backend: judgingBackend{fakeBackend{name: "fake", out: out}, exact}, Version: "1.0"}}, false)
		return err
	}
	if err := explain(honourAll); err != nil {
		t.Fatalf("a backend that keeps the contract: %v", err)
	}
	for want, out := range map[string]func(m *translate.Model) *translate.Output{
		"no finding for": func(m *translate.Model) *translate.Output { o := honourAll(m); o.Findings = o.Findings[1:]; return o },
		"two findings": func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Findings = append(o.Findings, o.Findings[0])
			return o
		},
		"panic: boom": func(*translate.Model) *translate.Output { panic("boom") },
	} {
		err := explain(out)
		var ie *translate.InternalError
		if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &ie) {
			t.Errorf("%s: Explain error %v", want, err)
		}
	}
}

type partialJudge struct{ judgingBackend }

func (p partialJudge) Observe(m *translate.Model, o translate.Options, f []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	out, err := p.judgingBackend.Observe(m, o, f)
	for _, byClass := range out {
		delete(byClass, translate.NonIdempotent)
	}
	return out, err
}

func TestLookupVersion(t *testing.T) {
	table := []string{"1.0", "2.1"}
	id := func(s string) string { return s }
	for version, want := range map[string]string{"": "2.1", "1.0": "1.0", "2.1": "2.1"} {
		if got, err := translate.LookupVersion(table, id, version); err != nil || got != want {
			t.Errorf("LookupVersion(%q) = %q, %v; want %q", version, got, err, want)
		}
	}
	if _, err := translate.LookupVersion(table, id, "3.0"); err == nil || !strings.Contains(err.Error(), "supported: 1.0, 2.1") {
		t.Errorf("LookupVersion(3.0) error %v", err)
	}
}

// TestRunToSink: RunTo gives each target's files to the sink in the order
// of the targets, sorted by path, with Parsed dropped; Run collects the
// same files; an error of the sink ends RunTo with that error.
func TestRunToSink(t *testing.T) {
	m := build(t, routeWithRule("    retry: {}\n"), translate.ResolveOptions{})
	files := func(name string) func(m *translate.Model) *translate.Output {
		return func(m *translate.Model) *translate.Output {
			o := honourAll(m)
			o.Files = []translate.File{{Path: name + "/z", Data: []byte("z")}, {Path: name + "/a", Data: []byte("a"), Parsed: translate.NewParsed([]byte("a"), "a")}}
			return o
		}
	}
	var targets []translate.Target
	for _, name := range []string{"c", "a", "b"} {
		targets = append(targets, translate.Target{Backend: fakeBackend{name: name, out: files(name)}, Version: "1.0"})
	}
	var got []string
	res, err := translate.RunTo(m, targets, false, func(tg translate.Target, fs []translate.File) error {
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
	all, err := translate.Run(m, targets, false)
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
	_, err = translate.RunTo(m, targets, false, func(translate.Target, []translate.File) error { calls++; return boom })
	if err != boom || calls != 1 {
		t.Errorf("sink error: RunTo returned %v after %d call(s), want %v after 1", err, calls, boom)
	}
}
