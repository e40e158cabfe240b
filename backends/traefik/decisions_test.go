package traefik

import (
	"slices"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// hasCaveat reports whether d has a caveat of reason c.
func hasCaveat(d report.Decision, c report.Reason) bool {
	return slices.ContainsFunc(d.Caveats, func(x report.Caveat) bool { return x.Reason == c })
}

func caveatReasons(d report.Decision) []report.Reason {
	var out []report.Reason
	for _, c := range d.Caveats {
		out = append(out, c.Reason)
	}
	return out
}

// runFindings runs the backend through translate.Run, which checks every
// finding's decision (report.Check), and returns the findings.
func runFindings(t *testing.T, m *translate.Model, version string, nonIdempotent bool) []translate.Finding {
	t.Helper()
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: version}}, nonIdempotent)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, f := range res.Report.Findings {
		if err := report.Check(f); err != nil {
			t.Errorf("%s %s: %v", f.Route, f.Feature, err)
		}
	}
	return res.Report.Findings
}

// TestDecisions: the decision each kind of rule records, per feature:
// its reason, its caveats and what it configures. Messages are prose and
// not looked at.
func TestDecisions(t *testing.T) {
	type want struct {
		reason     report.Reason
		caveats    []report.Reason
		configured string
		params     report.Params // checked when set: the reason's, or else the first caveat's
	}
	withMethods := func(r *translate.Rule, ms ...string) *translate.Rule { r.Methods = ms; return r }
	dead := rule("dead", 0, &translate.Retry{Attempts: 2}, translate.Timeouts{Request: dur("1s")})
	dead.Backends, dead.NoBackendRefs = nil, true
	part := rule("part", 0, nil, translate.Timeouts{})
	part.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 2, Reason: "kind Bucket is not a Service"}}
	zeroWeight := rule("zw", 0, nil, translate.Timeouts{})
	zeroWeight.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 0, Reason: "kind Bucket is not a Service"}}
	mirror := rule("mir", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
	mirror.Filters.Mirrors = []*translate.Mirror{{Backend: backend("default_m_80", 1, "127.0.0.2"), Numerator: 1, Denominator: 3}}
	headers := rule("hdr", 0, nil, translate.Timeouts{})
	headers.Filters.RequestHeaders = &translate.HeaderModifier{Add: []translate.Header{{Name: "X-A", Value: "1"}},
		Set: []translate.Header{{Name: "Connection", Value: "x"}}}
	redirect := &translate.Rule{Name: "default_rd_r0", Route: "default/rd", NoBackendRefs: true,
		Filters: translate.Filters{Redirect: &translate.Redirect{StatusCode: 303}}}
	rewrite := rule("rw", 0, nil, translate.Timeouts{})
	rewrite.Filters.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/x"}}

	for _, tc := range []struct {
		name    string
		r       *translate.Rule
		version string
		opts    bool // --retry-non-idempotent
		want    map[translate.Feature]want
	}{
		{"retry with codes", rule("codes", 0, &translate.Retry{Attempts: 2, Codes: []int{502, 503}}, translate.Timeouts{}), v37, false,
			map[translate.Feature]want{
				// A rule without a method match takes POST, PATCH and LOCK too.
				translate.FeatureRetryAttempts: {reason: report.ReasonConfigured,
					caveats:    []report.Reason{report.CaveatBodyBufferLimit, report.CaveatNonIdempotentExempt},
					configured: "retry.attempts 3", params: report.Params{"limit": "2 MiB"}},
				translate.FeatureRetryCodes: {reason: report.ReasonConfigured,
					caveats:    []report.Reason{report.CaveatBodyBufferLimit, report.CaveatNonIdempotentExempt},
					configured: "retry.status 502,503"},
				translate.FeatureRetryConnectionErrors: {reason: report.ReasonConfigured,
					caveats:    []report.Reason{report.CaveatBodyBufferLimit, report.CaveatInferredFromSource, report.CaveatNonIdempotentExempt},
					configured: "retry.attempts 3, retry.status 502,503"},
			}},
		{"retry with codes on 3.6", rule("codes", 0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{}), v36, false,
			map[translate.Feature]want{
				translate.FeatureRetryAttempts: {reason: report.ReasonConfigured, caveats: []report.Reason{report.CaveatSentRequestNotRetried},
					configured: "retry.attempts 3"},
				translate.FeatureRetryCodes: {reason: report.ReasonNeedsNewerVersion, params: report.Params{"version": "3.6", "needs": "3.7"}},
				translate.FeatureRetryConnectionErrors: {reason: report.ReasonConfigured,
					caveats: []report.Reason{report.CaveatSentRequestNotRetried}, configured: "retry.attempts 3"},
			}},
		{"attempts 0", rule("zero", 0, &translate.Retry{Attempts: 0, Codes: []int{503}, Backoff: dur("1s")},
			translate.Timeouts{BackendRequest: dur("2s")}), v37, false,
			map[translate.Feature]want{
				translate.FeatureRetryAttempts:       {reason: report.ReasonRetriesDisabled, configured: "maxIdleConnsPerHost -1"},
				translate.FeatureRetryCodes:          {reason: report.ReasonRetriesDisabled, configured: "maxIdleConnsPerHost -1"},
				translate.FeatureRetryBackoff:        {reason: report.ReasonRetriesDisabled, configured: "maxIdleConnsPerHost -1"},
				translate.FeatureRetryBackendTimeout: {reason: report.ReasonRetriesDisabled, caveats: []report.Reason{report.CaveatTimerEndsAtResponseHeaders}, configured: "responseHeaderTimeout 2s"},
			}},
		{"attempts clamped", rule("huge", 0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{}), v36, false,
			map[translate.Feature]want{
				translate.FeatureRetryAttempts: {reason: report.ReasonConfigured,
					caveats:    []report.Reason{report.CaveatAttemptsClamped, report.CaveatSentRequestNotRetried},
					configured: "retry.attempts 2147483647", params: report.Params{"configured": "2147483646", "max": "2147483646"}},
			}},
		{"backoff", rule("bo", 0, &translate.Retry{Attempts: 1, Backoff: dur("1s")}, translate.Timeouts{}), v36, false,
			map[translate.Feature]want{
				translate.FeatureRetryBackoff: {reason: report.ReasonConfigured, caveats: []report.Reason{report.CaveatRandomizedBackoff},
					configured: "retry.initialInterval 2s", params: report.Params{"min": "1s", "max": "6s"}},
			}},
		{"backoff past the interval cap", rule("bo", 0, &translate.Retry{Attempts: 1, Backoff: dur("31s")}, translate.Timeouts{}), v36, false,
			map[translate.Feature]want{
				translate.FeatureRetryBackoff: {reason: report.ReasonConfigured,
					caveats: []report.Reason{report.CaveatBackoffIntervalCapped, report.CaveatRandomizedBackoff}, configured: "retry.initialInterval 1m2s"},
			}},
		{"backoff 0s", rule("bo", 0, &translate.Retry{Attempts: 1, Backoff: dur("0s")}, translate.Timeouts{}), v36, false,
			map[translate.Feature]want{translate.FeatureRetryBackoff: {reason: report.ReasonRetriesImmediate}}},
		{"POST without the opt-in", withMethods(rule("post", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}), "GET", "POST"), v37, false,
			map[translate.Feature]want{
				translate.FeatureRetryCodes: {reason: report.ReasonConfigured,
					caveats:    []report.Reason{report.CaveatBodyBufferLimit, report.CaveatNonIdempotentExempt},
					configured: "retry.status 503"},
				translate.FeatureRetryAttempts: {reason: report.ReasonConfigured,
					caveats: []report.Reason{report.CaveatBodyBufferLimit, report.CaveatNonIdempotentExempt, report.CaveatSentRequestNotRetried}},
			}},
		{"POST with the opt-in", withMethods(rule("post", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}), "GET", "POST"), v37, true,
			map[translate.Feature]want{
				translate.FeatureRetryCodes: {reason: report.ReasonConfigured, caveats: []report.Reason{report.CaveatBodyBufferLimit},
					configured: "retry.status 503"},
			}},
		{"only POST without the opt-in", withMethods(rule("onlypost", 0, &translate.Retry{Attempts: 1, Codes: []int{503, 504}},
			translate.Timeouts{BackendRequest: dur("1s")}), "POST"), v37, false,
			map[translate.Feature]want{
				translate.FeatureRetryCodes:          {reason: report.ReasonOnlyExemptMethods, params: report.Params{"methods": "POST, PATCH, LOCK"}},
				translate.FeatureRetryBackendTimeout: {reason: report.ReasonOnlyExemptMethods},
			}},
		{"backendRequest", withMethods(rule("br", 0, &translate.Retry{Attempts: 1, Codes: []int{504}}, translate.Timeouts{BackendRequest: dur("2s")}), "GET"), v37, false,
			map[translate.Feature]want{
				translate.FeatureBackendRequestTimeout: {reason: report.ReasonConfigured, caveats: []report.Reason{report.CaveatTimerEndsAtResponseHeaders},
					configured: "dialTimeout 2s, responseHeaderTimeout 2s"},
				translate.FeatureRetryBackendTimeout: {reason: report.ReasonConfigured,
					caveats:    []report.Reason{report.CaveatBodyBufferLimit, report.CaveatInferredFromSource, report.CaveatTimerEndsAtResponseHeaders},
					configured: "responseHeaderTimeout 2s, retry.status 504"},
			}},
		{"backendRequest without 504", rule("br", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{BackendRequest: dur("2s")}), v37, false,
			map[translate.Feature]want{
				translate.FeatureRetryBackendTimeout: {reason: report.ReasonTimedOutTryNeedsCode, params: report.Params{"code": "504"}},
			}},
		{"backendRequest on 3.6", rule("br", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("2s")}), v36, false,
			map[translate.Feature]want{
				translate.FeatureRetryBackendTimeout: {reason: report.ReasonNeedsNewerVersion},
			}},
		{"timeouts 0s", rule("z", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("0s"), Request: dur("0s")}), v36, false,
			map[translate.Feature]want{
				translate.FeatureBackendRequestTimeout: {reason: report.ReasonTimeoutDisabled, caveats: []report.Reason{report.CaveatReadTimeoutCutsUpload},
					configured: "dialTimeout 0s, responseHeaderTimeout 0s", params: report.Params{"timeout": "1m0s"}},
				translate.FeatureRequestTimeout:      {reason: report.ReasonTimeoutDisabled, caveats: []report.Reason{report.CaveatReadTimeoutCutsUpload}},
				translate.FeatureRetryBackendTimeout: {reason: report.ReasonTimeoutDisabled, configured: "responseHeaderTimeout 0s"},
			}},
		{"request timeout", rule("rq", 0, nil, translate.Timeouts{Request: dur("5s")}), v37, false,
			map[translate.Feature]want{translate.FeatureRequestTimeout: {reason: report.ReasonNotExpressible}}},
		{"dead rule", dead, v36, false,
			map[translate.Feature]want{
				translate.FeatureBackendRefs:    {reason: report.ReasonAnswers500, configured: "noop@internal, errors 418 to 500"},
				translate.FeatureRetryAttempts:  {reason: report.ReasonRuleForwardsNothing},
				translate.FeatureRequestTimeout: {reason: report.ReasonRuleForwardsNothing},
			}},
		{"partly invalid backendRefs", part, v36, false,
			map[translate.Feature]want{translate.FeatureBackendRefs: {reason: report.ReasonAnswers500,
				caveats: []report.Reason{report.CaveatStatusRewriteCoversRule}, configured: "noop@internal weight 2, errors 418 to 500",
				params: report.Params{"status": "418"}}}},
		{"invalid backendRefs of weight 0", zeroWeight, v36, false,
			map[translate.Feature]want{translate.FeatureBackendRefs: {reason: report.ReasonInvalidBackendsUnweighted}}},
		{"mirror", mirror, v36, false,
			map[translate.Feature]want{translate.FeatureRequestMirror: {reason: report.ReasonConfigured,
				caveats:    []report.Reason{report.CaveatMirrorShareRounded, report.CaveatRetriesMirroredAgain},
				configured: "mirroring service default_mir_r0", params: report.Params{"share": "1/3", "rounded": "33%"}}}},
		{"request headers", headers, v36, false,
			map[translate.Feature]want{translate.FeatureRequestHeaderModifier: {reason: report.ReasonConfigured,
				caveats:    []report.Reason{report.CaveatHeaderAddReplaces, report.CaveatHeadersHandledByProxy},
				configured: "headers customRequestHeaders", params: report.Params{"headers": "X-A"}}}},
		{"redirect 303", redirect, v36, false,
			map[translate.Feature]want{translate.FeatureRequestRedirect: {reason: report.ReasonConfigured,
				caveats:    []report.Reason{report.CaveatRedirectStatusByMethod},
				configured: "redirectRegex permanent false", params: report.Params{"status": "303", "get": "302", "other": "307"}}}},
		{"path rewrite", rewrite, v36, false,
			map[translate.Feature]want{translate.FeatureURLRewrite: {reason: report.ReasonConfigured,
				caveats: []report.Reason{report.CaveatReplacedPathHeaderDeleted}, configured: "replacePath /x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[translate.Feature]translate.Finding{}
			for _, f := range runFindings(t, single(tc.r), tc.version, tc.opts) {
				got[f.Feature] = f
			}
			for feature, w := range tc.want {
				f, ok := got[feature]
				if !ok {
					t.Errorf("%s: no finding", feature)
					continue
				}
				if f.Reason != w.reason || !slices.Equal(caveatReasons(f.Decision), w.caveats) ||
					(w.configured != "" && f.Configured != w.configured) {
					t.Errorf("%s: reason %s, caveats %v, configured %q; want %s, %v, %q",
						feature, f.Reason, caveatReasons(f.Decision), f.Configured, w.reason, w.caveats, w.configured)
				}
				if w.params != nil {
					p := f.Params
					if len(w.caveats) > 0 && len(p) == 0 {
						p = f.Caveats[0].Params
					}
					for k, v := range w.params {
						if p[k] != v {
							t.Errorf("%s: parameter %s = %q, want %q (%v)", feature, k, p[k], v, p)
						}
					}
				}
			}
		})
	}
}

// TestConnectionDecisions: the decisions of a ConnectionTimeoutPolicy's
// fields, per Gateway.
func TestConnectionDecisions(t *testing.T) {
	got := map[string]translate.Finding{}
	for _, f := range runFindings(t, testmodel.ConnectionTimeouts(t), v36, false) {
		if f.Gateway != "" {
			got[f.Gateway+" "+string(f.Feature)] = f
		}
	}
	for k, w := range map[string]struct {
		reason     report.Reason
		caveats    []report.Reason
		configured string
	}{
		"shop/gw connection.clientTimeout": {report.ReasonConfigured, []report.Reason{report.CaveatResponseReadNotTimed,
			report.CaveatRestartToApply, report.CaveatTotalInsteadOfIdle}, "respondingTimeouts.readTimeout 45s"},
		"shop/gw connection.serverTimeout": {report.ReasonConfigured, []report.Reason{report.CaveatTimerEndsAtResponseHeaders,
			report.CaveatTotalInsteadOfIdle}, "forwardingTimeouts.responseHeaderTimeout 1m0s"},
		"shop/gw2 connection.clientTimeout": {report.ReasonConfigured, []report.Reason{report.CaveatResponseReadNotTimed,
			report.CaveatRestartToApply, report.CaveatTimeoutClamped, report.CaveatTotalInsteadOfIdle}, "respondingTimeouts.readTimeout 596h31m23.647s"},
		"shop/gw connection.clientFinTimeout": {report.ReasonNotExpressible, nil, ""},
		"shop/gw connection.tunnelTimeout":    {report.ReasonNotExpressible, nil, ""},
		"shop/gw connection.tlsInspectDelay":  {report.ReasonNotExpressible, nil, ""},
	} {
		f, ok := got[k]
		if !ok {
			t.Errorf("%s: no finding", k)
			continue
		}
		if f.Reason != w.reason || !slices.Equal(caveatReasons(f.Decision), w.caveats) || f.Configured != w.configured {
			t.Errorf("%s: reason %s, caveats %v, configured %q; want %s, %v, %q",
				k, f.Reason, caveatReasons(f.Decision), f.Configured, w.reason, w.caveats, w.configured)
		}
	}
}
