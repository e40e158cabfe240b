package translate

import (
	"strings"
	"testing"
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
	if r.Routes != 1 || r.Rules != 2 || len(r.Findings) != 3+2 || r.Targets[0].Version != "1.0" {
		t.Errorf("report %+v", r)
	}
	for _, f := range r.Findings {
		if f.Target != "fake" {
			t.Errorf("finding without target: %+v", f)
		}
		if f.Rule == 1 && (f.Status != Unsupported || !strings.Contains(f.Message, "not translated")) {
			t.Errorf("skipped rule finding %+v, want unsupported", f)
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
