package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagsOneMeaning: kubectl's habits across commands. -f names input
// files (as the PATH arguments, repeatable, alone or beside them); -o is
// the output format (check's and prove's report, translate's
// configuration, import's YAML); the directory is --output-dir and the
// file --output-file. The old -o DIR and -o FILE still work, with one
// deprecation warning naming the new flag.
func TestFlagsOneMeaning(t *testing.T) {
	const imp = "testdata/import-ingress-nginx/tries/input.yaml"
	for _, c := range []struct {
		name string
		args []string
		// dir and file are written under the test's directory (""
		// for none); stdout starts with stdoutPrefix.
		dir, file, stdoutPrefix string
		// deprecated: the warning names this flag ("" for none).
		deprecated string
	}{
		{name: "translate -f", args: []string{"translate", "-f", example, "--target", "envoy@1.36"}, stdoutPrefix: "static_resources:"},
		{name: "translate -f twice", args: []string{"translate", "-f", example, "-f", example, "--target", "envoy@1.36", "-o", "json"}, stdoutPrefix: "{"},
		{name: "translate --output-dir", args: []string{"translate", example, "--target", "nginx@1.26", "--output-dir", "OUT"}, dir: "OUT/nginx/nginx.conf"},
		{name: "translate -o DIR", args: []string{"translate", example, "--target", "nginx@1.26", "-o", "OUT"}, dir: "OUT/nginx/nginx.conf", deprecated: "--output-dir OUT"},
		{name: "check -f -o json", args: []string{"check", "-f", example, "--target", "nginx@1.26", "-o", "json"}, stdoutPrefix: "{"},
		{name: "check --report json", args: []string{"check", example, "--target", "nginx@1.26", "--report", "json"}, stdoutPrefix: "{"},
		{name: "explain -f", args: []string{"explain", "-f", example, "--target", "nginx@1.26", "-o", "json"}, stdoutPrefix: "{"},
		{name: "import -f", args: []string{"import", "ingress-nginx", "-f", imp, "--report", "none"}, stdoutPrefix: "apiVersion:"},
		{name: "import -o yaml", args: []string{"import", "ingress-nginx", imp, "-o", "yaml", "--report", "none"}, stdoutPrefix: "apiVersion:"},
		{name: "import --output-file", args: []string{"import", "ingress-nginx", imp, "--output-file", "OUT.yaml", "--report", "none"}, file: "OUT.yaml"},
		{name: "import -o FILE", args: []string{"import", "ingress-nginx", imp, "-o", "OUT.yaml", "--report", "none"}, file: "OUT.yaml", deprecated: "--output-file OUT.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(a, "OUT", filepath.Join(tmp, "out"))
			}
			code, stdout, stderr := gwretry(t, "", args...)
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			if !strings.HasPrefix(stdout, c.stdoutPrefix) {
				t.Errorf("stdout %.80q, want it to start with %q", stdout, c.stdoutPrefix)
			}
			for _, p := range []string{c.dir, c.file} {
				if p == "" {
					continue
				}
				if _, err := os.Stat(strings.ReplaceAll(p, "OUT", filepath.Join(tmp, "out"))); err != nil {
					t.Error(err)
				}
			}
			n := strings.Count(stderr, "is deprecated")
			want := strings.ReplaceAll(c.deprecated, "OUT", filepath.Join(tmp, "out"))
			if (c.deprecated == "" && n != 0) || (c.deprecated != "" && (n != 1 || !strings.Contains(stderr, "use "+want))) {
				t.Errorf("%d deprecation warnings, want one naming %q:\n%s", n, want, stderr)
			}
		})
	}
}
