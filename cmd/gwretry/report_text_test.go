package main

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
)

// TestReportTextOneLinePerFinding: the text report gives each finding one
// line with what is configured and why (reason or caveats, read from the
// decision record), a summary per target, and the messages only in wide.
func TestReportTextOneLinePerFinding(t *testing.T) {
	code, stderr, errs := gwretry(t, "", "check", example, "--target", "nginx,linkerd", "-q")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"  RULE           TARGET   FEATURE                  STATUS         CONFIGURED ",
		"nginx    retry.backoff            unsupported    -  ",
		"NoBackoff\n",
		"proxy_next_upstream_tries 3 ",
		"NonIdempotentExempt\n",
		"linkerd  retry.attempts           notApplicable  -",
		"  nginx@1.28: 2 honoured, 10 approximated, 1 unsupported, 0 not applicable\n",
		"  linkerd@2.20: 0 honoured, 0 approximated, 0 unsupported, 13 not applicable\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("text report lacks %q:\n%s", want, stderr)
		}
	}
	noBackoff, _ := report.Lookup(report.ReasonNoBackoff)
	if strings.Contains(stderr, "MESSAGE") || strings.Contains(stderr, noBackoff.Text) {
		t.Errorf("the text report shows messages:\n%s", stderr)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if len(line) > 240 {
			t.Errorf("a line of %d characters: %q", len(line), line)
		}
	}
	code, stderr, _ = gwretry(t, "", "check", example, "--target", "nginx", "-q", "--report", "wide")
	if code != exitOK || !strings.Contains(stderr, "MESSAGE") || !strings.Contains(stderr, noBackoff.Text) {
		t.Errorf("--report wide: exit %d\n%s", code, stderr)
	}
}

// TestAssumedVersionSaid: a target without @VERSION gets the newest
// version gwretry knows, and an info line says which.
func TestAssumedVersionSaid(t *testing.T) {
	_, _, stderr := gwretry(t, "", "check", example, "--target", "haproxy,nginx@1.22")
	if !strings.Contains(stderr, "info: no version given: writing for haproxy@3.2,") || strings.Contains(stderr, "nginx@1.28") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if _, _, stderr := gwretry(t, "", "check", example, "--target", "haproxy@2.6"); strings.Contains(stderr, "no version given") {
		t.Errorf("a pinned version is said to be assumed:\n%s", stderr)
	}
}
