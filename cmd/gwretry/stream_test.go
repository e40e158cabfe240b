package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestWriteReportJSON: report.json written one finding at a time is
// json.MarshalIndent's document and a newline once re-indented, whatever
// the report holds, with each finding on a line of its own.
func TestWriteReportJSON(t *testing.T) {
	finding := func(target, route, msg string) translate.Finding {
		return translate.Finding{Target: target, Route: route, Rule: 1, RuleName: "r<1>", Feature: translate.FeatureRetryCodes,
			Status: translate.Approximated, Decision: report.Decide(report.ReasonConfigured).Set(msg)}
	}
	reports := map[string]translate.Report{
		"empty":       {SchemaVersion: 1, Targets: []translate.TargetInfo{}, Effective: []translate.RuleEffective{}, Findings: []translate.Finding{}},
		"nil slices":  {SchemaVersion: 1},
		"one finding": {SchemaVersion: 1, Findings: []translate.Finding{finding("nginx", "ns/a", "x")}},
		"escapes": {SchemaVersion: 1, Routes: 2, Rules: 3, Targets: []translate.TargetInfo{{Name: "envoy", Version: "1.36"}},
			Findings: []translate.Finding{
				finding("envoy", "ns/a", "a <b> & \"c\"\n\tnew line \u2028 é"),
				{Target: "envoy", Gateway: "infra/gw", Feature: "connection.idle", Status: translate.Honoured, Source: "Policy"},
				finding("haproxy", `ns/"q"`, ""),
			},
			Effective: []translate.RuleEffective{{Route: "ns/a", Rule: 1, Effective: map[translate.Feature]translate.EffectiveValue{
				translate.FeatureRetryCodes: {Value: []int{502, 503}, Source: "HTTPRoute"}}}},
			Policies: []translate.PolicyReport{{}}},
	}
	for name, r := range reports {
		t.Run(name, func(t *testing.T) {
			want, err := json.MarshalIndent(&r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			var got bytes.Buffer
			if err := writeReportJSON(&got, &r); err != nil {
				t.Fatal(err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, got.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(indented.Bytes(), want) {
				t.Errorf("writeReportJSON re-indented:\n%s\nwant MarshalIndent's:\n%s", indented.String(), want)
			}
			lines := strings.Split(got.String(), "\n")
			for _, f := range r.Findings {
				b, _ := json.Marshal(&f)
				if !slices.Contains(lines, "    "+string(b)) && !slices.Contains(lines, "    "+string(b)+",") {
					t.Errorf("finding %s is not a line of its own:\n%s", b, got.String())
				}
			}
		})
	}
}

// TestOutputDirUntouchedOnInternalError: the files of a target that
// succeeded are not written when a later target fails: DIR keeps what it
// held, and a DIR that did not exist is not created.
func TestOutputDirUntouchedOnInternalError(t *testing.T) {
	available := func(s backends.Settings) ([]translate.Backend, error) {
		bs, err := backends.Configured(s)
		return append(bs, lyingBackend{}), err
	}
	existing := t.TempDir()
	write(t, filepath.Join(existing, "nginx/nginx.conf"), "old\n")
	fresh := t.TempDir()
	for name, dir := range map[string]string{"existing": existing, "new": filepath.Join(fresh, "a", "out")} {
		root := filepath.Dir(dir)
		if name == "new" {
			root = fresh
		}
		t.Run(name, func(t *testing.T) {
			before := tree(t, root)
			o := &options{limits: input.DefaultLimits(), target: "nginx,envoy,grpc,liar", report: "none", failOn: "none", outDir: dir, available: available}
			var stdout, stderr bytes.Buffer
			err := runTranslate(o, []string{example}, strings.NewReader(""), &stdout, &stderr, false)
			if code := exitCode(err, "gwretry", &stderr); code != exitInternal {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInternal, stderr.String())
			}
			if after := tree(t, root); after != before {
				t.Errorf("output directory changed despite the internal error:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	// Without the liar, the same DIR gets every file and no staging
	// directory is left behind. Envoy's file, written into the staging
	// directory as it is made (translate.Options.Spool), has the bytes
	// and the mode of a file written whole.
	o := &options{limits: input.DefaultLimits(), target: "nginx,envoy,grpc", report: "none", failOn: "none", outDir: existing, available: available}
	var stdout, stderr bytes.Buffer
	if err := runTranslate(o, []string{example}, strings.NewReader(""), &stdout, &stderr, false); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	got := tree(t, existing)
	for _, p := range []string{"nginx/nginx.conf", "envoy/envoy.yaml", "grpc/service-config.json", "report.json"} {
		if !strings.Contains(got, p+"\n") {
			t.Errorf("%s not written:\n%s", p, got)
		}
	}
	if strings.Contains(got, ".gwretry-") || strings.Contains(got, ".spool") || strings.Contains(got, "old\n") {
		t.Errorf("staging left behind or old file kept:\n%s", got)
	}
	o = &options{limits: input.DefaultLimits(), target: "envoy", report: "none", failOn: "none", available: available}
	stdout.Reset()
	if err := runTranslate(o, []string{example}, strings.NewReader(""), &stdout, &stderr, false); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	written, err := os.ReadFile(filepath.Join(existing, "envoy/envoy.yaml"))
	if err != nil || !bytes.Equal(written, stdout.Bytes()) {
		t.Errorf("envoy.yaml under -o DIR differs from stdout's (%v):\n%s\nstdout:\n%s", err, written, stdout.String())
	}
	spooled, err1 := os.Stat(filepath.Join(existing, "envoy/envoy.yaml"))
	whole, err2 := os.Stat(filepath.Join(existing, "nginx/nginx.conf"))
	if err1 != nil || err2 != nil || spooled.Mode() != whole.Mode() {
		t.Errorf("envoy.yaml's mode is not nginx.conf's: %v, %v (%v, %v)", spooled.Mode(), whole.Mode(), err1, err2)
	}
}

// tree lists every file and directory under dir with the files' contents.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(filepath.ToSlash(rel) + "\n")
		if !d.IsDir() {
			data, err := os.ReadFile(p)
			b.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReplaceByCopy: the fallback of a rename that crosses file systems
// replaces a symlink at the destination instead of writing through it, and
// leaves no temporary file.
func TestReplaceByCopy(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "new.conf")
	target := filepath.Join(dir, "elsewhere.conf")
	to := filepath.Join(dir, "out", "nginx.conf")
	for p, data := range map[string]string{from: "new\n", target: "kept\n"} {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, to); err != nil {
		t.Skipf("no symlinks: %v", err)
	}
	if err := replaceByCopy(from, to); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(to); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("%s: %v, %v; want a regular file", to, st, err)
	}
	for p, want := range map[string]string{to: "new\n", target: "kept\n", from: "new\n"} {
		if got, err := os.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", p, got, err, want)
		}
	}
	if got := tree(t, filepath.Dir(to)); strings.Contains(got, ".gwretry-") {
		t.Errorf("temporary file left:\n%s", got)
	}
}

// TestSpoolRemoved: translate to stdout and check spool the large files
// in a temporary directory of $TMPDIR, which is gone after the run,
// whether it succeeded or not.
func TestSpoolRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	available := func(s backends.Settings) ([]translate.Backend, error) {
		bs, err := backends.Configured(s)
		return append(bs, lyingBackend{}), err
	}
	for _, tc := range []struct {
		target    string
		checkOnly bool
		ok        bool
	}{{"envoy", false, true}, {"nginx", true, true}, {"envoy,liar", true, false}} {
		o := &options{limits: input.DefaultLimits(), target: tc.target, report: "none", failOn: "none", available: available}
		var stdout, stderr bytes.Buffer
		err := runTranslate(o, []string{example}, strings.NewReader(""), &stdout, &stderr, tc.checkOnly)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v\n%s", tc.target, err, stderr.String())
		}
		if tc.ok && !tc.checkOnly && !strings.Contains(stdout.String(), "static_resources:") {
			t.Errorf("%s: no configuration on stdout:\n%s", tc.target, stdout.String())
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("%s: %s left in $TMPDIR", tc.target, left[0].Name())
		}
	}
}
