package nginx

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// decided is the decision a test expects for one finding: its reason and
// the reason's params, the configured fact, and the caveats with their
// params (in any order).
type decided struct {
	reason     report.Reason
	params     report.Params
	configured string
	caveats    []report.Caveat
}

func cav(r report.Reason, kv ...string) report.Caveat { return report.NewCaveat(r, kv...) }

// TestDecisions checks, for representative rules, the decision nginx
// records for each feature of rule 0 (and each connection.* field): the
// data a report's reader relies on, never the message.
func TestDecisions(t *testing.T) {
	get := func(r *translate.Rule) *translate.Rule {
		r.Methods = []string{"GET"}
		return r
	}
	retry := func(attempts int, codes ...int) *translate.Retry {
		return &translate.Retry{Attempts: attempts, Codes: codes}
	}
	one := func(r *translate.Rule) func(testing.TB) *translate.Model {
		return func(testing.TB) *translate.Model { return model("", []*translate.Rule{r}) }
	}
	exempt := cav(report.CaveatNonIdempotentExempt, "methods", "POST, PATCH, LOCK")
	tryCut := []report.Caveat{cav(report.CaveatIdleTimer), cav(report.CaveatIdleTimerNotRearmed, "interval", "300ms"), cav(report.CaveatNoAnswerAfterHeaders)}
	configured := func(fact string, cs ...report.Caveat) decided {
		return decided{reason: report.ReasonConfigured, configured: fact, caveats: cs}
	}
	off := decided{reason: report.ReasonRetriesDisabled, configured: "proxy_next_upstream off"}
	// Every version in the table is before 1.29: a backend's 1xx is final.
	interim := cav(report.CaveatInterimResponseIsFinal, "version", "1.28")
	connErrors := "proxy_next_upstream error timeout invalid_header"
	for _, tc := range []struct {
		name    string
		model   func(testing.TB) *translate.Model
		opts    translate.Options
		version string
		want    map[translate.Feature]decided
	}{{
		name:  "codes nginx retries, GET only",
		model: one(get(rule(0, retry(2, 503, 504), translate.Timeouts{}))),
		want: map[translate.Feature]decided{
			translate.FeatureRetryAttempts:         configured("proxy_next_upstream_tries 3"),
			translate.FeatureRetryCodes:            configured("proxy_next_upstream http_503 http_504", interim),
			translate.FeatureRetryConnectionErrors: configured(connErrors),
		},
	}, {
		name:  "some codes nginx cannot retry",
		model: one(get(rule(0, retry(1, 418, 503), translate.Timeouts{}))),
		want: map[translate.Feature]decided{
			translate.FeatureRetryCodes: configured("proxy_next_upstream http_503", cav(report.CaveatCodesNotRetried, "codes", "418"), interim),
		},
	}, {
		name:  "no code nginx can retry",
		model: one(get(rule(0, retry(1, 418, 501), translate.Timeouts{}))),
		want: map[translate.Feature]decided{
			translate.FeatureRetryCodes:            {reason: report.ReasonCodesNotRetryable, params: report.Params{"codes": "418, 501"}},
			translate.FeatureRetryConnectionErrors: configured(connErrors),
		},
	}, {
		name: "attempts 0",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(0, 503), translate.Timeouts{BackendRequest: dur(t, "1s")})})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRetryAttempts:         off,
			translate.FeatureRetryCodes:            off,
			translate.FeatureRetryConnectionErrors: off,
			translate.FeatureRetryBackendTimeout: {reason: report.ReasonRetriesDisabled, configured: "proxy_connect/send/read_timeout 1000ms",
				caveats: tryCut},
		},
	}, {
		name:  "attempts clamped",
		model: one(get(rule(0, retry(150), translate.Timeouts{}))),
		want: map[translate.Feature]decided{
			translate.FeatureRetryAttempts:         configured("proxy_next_upstream_tries 101", cav(report.CaveatAttemptsClamped, "configured", "100", "max", "100")),
			translate.FeatureRetryConnectionErrors: configured(connErrors, cav(report.CaveatAttemptsClamped, "configured", "100", "max", "100")),
		},
	}, {
		name:  "POST matched, exempt",
		model: one(rule(0, retry(1, 503), translate.Timeouts{})),
		want: map[translate.Feature]decided{
			translate.FeatureRetryAttempts:         configured("proxy_next_upstream_tries 2", exempt),
			translate.FeatureRetryCodes:            configured("proxy_next_upstream http_503", interim, exempt),
			translate.FeatureRetryConnectionErrors: configured(connErrors, exempt),
		},
	}, {
		name:  "POST matched, --retry-non-idempotent",
		model: one(rule(0, retry(1, 503), translate.Timeouts{})),
		opts:  translate.Options{RetryNonIdempotent: true},
		want: map[translate.Feature]decided{
			translate.FeatureRetryAttempts:         configured("proxy_next_upstream_tries 2"),
			translate.FeatureRetryCodes:            configured("proxy_next_upstream http_503", interim),
			translate.FeatureRetryConnectionErrors: configured(connErrors),
		},
	}, {
		name: "backoff",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{get(rule(0, &translate.Retry{Attempts: 2, Backoff: dur(t, "100ms")}, translate.Timeouts{}))})
		},
		want: map[translate.Feature]decided{translate.FeatureRetryBackoff: {reason: report.ReasonNoBackoff}},
	}, {
		name: "backendRequest with retries",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{get(rule(0, retry(1), translate.Timeouts{BackendRequest: dur(t, "1s")}))})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRetryBackendTimeout: configured("proxy_next_upstream timeout, proxy_connect/send/read_timeout 1000ms", tryCut...),
			translate.FeatureBackendRequestTimeout: configured("proxy_connect/send/read_timeout 1000ms",
				append([]report.Caveat{cav(report.CaveatUpgradedConnectionIdle, "timeout", "1000ms")}, tryCut...)...),
		},
	}, {
		name: "backendRequest longer than the system's connect limit",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, nil, translate.Timeouts{BackendRequest: dur(t, "100s")})})
		},
		want: map[translate.Feature]decided{
			translate.FeatureBackendRequestTimeout: configured("proxy_connect/send/read_timeout 100000ms",
				append([]report.Caveat{cav(report.CaveatOSConnectLimit, "limit", "75s"), cav(report.CaveatUpgradedConnectionIdle, "timeout", "100000ms")}, tryCut...)...),
		},
	}, {
		name: "backendRequest 0s",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{get(rule(0, retry(1), translate.Timeouts{BackendRequest: dur(t, "0s")}))})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRetryBackendTimeout:   {reason: report.ReasonTimeoutDisabled, configured: "proxy_connect/send/read_timeout 100000h"},
			translate.FeatureBackendRequestTimeout: {reason: report.ReasonTimeoutDisabled, configured: "proxy_connect/send/read_timeout 100000h"},
		},
	}, {
		name: "request 0s",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, nil, translate.Timeouts{Request: dur(t, "0s")})})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRequestTimeout: {reason: report.ReasonTimeoutDisabled, configured: "proxy_connect/send/read_timeout 100000h"},
		},
	}, {
		name: "request with retries",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{get(rule(0, retry(1), translate.Timeouts{Request: dur(t, "5s")}))})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRequestTimeout: configured("proxy_next_upstream_timeout 5000ms, proxy_connect/send/read_timeout 5000ms",
				cav(report.CaveatIdleTimer), cav(report.CaveatNoAnswerAfterHeaders), cav(report.CaveatNoTotalRequestTimeout),
				cav(report.CaveatUpgradedConnectionIdle, "timeout", "5000ms")),
		},
	}, {
		name: "request and backendRequest, no retry",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, nil, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "1s")})})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRequestTimeout: configured("", cav(report.CaveatNoTotalRequestTimeout)),
		},
	}, {
		name: "dead rule",
		model: func(t testing.TB) *translate.Model {
			r := rule(0, retry(1), translate.Timeouts{Request: dur(t, "1s")})
			r.Backends = nil
			r.Invalid = []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}
			return model("", []*translate.Rule{r})
		},
		want: map[translate.Feature]decided{
			translate.FeatureBackendRefs:    {reason: report.ReasonAnswers500, configured: "return 500"},
			translate.FeatureRetryAttempts:  {reason: report.ReasonRuleForwardsNothing},
			translate.FeatureRequestTimeout: {reason: report.ReasonRuleForwardsNothing},
		},
	}, {
		name: "share of invalid backendRefs",
		model: func(testing.TB) *translate.Model {
			r := get(rule(0, retry(1), translate.Timeouts{}, backend("a", 3, "127.0.0.1")))
			r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "kind Bucket is not a Service"}}
			return model("", []*translate.Rule{r})
		},
		want: map[translate.Feature]decided{
			translate.FeatureBackendRefs: configured("upstream default_route_r0", cav(report.CaveatInvalidShareToValidBackends, "share", "1", "total", "4")),
		},
	}, {
		name: "no match nginx can express",
		model: func(testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(1, 503), translate.Timeouts{})}, translate.Match{PathType: translate.PathExact, Path: "/a%00b"})
		},
		want: map[translate.Feature]decided{
			translate.FeatureRetryAttempts: {reason: report.ReasonNoMatchExpressible},
			translate.FeatureRetryCodes:    {reason: report.ReasonNoMatchExpressible},
		},
	}, {
		name:    "header modifiers on 1.22",
		version: "1.22",
		model: one(func() *translate.Rule {
			r := rule(0, nil, translate.Timeouts{})
			r.Filters.RequestHeaders = &translate.HeaderModifier{
				Set:    []translate.Header{{Name: "Host", Value: "h.example"}},
				Add:    []translate.Header{{Name: "X-Add", Value: "a"}, {Name: "X_Under", Value: "u"}},
				Remove: []string{"x-add"},
			}
			r.Filters.ResponseHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Resp", Value: "r"}}}
			return r
		}()),
		want: map[translate.Feature]decided{
			translate.FeatureRequestHeaderModifier: configured("proxy_set_header host, x-add, x_under",
				cav(report.CaveatClientHeaderDropped, "headers", "X_Under"),
				cav(report.CaveatRepeatedHeaderFirstLineOnly, "headers", "X-Add", "version", "1.22", "fixedIn", "1.23.0"),
				cav(report.CaveatHeadersHandledByProxy, "headers", "host"),
				cav(report.CaveatHeaderInSeveralLists, "headers", "x-add")),
			translate.FeatureResponseHeaderModifier: configured("add_header/proxy_hide_header x-resp"),
		},
	}, {
		name: "redirect",
		model: one(func() *translate.Rule {
			r := rule(0, retry(1), translate.Timeouts{})
			r.Backends, r.NoBackendRefs = nil, true
			r.Filters.Redirect = &translate.Redirect{Scheme: "https", StatusCode: 301}
			return r
		}()),
		want: map[translate.Feature]decided{
			translate.FeatureRequestRedirect: configured("return 301 https://$host$request_uri"),
			translate.FeatureRetryAttempts:   {reason: report.ReasonRuleForwardsNothing},
		},
	}, {
		name: "prefix rewrite of nested prefixes",
		model: func(testing.TB) *translate.Model {
			r := rule(0, nil, translate.Timeouts{})
			r.Filters.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/in"}}
			m := model("", []*translate.Rule{r}, prefix("/a"))
			long := prefix("/a/b")
			long.Headers = []translate.ValueMatch{{Type: translate.StringExact, Name: "x-v", Value: "1"}}
			vh := m.Listeners[0].VirtualHosts[0]
			vh.Routes = append([]*translate.RouteMatch{{Match: long, Rule: r}}, vh.Routes...)
			return m
		},
		want: map[translate.Feature]decided{
			translate.FeatureURLRewrite: configured("rewrite ^ $gw_default__route__r0_rw break, proxy_pass http://default_route_r0$gw_default__route__r0_rw_path",
				cav(report.CaveatLongestPrefixReplaced), cav(report.CaveatPathRebuiltNormalized)),
		},
	}, {
		name: "prefix redirect",
		model: one(func() *translate.Rule {
			r := rule(0, retry(1), translate.Timeouts{})
			r.Backends, r.NoBackendRefs = nil, true
			r.Filters.Redirect = &translate.Redirect{Hostname: "example.test", Port: 8080, StatusCode: 302,
				Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/"}}
			return r
		}()),
		want: map[translate.Feature]decided{
			translate.FeatureRequestRedirect: configured("return 302 $scheme://example.test:8080$gw_default__route__r0_rd", cav(report.CaveatPathRebuiltNormalized)),
			translate.FeatureRetryAttempts:   {reason: report.ReasonRuleForwardsNothing},
		},
	}, {
		name: "prefix rewrite of an exact match",
		model: func(testing.TB) *translate.Model {
			r := rule(0, nil, translate.Timeouts{})
			r.Filters.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: "/in"}}
			return model("", []*translate.Rule{r}, translate.Match{PathType: translate.PathExact, Path: "/a"})
		},
		want: map[translate.Feature]decided{
			translate.FeatureURLRewrite: {reason: report.ReasonPrefixRewriteWithoutPrefixMatch},
		},
	}, {
		name: "mirror of a third, with a rewrite",
		model: one(func() *translate.Rule {
			r := rule(0, nil, translate.Timeouts{})
			r.Filters.Rewrite = &translate.Rewrite{Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/x"}}
			r.Filters.Mirrors = []*translate.Mirror{{Numerator: 1, Denominator: 3, Backend: backend("m", 1, "127.0.0.2")}}
			return r
		}()),
		want: map[translate.Feature]decided{
			translate.FeatureURLRewrite: configured("rewrite ^ /x break"),
			translate.FeatureRequestMirror: configured("mirror /_gwretry_mirror_default_route_r0_0",
				cav(report.CaveatMirrorShareRounded, "share", "1/3", "rounded", "33.33%"), cav(report.CaveatMirrorGetsClientPath)),
		},
	}, {
		name:  "HTTPS listener",
		model: func(testing.TB) *translate.Model { return tlsModel("/certs", true, rule(0, nil, translate.Timeouts{})) },
		want: map[translate.Feature]decided{
			translate.FeatureListenerHTTPS: configured("listen ssl, ssl_certificate per server_name", cav(report.CaveatHostNotCheckedAgainstSNI)),
		},
	}, {
		name: "connection timeouts",
		model: func(testing.TB) *translate.Model {
			m := model("", []*translate.Rule{rule(0, nil, translate.Timeouts{})})
			conn := func(f translate.Feature, text string, d time.Duration) translate.ConnectionTimeout {
				return translate.ConnectionTimeout{Feature: f, Policy: "ns/p", Text: text, Value: d}
			}
			m.ConnectionTimeouts = []*translate.GatewayTimeouts{{Gateway: "ns/gw", Listeners: m.Listeners, Rules: m.Rules,
				Timeouts: []translate.ConnectionTimeout{
					conn(translate.FeatureConnClientTimeout, "1500us", 1500*time.Microsecond),
					conn(translate.FeatureConnServerTimeout, "30s", 30*time.Second),
					conn(translate.FeatureConnTunnelTimeout, "1h", time.Hour),
				}}}
			return m
		},
		want: map[translate.Feature]decided{
			translate.FeatureConnClientTimeout: configured("client_body_timeout and send_timeout 2ms",
				cav(report.CaveatRoundedUp, "value", "1500us", "rounded", "2ms"), cav(report.CaveatStalledBodyClosesConnection)),
			translate.FeatureConnServerTimeout: configured("proxy_send_timeout and proxy_read_timeout 30000ms"),
			translate.FeatureConnTunnelTimeout: {reason: report.ReasonNotExpressible},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.version
			if v == "" {
				v = "1.28"
			}
			res, err := translate.Run(tc.model(t), []translate.Target{{Backend: New(), Version: v}}, tc.opts.RetryNonIdempotent)
			if err != nil {
				t.Fatal(err)
			}
			got := map[translate.Feature]report.Decision{}
			for _, f := range res.Report.Findings {
				if f.Rule == 0 || f.Gateway != "" {
					got[f.Feature] = f.Decision
				}
			}
			for feature, w := range tc.want {
				d, ok := got[feature]
				if !ok {
					t.Errorf("%s: no finding", feature)
					continue
				}
				want := report.Decision{Reason: w.reason, Params: w.params, Configured: w.configured}.With(w.caveats...)
				if len(want.Caveats) == 0 {
					want.Caveats = nil
				}
				if len(d.Caveats) == 0 {
					d.Caveats = nil
				}
				if !reflect.DeepEqual(d, want) {
					t.Errorf("%s:\n got %s\nwant %s", feature, show(d), show(want))
				}
			}
		})
	}
}

// show writes a decision for a test's error: reason, params, configured
// fact, then each caveat with its params.
func show(d report.Decision) string {
	withParams := func(r report.Reason, p report.Params) string {
		if len(p) == 0 {
			return string(r)
		}
		return fmt.Sprintf("%s%v", r, p)
	}
	s := fmt.Sprintf("%s configured %q", withParams(d.Reason, d.Params), d.Configured)
	for _, c := range d.Caveats {
		s += " +" + withParams(c.Reason, c.Params)
	}
	return s
}

// TestEveryFindingDecided: every finding nginx gives for the models of
// the other tests, on every version, records a decision the catalogue
// accepts, whose status is the finding's.
func TestEveryFindingDecided(t *testing.T) {
	models := map[string]func(testing.TB) *translate.Model{
		"filters": func(testing.TB) *translate.Model {
			return filterModel(18080, translate.Endpoint{Host: "127.0.0.1", Port: 18081}, translate.Endpoint{Host: "127.0.0.1", Port: 18082})
		},
		"tls": func(testing.TB) *translate.Model {
			return tlsModel("/certs", false, rule(0, nil, translate.Timeouts{}))
		},
	}
	for _, tc := range generateCases() {
		models["generate "+tc.name] = tc.model
	}
	for name, mk := range models {
		for _, v := range versionTable() {
			for _, rni := range []bool{false, true} {
				out, err := New().Generate(mk(t), translate.Options{Version: v.Name, RetryNonIdempotent: rni})
				if err != nil {
					t.Fatalf("%s on %s: %v", name, v.Name, err)
				}
				for _, f := range out.Findings {
					if err := report.Check(f); err != nil {
						t.Errorf("%s on %s: route %s rule %d: %v", name, v.Name, f.Route, f.Rule, err)
					}
				}
			}
		}
	}
}
