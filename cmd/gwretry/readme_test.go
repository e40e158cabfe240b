package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEExamples runs, in order, the gwretry command lines of the
// README's first screen and of docs/usage.md's sections on the drift
// check, formats, matrix, version and completion, in a fresh directory
// with the repository's testdata: each must exit 0 and print something.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	usage, err := os.ReadFile("../../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(readme), "## Quick start")
	_, section, _ := strings.Cut(string(usage), "## Drift check in CI")
	section, _, _ = strings.Cut(section, "## Input")
	section = first + section
	t.Chdir(t.TempDir())
	n := 0
	for _, line := range strings.Split(section, "\n") {
		cmd, ok := strings.CutPrefix(line, "    gwretry ")
		if !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "#")
		var args []string
		for _, a := range strings.Fields(cmd) {
			if strings.HasPrefix(a, "testdata/") {
				a = filepath.Join(repo, a)
			}
			args = append(args, a)
		}
		n++
		code, stdout, stderr := gwretry(t, "", args...)
		if code != exitOK || stdout == "" && !strings.Contains(cmd, "--output-dir out/") {
			t.Errorf("gwretry %s: exit %d, stdout %d bytes\n%s", cmd, code, len(stdout), stderr)
		}
	}
	if n < 9 {
		t.Errorf("only %d examples found in the README", n)
	}
	// source <(gwretry completion bash)
	if code, stdout, _ := gwretry(t, "", "completion", "bash"); code != exitOK || !strings.Contains(stdout, "__start_gwretry") {
		t.Errorf("completion bash: exit %d", code)
	}
}

// TestREADMEReport: the report the README shows is what check prints for
// the shipped example today.
func TestREADMEReport(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// From the repository's top, as the README's reader runs it: the
	// report names the file as given.
	t.Chdir("../..")
	_, out, _ := gwretry(t, "", "check", "testdata/examples/retry.yaml", "--target", "nginx", "-q")
	var block strings.Builder
	for _, l := range strings.SplitAfter(out, "\n") {
		if strings.TrimSpace(l) != "" {
			block.WriteString("    ")
		}
		block.WriteString(l)
	}
	if !strings.Contains(string(readme), block.String()) {
		t.Errorf("README.md does not show check's report of the example as it is now:\n%s", block.String())
	}
}
