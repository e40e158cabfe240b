package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

const example = "../../testdata/examples/retry.yaml"

func gwretry(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const badRoute = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
  - backendRefs: [{name: svc, port: 8080}]
    retry: {codes: [200], attempts: 2}
`

func TestExitCodes(t *testing.T) {
	bad := writeFile(t, badRoute)
	typo := writeFile(t, strings.Replace(badRoute, "kind: HTTPRoute", "kind: HttpRoute", 1))
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{"ok", []string{"translate", example, "--target", "envoy", "-q"}, exitOK, []string{"report: "}},
		{"no path", []string{"translate", "--target", "envoy"}, exitUsage, []string{"at least one PATH"}},
		{"no target", []string{"translate", example}, exitUsage, []string{"--target is required"}},
		{"unknown target", []string{"translate", example, "--target", "istio"}, exitUsage, []string{`unknown target "istio"`}},
		{"unknown version", []string{"translate", example, "--target", "nginx@1.2"}, exitUsage, []string{"supported versions are"}},
		{"several targets to stdout", []string{"translate", example, "--target", "all"}, exitUsage, []string{"need --output-dir DIR"}},
		{"unknown flag", []string{"translate", example, "--targt", "envoy"}, exitUsage, []string{"unknown flag"}},
		// cobra's untyped error: it exited 1, as if the input were bad.
		{"unknown command", []string{"transalte", example}, exitUsage, []string{`unknown command "transalte" for "gwretry"`}},
		{"unknown import source", []string{"import", "ingress-ngnix", example}, exitUsage, []string{`unknown command "ingress-ngnix" for "gwretry import"`}},
		{"bad report", []string{"check", example, "--report", "xml"}, exitUsage, []string{"--report"}},
		{"bad -o of check", []string{"check", example, "-o", "yaml"}, exitUsage, []string{`-o/--report "yaml"`, "Run 'gwretry check --help' for usage."}},
		{"bad fail-on", []string{"check", example, "--fail-on", "never"}, exitUsage, []string{"--fail-on"}},
		{"bad listen", []string{"check", example, "--listen", "nowhere"}, exitUsage, []string{"--listen"}},
		{"bad endpoint", []string{"check", example, "--endpoint", "svc=1.2.3.4:80"}, exitUsage, []string{"--endpoint"}},
		{"invalid input", []string{"check", bad}, exitInput, []string{bad + ":6: document 1: HTTPRoute ns/r: spec.rules[0].retry.codes[0]: invalid per the Gateway API: Invalid value: 200"}},
		// kubectl: no matches for kind "HttpRoute"; it was an info line
		// and exit 0.
		{"kind its group has not", []string{"check", typo}, exitInput, []string{typo + ":1: document 1: HttpRoute ns/r: kind: gateway.networking.k8s.io has no kind \"HttpRoute\"", "did you mean HTTPRoute?"}},
		{"bad exclude", []string{"check", example, "--exclude", "[a"}, exitUsage, []string{`--exclude "[a"`}},
		{"bad exclude, import", []string{"import", "ingress-nginx", example, "--exclude", "[a"}, exitUsage, []string{`--exclude "[a"`}},
		// It was ignored: the traffic went to cluster DNS.
		{"endpoint of no Service port", []string{"check", example, "--endpoint", "nosuch:8080=127.0.0.1:9000"}, exitUsage, []string{"--endpoint nosuch:8080 names no Service port of the input"}},
		{"missing file", []string{"check", "does-not-exist.yaml"}, exitInput, []string{"does-not-exist.yaml"}},
		{"no routes", []string{"check", writeFile(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n")}, exitInput, []string{"no HTTPRoute (gateway.networking.k8s.io/v1 or v1beta1) in ", ": found 1 Service"}},
		{"-o yml", []string{"translate", example, "--target", "envoy", "-o", "yml"}, exitUsage, []string{"-o yml: -o is the configuration's format on stdout", "--output-dir DIR", "--report text|json"}},
		{"-o json, several targets", []string{"translate", example, "--target", "all", "-o", "json"}, exitUsage, []string{"-o json prints one target's configuration", "need --output-dir DIR"}},
		{"-o yaml, nginx", []string{"translate", example, "--target", "nginx", "-o", "yaml", "-q"}, exitUsage, []string{"-o yaml: nginx writes nginx/nginx.conf in its own syntax, neither YAML nor JSON"}},
		{"-o json, haproxy", []string{"translate", example, "--target", "haproxy", "-o", "json", "-q"}, exitUsage, []string{"-o json: haproxy writes haproxy/haproxy.cfg in its own syntax"}},
		{"--check without -o", []string{"translate", example, "--target", "envoy", "--check"}, exitUsage, []string{"--check compares with a directory: it needs --output-dir DIR"}},
		{"--check with -o json", []string{"translate", example, "--target", "envoy", "-o", "json", "--check"}, exitUsage, []string{"it needs --output-dir DIR"}},
		{"-o wide", []string{"translate", example, "--target", "all", "-o", "WIDE"}, exitUsage, []string{"-o is the configuration's format"}},
		{"-o json and --output-dir", []string{"translate", example, "--target", "envoy", "-o", "json", "--output-dir", "x"}, exitUsage, []string{"give one of them"}},
		{"-o DIR and --output-dir", []string{"translate", example, "--target", "envoy", "-o", "x", "--output-dir", "y"}, exitUsage, []string{"the directory is --output-dir y"}},
		{"no PATH", []string{"check", "--target", "envoy"}, exitUsage, []string{"check needs at least one PATH", "with -f", "Run 'gwretry check --help' for usage."}},
		{"no PATH, explain", []string{"explain", "--target", "envoy"}, exitUsage, []string{"Run 'gwretry explain --help' for usage."}},
		{"fail-on approximated", []string{"check", example, "--target", "envoy", "--fail-on", "approximated"}, exitFailOn, []string{"--fail-on approximated: 9 finding"}},
		{"fail-on unsupported not reached", []string{"check", example, "--target", "envoy", "--fail-on", "unsupported"}, exitOK, nil},
		{"fail-on unsupported", []string{"check", example, "--target", "nginx", "--fail-on", "unsupported"}, exitFailOn, []string{"--fail-on unsupported"}},
		// The example's route is on a Gateway: Linkerd (a mesh) and the
		// OpenShift router (proxy-wide settings) do not serve it, which is
		// not applicable, never a gap a gate counts.
		{"fail-on ignores what a target does not serve", []string{"check", example, "--target", "linkerd,openshift", "--fail-on", "approximated"}, exitOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := gwretry(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

// TestFormatUsageErrorAlone: -o yaml for a target that writes its own
// syntax is a usage error that comes alone, without the notes and the
// report of a run that prints nothing.
func TestFormatUsageErrorAlone(t *testing.T) {
	code, stdout, stderr := gwretry(t, "", "translate", example, "--target", "nginx", "-o", "yaml")
	want := "gwretry: -o yaml: nginx writes nginx/nginx.conf in its own syntax, neither YAML nor JSON; leave out -o to print it, or give -o a directory (./yaml for one named yaml)\nRun 'gwretry translate --help' for usage.\n"
	if code != exitUsage || stdout != "" || stderr != want {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s\nwant stderr:\n%s", code, exitUsage, stdout, stderr, want)
	}
}

func TestTranslateToStdoutAndDir(t *testing.T) {
	code, stdout, stderr := gwretry(t, "", "translate", example, "--target", "envoy", "--report", "json")
	if code != exitOK || !strings.Contains(stdout, "static_resources:") {
		t.Fatalf("exit %d, stdout %.200q", code, stdout)
	}
	// The JSON report follows the info lines on stderr.
	var rep translate.Report
	if err := json.Unmarshal([]byte(stderr[strings.Index(stderr, "{"):]), &rep); err != nil || rep.Targets[0].Version != "1.36" {
		t.Errorf("JSON report on stderr: %v %+v", err, rep.Targets)
	}

	code, stdout, _ = gwretry(t, "", "translate", example, "--target", "traefik@3.6", "-q", "--report", "none")
	if code != exitOK || !strings.Contains(stdout, "# traefik/dynamic.yaml") || !strings.Contains(stdout, "---\n# traefik/traefik.yaml") {
		t.Errorf("two files on stdout: exit %d\n%s", code, stdout)
	}

	dir := t.TempDir()
	reportFile := filepath.Join(dir, "report.txt")
	code, stdout, stderr = gwretry(t, "", "translate", example, "--target", "all", "--output-dir", dir, "--report-file", reportFile, "-q")
	// stderr is the one line of the versions --target all assumed.
	if code != exitOK || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "warning: no version given: ") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	for _, f := range []string{"envoy/envoy.yaml", "nginx/nginx.conf", "haproxy/haproxy.cfg", "traefik/traefik.yaml", "traefik/dynamic.yaml", "report.json", "report.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// Byte-for-byte determinism: a second run writes the same files.
	dir2 := t.TempDir()
	gwretry(t, "", "translate", example, "--target", "all", "--output-dir", dir2, "-q", "--report", "none")
	for _, f := range []string{"envoy/envoy.yaml", "nginx/nginx.conf", "haproxy/haproxy.cfg", "traefik/dynamic.yaml", "report.json"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(dir2, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", f)
		}
	}
}

func TestCheckWritesNothingAndReadsStdin(t *testing.T) {
	input, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	code, stdout, stderr := gwretry(t, string(input), "check", "-")
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	// The report is check's output: on stdout, and only there.
	for _, target := range []string{"envoy@1.36", "haproxy@3.0", "nginx@1.26", "traefik@3.6"} {
		if !strings.Contains(stdout, target) {
			t.Errorf("report on stdout does not name %s:\n%s", target, stdout)
		}
	}
	if strings.Contains(stderr, "report: ") || strings.Contains(stdout, "info:") {
		t.Errorf("report and notes mixed up: stdout\n%s\nstderr\n%s", stdout, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("check wrote %v", entries)
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range [][]string{{"--help"}, {"translate", "--help"}, {"check", "--help"}, {"version", "--help"}} {
		code, stdout, _ := gwretry(t, "", cmd...)
		if code != exitOK || !strings.Contains(stdout, "Examples:") {
			t.Errorf("gwretry %v: exit %d, no examples:\n%s", cmd, code, stdout)
		}
	}
	if code, stdout, _ := gwretry(t, "", "version"); code != exitOK || !strings.HasPrefix(stdout, "gwretry ") {
		t.Errorf("version: %d %q", code, stdout)
	}
}

// TestConformanceManifests translates each upstream conformance manifest on
// its own, for every target, with cluster DNS endpoints.
func TestConformanceManifests(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/upstream-conformance/*.yaml")
	if len(files) != 5 {
		t.Fatalf("found %d conformance manifests, want 5", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, _, stderr := gwretry(t, "", "translate", f, "../../testdata/upstream-conformance/base", "--target", "all", "--output-dir", t.TempDir(), "-q", "--report", "none")
			if code != exitOK {
				t.Errorf("exit %d: %s", code, stderr)
			}
		})
	}
}

// lyingBackend claims backoff honoured while its judge sees no pause: the
// kind of bug the judge exists to catch.
type lyingBackend struct{}

func (lyingBackend) Name() string           { return "liar" }
func (lyingBackend) Versions() []string     { return []string{"1.0"} }
func (lyingBackend) Scope() translate.Scope { return translate.GatewayScope() }
func (lyingBackend) Generate(m *translate.Model, _ translate.Options) (*translate.Output, error) {
	out := &translate.Output{Files: []translate.File{{Path: "liar/conf", Data: []byte("x")}}}
	for _, r := range m.Rules {
		for _, f := range r.Features() {
			out.Findings = append(out.Findings, translate.Record(r, f, report.Decide(report.ReasonConfigured)))
		}
	}
	return out, nil
}
func (lyingBackend) Observe(m *translate.Model, _ translate.Options, _ []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	for _, r := range m.Rules {
		out[r.Name] = map[translate.MethodClass]translate.Behaviour{}
		for _, c := range r.MethodClasses() {
			out[r.Name][c] = translate.Behaviour{}
		}
	}
	return out, nil
}

// TestInternalErrorExitCode: a configuration that contradicts its report is
// gwretry's bug: exit 70, never 1 (which blames the input), and nothing is
// written.
func TestInternalErrorExitCode(t *testing.T) {
	o := &options{limits: input.DefaultLimits(), target: "liar", report: "none", failOn: "none", outDir: t.TempDir(),
		available: func(backends.Settings) ([]translate.Backend, error) { return []translate.Backend{lyingBackend{}}, nil }}
	var stdout, stderr bytes.Buffer
	err := runTranslate(o, []string{example}, strings.NewReader(""), &stdout, &stderr, false)
	if code := exitCode(err, "gwretry", &stderr); code != exitInternal {
		t.Fatalf("exit %d, want %d (internal error); stderr:\n%s", code, exitInternal, stderr.String())
	}
	if !strings.Contains(stderr.String(), "internal error") || !strings.Contains(stderr.String(), "claims more than the configuration") {
		t.Errorf("stderr does not explain the internal error:\n%s", stderr.String())
	}
	if entries, _ := os.ReadDir(o.outDir); len(entries) != 0 {
		t.Errorf("files written despite the internal error: %v", entries)
	}
}

// TestDefaultCapsTakeACluster: 10,000 routes with their Services and a
// Gateway load with the default limits (--max-documents used to stop at
// 10,000 documents).
func TestDefaultCapsTakeACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster-sized input: in the full tier (make test), not the fast one")
	}
	var b strings.Builder
	b.WriteString("apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec:\n  gatewayClassName: x\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n")
	for i := range 10000 {
		fmt.Fprintf(&b, "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r%d, namespace: ns}\nspec:\n  parentRefs: [{name: gw}]\n  hostnames: [h%d.example.com]\n  rules: [{backendRefs: [{name: s%d, port: 80}], retry: {attempts: 1}}]\n", i, i, i)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Service\nmetadata: {name: s%d, namespace: ns}\nspec: {ports: [{port: 80}]}\n", i)
	}
	in, err := input.Load([]string{"-"}, strings.NewReader(b.String()), input.DefaultLimits())
	if err != nil {
		t.Fatalf("default limits refuse 10,000 routes with their Services: %v", err)
	}
	if len(in.Routes) != 10000 || len(in.Services) != 10000 {
		t.Errorf("read %d routes and %d Services", len(in.Routes), len(in.Services))
	}
}

// TestInputErrorLines: an input error starts FILE:LINE, the line of the
// object, of the rule a field is under, or of what the YAML parser found,
// in the file's lines (documents after the first, List items, JSON).
func TestInputErrorLines(t *testing.T) {
	svc := "# comment\napiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns}\nspec:\n  ports: [{port: 80}]\n"
	route := "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\nspec:\n  rules:\n  - backendRefs: [{name: s, port: 80}]\n  - retry: {codes: [200]}\n    backendRefs: [{name: s, port: 80}]\n"
	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: t, namespace: ns}\n  spec: {ports: [{port: 80}]}\n  bogus: 1\n"
	in := writeFile(t, svc+"---\n"+route+"---\na: &x 1\nb: *x\n---\n"+list)
	code, _, stderr := gwretry(t, "", "check", in)
	if code != exitInput {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		in + ":14: document 2: HTTPRoute ns/r: spec.rules[1].retry.codes[0]: ",
		in + ":18: document 3: YAML aliases (*x) are not accepted",
		in + ":23: document 4: items[0]: Service ns/t: bogus: unknown field",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestJSONStreamsHoldOnlyJSON: the stream that carries JSON (check's
// stdout with --report json, translate's stdout with -o json) holds one
// JSON value and nothing else, whatever the notes (-v, no version given).
func TestJSONStreamsHoldOnlyJSON(t *testing.T) {
	for _, args := range [][]string{
		{"check", example, "--report", "json"},
		{"check", example, "--report", "json", "-v"},
		{"check", example, "--target", "nginx", "--report", "json", "-v"},
		{"translate", example, "--target", "traefik", "-o", "json", "-v"},
		{"translate", example, "--target", "envoy", "-o", "json", "--report", "json"},
	} {
		code, stdout, stderr := gwretry(t, "", args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		dec := json.NewDecoder(strings.NewReader(stdout))
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			t.Errorf("%v: stdout is not one JSON value (%v):\n%.300s", args, err, stdout)
		}
		if strings.Contains(stdout, "info:") || strings.Contains(stdout, "warning:") {
			t.Errorf("%v: notes on stdout", args)
		}
	}
}
