package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// TestCheckDrift: translate --check exits 0 on a directory that translate
// wrote, 4 with one unified diff per differing file otherwise, and never
// writes.
func TestCheckDrift(t *testing.T) {
	base := []string{"translate", example, "--target", "envoy,haproxy,nginx,traefik", "-q", "--report", "none"}
	tests := []struct {
		name string
		// change alters a directory translate wrote; nil leaves it.
		change func(t *testing.T, dir string)
		// missing: the directory is not created at all.
		missing bool
		code    int
		// headers are the diff's file headers, in order.
		headers []string
		// contains are further lines the diff must hold.
		contains []string
	}{
		{name: "up to date", code: exitOK},
		{name: "files of untargeted data planes are not drift", code: exitOK, change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "linkerd/other.yaml"), "x\n") // a target not chosen
			write(t, filepath.Join(dir, "README.md"), "x\n")
		}},
		{name: "changed line", code: exitDrift, change: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "haproxy/haproxy.cfg")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, strings.Replace(string(data), "retries", "retries-old", 1))
		}, headers: []string{"--- a/haproxy/haproxy.cfg", "+++ b/haproxy/haproxy.cfg"}, contains: []string{"-", "+", "retries-old"}},
		{name: "missing file", code: exitDrift, change: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "report.json")); err != nil {
				t.Fatal(err)
			}
		}, headers: []string{"--- /dev/null", "+++ b/report.json"}, contains: []string{`+  "schemaVersion": 3,`}},
		{name: "stale file in a target's directory", code: exitDrift, change: func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "nginx/conf.d/old.conf"), "server {}\n")
		}, headers: []string{"--- a/nginx/conf.d/old.conf", "+++ /dev/null"}, contains: []string{"@@ -1 +0,0 @@", "-server {}"}},
		{name: "no newline at end", code: exitDrift, change: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "traefik/traefik.yaml")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, strings.TrimSuffix(string(data), "\n"))
		}, headers: []string{"--- a/traefik/traefik.yaml", "+++ b/traefik/traefik.yaml"}, contains: []string{`\ No newline at end of file`}},
		{name: "no directory: every file differs", missing: true, code: exitDrift, headers: []string{
			"--- /dev/null", "+++ b/envoy/envoy.yaml", "--- /dev/null", "+++ b/haproxy/haproxy.cfg",
			"--- /dev/null", "+++ b/nginx/nginx.conf", "--- /dev/null", "+++ b/report.json",
			"--- /dev/null", "+++ b/traefik/dynamic.yaml", "--- /dev/null", "+++ b/traefik/traefik.yaml",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if !tt.missing {
				if code, _, stderr := gwretry(t, "", append(base, "--output-dir", dir)...); code != exitOK {
					t.Fatalf("translate: exit %d\n%s", code, stderr)
				}
			}
			if tt.change != nil {
				tt.change(t, dir)
			}
			before := snapshot(t, dir)
			code, stdout, stderr := gwretry(t, "", append(base, "--output-dir", dir, "--check")...)
			if code != tt.code {
				t.Fatalf("--check: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("--check changed %s:\nbefore:\n%s\nafter:\n%s", dir, before, after)
			}
			var headers []string
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") {
					headers = append(headers, l)
				}
			}
			if strings.Join(headers, "\n") != strings.Join(tt.headers, "\n") {
				t.Errorf("diff headers:\n%s\nwant:\n%s\nstdout:\n%s", strings.Join(headers, "\n"), strings.Join(tt.headers, "\n"), stdout)
			}
			for _, w := range tt.contains {
				if !strings.Contains(stdout, w) {
					t.Errorf("diff lacks %q:\n%s", w, stdout)
				}
			}
			if tt.code == exitDrift {
				if !strings.Contains(stderr, "--check: ") || !strings.Contains(stderr, "differ from what translate writes") {
					t.Errorf("stderr does not name the drift:\n%s", stderr)
				}
				if strings.Contains(stdout, dir) {
					t.Errorf("the diff names the directory %s; its paths must be relative:\n%s", dir, stdout)
				}
			}
		})
	}
}

// TestCheckDriftIsStable: the diff is the same byte for byte on every run.
func TestCheckDriftIsStable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	args := []string{"translate", example, "--target", "envoy,nginx", "-q", "--report", "none", "--output-dir", dir, "--check"}
	_, first, _ := gwretry(t, "", args...)
	_, second, _ := gwretry(t, "", args...)
	if first == "" || first != second {
		t.Errorf("--check output differs between runs or is empty:\n%s\n---\n%s", first, second)
	}
}

// TestCheckFailOnAndDrift: drift (4) wins over --fail-on (3), and the
// report is still printed.
func TestCheckFailOnAndDrift(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	code, _, stderr := gwretry(t, "", "translate", example, "--target", "nginx", "-q", "--output-dir", dir, "--check", "--fail-on", "approximated")
	if code != exitDrift || !strings.Contains(stderr, "report: ") {
		t.Errorf("exit %d, want %d with the report on stderr:\n%s", code, exitDrift, stderr)
	}
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every path under dir with its content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		b.WriteString(p + "\n")
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOutputFormats: -o yaml|json print the single target's configuration
// in that format, with the same content as the files -o DIR writes.
func TestOutputFormats(t *testing.T) {
	tests := []struct {
		target, format string
		// files are the paths -o DIR writes for the target.
		files []string
	}{
		{"envoy", "yaml", []string{"envoy/envoy.yaml"}},
		{"envoy", "json", []string{"envoy/envoy.yaml"}},
		{"traefik", "yaml", []string{"traefik/dynamic.yaml", "traefik/traefik.yaml"}},
		{"traefik", "json", []string{"traefik/dynamic.yaml", "traefik/traefik.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.format, func(t *testing.T) {
			dir := t.TempDir()
			if code, _, stderr := gwretry(t, "", "translate", example, "--target", tt.target, "-q", "--output-dir", dir); code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			code, stdout, stderr := gwretry(t, "", "translate", example, "--target", tt.target, "-q", "-o", tt.format)
			if code != exitOK {
				t.Fatalf("-o %s: exit %d\n%s", tt.format, code, stderr)
			}
			if strings.Contains(stdout, "report: ") {
				t.Errorf("the report is on stdout:\n%s", stdout)
			}
			// got maps each path to its document as JSON.
			got := map[string]string{}
			switch {
			case tt.format == "json" && len(tt.files) == 1:
				got[tt.files[0]] = canonicalJSON(t, []byte(stdout))
			case tt.format == "json":
				var docs map[string]json.RawMessage
				if err := json.Unmarshal([]byte(stdout), &docs); err != nil {
					t.Fatalf("not one JSON object: %v\n%s", err, stdout)
				}
				for p, d := range docs {
					got[p] = canonicalJSON(t, d)
				}
			case len(tt.files) == 1:
				got[tt.files[0]] = yamlAsJSON(t, []byte(stdout))
			default:
				for _, doc := range strings.Split(stdout, "---\n") {
					name, body, _ := strings.Cut(doc, "\n")
					got[strings.TrimPrefix(name, "# ")] = yamlAsJSON(t, []byte(body))
				}
			}
			if len(got) != len(tt.files) {
				t.Errorf("%d documents, want %d:\n%s", len(got), len(tt.files), stdout)
			}
			for _, p := range tt.files {
				data, err := os.ReadFile(filepath.Join(dir, p))
				if err != nil {
					t.Fatal(err)
				}
				if want := yamlAsJSON(t, data); got[p] != want {
					t.Errorf("%s differs from -o DIR's:\n%s\nwant:\n%s", p, got[p], want)
				}
			}
			// byte for byte the same on every run
			if _, again, _ := gwretry(t, "", "translate", example, "--target", tt.target, "-q", "-o", tt.format); again != stdout {
				t.Error("-o " + tt.format + " output differs between runs")
			}
		})
	}
}

func yamlAsJSON(t *testing.T, data []byte) string {
	t.Helper()
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	return canonicalJSON(t, j)
}

func canonicalJSON(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestOutputJSONLinkerdRoutes: -o json prints every route of Linkerd's
// httproutes.yaml (several YAML documents) as one List, as kubectl -o
// json prints several objects; -o yaml prints every document.
func TestOutputJSONLinkerdRoutes(t *testing.T) {
	in := filepath.Join("..", "..", "testdata", "linkerd-split", "input.yaml")
	code, yamlOut, stderr := gwretry(t, "", "translate", in, "--target", "linkerd", "-q", "-o", "yaml")
	if code != exitOK {
		t.Fatalf("-o yaml: exit %d\n%s", code, stderr)
	}
	var want []string
	for _, doc := range strings.Split(yamlOut, "\n---\n") {
		want = append(want, yamlAsJSON(t, []byte(doc)))
	}
	if len(want) < 2 {
		t.Fatalf("the input gives %d routes, the test needs several", len(want))
	}
	code, jsonOut, stderr := gwretry(t, "", "translate", in, "--target", "linkerd", "-q", "-o", "json")
	if code != exitOK {
		t.Fatalf("-o json: exit %d\n%s", code, stderr)
	}
	var list struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Items      []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &list); err != nil {
		t.Fatalf("not one JSON value: %v\n%s", err, jsonOut)
	}
	if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != len(want) {
		t.Fatalf("got %s %s of %d items, want a v1 List of %d:\n%s", list.APIVersion, list.Kind, len(list.Items), len(want), jsonOut)
	}
	for i, it := range list.Items {
		if got := canonicalJSON(t, it); got != want[i] {
			t.Errorf("item %d:\n%s\nwant:\n%s", i, got, want[i])
		}
	}
}

// TestWriteFormatGRPCStyle: a target that writes JSON converts to YAML, and
// a file in neither format is refused before anything is written.
func TestWriteFormat(t *testing.T) {
	tests := []struct {
		name, format string
		files        []translate.File
		want         string
		code         int
	}{
		{"json as yaml", "yaml", []translate.File{{Path: "grpc/service-config.json", Data: []byte(`{"b": [1, "x"], "a": true}` + "\n")}}, "a: true\nb:\n- 1\n- x\n", 0},
		{"json as json", "json", []translate.File{{Path: "x/c.json", Data: []byte("{\"a\": 1}\n")}}, "{\"a\": 1}\n", 0},
		{"yaml as json", "json", []translate.File{{Path: "x/c.yaml", Data: []byte("b: 2\na: '1'\n")}}, "{\n  \"a\": \"1\",\n  \"b\": 2\n}\n", 0},
		// kubectl -o json prints several objects as a List: every
		// document, not the first alone.
		{"yaml documents as json", "json", []translate.File{{Path: "x/c.yaml", Data: []byte("a: 1\n---\n# only a comment\n---\nb: 2\n")}},
			"{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [\n    {\n      \"a\": 1\n    },\n    {\n      \"b\": 2\n    }\n  ]\n}\n", 0},
		{"two yaml files as yaml", "yaml", []translate.File{{Path: "x/a.yaml", Data: []byte("a: 1\n")}, {Path: "x/b.yaml", Data: []byte("b: 2\n")}}, "# x/a.yaml\na: 1\n---\n# x/b.yaml\nb: 2\n", 0},
		{"neither", "json", []translate.File{{Path: "x/a.yaml", Data: []byte("a: 1\n")}, {Path: "x/b.conf", Data: []byte("b 2;\n")}}, "", exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := writeFormat(&buf, "x", tt.format, tt.files)
			var stderr bytes.Buffer
			if code := exitCode(err, "gwretry", &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, stderr.String())
			}
			if buf.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", buf.String(), tt.want)
			}
		})
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestReportColour: the text report is coloured only on a terminal and
// without NO_COLOR; with colour, stripping the escapes gives the plain
// report byte for byte (the columns stay aligned).
func TestReportColour(t *testing.T) {
	tests := []struct {
		name       string
		terminal   bool
		noColor    string
		reportFile bool
		colour     bool
	}{
		{"terminal", true, "", false, true},
		{"terminal with NO_COLOR", true, "1", false, false},
		{"terminal with NO_COLOR empty", true, "", false, true},
		{"pipe or file", false, "", false, false},
		{"terminal, but --report-file", true, "", true, false},
	}
	example, err := filepath.Abs(example)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &options{limits: input.DefaultLimits(), available: backends.Configured,
				target: "nginx,traefik", report: "text", failOn: "none", channel: "standard", verbosity: verbosity{quiet: true}}
			o.console = console{
				getenv:     func(k string) string { return map[string]string{"NO_COLOR": tt.noColor}[k] },
				isTerminal: func(io.Writer) bool { return tt.terminal },
			}
			if tt.reportFile {
				o.reportFile = filepath.Join(t.TempDir(), "report.txt")
			}
			var stdout, stderr bytes.Buffer
			if err := runTranslate(o, []string{example}, nil, &stdout, &stderr, true); err != nil {
				t.Fatal(err)
			}
			out := stdout.String()
			if tt.reportFile {
				data, err := os.ReadFile(o.reportFile)
				if err != nil {
					t.Fatal(err)
				}
				out = string(data)
			}
			if got := ansi.MatchString(out); got != tt.colour {
				t.Fatalf("coloured: %v, want %v:\n%q", got, tt.colour, out)
			}
			_, plain, _ := gwretry(t, "", "check", example, "--target", "nginx,traefik", "-q")
			if stripped := ansi.ReplaceAllString(out, ""); stripped != plain {
				t.Errorf("without its escapes the report differs from the plain one:\n%s\nplain:\n%s", stripped, plain)
			}
			if tt.colour {
				// The brief report colours why a feature is not honoured.
				for _, w := range []*regexp.Regexp{
					regexp.MustCompile(`\x1b\[33m~ [^\x1b]*NonIdempotentExempt[^\x1b]*\x1b\[0m`),
					regexp.MustCompile(`\x1b\[31munsupported NoBackoff\x1b\[0m`),
				} {
					if !w.MatchString(out) {
						t.Errorf("report lacks %s", w)
					}
				}
			}
		})
	}
}

// TestIsTerminal: buffers, pipes and regular files are not terminals, so
// gwretry's output piped or redirected has no colour.
func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, wr := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f, "pipe": w} {
		if isTerminal(wr) {
			t.Errorf("%s is taken for a terminal", name)
		}
		if realConsole().colour(wr) {
			t.Errorf("%s gets colour", name)
		}
	}
}

// TestDriftTargetDirectories: a target's directory is its own even when
// translate writes no file there (no route attached to a generated
// listener), so what it holds is stale; another target's is not looked at.
func TestDriftTargetDirectories(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "nginx/nginx.conf"), "old\n")
	write(t, filepath.Join(dir, "haproxy/haproxy.cfg"), "other target\n")
	write(t, filepath.Join(dir, "report.json"), "{}\n")
	var out bytes.Buffer
	n, err := drift(dir, []translate.File{{Path: "report.json", Data: []byte("{}\n")}}, []string{"nginx"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/nginx/nginx.conf\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
	if n != 1 || out.String() != want {
		t.Errorf("%d file(s) differ:\n%s\nwant 1:\n%s", n, out.String(), want)
	}
}

// TestTranslateWarnsOfLeftovers: translate -o DIR deletes nothing, but a
// DIR left by an earlier run holds files this run did not write, which a
// CI that commits or diffs DIR would take for its output: each is named in
// a warning, and a DIR this run wrote whole gets none.
func TestTranslateWarnsOfLeftovers(t *testing.T) {
	tests := []struct {
		name string
		// earlier are the --target of an earlier run into DIR ("" for none).
		earlier string
		targets string
		extra   map[string]string
		want    []string
		not     []string
	}{
		{name: "fresh directory", targets: "nginx@1.26", not: []string{"warning: "}},
		{name: "same targets again", earlier: "nginx@1.26,haproxy@3.0", targets: "nginx@1.26,haproxy@3.0", not: []string{"warning: "}},
		{name: "fewer targets than before", earlier: "envoy,nginx", targets: "nginx",
			want: []string{filepath.FromSlash("envoy/") + " holds target envoy's files from an earlier run: this run wrote only nginx"},
			not:  []string{"nginx/ holds"}},
		{name: "stale file in a chosen target's directory", targets: "nginx", extra: map[string]string{"nginx/conf.d/old.conf": "server {}\n"},
			want: []string{filepath.FromSlash("nginx/conf.d/old.conf") + " was not written by this run", "translate --check reports it as stale"}},
		{name: "files outside the targets' directories are not looked at", targets: "nginx@1.26", extra: map[string]string{"README.md": "x\n", "notes/a.txt": "x\n"},
			not: []string{"warning: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if tt.earlier != "" {
				if code, _, stderr := gwretry(t, "", "translate", example, "--target", tt.earlier, "--output-dir", dir, "-q"); code != exitOK {
					t.Fatalf("earlier run: exit %d\n%s", code, stderr)
				}
			}
			for p, c := range tt.extra {
				write(t, filepath.Join(dir, filepath.FromSlash(p)), c)
			}
			code, _, stderr := gwretry(t, "", "translate", example, "--target", tt.targets, "--output-dir", dir, "-q", "--report", "none")
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(stderr, n) {
					t.Errorf("stderr has %q:\n%s", n, stderr)
				}
			}
			if tt.earlier != "" || len(tt.extra) > 0 {
				// Nothing was deleted.
				for p := range tt.extra {
					if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
}

// TestCheckIgnoresRewordedMessages: report.json holds records, not
// messages (they are rendered from the catalogue when shown), so a
// reworded catalogue text cannot make --check see drift; a changed record
// is drift.
func TestCheckIgnoresRewordedMessages(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := gwretry(t, "", "translate", example, "--target", "nginx", "-q", "--output-dir", dir); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	p := filepath.Join(dir, "report.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"message"`) {
		t.Fatalf("report.json carries messages:\n%s", data)
	}
	changed := strings.Replace(string(data), `"reason":"NoBackoff"`, `"reason":"NotExpressible"`, 1)
	if changed == string(data) {
		t.Fatal("no NoBackoff record to change")
	}
	write(t, p, changed)
	if code, _, _ := gwretry(t, "", "translate", example, "--target", "nginx", "--output-dir", dir, "--check", "-q"); code != exitDrift {
		t.Errorf("a changed reason: exit %d, want %d", code, exitDrift)
	}
}
