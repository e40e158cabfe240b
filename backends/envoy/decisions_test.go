package envoy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestDecisions checks the record of each finding, never its words: the
// reason, the caveats (by reason, and the parameters where they are
// data the test names) and the configured fact, for representative rules.
func TestDecisions(t *testing.T) {
	type want struct {
		route      string // "" is default/web; a Gateway for connection.*
		rule       int
		feature    translate.Feature
		reason     report.Reason
		caveats    []report.Reason
		configured string
		params     map[report.Reason]report.Params // caveat parameters checked
	}
	const (
		body    = report.CaveatBodyBufferLimit
		methods = report.CaveatNonIdempotentExempt
	)
	var (
		configured = report.ReasonConfigured
		exempt     = []report.Reason{body, methods}
		headers    = []report.Reason{report.CaveatNoAnswerAfterHeaders, report.CaveatTimerEndsAtResponseHeaders}
	)
	only := func(methodList ...string) func(*translate.Rule, *translate.Model) {
		return func(r *translate.Rule, m *translate.Model) {
			r.Methods = methodList
			m.Listeners[0].VirtualHosts[0].Routes[0].Match.Method = methodList[0]
		}
	}
	one := func(t *testing.T, rt *translate.Retry, to translate.Timeouts, edit ...func(*translate.Rule, *translate.Model)) *translate.Model {
		r := newRule(0, rt, to)
		m := singleModel(r)
		for _, e := range edit {
			e(r, m)
		}
		return m
	}
	cases := []struct {
		name  string
		model func(t *testing.T) *translate.Model
		optIn bool
		want  []want
	}{
		{"retry with codes", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "1s")})
		}, false, []want{
			{feature: translate.FeatureRetryAttempts, reason: configured, caveats: exempt, configured: "num_retries 2",
				params: map[report.Reason]report.Params{body: {"limit": "1 MiB"}, methods: {"methods": "POST, PATCH, LOCK"}}},
			{feature: translate.FeatureRetryCodes, reason: configured, caveats: exempt, configured: "retriable_status_codes [503]"},
			{feature: translate.FeatureRetryConnectionErrors, reason: configured, caveats: exempt, configured: "retry_on connect-failure,refused-stream,reset"},
			{feature: translate.FeatureRetryBackendTimeout, reason: configured, caveats: slices.Concat(exempt, headers), configured: "per_try_timeout 1s"},
			{feature: translate.FeatureBackendRequestTimeout, reason: configured, caveats: headers, configured: "per_try_timeout 1s"},
			{feature: translate.FeatureRequestTimeout, reason: configured, configured: "route timeout 5s"},
		}},
		{"attempts 0", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 0, Codes: []int{503}, Backoff: dur(t, "1s")}, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "2s")})
		}, false, []want{
			{feature: translate.FeatureRetryAttempts, reason: report.ReasonRetriesDisabled},
			{feature: translate.FeatureRetryBackoff, reason: report.ReasonRetriesDisabled},
			{feature: translate.FeatureRetryCodes, reason: report.ReasonRetriesDisabled},
			{feature: translate.FeatureRetryConnectionErrors, reason: report.ReasonRetriesDisabled},
			{feature: translate.FeatureRetryBackendTimeout, reason: report.ReasonRetriesDisabled},
			{feature: translate.FeatureBackendRequestTimeout, reason: configured, configured: "route timeout 2s"},
			{feature: translate.FeatureRequestTimeout, reason: configured, configured: "route timeout 2s"},
		}},
		{"attempts clamped", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1 << 40}, translate.Timeouts{}, only("GET"))
		}, false, []want{
			{feature: translate.FeatureRetryAttempts, reason: configured, caveats: []report.Reason{report.CaveatAttemptsClamped, body}, configured: "num_retries 4294967295",
				params: map[report.Reason]report.Params{report.CaveatAttemptsClamped: {"configured": "4294967295", "max": "4294967295"}}},
			{feature: translate.FeatureRetryConnectionErrors, reason: configured, caveats: []report.Reason{report.CaveatAttemptsClamped, body}, configured: "retry_on connect-failure,refused-stream,reset"},
		}},
		{"POST only", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}, only("POST"))
		}, false, []want{
			{feature: translate.FeatureRetryAttempts, reason: configured, caveats: exempt, configured: "num_retries 1"},
			// Only the policy of requests never sent is written.
			{feature: translate.FeatureRetryConnectionErrors, reason: configured, caveats: exempt, configured: "retry_on connect-failure,refused-stream,reset-before-request"},
			{feature: translate.FeatureRetryCodes, reason: configured, caveats: exempt},
		}},
		{"POST only, --retry-non-idempotent", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}, only("POST"))
		}, true, []want{
			{feature: translate.FeatureRetryAttempts, reason: configured, caveats: []report.Reason{body}, configured: "num_retries 1"},
			{feature: translate.FeatureRetryConnectionErrors, reason: configured, caveats: []report.Reason{body}, configured: "retry_on connect-failure,refused-stream,reset"},
			{feature: translate.FeatureRetryCodes, reason: configured, caveats: []report.Reason{body}, configured: "retriable_status_codes [503]"},
		}},
		{"backendRequest past the default route timeout", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1, Backoff: dur(t, "100ms")}, translate.Timeouts{BackendRequest: dur(t, "20s")})
		}, false, []want{
			{feature: translate.FeatureRetryAttempts, reason: configured, caveats: []report.Reason{body, report.CaveatDefaultRouteTimeout, methods}, configured: "num_retries 1",
				params: map[report.Reason]report.Params{report.CaveatDefaultRouteTimeout: {"timeout": "15s"}}},
			{feature: translate.FeatureRetryBackendTimeout, reason: configured, caveats: []report.Reason{body, report.CaveatDefaultRouteTimeout, report.CaveatNoAnswerAfterHeaders, methods, report.CaveatTimerEndsAtResponseHeaders}, configured: "per_try_timeout 20s"},
			{feature: translate.FeatureBackendRequestTimeout, reason: configured, caveats: []report.Reason{report.CaveatDefaultRouteTimeout, report.CaveatNoAnswerAfterHeaders, report.CaveatTimerEndsAtResponseHeaders}, configured: "per_try_timeout 20s"},
			{feature: translate.FeatureRetryBackoff, reason: configured, caveats: []report.Reason{report.CaveatFullJitterBackoff}, configured: "retry_back_off base_interval 100ms"},
		}},
		{"request 0s", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1, Backoff: dur(t, "0s")}, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "0s")})
		}, false, []want{
			{feature: translate.FeatureRequestTimeout, reason: report.ReasonTimeoutDisabled, configured: "route timeout 0s"},
			{feature: translate.FeatureBackendRequestTimeout, reason: report.ReasonTimeoutDisabled},
			{feature: translate.FeatureRetryBackendTimeout, reason: report.ReasonTimeoutDisabled, caveats: exempt},
			{feature: translate.FeatureRetryBackoff, reason: configured, configured: "retry_back_off base_interval 1ms"},
		}},
		{"request 0s, backendRequest 1s", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "1s")})
		}, false, []want{
			// Nothing cuts a body that stalls after the headers.
			{feature: translate.FeatureBackendRequestTimeout, reason: configured, caveats: []report.Reason{report.CaveatTimerEndsAtResponseHeaders}, configured: "per_try_timeout 1s"},
			{feature: translate.FeatureRequestTimeout, reason: report.ReasonTimeoutDisabled, configured: "route timeout 0s"},
		}},
		{"backendRequest 0s alone", func(t *testing.T) *translate.Model {
			return one(t, nil, translate.Timeouts{BackendRequest: dur(t, "0s")})
		}, false, []want{
			{feature: translate.FeatureBackendRequestTimeout, reason: report.ReasonTimeoutDisabled, configured: "route timeout 0s"},
		}},
		{"no retry: the shorter backendRequest", func(t *testing.T) *translate.Model {
			return one(t, nil, translate.Timeouts{Request: dur(t, "10s"), BackendRequest: dur(t, "4s")})
		}, false, []want{
			{feature: translate.FeatureBackendRequestTimeout, reason: configured, configured: "route timeout 4s"},
			{feature: translate.FeatureRequestTimeout, reason: configured, configured: "route timeout 4s"},
		}},
		{"dead rule", func(t *testing.T) *translate.Model {
			return one(t, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur(t, "1s")}, func(r *translate.Rule, _ *translate.Model) {
				r.Backends[0].Weight = 0
				r.Filters.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "X-A", Value: "1"}}}
			})
		}, false, []want{
			{feature: translate.FeatureBackendRefs, reason: report.ReasonAnswers500, configured: "direct_response 500"},
			{feature: translate.FeatureRetryAttempts, reason: report.ReasonRuleForwardsNothing},
			{feature: translate.FeatureRequestTimeout, reason: report.ReasonRuleForwardsNothing},
			{feature: translate.FeatureRequestHeaderModifier, reason: report.ReasonRuleForwardsNothing},
		}},
		{"invalid backendRefs", func(t *testing.T) *translate.Model {
			shared := newRule(0, nil, translate.Timeouts{})
			shared.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 2, Reason: "kind Bucket is not a Service"}}
			unweighted := newRule(1, nil, translate.Timeouts{})
			unweighted.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 0, Reason: "no ReferenceGrant"}}
			return singleModel(shared, unweighted)
		}, false, []want{
			{rule: 0, feature: translate.FeatureBackendRefs, reason: report.ReasonAnswers500, configured: "weighted_clusters " + invalidCluster + " weight 2"},
			{rule: 1, feature: translate.FeatureBackendRefs, reason: report.ReasonInvalidBackendsUnweighted},
		}},
		{"filters", func(t *testing.T) *translate.Model {
			r0 := filterRule(0, translate.Filters{
				RequestHeaders:  &translate.HeaderModifier{Set: []translate.Header{{Name: "Host", Value: "x.example"}, {Name: "X-Ok", Value: "1"}}, Remove: []string{"X-Gone"}},
				ResponseHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "Server", Value: "me"}}},
				Rewrite:         &translate.Rewrite{Hostname: "b.example", Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/one"}},
				Mirrors:         []*translate.Mirror{mirrorOf("mirror_a", 1, 3), mirrorOf("mirror_b", 1, 4)},
			})
			r1 := redirectRule(1, &translate.Redirect{Scheme: "https", StatusCode: 301}, translate.Filters{Mirrors: []*translate.Mirror{mirrorOf("mirror_a", 1, 1)}})
			r3 := filterRule(3, translate.Filters{Mirrors: []*translate.Mirror{mirrorOf("mirror_a", 1, 2)}})
			return filterModel(8080, placed{r0, prefix("/a")}, placed{r1, prefix("/b")}, placed{r3, prefix("/d")})
		}, false, []want{
			{rule: 0, feature: translate.FeatureRequestHeaderModifier, reason: configured, caveats: []report.Reason{report.CaveatHeaderNotModifiable},
				configured: "request_headers_to_add X-Ok; request_headers_to_remove X-Gone", params: map[report.Reason]report.Params{report.CaveatHeaderNotModifiable: {"headers": "Host"}}},
			{rule: 0, feature: translate.FeatureResponseHeaderModifier, reason: configured, caveats: []report.Reason{report.CaveatServerHeaderOverwritten}, configured: "response_headers_to_add Server"},
			{rule: 0, feature: translate.FeatureURLRewrite, reason: configured, configured: "host_rewrite_literal b.example; regex_rewrite to /one"},
			{rule: 0, feature: translate.FeatureRequestMirror, reason: configured, caveats: []report.Reason{report.CaveatMirrorShareRounded}, configured: "request_mirror_policies 2",
				params: map[report.Reason]report.Params{report.CaveatMirrorShareRounded: {"share": "1/3", "rounded": "333333/MILLION"}}},
			{rule: 1, feature: translate.FeatureRequestRedirect, reason: configured, configured: "redirect response_code MOVED_PERMANENTLY"},
			{rule: 1, feature: translate.FeatureRequestMirror, reason: report.ReasonRuleForwardsNothing},
			{rule: 3, feature: translate.FeatureRequestMirror, reason: configured, configured: "request_mirror_policies 1"},
		}},
		{"connection timeouts and HTTPS", func(t *testing.T) *translate.Model {
			ca := tlsCA(t)
			return testmodel.LoadText(t, tlsManifests+connPolicy, translate.ResolveOptions{TLSDir: ca.dir})
		}, false, []want{
			{route: "ns/gw", feature: translate.FeatureConnServerTimeout, reason: configured, configured: "route idle_timeout 20s",
				caveats: []report.Reason{report.CaveatAnswers408WhileReceiving, report.CaveatDefaultRouteTimeout, report.CaveatIdleTimerSpansRequest, report.CaveatNoAnswerAfterHeaders}},
			{route: "ns/gw", feature: translate.FeatureConnTLSInspectDelay, reason: configured, configured: "listener_filters_timeout 5s",
				caveats: []report.Reason{report.CaveatClosesWithoutClientHello, report.CaveatHTTPListenersNotDelayed}},
			{route: "ns/gw", feature: translate.FeatureConnClientTimeout, reason: report.ReasonNotExpressible},
			{route: "ns/gw", feature: translate.FeatureConnClientFinTimeout, reason: report.ReasonNotExpressible},
			{route: "ns/gw", feature: translate.FeatureConnServerFinTimeout, reason: report.ReasonNotExpressible},
			{route: "ns/gw", feature: translate.FeatureConnTunnelTimeout, reason: report.ReasonNoTunnels},
			{route: "ns/exact", feature: translate.FeatureListenerHTTPS, reason: configured, caveats: []report.Reason{report.CaveatCertificateByRouteHostname},
				configured: "TLS filter chains with Secret ns/cert-a, ns/cert-wild"},
		}},
		{"connection timeout clamped", func(t *testing.T) *translate.Model {
			ca := tlsCA(t)
			return testmodel.LoadText(t, tlsManifests+strings.Replace(connPolicy, "serverTimeout: 20s", "serverTimeout: 100d", 1), translate.ResolveOptions{TLSDir: ca.dir})
		}, false, []want{
			{route: "ns/gw", feature: translate.FeatureConnServerTimeout, reason: configured, configured: "route idle_timeout 596h31m23s647ms",
				caveats: []report.Reason{report.CaveatAnswers408WhileReceiving, report.CaveatDefaultRouteTimeout, report.CaveatIdleTimerSpansRequest, report.CaveatNoAnswerAfterHeaders, report.CaveatTimeoutClamped}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.model(t)
			res, err := translate.Run(m, []translate.Target{{Backend: New()}}, c.optIn)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Report.Findings {
				if err := report.Check(f); err != nil {
					t.Errorf("%s rule %d: %v", f.Route, f.Rule, err)
				}
			}
			for _, w := range c.want {
				route := w.route
				if route == "" {
					route = "default/web"
				}
				i := slices.IndexFunc(res.Report.Findings, func(f translate.Finding) bool {
					return f.Feature == w.feature && ((f.Gateway == "" && f.Route == route && f.Rule == w.rule) || (f.Gateway != "" && f.Gateway == route))
				})
				if i < 0 {
					t.Errorf("%s rule %d: no %s finding", route, w.rule, w.feature)
					continue
				}
				f := res.Report.Findings[i]
				var got []report.Reason
				for _, cv := range f.Caveats {
					got = append(got, cv.Reason)
					if p, ok := w.params[cv.Reason]; ok && fmt.Sprint(p) != fmt.Sprint(cv.Params) {
						t.Errorf("%s rule %d %s: caveat %s params %v, want %v", route, w.rule, w.feature, cv.Reason, cv.Params, p)
					}
				}
				wantCaveats := slices.Sorted(slices.Values(w.caveats))
				if f.Reason != w.reason || !slices.Equal(got, wantCaveats) || f.Configured != w.configured {
					t.Errorf("%s rule %d %s: %s %v configured %q, want %s %v configured %q",
						route, w.rule, w.feature, f.Reason, got, f.Configured, w.reason, wantCaveats, w.configured)
				}
			}
		})
	}
}

// TestRuleOnNoListener: a rule that no generated listener serves reaches
// no request.
func TestRuleOnNoListener(t *testing.T) {
	r0 := newRule(0, nil, translate.Timeouts{})
	r1 := newRule(1, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur(t, "1s")})
	r1.Filters.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "X-A", Value: "1"}}}
	m := singleModel(r0)
	m.Rules = append(m.Rules, r1)
	out, _ := generate(t, m, translate.Options{})
	n := 0
	for _, f := range out.Findings {
		if f.Rule != 1 {
			continue
		}
		n++
		if f.Reason != report.ReasonRuleOnNoListener || report.Check(f) != nil {
			t.Errorf("%s: %+v: %v", f.Feature, f.Decision, report.Check(f))
		}
	}
	if n != len(r1.Features()) {
		t.Errorf("%d findings for the rule on no listener, want %d", n, len(r1.Features()))
	}
}

// TestUnroutedListenerCaveat: an HTTPS listener that no route attaches to
// shares the port of the rule's listener, so its SNI names get the rule's
// certificate: listener.https names it as a caveat.
func TestUnroutedListenerCaveat(t *testing.T) {
	ca := tlsCA(t)
	m := testmodel.LoadText(t, `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
  - {name: wild, port: 443, protocol: HTTPS, hostname: "*.example.com", tls: {certificateRefs: [{name: cert-wild}]}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec: {ports: [{port: 8080}], clusterIP: 10.0.0.1}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: exact, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: a}]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
`, translate.ResolveOptions{TLSDir: ca.dir})
	res, err := translate.Run(m, []translate.Target{{Backend: New()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Report.Findings, func(f translate.Finding) bool { return f.Feature == translate.FeatureListenerHTTPS })
	if i < 0 {
		t.Fatal("no listener.https finding")
	}
	f := res.Report.Findings[i]
	if f.Reason != report.ReasonConfigured || len(f.Caveats) != 1 || f.Caveats[0].Reason != report.CaveatUnroutedListenerNotServed ||
		!strings.Contains(f.Caveats[0].Params["listeners"], "wild") || f.Configured != "TLS filter chains with Secret ns/cert-a" {
		t.Errorf("%+v", f.Decision)
	}
}
