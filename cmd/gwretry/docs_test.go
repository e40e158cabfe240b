package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

const cliDoc = "../../docs/cli.md"

// cliMarkdown is docs/cli.md: every command's help, generated from the
// commands by cobra's doc package, in one file, its links within it.
func cliMarkdown(t *testing.T) []byte {
	t.Helper()
	root := newRootCmd(nil, io.Discard, io.Discard)
	var buf bytes.Buffer
	buf.WriteString("<!-- Generated from the commands by `make docs` (go test ./cmd/gwretry -run TestCLIDoc -update). DO NOT EDIT. -->\n" +
		"# gwretry command line\n\nThe help of every command, as `gwretry COMMAND --help` prints it. " +
		"Installed as `kubectl-gwretry`, every command is also `kubectl gwretry COMMAND`.\n\n")
	link := func(name string) string {
		return "#" + strings.ReplaceAll(strings.TrimSuffix(name, ".md"), "_", "-")
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// cobra's doc package adds a help command to every command with
		// subcommands; only gwretry help is one that users see.
		if c != root && (c.Hidden || c.Name() == "help" && c.Parent() != root) {
			return
		}
		c.DisableAutoGenTag = true
		if err := doc.GenMarkdownCustom(c, &buf, link); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("\n")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// TestCLIDoc fails when docs/cli.md is not what the commands say; -update
// (make docs) rewrites it.
func TestCLIDoc(t *testing.T) {
	got := append(cliMarkdown(t), '\n')
	if *update {
		if err := os.WriteFile(cliDoc, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatalf("%v (run `make docs`)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("docs/cli.md is stale: run `make docs` (-want +got):\n%s", diff)
	}
}

// TestEveryCommandHasExamples: --help of every command shows examples.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			t.Errorf("%q has no example", c.CommandPath())
		}
		var out bytes.Buffer
		c.SetOut(&out)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "Examples:") {
			t.Errorf("%q --help shows no example:\n%s", c.CommandPath(), out.String())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(nil, io.Discard, io.Discard))
}
