package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// formatCases are the inputs of the report format goldens, run from the
// repository's root so that the paths in the reports are the ones a CI
// job at a checkout's root sees: the shipped example on every target,
// and a case with Gateway (connection) findings, which have no rule line.
var formatCases = []struct {
	name string
	args []string
}{
	{"example", []string{"testdata/examples/retry.yaml", "--target", "all"}},
	{"conntimeout", []string{"testdata/conntimeout/input.yaml", "--target", "envoy,haproxy@2.6,nginx@1.22,traefik@3.6,grpc"}},
}

// formatGoldens are the formats golden-tested, by file extension.
var formatGoldens = map[string]string{"sarif": ".sarif", "github": ".github.txt", "markdown": ".md", "html": ".html"}

// reportIn runs gwretry check from the repository's root with --report
// format and returns the report; the test must not be parallel.
func reportIn(t *testing.T, format string, args []string) []byte {
	t.Helper()
	code, out, errs := gwretry(t, "", append([]string{"check", "-q", "--report", format}, args...)...)
	if code != exitOK {
		t.Fatalf("check %s --report %s: exit %d\n%s", strings.Join(args, " "), format, code, errs)
	}
	return []byte(out)
}

// TestReportFormatsGolden: --report sarif, github, markdown and html of
// each format case equal testdata/reports/<case><ext> byte for byte
// (-update rewrites them).
func TestReportFormatsGolden(t *testing.T) {
	dir, _ := filepath.Abs("testdata/reports")
	t.Chdir("../..")
	for _, c := range formatCases {
		for format, ext := range formatGoldens {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				got := reportIn(t, format, c.args)
				p := filepath.Join(dir, c.name+ext)
				if *update {
					os.MkdirAll(dir, 0o755)
					if err := os.WriteFile(p, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("--report %s differs from %s (run with -update and review) (-want +got):\n%s", format, p, diff)
				}
			})
		}
	}
}

// sarifSchemaSHA256 pins the official SARIF 2.1.0 schema (2.1.0-rtm.5, as
// npm package @microsoft/jest-sarif 1.0.0-beta.0 ships it) that make deps
// puts in the cache: see the Makefile's sarif-schema rule.
const sarifSchemaSHA256 = "2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8"

// sarifSchemaPath is where make deps puts the schema: $GWRETRY_SARIF_SCHEMA,
// else the cache (as the Makefile's CACHE_DIR).
func sarifSchemaPath() string {
	if p := os.Getenv("GWRETRY_SARIF_SCHEMA"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "gwretry", "sarif-schema-2.1.0.json")
}

// TestSARIFValidates validates --report sarif of every format case, and
// the goldens, against the official SARIF 2.1.0 JSON schema. Without the
// schema (make deps fetches it) the test skips, and fails under CI=true.
func TestSARIFValidates(t *testing.T) {
	p := sarifSchemaPath()
	data, err := os.ReadFile(p)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the SARIF 2.1.0 schema is missing (%v): make deps fetches it", err)
		}
		t.Skipf("the SARIF 2.1.0 schema is missing (%v): make deps fetches it", err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sarifSchemaSHA256 {
		t.Fatalf("%s has sha256 %x, not the pinned %s: remove it and run make deps", p, sum, sarifSchemaSHA256)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	const url = "https://example.invalid/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	validate := func(name string, b []byte) {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s is not valid SARIF 2.1.0: %v", name, err)
		}
	}
	goldens, _ := filepath.Glob("testdata/reports/*.sarif")
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		validate(g, b)
	}
	// A document the schema must refuse: the schema is really applied.
	validate2 := func(b string) error {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(b))
		return sch.Validate(v)
	}
	if validate2(`{"version":"2.1.0","runs":[{"tool":{"driver":{}}}]}`) == nil {
		t.Error("the schema accepts a driver without a name")
	}
	t.Chdir("../..")
	for _, c := range formatCases {
		validate(c.name, reportIn(t, "sarif", c.args))
	}
	if len(goldens) < len(formatCases) {
		t.Errorf("%d SARIF goldens, want %d", len(goldens), len(formatCases))
	}
}

// TestAnnotationsEscaped: workflow command values are escaped as the
// Actions runner reads them: %, CR and LF in the message, and ':' and ','
// too in a property.
func TestAnnotationsEscaped(t *testing.T) {
	if got, want := escapeData("50% a\r\nb: c, d"), "50%25 a%0D%0Ab: c, d"; got != want {
		t.Errorf("escapeData = %q, want %q", got, want)
	}
	if got, want := escapeProperty("dir,1/a:b%.yaml\n"), "dir%2C1/a%3Ab%25.yaml%0A"; got != want {
		t.Errorf("escapeProperty = %q, want %q", got, want)
	}
}

// TestAnnotationsFollowGate: with --fail-on, --report github annotates the
// findings the gate counts, each an error, and nothing else; without, each
// approximated finding is a warning and each unsupported one an error.
func TestAnnotationsFollowGate(t *testing.T) {
	count := func(out, prefix string) int {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	code, out, _ := gwretry(t, "", "check", example, "--target", "nginx@1.22", "-q", "--report", "github")
	if code != exitOK || count(out, "::error ") != 1 || count(out, "::warning ") != 10 {
		t.Errorf("exit %d, %d errors, %d warnings, want 1 and 10:\n%s", code, count(out, "::error "), count(out, "::warning "), out)
	}
	if !strings.Contains(out, "::error file="+example+",line=32,title=gwretry nginx@1.22 retry.backoff unsupported (NoBackoff)::") {
		t.Errorf("no error annotation of NoBackoff at the rule's line:\n%s", out)
	}
	code, out, _ = gwretry(t, "", "check", example, "--target", "nginx@1.22", "-q", "--report", "github", "--fail-on", "approximated", "--fail-exclude", "NoBackoff,IdleTimer,NonIdempotentExempt")
	if code != exitFailOn || count(out, "::warning ") != 0 || count(out, "::error ") == 0 {
		t.Errorf("exit %d:\n%s", code, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(l, "(NoBackoff)") || strings.Contains(l, "(NonIdempotentExempt)") {
			t.Errorf("an excluded finding is annotated: %s", l)
		}
	}
}
