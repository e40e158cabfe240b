package haproxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// deadRules are the three ways a rule has no usable backend.
func deadRules() []*translate.Rule {
	retry := &translate.Retry{Attempts: 2, Codes: []int{503}, Backoff: dur("1s")}
	to := translate.Timeouts{Request: dur("5s"), BackendRequest: dur("1s")}
	none := rule(0, retry, to)
	none.Backends, none.NoBackendRefs = nil, true
	zero := rule(1, retry, to)
	zero.Backends = []*translate.BackendRef{ref("default_web_80", 0, ep("10.0.0.1", 3000))}
	invalid := rule(2, retry, to)
	invalid.Backends = nil
	invalid.Invalid = []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}
	return []*translate.Rule{none, zero, invalid}
}

func TestDeadRuleAnswers500(t *testing.T) {
	rules := deadRules()
	cfg, fs := generate(t, modelOf(rules...), translate.Options{Version: "2.6"})
	for _, r := range rules {
		be := section(cfg, "backend be_"+r.Name)
		if want := []string{"http-request return status 500"}; !slices.Equal(be, want) {
			t.Errorf("rule %d: backend = %q, want %q", r.Index, be, want)
		}
		for feat, f := range fs[r.Index] {
			switch {
			case feat == translate.FeatureBackendRefs:
				if f.Reason != report.ReasonAnswers500 || f.Configured != "http-request return status 500" {
					t.Errorf("rule %d: backendRefs = %s %q", r.Index, f.Reason, f.Configured)
				}
			case f.Reason != report.ReasonRuleForwardsNothing:
				t.Errorf("rule %d: %s = %s, want the dead-rule finding", r.Index, feat, f.Reason)
			}
		}
		if _, ok := fs[r.Index][translate.FeatureBackendRefs]; !ok {
			t.Errorf("rule %d: no backendRefs finding", r.Index)
		}
	}
	if strings.Contains(cfg, "weight 0") {
		t.Errorf("a dead rule still has a server:\n%s", cfg)
	}
}

func TestInvalidShareAnswered500(t *testing.T) {
	r := rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
	r.Backends = []*translate.BackendRef{ref("a", 6, ep("10.0.0.1", 80))}
	r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 2, Reason: "kind Bucket is not a Service"}}
	zero := rule(1, nil, translate.Timeouts{})
	zero.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 0, Reason: "Service default/gone is not in the input"}}
	cfg, fs := generate(t, modelOf(r, zero), translate.Options{Version: "2.6"})
	be := section(cfg, "backend be_default_web_r00")
	if !slices.Contains(be, "http-request return status 500 if { rand(4) lt 1 }") {
		t.Errorf("backend = %q, want the invalid quarter answered 500", be)
	}
	if !slices.Contains(be, "server s1_a 10.0.0.1:80 weight 1") {
		t.Errorf("backend = %q, want the valid server", be)
	}
	if f := fs[0][translate.FeatureBackendRefs]; f.Reason != report.ReasonAnswers500 || f.Configured != "http-request return status 500 if { rand(4) lt 1 }" {
		t.Errorf("backendRefs = %s %q", f.Reason, f.Configured)
	}
	if be := section(cfg, "backend be_default_web_r01"); slices.ContainsFunc(be, func(l string) bool { return strings.Contains(l, "return") }) {
		t.Errorf("weight-0 invalid ref answered: %q", be)
	}
	if f := fs[1][translate.FeatureBackendRefs]; f.Reason != report.ReasonConfigured || f.Status != translate.Honoured {
		t.Errorf("backendRefs (weight 0) = %s %s %q", f.Reason, f.Status, f.Configured)
	}
}

func TestAttemptsClampedToIntMax(t *testing.T) {
	for _, v := range New().Versions() {
		huge := rule(0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{})
		most := rule(1, &translate.Retry{Attempts: 2147483647}, translate.Timeouts{})
		cfg, fs := generate(t, modelOf(huge, most), translate.Options{Version: v, RetryNonIdempotent: true})
		for _, r := range []*translate.Rule{huge, most} {
			if be := section(cfg, "backend be_"+r.Name); !slices.Contains(be, "retries 2147483647") {
				t.Errorf("%s rule %d: backend %q lacks retries 2147483647", v, r.Index, be)
			}
		}
		want := report.NewCaveat(report.CaveatAttemptsClamped, "configured", "2147483647", "max", "2147483647")
		f := fs[0][translate.FeatureRetryAttempts]
		if c, ok := caveatOf(f, report.CaveatAttemptsClamped); f.Status != translate.Approximated || !ok || !cmp.Equal(c, want) {
			t.Errorf("%s: attempts 4294967297 = %s %v, want approximated with the clamp", v, f.Status, f.Caveats)
		}
		if f := fs[1][translate.FeatureRetryAttempts]; hasCaveat(f, report.CaveatAttemptsClamped) {
			t.Errorf("%s: attempts 2147483647 reported clamped: %v", v, f.Caveats)
		}
	}
}

func TestMethodExemption(t *testing.T) {
	retry := &translate.Retry{Attempts: 2, Codes: []int{503}}
	to := translate.Timeouts{BackendRequest: dur("1s")}
	get := rule(0, retry, to)
	get.Methods = []string{"GET"}
	post := rule(1, retry, to)
	post.Methods = []string{"POST"}
	anyMethod := rule(2, retry, to)
	touched := []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryCodes,
		translate.FeatureRetryConnectionErrors, translate.FeatureRetryBackendTimeout}
	for _, optIn := range []bool{false, true} {
		_, fs := generate(t, modelOf(get, post, anyMethod), translate.Options{Version: "2.6", RetryNonIdempotent: optIn})
		for _, r := range []*translate.Rule{get, post, anyMethod} {
			exempt := !optIn && r.MatchesNonIdempotent()
			for _, feat := range touched {
				f := fs[r.Index][feat]
				if f.Status != translate.Approximated {
					t.Errorf("opt-in %v rule %v %s: %s, want approximated", optIn, r.Methods, feat, f.Status)
				}
				if got := hasCaveat(f, report.CaveatNonIdempotentExempt); got != exempt {
					t.Errorf("opt-in %v rule %v %s: has the POST exemption = %v, want %v: %v", optIn, r.Methods, feat, got, exempt, f.Caveats)
				}
				if !hasCaveat(f, report.CaveatRetryBufferLimitedByHeaders) {
					t.Errorf("opt-in %v rule %v %s: does not name the buffer limit: %v", optIn, r.Methods, feat, f.Caveats)
				}
			}
		}
	}
}

func TestBackendRequestZeroNamesCap(t *testing.T) {
	r := rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("0s")})
	cfg, fs := generate(t, modelOf(r), translate.Options{Version: "2.6", RetryNonIdempotent: true})
	if be := section(cfg, "backend be_default_web_r00"); !slices.Contains(be, "timeout server 2147483647ms") {
		t.Errorf("backend = %q", be)
	}
	for _, feat := range []translate.Feature{translate.FeatureBackendRequestTimeout, translate.FeatureRetryBackendTimeout} {
		if f := fs[0][feat]; f.Reason != report.ReasonTimeoutDisabled || !hasCaveat(f, report.CaveatDisabledTimeoutIsLargest) {
			t.Errorf("%s = %s %v, want 0s with the cap", feat, f.Reason, f.Caveats)
		}
	}
}
