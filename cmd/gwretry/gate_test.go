package main

import (
	"strings"
	"testing"
)

// TestGate: --fail-on counts what a CI gate should: never a target that
// does not serve the rule, only the findings --fail-include names, none
// that --fail-exclude accepts, and each counted finding is listed with its
// reason.
func TestGate(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		// lines are in stderr; absent are not.
		lines, absent []string
	}{
		{"out of scope never counts", []string{"--target", "linkerd,openshift", "--fail-on", "unsupported"}, exitOK, nil, []string{"fail:"}},
		{"a gap counts and is listed", []string{"--target", "nginx", "--fail-on", "unsupported"}, exitFailOn,
			[]string{"fail: nginx HTTPRoute shop/storefront rule 0 retry.backoff unsupported: NoBackoff\n", "--fail-on unsupported: 1 finding(s) counted"}, nil},
		{"the reason excluded", []string{"--target", "nginx", "--fail-on", "unsupported", "--fail-exclude", "NoBackoff"}, exitOK, nil, []string{"fail:"}},
		{"the feature excluded", []string{"--target", "nginx", "--fail-on", "unsupported", "--fail-exclude", "retry.backoff"}, exitOK, nil, []string{"fail:"}},
		{"the target excluded", []string{"--target", "nginx,envoy", "--fail-on", "unsupported", "--fail-exclude", "nginx"}, exitOK, nil, []string{"fail:"}},
		{"only the included target", []string{"--target", "nginx,haproxy", "--fail-on", "unsupported", "--fail-include", "nginx"}, exitFailOn,
			[]string{"fail: nginx "}, []string{"fail: haproxy "}},
		{"a caveat accepted leaves the others", []string{"--target", "nginx", "--fail-on", "approximated", "--fail-exclude", "NoBackoff,NonIdempotentExempt"}, exitFailOn,
			[]string{"fail: nginx HTTPRoute shop/storefront rule 0 retry.codes approximated: InterimResponseIsFinal{version=1.26} NonIdempotentExempt"},
			[]string{"rule 0 retry.attempts approximated"}},
		{"included by a caveat", []string{"--target", "nginx", "--fail-on", "approximated", "--fail-include", "InterimResponseIsFinal"}, exitFailOn,
			[]string{"retry.codes approximated"}, []string{"retry.attempts approximated", "retry.backoff"}},
		{"a typo is a usage error", []string{"--target", "nginx", "--fail-on", "unsupported", "--fail-exclude", "NoBackof"}, exitUsage,
			[]string{`--fail-exclude "NoBackof": not a target, a feature or a reason code`}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := gwretry(t, "", append([]string{"check", example, "-q", "--report", "none"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, stderr)
			}
			for _, l := range tt.lines {
				if !strings.Contains(stderr, l) {
					t.Errorf("stderr lacks %q:\n%s", l, stderr)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(stderr, a) {
					t.Errorf("stderr has %q:\n%s", a, stderr)
				}
			}
		})
	}
}
