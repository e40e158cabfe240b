package main

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/translate"
)

// TestMatrix: the table lists the chosen versions (every version of a
// target named without one), its statuses come from running the backends,
// and the JSON names the scenarios.
func TestMatrix(t *testing.T) {
	versions := func(name string) []string {
		for _, b := range backends.All() {
			if b.Name() == name {
				return b.Versions()
			}
		}
		t.Fatalf("no backend %s", name)
		return nil
	}
	tests := []struct {
		target string
		rows   []string // target@version, in order
	}{
		{"haproxy@3.2", []string{"haproxy@3.2"}},
		{"traefik,nginx@1.22", append(prefix("traefik@", versions("traefik")), "nginx@1.22")},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			code, stdout, stderr := gwretry(t, "", "matrix", "--target", tt.target, "-o", "json")
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var cells []matrixCell
			if err := json.Unmarshal([]byte(stdout), &cells); err != nil {
				t.Fatal(err)
			}
			var rows []string
			for _, c := range cells {
				r := c.Target + "@" + c.Version
				if len(rows) == 0 || rows[len(rows)-1] != r {
					rows = append(rows, r)
				}
				if len(c.Scenarios) == 0 {
					t.Errorf("%s %s: no status", r, c.Feature)
				}
			}
			if diff := cmp.Diff(tt.rows, rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
	// Traefik 3.6 has no retry on status codes, 3.7 has: the table says
	// what the version table says.
	code, stdout, _ := gwretry(t, "", "matrix", "--target", "traefik@3.6,haproxy@3.2")
	if code != exitOK {
		t.Fatal(code)
	}
	for _, w := range []string{"TARGET   VERSION  FEATURE", "traefik  3.6      retry.codes              honoured 2, unsupported 23"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("table lacks %q:\n%s", w, stdout)
		}
	}
	if _, again, _ := gwretry(t, "", "matrix", "--target", "traefik@3.6,haproxy@3.2"); again != stdout {
		t.Error("matrix output differs between runs")
	}
	for _, args := range [][]string{{"matrix", "--target", "istio"}, {"matrix", "-o", "yaml"}, {"matrix", "extra"}} {
		if code, _, _ := gwretry(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

func prefix(p string, list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = p + s
	}
	return out
}

// TestMatrixAgreesWithCheck: a scenario's statuses in the matrix are those
// gwretry check reports for the scenario's rule.
func TestMatrixAgreesWithCheck(t *testing.T) {
	const target = "nginx@1.22"
	targets, err := matrixTargets(target)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := capabilities(targets)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range prove.Scenarios()[:5] {
		inMatrix := map[translate.Feature]translate.Status{}
		for _, c := range cells {
			for status, names := range c.Scenarios {
				if slices.Contains(names, sc.Name) {
					inMatrix[c.Feature] = translate.Status(status)
				}
			}
		}
		args := []string{"check", "-", "--target", target, "--report", "json", "-q"}
		if sc.RetryNonIdempotent {
			args = append(args, "--retry-non-idempotent")
		}
		code, stdout, stderr := gwretry(t, sc.Manifest(), args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", sc.Name, code, stderr)
		}
		var r translate.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		checked := map[translate.Feature]translate.Status{}
		for _, f := range r.Findings {
			if f.Route == sc.Route() {
				checked[f.Feature] = f.Status
			}
		}
		if diff := cmp.Diff(checked, inMatrix); diff != "" || len(checked) == 0 {
			t.Errorf("%s: matrix differs from check (-check +matrix):\n%s", sc.Name, diff)
		}
	}
}

// TestVersion: the module version and the build's VCS settings.
func TestVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/gwretry/gwretry", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := buildVersion(bi)
	want := "gwretry v1.2.3\nmodule:   github.com/gwretry/gwretry\nrevision: abc123 (modified)\ntime:     2026-01-02T03:04:05Z\ngo:       go1.26.0 " + v.Platform + "\n"
	if got := v.text(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := buildVersion(nil).Version; got != "(devel)" {
		t.Errorf("without build info: %q", got)
	}
	code, stdout, _ := gwretry(t, "", "version", "-o", "json")
	var info versionInfo
	if err := json.Unmarshal([]byte(stdout), &info); code != exitOK || err != nil || info.Module != "github.com/gwretry/gwretry" || info.Go == "" {
		t.Errorf("version -o json: exit %d, %v: %s", code, err, stdout)
	}
	if code, stdout, _ := gwretry(t, "", "version"); code != exitOK || !strings.HasPrefix(stdout, "gwretry ") {
		t.Errorf("version: exit %d: %s", code, stdout)
	}
}

// TestKubectlPlugin: run as kubectl-gwretry, the help names the commands
// as kubectl runs them.
func TestKubectlPlugin(t *testing.T) {
	for _, name := range []string{"kubectl-gwretry", "kubectl-gwretry.exe", "gwretry"} {
		var out, errOut bytes.Buffer
		if code := runAs(name, []string{"translate", "--help"}, nil, &out, &errOut); code != exitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errOut.String())
		}
		want := "gwretry translate [PATH...] [flags]"
		if name != "gwretry" {
			want = "kubectl " + want
		}
		if !strings.Contains(out.String(), "\n  "+want+"\n") {
			t.Errorf("%s --help lacks %q:\n%s", name, want, out.String())
		}
	}
}

// TestCompletion: cobra's completion scripts, and gwretry's own values for
// its flags.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		if code, stdout, stderr := gwretry(t, "", "completion", sh); code != exitOK || !strings.Contains(stdout, "gwretry") {
			t.Errorf("completion %s: exit %d: %s", sh, code, stderr)
		}
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "translate", "--target", ""}, append(backendNames(), "all")},
		{[]string{"__complete", "translate", "--target", "nginx,"}, prefix("nginx,", append(backendNames(), "all"))},
		{[]string{"__complete", "check", "--fail-on", ""}, []string{"none", "approximated", "unsupported"}},
		{[]string{"__complete", "translate", "-o", ""}, []string{"yaml", "json"}},
		{[]string{"__complete", "matrix", "-o", ""}, []string{"text", "json"}},
	}
	for _, tt := range tests {
		code, stdout, stderr := gwretry(t, "", tt.args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tt.args, code, stderr)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				got = append(got, l)
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.args, diff)
		}
	}
}
