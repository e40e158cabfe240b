package envoy

import (
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestPolicyRetryOn: a BackendTrafficPolicy's retry condition is written
// as Envoy Gateway writes it (retry_on, retriable_status_codes) on the
// retrying route; the route for POST, PATCH and LOCK keeps only its
// triggers of failures before sending, and none of them means no retry
// there (a rule that matches only those methods then retries nothing:
// OnlyExemptMethods). The findings name the policy.
func TestPolicyRetryOn(t *testing.T) {
	on := func(conn translate.ConnRetry, triggers ...string) *translate.Retry {
		return &translate.Retry{Attempts: 2, Codes: []int{503}, On: &translate.RetryOn{Policy: "BackendTrafficPolicy default/p",
			Triggers: triggers, StatusCodes: []int{503}, ConnErrors: conn}}
	}
	unsent := newRule(0, on(translate.ConnRetryUnsent, "connect-failure", "retriable-status-codes"), translate.Timeouts{BackendRequest: dur(t, "1s")})
	none := newRule(1, on(translate.ConnRetryNone, "retriable-status-codes"), translate.Timeouts{})
	postOnly := newRule(2, on(translate.ConnRetryNone, "retriable-status-codes"), translate.Timeouts{})
	postOnly.Methods = []string{"POST"}
	m := singleModel(unsent, none, postOnly)
	m.Listeners[0].VirtualHosts[0].Routes[2].Match.Method = "POST"
	out, bs := generate(t, m, translate.Options{})
	check := func(name, retryOn string, codes int) {
		t.Helper()
		rs := routesNamed(t, bs, name)
		if len(rs) != 1 {
			t.Fatalf("%s: %d routes", name, len(rs))
		}
		rp := rs[0].GetRoute().GetRetryPolicy()
		if got := rp.GetRetryOn(); got != retryOn {
			t.Errorf("%s: retry_on %q, want %q", name, got, retryOn)
		}
		if got := len(rp.GetRetriableStatusCodes()); got != codes {
			t.Errorf("%s: %d retriable_status_codes, want %d", name, got, codes)
		}
	}
	check(unsent.Name, "connect-failure,retriable-status-codes", 1)
	check(unsent.Name+twinSuffix, "connect-failure", 0)
	check(none.Name, "retriable-status-codes", 1)
	check(none.Name+twinSuffix, "", 0)
	check(postOnly.Name, "", 0)

	for _, c := range []struct {
		r      *translate.Rule
		f      translate.Feature
		reason report.Reason
	}{
		{unsent, translate.FeatureRetryConnectionErrors, report.ReasonConnErrorsAsPolicy},
		{unsent, translate.FeatureRetryBackendTimeout, report.ReasonTimeoutNotRetriedAsPolicy},
		{none, translate.FeatureRetryConnectionErrors, report.ReasonConnErrorsAsPolicy},
		{postOnly, translate.FeatureRetryAttempts, report.ReasonOnlyExemptMethods},
	} {
		f := findingOf(t, out.Findings, c.r, c.f)
		if f.Reason != c.reason || (c.reason != report.ReasonOnlyExemptMethods && f.Params["policy"] != "BackendTrafficPolicy default/p") {
			t.Errorf("%s %s: %s %v, want %s naming the policy", c.r.Name, c.f, f.Reason, f.Params, c.reason)
		}
	}
}
