package haproxy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// The caveats the retry findings share.
var (
	exemptPOST = report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", "POST, PATCH, LOCK")
	oneBuffer  = report.NewCaveat(report.CaveatRetryBufferLimitedByHeaders, "bufsize", "16384", "maxrewrite", "1024")
	silent26   = report.NewCaveat(report.CaveatKeepAliveClosedUnanswered, "version", "2.6")
	idle       = report.NewCaveat(report.CaveatIdleTimer)
	// upgraded: the rule's timeout server also ends an idle WebSocket
	// (no timeout tunnel; TestLiveUpgradedConnectionIdle).
	upgraded = func(timeout string) report.Caveat {
		return report.NewCaveat(report.CaveatUpgradedConnectionIdle, "timeout", timeout)
	}
	afterHeads  = report.NewCaveat(report.CaveatNoAnswerAfterHeaders)
	largest     = report.NewCaveat(report.CaveatDisabledTimeoutIsLargest, "timeout", "2147483647ms")
	clampedTime = report.NewCaveat(report.CaveatTimeoutClamped, "max", "2147483647ms")
)

// decision is what a test expects of one finding's record.
type decision struct {
	rule       int
	feature    translate.Feature
	reason     report.Reason
	params     report.Params
	configured string
	caveats    []report.Caveat
}

func (d decision) check(t *testing.T, f translate.Finding) {
	t.Helper()
	got := decision{rule: d.rule, feature: d.feature, reason: f.Reason, params: f.Params, configured: f.Configured, caveats: f.Caveats}
	if diff := cmp.Diff(d, got, cmp.AllowUnexported(decision{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("rule %d %s (-want +got):\n%s", d.rule, d.feature, diff)
	}
	if err := report.Check(f); err != nil {
		t.Error(err)
	}
}

// TestDecisions checks the record of representative findings: reason,
// parameters, configured fact and caveats, never the message.
func TestDecisions(t *testing.T) {
	post := func(r *translate.Rule) *translate.Rule { r.Methods = []string{"POST"}; return r }
	get := func(r *translate.Rule) *translate.Rule { r.Methods = []string{"GET"}; return r }
	codes := &translate.Retry{Attempts: 2, Codes: []int{409, 503, 504}, Backoff: dur("100ms")}
	dead := rule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{BackendRequest: dur("1s")})
	dead.Backends, dead.NoBackendRefs = nil, true
	share := rule(1, nil, translate.Timeouts{})
	share.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "Service default/gone is not in the input"}}
	tests := []struct {
		name  string
		rules []*translate.Rule
		opts  translate.Options
		want  []decision
	}{
		{"retry with codes", []*translate.Rule{get(rule(0, codes, translate.Timeouts{}))}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonConfigured, nil, "retries 2", []report.Caveat{oneBuffer}},
			{0, translate.FeatureRetryCodes, report.ReasonConfigured, nil, "retry-on 503 504",
				[]report.Caveat{report.NewCaveat(report.CaveatCodesNotRetried, "codes", "409"), oneBuffer}},
			{0, translate.FeatureRetryConnectionErrors, report.ReasonConfigured, nil, "retry-on conn-failure empty-response response-timeout", []report.Caveat{oneBuffer}},
			{0, translate.FeatureRetryBackoff, report.ReasonNoBackoff, nil, "", nil},
		}},
		{"version 2.6 closes kept-alive connections", []*translate.Rule{get(rule(0, codes, translate.Timeouts{}))}, translate.Options{Version: "2.6"}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonConfigured, nil, "retries 2", []report.Caveat{silent26, oneBuffer}},
			{0, translate.FeatureRetryCodes, report.ReasonConfigured, nil, "retry-on 503 504",
				[]report.Caveat{report.NewCaveat(report.CaveatCodesNotRetried, "codes", "409"), oneBuffer}},
		}},
		{"only codes no version retries", []*translate.Rule{rule(0, &translate.Retry{Attempts: 1, Codes: []int{409, 505}}, translate.Timeouts{})}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRetryCodes, report.ReasonCodesNotRetryable, report.Params{"codes": "409, 505"}, "", nil},
		}},
		{"attempts 0", []*translate.Rule{rule(0, &translate.Retry{Codes: []int{503}, Backoff: dur("1s")}, translate.Timeouts{BackendRequest: dur("1s")})}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonRetriesDisabled, nil, "retries 0", nil},
			{0, translate.FeatureRetryCodes, report.ReasonRetriesDisabled, nil, "retry-on none", nil},
			{0, translate.FeatureRetryConnectionErrors, report.ReasonRetriesDisabled, nil, "retry-on none", nil},
			{0, translate.FeatureRetryBackoff, report.ReasonRetriesDisabled, nil, "", nil},
			{0, translate.FeatureRetryBackendTimeout, report.ReasonRetriesDisabled, nil, "retry-on none, timeout server 1000ms", []report.Caveat{idle, upgraded("1000ms")}},
		}},
		{"attempts 0 on 2.6", []*translate.Rule{rule(0, &translate.Retry{Codes: []int{503}, Backoff: dur("1s")}, translate.Timeouts{})}, translate.Options{Version: "2.6"}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonRetriesDisabled, nil, "retries 0", []report.Caveat{silent26}},
			{0, translate.FeatureRetryCodes, report.ReasonRetriesDisabled, nil, "retry-on none", nil},
			{0, translate.FeatureRetryBackoff, report.ReasonRetriesDisabled, nil, "", []report.Caveat{silent26}},
		}},
		{"attempts clamped", []*translate.Rule{get(rule(0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{}))}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonConfigured, nil, "retries 2147483647",
				[]report.Caveat{report.NewCaveat(report.CaveatAttemptsClamped, "configured", "2147483647", "max", "2147483647"), oneBuffer}},
		}},
		{"POST-matching rule", []*translate.Rule{post(rule(0, codes, translate.Timeouts{BackendRequest: dur("1s")}))}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonConfigured, nil, "retries 2", []report.Caveat{exemptPOST, oneBuffer}},
			{0, translate.FeatureRetryConnectionErrors, report.ReasonConfigured, nil, "retry-on conn-failure empty-response response-timeout", []report.Caveat{exemptPOST, oneBuffer}},
			{0, translate.FeatureRetryBackendTimeout, report.ReasonConfigured, nil, "retry-on response-timeout, timeout server 1000ms", []report.Caveat{idle, afterHeads, exemptPOST, oneBuffer, upgraded("1000ms")}},
		}},
		{"POST-matching rule with --retry-non-idempotent", []*translate.Rule{post(rule(0, codes, translate.Timeouts{}))}, translate.Options{Version: "3.2", RetryNonIdempotent: true}, []decision{
			{0, translate.FeatureRetryAttempts, report.ReasonConfigured, nil, "retries 2", []report.Caveat{oneBuffer}},
			{0, translate.FeatureRetryConnectionErrors, report.ReasonConfigured, nil, "retry-on conn-failure empty-response response-timeout", []report.Caveat{oneBuffer}},
		}},
		{"backendRequest", []*translate.Rule{
			rule(0, nil, translate.Timeouts{BackendRequest: dur("1500ms")}),
			rule(1, nil, translate.Timeouts{BackendRequest: dur("0s")}),
			get(rule(2, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("99999h")})),
		}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureBackendRequestTimeout, report.ReasonConfigured, nil, "timeout server 1500ms, timeout connect 1500ms", []report.Caveat{idle, afterHeads, upgraded("1500ms")}},
			{1, translate.FeatureBackendRequestTimeout, report.ReasonTimeoutDisabled, nil, "timeout server 2147483647ms", []report.Caveat{largest}},
			{2, translate.FeatureBackendRequestTimeout, report.ReasonConfigured, nil, "timeout server 2147483647ms, timeout connect 5000ms", []report.Caveat{idle, afterHeads, clampedTime}},
		}},
		{"request", []*translate.Rule{
			rule(0, nil, translate.Timeouts{Request: dur("0s")}),
			rule(1, nil, translate.Timeouts{Request: dur("0s"), BackendRequest: dur("1s")}),
			get(rule(2, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur("0s"), BackendRequest: dur("1s")})),
			get(rule(3, &translate.Retry{Attempts: 2}, translate.Timeouts{Request: dur("3s")})),
			rule(4, nil, translate.Timeouts{Request: dur("3s"), BackendRequest: dur("1s")}),
		}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRequestTimeout, report.ReasonTimeoutDisabled, nil, "timeout server 2147483647ms", []report.Caveat{largest}},
			{1, translate.FeatureRequestTimeout, report.ReasonTimeoutDisabled, nil, "", nil},
			{2, translate.FeatureRequestTimeout, report.ReasonTimeoutDisabled, nil, "",
				[]report.Caveat{report.NewCaveat(report.CaveatBufferedBodyReadTimeout, "timeout", "10000ms")}},
			{3, translate.FeatureRequestTimeout, report.ReasonConfigured, nil, "timeout server 3000ms",
				[]report.Caveat{idle, report.NewCaveat(report.CaveatNoTotalRequestTimeout), report.NewCaveat(report.CaveatTimerPerTry, "tries", "3"), upgraded("3000ms")}},
			{4, translate.FeatureRequestTimeout, report.ReasonNotExpressible, nil, "", nil},
		}},
		{"dead rule and invalid share", []*translate.Rule{dead, share}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureBackendRefs, report.ReasonAnswers500, nil, "http-request return status 500", nil},
			{0, translate.FeatureRetryAttempts, report.ReasonRuleForwardsNothing, nil, "", nil},
			{0, translate.FeatureBackendRequestTimeout, report.ReasonRuleForwardsNothing, nil, "", nil},
			{1, translate.FeatureBackendRefs, report.ReasonAnswers500, nil, "http-request return status 500 if { rand(2) lt 1 }", nil},
		}},
		{"filters", filterRules(), translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureResponseHeaderModifier, report.ReasonConfigured, nil,
				"http-after-response del-header X-Backend; http-after-response set-header X-Resp; http-after-response add-header X-Resp-Add", nil},
			{1, translate.FeatureURLRewrite, report.ReasonConfigured, nil, "http-request replace-path; http-request set-header Host rewritten.example", nil},
			{3, translate.FeatureURLRewrite, report.ReasonConfigured, nil, "http-request set-path /full(1)", nil},
			{4, translate.FeatureRequestRedirect, report.ReasonConfigured, nil, "http-request redirect prefix code 302", nil},
			{8, translate.FeatureRequestMirror, report.ReasonNotExpressible, nil, "", nil},
			{8, translate.FeatureRequestHeaderModifier, report.ReasonConfigured, nil, "http-request set-header Host",
				[]report.Caveat{report.NewCaveat(report.CaveatHostReplacedByRewrite, "hostname", "rewritten.example")}},
			{9, translate.FeatureURLRewrite, report.ReasonConfigured, nil, "", nil},
		}},
		{"conflicting header rules", []*translate.Rule{func() *translate.Rule {
			r := rule(0, nil, translate.Timeouts{})
			r.Filters.RequestHeaders = &translate.HeaderModifier{Remove: []string{"x-a"},
				Set: []translate.Header{{Name: "X-A", Value: "1"}, {Name: "X-B", Value: "1"}, {Name: "x-b", Value: "2"}},
				Add: []translate.Header{{Name: "X-A", Value: "3"}}}
			return r
		}()}, translate.Options{Version: "3.2"}, []decision{
			{0, translate.FeatureRequestHeaderModifier, report.ReasonConfigured, nil,
				"http-request del-header x-a; http-request set-header X-A, X-B, x-b; http-request add-header X-A",
				[]report.Caveat{report.NewCaveat(report.CaveatHeaderRulesUndoEachOther, "headers", "X-A, x-b")}},
		}},
		{"headers HAProxy writes itself", func() []*translate.Rule {
			conn, framing, both := rule(0, nil, translate.Timeouts{}), rule(1, nil, translate.Timeouts{}), rule(2, nil, translate.Timeouts{})
			conn.Filters.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "Connection", Value: "keep-alive"}, {Name: "X-A", Value: "1"}}}
			framing.Filters.RequestHeaders = &translate.HeaderModifier{Remove: []string{"Content-Length"}}
			both.Filters.RequestHeaders = &translate.HeaderModifier{Add: []translate.Header{{Name: "Transfer-Encoding", Value: "gzip"}}, Remove: []string{"connection"}}
			resp := rule(3, nil, translate.Timeouts{})
			resp.Filters.ResponseHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "Connection", Value: "close"}}}
			return []*translate.Rule{conn, framing, both, resp}
		}(), translate.Options{Version: "2.6"}, []decision{
			{0, translate.FeatureRequestHeaderModifier, report.ReasonConfigured, nil, "http-request set-header Connection, X-A",
				[]report.Caveat{report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", "connection")}},
			{1, translate.FeatureRequestHeaderModifier, report.ReasonConfigured, nil, "http-request del-header Content-Length",
				[]report.Caveat{report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", "content-length")}},
			{2, translate.FeatureRequestHeaderModifier, report.ReasonConfigured, nil, "http-request del-header connection; http-request add-header Transfer-Encoding",
				[]report.Caveat{report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", "connection, transfer-encoding")}},
			{3, translate.FeatureResponseHeaderModifier, report.ReasonConfigured, nil, "http-after-response set-header Connection",
				[]report.Caveat{report.NewCaveat(report.CaveatHeadersHandledByProxy, "headers", "connection")}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, fs := generate(t, modelOf(tt.rules...), tt.opts)
			for _, d := range tt.want {
				d.check(t, findingOf(t, fs, d.rule, d.feature))
			}
		})
	}
}

// TestConnectionDecisions checks the record of the connection.* findings
// of testdata/conntimeout.
func TestConnectionDecisions(t *testing.T) {
	res, err := translate.Run(testmodel.ConnectionTimeouts(t), []translate.Target{{Backend: New(), Version: "3.2"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	unseen := report.NewCaveat(report.CaveatNoEffectSeenLive, "version", "2.6")
	tests := []struct {
		gateway    string
		feature    translate.Feature
		configured string
		caveats    []report.Caveat
	}{
		{"shop/gw", translate.FeatureConnClientTimeout, "timeout client 45s", nil},
		{"shop/gw", translate.FeatureConnClientFinTimeout, "timeout client-fin 3s", []report.Caveat{unseen}},
		{"shop/gw", translate.FeatureConnServerFinTimeout, "timeout server-fin 4s", []report.Caveat{unseen}},
		{"shop/gw", translate.FeatureConnTLSInspectDelay, "tcp-request inspect-delay 5s", []report.Caveat{report.NewCaveat(report.CaveatDelayNeverHoldsRequest)}},
		{"shop/gw", translate.FeatureConnTunnelTimeout, "timeout tunnel 30m", nil},
		{"shop/gw2", translate.FeatureConnClientTimeout, "timeout client 2147483647ms", []report.Caveat{clampedTime}},
	}
	for _, tt := range tests {
		var f *translate.Finding
		for i, x := range res.Report.Findings {
			if x.Gateway == tt.gateway && x.Feature == tt.feature {
				f = &res.Report.Findings[i]
			}
		}
		if f == nil {
			t.Errorf("%s %s: no finding", tt.gateway, tt.feature)
			continue
		}
		d := decision{feature: tt.feature, reason: report.ReasonConfigured, configured: tt.configured, caveats: tt.caveats}
		d.check(t, *f)
	}
}

// TestServerTimeoutDecisionByVersion: serverTimeout is approximated with
// ServerTimerRunsDuringUpload{version} on the versions that time the
// server during an upload (2.6), honoured on the others.
func TestServerTimeoutDecisionByVersion(t *testing.T) {
	for _, vs := range supportTable() {
		res, err := translate.Run(testmodel.ConnectionTimeouts(t), []translate.Target{{Backend: New(), Version: vs.Version}}, false)
		if err != nil {
			t.Fatal(err)
		}
		var want []report.Caveat
		if vs.ServerTimeoutDuringUpload {
			want = []report.Caveat{report.NewCaveat(report.CaveatServerTimerRunsDuringUpload, "version", vs.Version)}
		}
		n := 0
		for _, f := range res.Report.Findings {
			if f.Feature == translate.FeatureConnServerTimeout && f.Reason == report.ReasonConfigured {
				n++
				decision{feature: f.Feature, reason: report.ReasonConfigured, configured: f.Configured, caveats: want}.check(t, f)
			}
		}
		if n == 0 {
			t.Errorf("%s: no configured serverTimeout finding", vs.Version)
		}
	}
	if vs, _ := lookupVersion("2.6"); !vs.ServerTimeoutDuringUpload {
		t.Error("2.6 times the server during an upload (seen live with 2.6.12)")
	}
	for _, v := range []string{"2.8", "3.0", "3.1", "3.2"} {
		if vs, _ := lookupVersion(v); vs.ServerTimeoutDuringUpload {
			t.Errorf("%s does not time the server during an upload (haproxy/haproxy f4b89f162, 2.8-dev5)", v)
		}
	}
}

// caveatOf returns f's caveat of reason r.
func caveatOf(f translate.Finding, r report.Reason) (report.Caveat, bool) {
	for _, c := range f.Caveats {
		if c.Reason == r {
			return c, true
		}
	}
	return report.Caveat{}, false
}

// hasCaveat reports whether f has a caveat of reason r.
func hasCaveat(f translate.Finding, r report.Reason) bool {
	_, ok := caveatOf(f, r)
	return ok
}
