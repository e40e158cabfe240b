package envoy

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

func TestFindingStatuses(t *testing.T) {
	type want struct {
		status translate.Status
		record string // recordText of the finding
	}
	H := func(record string) want { return want{translate.Honoured, record} }
	A := func(record string) want { return want{translate.Approximated, record} }
	U := func(record string) want { return want{translate.Unsupported, record} }
	cases := []struct {
		name  string
		rule  func(t *testing.T) *translate.Rule
		optIn bool
		want  map[translate.Feature]want
	}{
		{"everything set", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 3, Codes: []int{500, 503}, Backoff: dur(t, "100ms")},
				translate.Timeouts{Request: dur(t, "10s"), BackendRequest: dur(t, "1s")})
		}, false, map[translate.Feature]want{
			translate.FeatureRetryAttempts:         A(`Configured "num_retries 3" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureRetryBackendTimeout:   A(`Configured "per_try_timeout 1s" [BodyBufferLimit NoAnswerAfterHeaders NonIdempotentExempt TimerEndsAtResponseHeaders]`),
			translate.FeatureRetryBackoff:          A(`Configured "retry_back_off base_interval 100ms" [FullJitterBackoff]`),
			translate.FeatureRetryCodes:            A(`Configured "retriable_status_codes [500, 503]" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureRetryConnectionErrors: A(`Configured "retry_on connect-failure,refused-stream,reset" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureBackendRequestTimeout: A(`Configured "per_try_timeout 1s" [NoAnswerAfterHeaders TimerEndsAtResponseHeaders]`),
			translate.FeatureRequestTimeout:        H(`Configured "route timeout 10s" []`),
		}},
		{"opted in", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
		}, true, map[translate.Feature]want{
			// No NonIdempotentExempt: POST, PATCH and LOCK are retried too.
			translate.FeatureRetryAttempts:         A(`Configured "num_retries 1" [BodyBufferLimit]`),
			translate.FeatureRetryConnectionErrors: A(`Configured "retry_on connect-failure,refused-stream,reset" [BodyBufferLimit]`),
		}},
		{"attempts 0", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 0, Codes: []int{503}, Backoff: dur(t, "1s")},
				translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "2s")})
		}, false, map[translate.Feature]want{
			translate.FeatureRetryAttempts:         H(`RetriesDisabled "" []`),
			translate.FeatureRetryBackendTimeout:   H(`RetriesDisabled "" []`),
			translate.FeatureRetryBackoff:          H(`RetriesDisabled "" []`),
			translate.FeatureRetryCodes:            H(`RetriesDisabled "" []`),
			translate.FeatureRetryConnectionErrors: H(`RetriesDisabled "" []`),
			translate.FeatureBackendRequestTimeout: H(`Configured "route timeout 2s" []`),
			translate.FeatureRequestTimeout:        H(`Configured "route timeout 2s" []`),
		}},
		{"default route timeout cuts the retries", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{BackendRequest: dur(t, "5s")})
		}, false, map[translate.Feature]want{
			translate.FeatureRetryAttempts:         A(`Configured "num_retries 2" [BodyBufferLimit DefaultRouteTimeout NonIdempotentExempt]`),
			translate.FeatureRetryBackendTimeout:   A(`Configured "per_try_timeout 5s" [BodyBufferLimit DefaultRouteTimeout NoAnswerAfterHeaders NonIdempotentExempt TimerEndsAtResponseHeaders]`),
			translate.FeatureRetryConnectionErrors: A(`Configured "retry_on connect-failure,refused-stream,reset" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureBackendRequestTimeout: A(`Configured "per_try_timeout 5s" [DefaultRouteTimeout NoAnswerAfterHeaders TimerEndsAtResponseHeaders]`),
		}},
		{"default route timeout cuts a try", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur(t, "20s")})
		}, false, map[translate.Feature]want{
			translate.FeatureRetryAttempts:         A(`Configured "num_retries 1" [BodyBufferLimit DefaultRouteTimeout NonIdempotentExempt]`),
			translate.FeatureRetryBackendTimeout:   A(`Configured "per_try_timeout 20s" [BodyBufferLimit DefaultRouteTimeout NoAnswerAfterHeaders NonIdempotentExempt TimerEndsAtResponseHeaders]`),
			translate.FeatureBackendRequestTimeout: A(`Configured "per_try_timeout 20s" [DefaultRouteTimeout NoAnswerAfterHeaders TimerEndsAtResponseHeaders]`),
		}},
		{"no retry: backendRequest is the route timeout", func(t *testing.T) *translate.Rule {
			return newRule(0, nil, translate.Timeouts{BackendRequest: dur(t, "20s")})
		}, false, map[translate.Feature]want{
			translate.FeatureBackendRequestTimeout: H(`Configured "route timeout 20s" []`),
		}},
		{"default route timeout is long enough", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur(t, "5s")})
		}, false, map[translate.Feature]want{
			translate.FeatureRetryAttempts:         A(`Configured "num_retries 1" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureRetryBackendTimeout:   A(`Configured "per_try_timeout 5s" [BodyBufferLimit DefaultRouteTimeout NoAnswerAfterHeaders NonIdempotentExempt TimerEndsAtResponseHeaders]`),
			translate.FeatureRetryConnectionErrors: A(`Configured "retry_on connect-failure,refused-stream,reset" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureBackendRequestTimeout: A(`Configured "per_try_timeout 5s" [DefaultRouteTimeout NoAnswerAfterHeaders TimerEndsAtResponseHeaders]`),
		}},
		{"zero durations", func(t *testing.T) *translate.Rule {
			return newRule(0, &translate.Retry{Attempts: 1, Backoff: dur(t, "0s")}, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "0s")})
		}, false, map[translate.Feature]want{
			translate.FeatureRetryAttempts:         A(`Configured "num_retries 1" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureRetryBackendTimeout:   A(`TimeoutDisabled "" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureRetryBackoff:          H(`Configured "retry_back_off base_interval 1ms" []`),
			translate.FeatureRetryConnectionErrors: A(`Configured "retry_on connect-failure,refused-stream,reset" [BodyBufferLimit NonIdempotentExempt]`),
			translate.FeatureBackendRequestTimeout: H(`TimeoutDisabled "" []`),
			translate.FeatureRequestTimeout:        H(`TimeoutDisabled "route timeout 0s" []`),
		}},
		{"backendRequest 0s alone", func(t *testing.T) *translate.Rule {
			return newRule(0, nil, translate.Timeouts{BackendRequest: dur(t, "0s")})
		}, false, map[translate.Feature]want{
			translate.FeatureBackendRequestTimeout: H(`TimeoutDisabled "route timeout 0s" []`),
		}},
		{"no retry", func(t *testing.T) *translate.Rule {
			return newRule(0, nil, translate.Timeouts{Request: dur(t, "4s"), BackendRequest: dur(t, "4s")})
		}, false, map[translate.Feature]want{
			translate.FeatureBackendRequestTimeout: H(`Configured "route timeout 4s" []`),
			translate.FeatureRequestTimeout:        H(`Configured "route timeout 4s" []`),
		}},
		{"every weight 0", func(t *testing.T) *translate.Rule {
			r := newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur(t, "1s")})
			r.Backends[0].Weight = 0
			return r
		}, false, map[translate.Feature]want{
			translate.FeatureBackendRefs:           H(`Answers500 "direct_response 500" []`),
			translate.FeatureRetryAttempts:         U(`RuleForwardsNothing "" []`),
			translate.FeatureRetryConnectionErrors: U(`RuleForwardsNothing "" []`),
			translate.FeatureRequestTimeout:        U(`RuleForwardsNothing "" []`),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.rule(t)
			out, _ := generate(t, singleModel(r), translate.Options{RetryNonIdempotent: c.optIn})
			got := map[translate.Feature]translate.Finding{}
			for _, f := range out.Findings {
				got[f.Feature] = f
			}
			if len(got) != len(r.Features()) || len(out.Findings) != len(r.Features()) {
				t.Errorf("%d findings, want %d (%v)", len(out.Findings), len(r.Features()), r.Features())
			}
			for feature, w := range c.want {
				f, ok := got[feature]
				if !ok {
					t.Errorf("%s: no finding", feature)
					continue
				}
				if got := recordText(f); f.Status != w.status || got != w.record {
					t.Errorf("%s: %s %s, want %s %s", feature, f.Status, got, w.status, w.record)
				}
			}
		})
	}
}

// recordText is a finding's record in one line: the reason with its
// parameters, the configured fact, and the caveats' reasons.
func recordText(f translate.Finding) string {
	var cs []string
	for _, c := range f.Caveats {
		cs = append(cs, string(c.Reason))
	}
	return fmt.Sprintf("%s %q [%s]", report.WithParams(f.Reason, f.Params), f.Configured, strings.Join(cs, " "))
}

// caveatText is recordText with each caveat's parameters.
func caveatText(f translate.Finding) string {
	var cs []string
	for _, c := range f.Caveats {
		cs = append(cs, report.WithParams(c.Reason, c.Params))
	}
	return fmt.Sprintf("%s %q [%s]", report.WithParams(f.Reason, f.Params), f.Configured, strings.Join(cs, " "))
}

func TestWorstCase(t *testing.T) {
	g := &generator{cap: capabilities()[0]}
	cases := []struct {
		attempts int
		backoff  time.Duration // 0: unset
		perTry   time.Duration
		want     time.Duration
	}{
		{1, 0, time.Second, 2*time.Second + ms(25)},
		{3, 0, time.Second, 4*time.Second + ms(25+50+100)},
		{5, ms(100), time.Second, 6*time.Second + ms(100+200+400+800+1000)},
		{2, ms(1), 5 * time.Second, 15*time.Second + ms(1+2)},
	}
	for _, c := range cases {
		rt := &translate.Retry{Attempts: c.attempts}
		if c.backoff > 0 {
			rt.Backoff = &translate.Duration{Text: "x", Value: c.backoff}
		}
		if got := g.worstCase(rt, c.perTry); got != c.want {
			t.Errorf("worstCase(%d, %v, %v) = %v, want %v", c.attempts, c.backoff, c.perTry, got, c.want)
		}
	}
	// Huge attempt counts stop early instead of looping.
	if got := g.worstCase(&translate.Retry{Attempts: 1 << 30}, time.Second); got <= g.cap.defaultRouteTimeout {
		t.Errorf("worstCase with 2^30 attempts = %v", got)
	}
}

func TestDeadAndInvalidBackends(t *testing.T) {
	cases := map[string]func(r *translate.Rule){
		"every weight 0": func(r *translate.Rule) { r.Backends[0].Weight = 0 },
		"no backendRefs": func(r *translate.Rule) { r.Backends, r.NoBackendRefs = nil, true },
		"only invalid refs": func(r *translate.Rule) {
			r.Backends = nil
			r.Invalid = []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRule(0, &translate.Retry{Attempts: 2, Codes: []int{503}, Backoff: dur(t, "10ms")}, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "1s")})
			mutate(r)
			out, bs := generate(t, singleModel(r), translate.Options{})
			// One route, whatever the method: no retrying twin.
			rt := route0(t, routesNamed(t, bs, r.Name))
			if rt.GetDirectResponse().GetStatus() != 500 || len(routesNamed(t, bs, r.Name+twinSuffix)) != 0 {
				t.Errorf("routes %v, want one direct 500", routeConfig(t, bs, 0).GetVirtualHosts()[0].GetRoutes())
			}
			for _, f := range out.Findings {
				want := `RuleForwardsNothing "" []`
				if f.Feature == translate.FeatureBackendRefs {
					want = `Answers500 "direct_response 500" []`
				}
				if got := recordText(f); got != want {
					t.Errorf("%s: %s, want %s", f.Feature, got, want)
				}
			}
			if out.Findings[0].Feature != translate.FeatureBackendRefs {
				t.Errorf("first finding is %s, want backendRefs", out.Findings[0].Feature)
			}
		})
	}

	// Some refs invalid: their share is a missing cluster answered 500.
	r := newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
	r.Backends = []*translate.BackendRef{backend("default_a_80", 3, "10.0.0.1")}
	r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 2, Reason: "kind Bucket is not a Service"}, {Index: 2, Weight: 0, Reason: "no ReferenceGrant"}}
	out, bs := generate(t, singleModel(r), translate.Options{})
	for _, rt := range routeConfig(t, bs, 0).GetVirtualHosts()[0].GetRoutes() {
		ra := rt.GetRoute()
		var got []string
		for _, w := range ra.GetWeightedClusters().GetClusters() {
			got = append(got, fmt.Sprintf("%s=%d", w.GetName(), w.GetWeight().GetValue()))
		}
		if fmt.Sprint(got) != "[default_a_80=3 gwretry:invalid-backendRefs=2]" || ra.GetClusterNotFoundResponseCode() != routev3.RouteAction_INTERNAL_SERVER_ERROR {
			t.Errorf("route %s: weighted clusters %v, cluster_not_found_response_code %v", rt.GetName(), got, ra.GetClusterNotFoundResponseCode())
		}
	}
	if v := routeConfig(t, bs, 0).GetValidateClusters(); v == nil || v.GetValue() {
		t.Errorf("validate_clusters %v, want false: Envoy would refuse the missing cluster", v)
	}
	if f := out.Findings[0]; f.Feature != translate.FeatureBackendRefs || f.Reason != report.ReasonAnswers500 || f.Status != translate.Honoured {
		t.Errorf("backendRefs finding %+v", f)
	}
	if !strings.Contains(translate.NotesText(out.Notes), "validate_clusters false") {
		t.Errorf("no note says validate_clusters is off: %v", out.Notes)
	}
	// A route table without invalid refs keeps Envoy's check.
	_, bs = generate(t, singleModel(newRule(0, nil, translate.Timeouts{})), translate.Options{})
	if routeConfig(t, bs, 0).GetValidateClusters() != nil {
		t.Error("validate_clusters set without invalid backendRefs")
	}
}

func TestAttemptsClamp(t *testing.T) {
	for _, attempts := range []int{4294967295, 4294967296, 4294967297, 1 << 40} {
		r := newRule(0, &translate.Retry{Attempts: attempts}, translate.Timeouts{})
		r.Methods = []string{"GET"}
		m := singleModel(r)
		m.Listeners[0].VirtualHosts[0].Routes[0].Match.Method = "GET"
		out, bs := generate(t, m, translate.Options{})
		if got := route0(t, routesNamed(t, bs, r.Name)).GetRoute().GetRetryPolicy().GetNumRetries().GetValue(); got != math.MaxUint32 {
			t.Errorf("attempts %d: num_retries %d, want the clamp %d", attempts, got, uint32(math.MaxUint32))
		}
		f := out.Findings[0]
		clamped := attempts > math.MaxUint32
		hasClamp := slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatAttemptsClamped })
		if f.Status != translate.Approximated || hasClamp != clamped {
			t.Errorf("attempts %d: %s %+v (clamp caveat: want %v)", attempts, f.Status, f.Caveats, clamped)
		}
		if _, err := translate.Run(m, []translate.Target{{Backend: New()}}, false); err != nil {
			t.Errorf("attempts %d: Run: %v", attempts, err)
		}
	}
	if c := capabilities()[len(capabilities())-1]; c.maxNumRetries != math.MaxUint32 {
		t.Errorf("table max num_retries %d", c.maxNumRetries)
	}
}
