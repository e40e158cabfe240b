package main

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestReportTextOneLinePerFinding: the text report gives each finding one
// line with what is configured and why (reason or caveats, read from the
// decision record), a summary per target, and the messages only in wide.
func TestReportTextOneLinePerFinding(t *testing.T) {
	code, stderr, errs := gwretry(t, "", "check", example, "--target", "nginx,linkerd", "-q", "--report", "table")
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
		"  nginx@1.26: 2 honoured, 10 approximated, 1 unsupported, 0 not applicable\n",
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
// version the live tests prove (nginx 1.26, HAProxy 3.0, Traefik 3.6; the
// others their newest), one warning line says which and names the flag
// that pins a newer one, and the newer versions stay available with @.
func TestAssumedVersionSaid(t *testing.T) {
	for _, c := range []struct {
		target string
		// want are the versions report.json names, by target.
		want map[string]string
		// warned: the one warning line, with the --target it suggests
		// ("" when every version was given).
		warned, pin string
	}{
		{target: "nginx", want: map[string]string{"nginx": "1.26"}, warned: "nginx@1.26", pin: "nginx@1.28"},
		{target: "haproxy", want: map[string]string{"haproxy": "3.0"}, warned: "haproxy@3.0", pin: "haproxy@3.2"},
		{target: "traefik", want: map[string]string{"traefik": "3.6"}, warned: "traefik@3.6", pin: "traefik@3.7"},
		{target: "envoy", want: map[string]string{"envoy": "1.36"}, warned: "envoy@1.36", pin: "envoy@1.36"},
		{target: "haproxy,nginx@1.22", want: map[string]string{"haproxy": "3.0", "nginx": "1.22"}, warned: "haproxy@3.0", pin: "haproxy@3.2"},
		{target: "nginx@1.28,haproxy@3.2,traefik@3.7", want: map[string]string{"nginx": "1.28", "haproxy": "3.2", "traefik": "3.7"}},
		{target: "haproxy@2.6", want: map[string]string{"haproxy": "2.6"}},
	} {
		t.Run(c.target, func(t *testing.T) {
			code, stdout, stderr := gwretry(t, "", "check", example, "--target", c.target, "--report", "json")
			if code != exitOK {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			var r translate.Report
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, ti := range r.Targets {
				got[ti.Name] = ti.Version
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("versions %v, want %v", got, c.want)
			}
			var warnings []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.Contains(l, "no version given") {
					warnings = append(warnings, l)
				}
			}
			switch {
			case c.warned == "" && len(warnings) != 0:
				t.Errorf("pinned versions are said to be assumed:\n%s", stderr)
			case c.warned != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0], "warning: ") ||
				!strings.Contains(warnings[0], c.warned) || !strings.Contains(warnings[0], "--target "+c.pin)):
				t.Errorf("want one warning naming %s and --target %s:\n%s", c.warned, c.pin, stderr)
			}
		})
	}
}

// TestBriefReport: the default text report of the shipped example on every
// target fits a reviewer's screen: at most 40 lines and 6 KB, a summary
// per target, the targets that serve none of the rules on one line, one
// line per rule and target that does not honour everything (features and
// their reason or caveat codes), and the caveats several targets share in
// words, once each; "are POST requests retried?" is one line.
func TestBriefReport(t *testing.T) {
	code, out, errs := gwretry(t, "", "check", example, "--target", "all", "-q")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 40 || len(out) > 6<<10 {
		t.Errorf("%d lines, %d bytes; want at most 40 and 6 KB:\n%s", len(lines), len(out), out)
	}
	count := func(sub string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, sub) {
				n++
			}
		}
		return n
	}
	nonIdempotent, _ := report.Lookup(report.CaveatNonIdempotentExempt)
	for sub, want := range map[string]int{
		"serve none of these rules (every finding not applicable): linkerd@2.20, openshift@4.20": 1,
		"HTTPRoute shop/storefront rule ":      3,
		"  nginx ":                             3, // one line per rule
		"retry.backoff: unsupported NoBackoff": 2, // haproxy and nginx, on rule 0
		"  NonIdempotentExempt: " + nonIdempotent.Render(report.Params{"methods": "POST, PATCH, LOCK"}): 1,
		"linkerd  ": 0,
	} {
		if got := count(sub); got != want {
			t.Errorf("%d lines contain %q, want %d:\n%s", got, sub, want, out)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "  ") && strings.Contains(l, ": ") && !strings.Contains(l, "~") && !strings.Contains(l, "unsupported") && len(l) > 160 {
			t.Errorf("a caveat in words over 160 characters: %q", l)
		}
	}
}

// TestBriefLineLength renders the brief report of every golden
// report.json (the translate goldens under testdata/, the others under
// cmd/gwretry/testdata/) and of the shipped example with its file
// positions: no line is longer than maxBriefLine, so a reviewer reads
// what a rule does on a target on one screen line; the facts a line leaves
// out (+N codes, long parameter lists) are in --report wide and json.
func TestBriefLineLength(t *testing.T) {
	var paths []string
	for _, root := range []string{"../../testdata", "testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "report.json" {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(name, out string) {
		for i, l := range strings.Split(out, "\n") {
			if len(l) > maxBriefLine {
				t.Errorf("%s: line %d has %d characters, want at most %d:\n%s", name, i+1, len(l), maxBriefLine, l)
			}
		}
	}
	n := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r translate.Report
		if err := json.Unmarshal(data, &r); err != nil || r.Targets == nil {
			continue // another command's report (import ingress-nginx)
		}
		n++
		var b strings.Builder
		if err := writeBrief(&b, &r, nil, false); err != nil {
			t.Fatal(err)
		}
		check(p, b.String())
	}
	if n < 15 {
		t.Errorf("only %d golden reports", n)
	}
	code, out, errs := gwretry(t, "", "check", example, "--target", "all", "-q")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	check("check "+example, out)
}

// TestBriefLine: the compact forms a long line takes.
func TestBriefLine(t *testing.T) {
	retry := []report.Feature{"retry.attempts", "retry.codes", "retry.connectionErrors"}
	gs := []briefGroup{{why: "~", features: retry}, {why: "unsupported NoBackoff", features: []report.Feature{"retry.backoff"}}}
	codes := []report.Reason{"NonIdempotentExempt", "IdleTimer", "InterimResponseIsFinal"}
	onLines := map[report.Reason]int{"NonIdempotentExempt": 9, "IdleTimer": 1, "InterimResponseIsFinal": 2}
	for _, tc := range []struct {
		kinds  map[string]int
		budget int
		want   []string
	}{
		{map[string]int{"retry": 4}, 160, []string{"retry.backoff: unsupported NoBackoff; retry.*: ~ IdleTimer InterimResponseIsFinal NonIdempotentExempt"}},
		// a retry feature honoured: the approximated ones are named
		{map[string]int{"retry": 5}, 160, []string{"retry.backoff: unsupported NoBackoff; retry.{attempts,codes,connectionErrors}: ~ IdleTimer InterimResponseIsFinal NonIdempotentExempt"}},
		// the code on the most lines is counted
		{map[string]int{"retry": 4}, 85, []string{"retry.backoff: unsupported NoBackoff; retry.*: ~ IdleTimer InterimResponseIsFinal +1"}},
		// not one code fits: the approximated features go below
		{map[string]int{"retry": 5}, 70, []string{"retry.backoff: unsupported NoBackoff", "retry.{attempts,codes,connectionErrors}: ~ IdleTimer +2"}},
	} {
		got := briefLine(slices.Clone(gs), codes, tc.kinds, onLines, tc.budget, false)
		if !slices.Equal(got, tc.want) {
			t.Errorf("budget %d, kinds %v:\n got %q\nwant %q", tc.budget, tc.kinds, got, tc.want)
		}
	}
	if got := numberRanges("409, 429, 505, 506, 507, 508, 510"); got != "409, 429, 505-508, 510" {
		t.Errorf("numberRanges: %q", got)
	}
	if got := firstItems("a.example.com, b.example.com, c.example.com", 1); got != "a.example.com, … +2" {
		t.Errorf("firstItems: %q", got)
	}
}
