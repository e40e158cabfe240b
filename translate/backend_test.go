package translate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeBackend returns canned output, to test Run's contract checks.
type fakeBackend struct {
	name string
	out  func(m *Model) *Output
}

func (f fakeBackend) Name() string       { return f.name }
func (f fakeBackend) Versions() []string { return []string{"1.0", "2.1"} }
func (f fakeBackend) Generate(m *Model, _ Options) (*Output, error) {
	return f.out(m), nil
}

// honourAll returns one honoured finding per feature.
func honourAll(m *Model) *Output {
	out := &Output{Files: []File{{Path: "fake/conf", Data: []byte("x")}}}
	for _, r := range m.Rules {
		for _, f := range r.Features() {
			out.Findings = append(out.Findings, NewFinding(r, f, Honoured, ""))
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
		"has no message": func(m *Model) *Output {
			o := honourAll(m)
			o.Findings[0].Status = Approximated
			return o
		},
		"does not set": func(m *Model) *Output {
			o := honourAll(m)
			o.Findings = append(o.Findings, NewFinding(m.Rules[0], FeatureRetryBackoff, Honoured, ""))
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
