package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeDir writes files (name → content) into a new directory.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	okRoute = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ok, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 2}
`
	service = "apiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\nspec: {ports: [{port: 8080}]}\n"
	gateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS}
`
)

// TestDirectoriesAsUsersHaveThem: the same object in two files is an error
// naming both, unless the copies are identical; never an internal error.
func TestDirectoriesAsUsersHaveThem(t *testing.T) {
	changed := strings.Replace(okRoute, "attempts: 2", "attempts: 3", 1)
	tests := []struct {
		name   string
		files  map[string]string
		target string
		code   int
		stderr []string
	}{
		{"identical copies", map[string]string{"app/route.yaml": okRoute, "base/route.yaml": okRoute, "svc.yaml": service, "gw.yaml": gateway},
			"all", exitOK, []string{"info: HTTPRoute ns/ok: read twice, identically, in DIR/app/route.yaml: document 1 and in DIR/base/route.yaml: document 1: used once"}},
		{"different copies", map[string]string{"app/route.yaml": okRoute, "base/route.yaml": changed, "svc.yaml": service},
			"all", exitInput, []string{"DIR/base/route.yaml:1: document 1: HTTPRoute ns/ok: also read from DIR/app/route.yaml: document 1, with different content"}},
		{"different copies, envoy only", map[string]string{"a.yaml": okRoute + "---\n" + changed},
			"envoy", exitInput, []string{"DIR/a.yaml:10: document 2: HTTPRoute ns/ok: also read from DIR/a.yaml: document 1"}},
		{"different Services", map[string]string{"a.yaml": okRoute, "b.yaml": service, "c.yaml": strings.Replace(service, "8080", "9090", 1)},
			"haproxy", exitInput, []string{"DIR/c.yaml:1: document 1: Service ns/svc: also read from DIR/b.yaml: document 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeDir(t, tt.files)
			code, _, stderr := gwretry(t, "", "check", dir, "--target", tt.target, "-v")
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			for _, w := range tt.stderr {
				if w = strings.ReplaceAll(w, "DIR", dir); !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "internal error") {
				t.Errorf("internal error:\n%s", stderr)
			}
		})
	}
}

// TestEveryProblemListed: a document that does not decode does not hide
// the validation errors of the others; messages name fields with indices,
// never Go types or internal rule names.
func TestEveryProblemListed(t *testing.T) {
	undecodable := strings.Replace(okRoute, "attempts: 2", "attempts: three", 1)
	invalid := strings.Replace(strings.Replace(okRoute, "name: ok", "name: bad", 1), "{attempts: 2}", "{attempts: 2, codes: [200]}", 1)
	dir := writeDir(t, map[string]string{"a.yaml": undecodable, "b.yaml": invalid})
	code, stdout, stderr := gwretry(t, "", "check", dir)
	if code != exitInput || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want %d", code, stdout, exitInput)
	}
	for _, w := range []string{
		"invalid input (2 problem(s))",
		filepath.Join(dir, "a.yaml") + `:7: document 1: HTTPRoute ns/ok: spec.rules[0].retry.attempts: expected integer, got string "three"`,
		filepath.Join(dir, "b.yaml") + ":7: document 1: HTTPRoute ns/bad: spec.rules[0].retry.codes[0]: invalid per the Gateway API",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	for _, bad := range []string{"Go struct", "unmarshal", "ns_ok_r0", "ns_bad_r0"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr has %q:\n%s", bad, stderr)
		}
	}
}

// TestNotesGroupedOnce: a note raised for several routes is printed once,
// and the notes of one object are together.
func TestNotesGroupedOnce(t *testing.T) {
	second := strings.Replace(okRoute, "name: ok", "name: ok2", 1)
	dir := writeDir(t, map[string]string{"a.yaml": okRoute + "---\n" + second + "---\n" + service + "---\n" + gateway})
	code, _, stderr := gwretry(t, "", "check", dir, "--target", "nginx", "--report", "none")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	const https = "warning: Gateway ns/gw: listener https (HTTPS) is not generated"
	if n := strings.Count(stderr, https); n != 1 {
		t.Errorf("%q printed %d times:\n%s", https, n, stderr)
	}
	var objects []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		parts := strings.SplitN(line, ": ", 3)
		if len(parts) == 3 && strings.HasPrefix(parts[1], "HTTPRoute ") {
			if len(objects) == 0 || objects[len(objects)-1] != parts[1] {
				objects = append(objects, parts[1])
			}
		}
	}
	seen := map[string]bool{}
	for _, o := range objects {
		if seen[o] {
			t.Errorf("notes of %s are not together:\n%s", o, stderr)
		}
		seen[o] = true
	}
}

// TestInfoLinesOnlyVerbose: the info lines (the same on every run) are
// printed only with -v, once each; warnings always; -q is accepted and
// prints no info line even with -v.
func TestInfoLinesOnlyVerbose(t *testing.T) {
	second := strings.Replace(okRoute, "name: ok", "name: ok2", 1)
	dir := writeDir(t, map[string]string{"a.yaml": okRoute + "---\n" + second + "---\n" + service + "---\n" + gateway})
	const https = "warning: Gateway ns/gw: listener https (HTTPS) is not generated"
	for _, c := range []struct {
		flags []string
		info  bool
	}{
		{nil, false},
		{[]string{"-q"}, false},
		{[]string{"-v"}, true},
		{[]string{"--verbose"}, true},
		{[]string{"-v", "-q"}, false},
	} {
		for _, cmd := range []string{"check", "translate"} {
			args := append([]string{cmd, dir, "--target", "nginx@1.22", "--report", "none"}, c.flags...)
			code, _, stderr := gwretry(t, "", args...)
			if code != exitOK {
				t.Fatalf("%v: exit %d\n%s", args, code, stderr)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			info := 0
			seen := map[string]bool{}
			for _, l := range lines {
				if strings.HasPrefix(l, "info: ") {
					info++
				}
				if seen[l] {
					t.Errorf("%v: %q printed twice", args, l)
				}
				seen[l] = true
			}
			if (info > 0) != c.info || !seen[lineWith(lines, https)] {
				t.Errorf("%v: %d info lines, want them %v, and the warning always:\n%s", args, info, c.info, stderr)
			}
		}
	}
}

// lineWith returns the first of lines that starts with prefix.
func lineWith(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return "\x00"
}

// TestTextReportByRoute: the text report groups findings by route, headed
// by the file and document the route was read from.
func TestTextReportByRoute(t *testing.T) {
	second := strings.Replace(okRoute, "name: ok", "name: a-first", 1)
	dir := writeDir(t, map[string]string{"r.yaml": okRoute, "s.yaml": service + "---\n" + second})
	code, stdout, stderr := gwretry(t, "", "check", dir, "--target", "envoy,nginx", "--report", "table")
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	first := strings.Index(stdout, "\nHTTPRoute ns/a-first ("+filepath.Join(dir, "s.yaml")+": document 2)\n")
	okAt := strings.Index(stdout, "\nHTTPRoute ns/ok ("+filepath.Join(dir, "r.yaml")+": document 1)\n")
	if first < 0 || okAt < first {
		t.Fatalf("routes not grouped with their sources, in order:\n%s", stdout)
	}
	group := stdout[first:okAt]
	for _, w := range []string{"RULE", "envoy", "nginx", "retry.attempts"} {
		if !strings.Contains(group, w) {
			t.Errorf("group of ns/a-first lacks %q:\n%s", w, group)
		}
	}
	// translate keeps the report on stderr: stdout carries the configuration.
	code, stdout, stderr = gwretry(t, "", "translate", dir, "--target", "nginx", "--report", "table")
	if code != exitOK || !strings.Contains(stderr, "HTTPRoute ns/ok (") || strings.Contains(stdout, "report: ") {
		t.Errorf("translate: exit %d, report not on stderr:\n%s", code, stderr)
	}
}

// TestOutputDirNamedLikeAFormat: -o json is always the stdout format, even
// beside a directory json, which is -o ./json; -o wide is refused unless a
// directory wide exists.
func TestOutputDirNamedLikeAFormat(t *testing.T) {
	example, err := filepath.Abs(example)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, d := range []string{"json", "wide"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := gwretry(t, "", "translate", example, "--target", "envoy", "-o", "json", "-q")
	if code != exitOK || !strings.HasPrefix(stdout, "{") {
		t.Errorf("-o json: exit %d, stdout not JSON:\n%s\n%s", code, stdout, stderr)
	}
	for _, dir := range []string{"./json", "wide"} {
		if code, _, stderr := gwretry(t, "", "translate", example, "--target", "envoy", "--output-dir", dir, "-q"); code != exitOK {
			t.Errorf("-o %s: exit %d with an existing directory:\n%s", dir, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "envoy/envoy.yaml")); err != nil {
			t.Error(err)
		}
	}
}
