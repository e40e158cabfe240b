package ingressnginx

import (
	"regexp"
	"testing"
)

// TestReasons: every code is CamelCase, listed once, with a status and a
// text of one short line.
func TestReasons(t *testing.T) {
	camel := regexp.MustCompile(`^[A-Z][a-zA-Z0-9]+$`)
	seen := map[Reason]bool{}
	for _, e := range Reasons() {
		if !camel.MatchString(string(e.Reason)) || seen[e.Reason] {
			t.Errorf("%q: not CamelCase or listed twice", e.Reason)
		}
		seen[e.Reason] = true
		if e.Status.Rank() < 0 || e.Status == "" || e.Text == "" || len(e.Text) > 120 {
			t.Errorf("%s: status %q, text %q", e.Reason, e.Status, e.Text)
		}
	}
}
