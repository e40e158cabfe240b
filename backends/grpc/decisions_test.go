package grpc

import (
	"slices"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// decisionRules are the rules of TestDecisions, by index.
const decisionRules = `
  - matches: [{path: {type: Exact, value: /a.S/Codes}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 2, codes: [500, 503], backoff: 100ms}
  - matches: [{path: {type: Exact, value: /a.S/Zero}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 0, codes: [503]}
  - matches: [{path: {type: Exact, value: /a.S/Clamp}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 7, codes: [400]}
  - matches: [{path: {type: Exact, value: /a.S/Post}, method: POST}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 1}
  - matches: [{path: {type: Exact, value: /a.S/Timeouts}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 1}
    timeouts: {request: 3s, backendRequest: 1s}
  - matches: [{path: {type: Exact, value: /a.S/NoTimeout}}]
    backendRefs: [{name: svc, port: 8080}]
    timeouts: {request: 0s, backendRequest: 0s}
  - matches: [{path: {type: Exact, value: /a.S/Dead}}]
    retry: {attempts: 1}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {add: [{name: x-a, value: v1}]}
  - matches: [{path: {type: Exact, value: /a.S/Filters}}]
    backendRefs: [{name: svc, port: 8080}]
    filters:
    - type: ResponseHeaderModifier
      responseHeaderModifier: {add: [{name: x-a, value: v1}]}
  - matches: [{path: {type: Exact, value: /a.S/Part}}, {path: {type: Exact, value: /healthz}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 1}
  - matches: [{path: {type: Exact, value: /a.S/Weight0}}]
    backendRefs: [{name: svc, port: 8080}, {group: example.com, kind: Bucket, name: b, weight: 0}]
  - matches: [{path: {type: Exact, value: /a.S/Weight1}}]
    backendRefs: [{name: svc, port: 8080}, {group: example.com, kind: Bucket, name: b}]
  - matches: [{path: {type: Exact, value: /a.S/Codes}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 1}
`

// TestDecisions checks the record of each kind of finding the target
// gives: its reason, its caveats and what it configures (never the
// message text).
func TestDecisions(t *testing.T) {
	type want struct {
		reason     report.Reason
		caveats    []report.Reason
		configured string
	}
	uncommitted := []report.Reason{report.CaveatBodyBufferLimit, report.CaveatNotRetriedAfterHeaders}
	cases := []struct {
		rule    int
		feature translate.Feature
		want    want
	}{
		// Retry with codes.
		{0, translate.FeatureRetryAttempts, want{report.ReasonConfigured, uncommitted, "maxAttempts 3"}},
		{0, translate.FeatureRetryCodes, want{report.ReasonConfigured, []report.Reason{report.CaveatServerStatusesRetried,
			report.CaveatUnknownStatusRetried, report.CaveatUnlistedCodesRetried}, "retryableStatusCodes UNKNOWN UNAVAILABLE"}},
		{0, translate.FeatureRetryBackoff, want{report.ReasonConfigured, []report.Reason{report.CaveatExponentialBackoff,
			report.CaveatPushbackOverridesBackoff}, "initialBackoff 0.125s"}},
		{0, translate.FeatureRetryConnectionErrors, want{report.ReasonConfigured, []report.Reason{report.CaveatBodyBufferLimit,
			report.CaveatNotRetriedAfterHeaders, report.CaveatResetStreamsNotRetried}, "retryableStatusCodes UNAVAILABLE"}},
		// Attempts 0.
		{1, translate.FeatureRetryAttempts, want{report.ReasonRetriesDisabled, nil, ""}},
		{1, translate.FeatureRetryCodes, want{report.ReasonRetriesDisabled, nil, ""}},
		// The clamp; 400 alone makes INTERNAL lossy.
		{2, translate.FeatureRetryAttempts, want{report.ReasonConfigured, []report.Reason{report.CaveatAttemptsClamped,
			report.CaveatBodyBufferLimit, report.CaveatNotRetriedAfterHeaders}, "maxAttempts 5"}},
		{2, translate.FeatureRetryCodes, want{report.ReasonConfigured, []report.Reason{report.CaveatInternalStatusRetried,
			report.CaveatServerStatusesRetried, report.CaveatUnlistedCodesRetried}, "retryableStatusCodes INTERNAL UNAVAILABLE"}},
		// A POST match: every gRPC call is a POST, retried whatever
		// --retry-non-idempotent says (no method exemption).
		{3, translate.FeatureRetryAttempts, want{report.ReasonConfigured, uncommitted, "maxAttempts 2"}},
		// backendRequest: no per-try timer; request is the call's deadline.
		{4, translate.FeatureRetryBackendTimeout, want{report.ReasonNoPerTryTimeout, nil, ""}},
		{4, translate.FeatureBackendRequestTimeout, want{report.ReasonNoPerTryTimeout, nil, ""}},
		{4, translate.FeatureRequestTimeout, want{report.ReasonConfigured, []report.Reason{report.CaveatApplicationDeadlineWins,
			report.CaveatDeadlineExceededNot504}, "timeout 3s"}},
		// request and backendRequest 0s.
		{5, translate.FeatureRequestTimeout, want{report.ReasonTimeoutDisabled, nil, ""}},
		{5, translate.FeatureBackendRequestTimeout, want{report.ReasonTimeoutDisabled, nil, ""}},
		// A dead rule.
		{6, translate.FeatureBackendRefs, want{report.ReasonNotAnswered500, nil, ""}},
		{6, translate.FeatureRetryAttempts, want{report.ReasonRuleForwardsNothing, nil, ""}},
		{6, translate.FeatureRequestHeaderModifier, want{report.ReasonNotExpressible, nil, ""}},
		// Filters.
		{7, translate.FeatureResponseHeaderModifier, want{report.ReasonNotExpressible, nil, ""}},
		// A match no name can express.
		{8, translate.FeatureRetryAttempts, want{report.ReasonConfigured, []report.Reason{report.CaveatBodyBufferLimit,
			report.CaveatMatchesNotSelectable, report.CaveatNotRetriedAfterHeaders}, "maxAttempts 2"}},
		// Invalid backendRefs, without and with weight.
		{9, translate.FeatureBackendRefs, want{report.ReasonInvalidBackendsUnweighted, []report.Reason{report.CaveatRequestsNotRouted}, ""}},
		{10, translate.FeatureBackendRefs, want{report.ReasonTrafficNotSplit, nil, ""}},
		// A name rule 0 holds.
		{11, translate.FeatureRetryAttempts, want{report.ReasonNoNameSelectsCalls, nil, ""}},
	}
	for _, nonIdempotent := range []bool{false, true} {
		m := testmodel.LoadText(t, testmodel.Route(decisionRules)+`---
apiVersion: gwretry.io/v1alpha1
kind: ConnectionTimeoutPolicy
metadata: {name: tuning, namespace: ns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  clientTimeout: 45s
  serverTimeout: 60s
`, translate.ResolveOptions{}, "svc:8080=127.0.0.1:9100")
		res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "1.84"}}, nonIdempotent)
		if err != nil {
			t.Fatal(err)
		}
		type key struct {
			rule    int
			feature translate.Feature
		}
		got := map[key]translate.Finding{}
		conn := 0
		for _, f := range res.Report.Findings {
			if err := report.Check(f); err != nil {
				t.Errorf("rule %d: %v", f.Rule, err)
			}
			if f.Gateway != "" {
				conn++
				if f.Reason != report.ReasonNoProxyConnections {
					t.Errorf("Gateway %s %s: reason %s, want %s", f.Gateway, f.Feature, f.Reason, report.ReasonNoProxyConnections)
				}
				continue
			}
			got[key{f.Rule, f.Feature}] = f
		}
		if conn != 2 {
			t.Errorf("%d connection findings, want 2", conn)
		}
		for _, c := range cases {
			f, ok := got[key{c.rule, c.feature}]
			if !ok {
				t.Errorf("rule %d %s: no finding", c.rule, c.feature)
				continue
			}
			var cs []report.Reason
			for _, cv := range f.Caveats {
				cs = append(cs, cv.Reason)
			}
			if f.Reason != c.want.reason || !slices.Equal(cs, c.want.caveats) || f.Configured != c.want.configured {
				t.Errorf("retry-non-idempotent %v: rule %d %s: %s %v %q, want %s %v %q", nonIdempotent, c.rule, c.feature,
					f.Reason, cs, f.Configured, c.want.reason, c.want.caveats, c.want.configured)
			}
		}
		// The parameters of the caveats that have them.
		params := func(k key, r report.Reason) report.Params {
			for _, cv := range got[k].Caveats {
				if cv.Reason == r {
					return cv.Params
				}
			}
			return nil
		}
		if p := params(key{2, translate.FeatureRetryAttempts}, report.CaveatAttemptsClamped); p["configured"] != "4" || p["max"] != "4" {
			t.Errorf("clamp %v, want 4 of 4", p)
		}
		if p := params(key{0, translate.FeatureRetryCodes}, report.CaveatUnlistedCodesRetried); p["codes"] != "429, 502, 504" || p["status"] != "UNAVAILABLE" {
			t.Errorf("unlisted codes %v", p)
		}
		if p := params(key{0, translate.FeatureRetryAttempts}, report.CaveatBodyBufferLimit); p["limit"] != "256 KiB" {
			t.Errorf("buffer limit %v", p)
		}
		if p := got[key{10, translate.FeatureBackendRefs}].Params; p["weight"] != "1" {
			t.Errorf("invalid weight %v", p)
		}
	}
}

// TestDecisionsNameTheLostNames: a rule whose names another rule holds
// on other hostnames is approximated, naming those names.
func TestDecisionsNameTheLostNames(t *testing.T) {
	res, _ := run(t, New())
	for _, f := range res.Report.Findings {
		if f.Route != "default/api" || f.Rule != 8 || f.Feature != translate.FeatureRetryAttempts {
			continue
		}
		if f.Reason != report.ReasonRetriesDisabled || len(f.Caveats) != 1 || f.Caveats[0].Reason != report.CaveatCallsTakenByOtherRule ||
			f.Caveats[0].Params["names"] != "hosted.H/M" {
			t.Errorf("%s %+v", f.Reason, f.Caveats)
		}
		return
	}
	t.Error("no retry.attempts finding for default/api rule 8")
}
