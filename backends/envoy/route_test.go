package envoy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

type matchCase struct {
	name  string
	match translate.Match
	want  *routev3.RouteMatch
}

func exactHeader(name, v string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
		StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}}}
}

func regexHeader(name, re string) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
		StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}}}
}

func matchCases() []matchCase {
	sep := func(p string) *routev3.RouteMatch {
		return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: p}}
	}
	return []matchCase{
		{"exact", translate.Match{PathType: translate.PathExact, Path: "/a/b"},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/a/b"}}},
		{"prefix root", prefix("/"),
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}},
		{"prefix", prefix("/a"), sep("/a")},
		{"prefix trailing slash", prefix("/a/b/"), sep("/a/b")},
		{"regex", translate.Match{PathType: translate.PathRegex, Path: "/v[0-9]+/.*"},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/v[0-9]+/.*"}}}},
		{"method", translate.Match{PathType: translate.PathPrefix, Path: "/m", Method: "GET"},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/m"},
				Headers: []*routev3.HeaderMatcher{exactHeader(":method", "GET")}}},
		{"headers", translate.Match{PathType: translate.PathPrefix, Path: "/h", Headers: []translate.ValueMatch{
			{Type: translate.StringExact, Name: "x-env", Value: "canary"},
			{Type: translate.StringRegex, Name: "x-user", Value: "[a-z]+"},
		}}, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/h"},
			Headers: []*routev3.HeaderMatcher{exactHeader("x-env", "canary"), regexHeader("x-user", "[a-z]+")}}},
		{"query", translate.Match{PathType: translate.PathExact, Path: "/q", Query: []translate.ValueMatch{
			{Type: translate.StringExact, Name: "Page", Value: "1"},
			{Type: translate.StringRegex, Name: "id", Value: "[0-9]{3}"},
		}}, &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/q"},
			QueryParameters: []*routev3.QueryParameterMatcher{
				{Name: "Page", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "1"}}}},
				{Name: "id", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "[0-9]{3}"}}}}},
			}}},
		{"everything", translate.Match{PathType: translate.PathRegex, Path: "/x.*", Method: "PUT",
			Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "h", Value: ""}},
			Query:   []translate.ValueMatch{{Type: translate.StringExact, Name: "q", Value: "v"}}},
			&routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/x.*"}},
				Headers: []*routev3.HeaderMatcher{exactHeader(":method", "PUT"), exactHeader("h", "")},
				QueryParameters: []*routev3.QueryParameterMatcher{{Name: "q", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{
					StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "v"}}}}}}},
	}
}

func TestMatches(t *testing.T) {
	for _, c := range matchCases() {
		t.Run(c.name, func(t *testing.T) {
			if err := c.want.ValidateAll(); err != nil {
				t.Fatalf("expected match is invalid: %v", err)
			}
			if got := buildMatch(c.match); !proto.Equal(got, c.want) {
				t.Errorf("buildMatch = %v, want %v", got, c.want)
			}
		})
	}
	// Routes keep the model's order.
	_, bs := generate(t, matchModel(t), translate.Options{RetryNonIdempotent: true})
	routes := routeConfig(t, bs, 0).GetVirtualHosts()[0].GetRoutes()
	cases := matchCases()
	if len(routes) != len(cases) {
		t.Fatalf("%d routes, want %d", len(routes), len(cases))
	}
	for i, c := range cases {
		if !proto.Equal(routes[i].GetMatch(), c.want) {
			t.Errorf("route %d has match %v, want %v (%s)", i, routes[i].GetMatch(), c.want, c.name)
		}
	}
}

func TestRetryPolicyFields(t *testing.T) {
	predicate, err := marshalAny(&previoushostsv3.PreviousHostsPredicate{})
	if err != nil {
		t.Fatal(err)
	}
	hostPredicate := []*routev3.RetryPolicy_RetryHostPredicate{{
		Name:       "envoy.retry_host_predicates.previous_hosts",
		ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: predicate},
	}}
	cases := []struct {
		name     string
		retry    *translate.Retry
		timeouts translate.Timeouts
		want     *routev3.RetryPolicy // nil: no policy
	}{
		{"codes backoff per-try", &translate.Retry{Attempts: 3, Codes: []int{429, 503}, Backoff: dur(t, "250ms")},
			translate.Timeouts{Request: dur(t, "10s"), BackendRequest: dur(t, "2s")},
			&routev3.RetryPolicy{
				RetryOn:                       "connect-failure,refused-stream,reset,retriable-status-codes",
				NumRetries:                    wrapperspb.UInt32(3),
				PerTryTimeout:                 durationpb.New(2 * time.Second),
				RetriableStatusCodes:          []uint32{429, 503},
				RetryBackOff:                  &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(250 * time.Millisecond)},
				RetryHostPredicate:            hostPredicate,
				HostSelectionRetryMaxAttempts: 5,
			}},
		{"defaults", &translate.Retry{Attempts: 1}, translate.Timeouts{},
			&routev3.RetryPolicy{
				RetryOn:                       "connect-failure,refused-stream,reset",
				NumRetries:                    wrapperspb.UInt32(1),
				RetryHostPredicate:            hostPredicate,
				HostSelectionRetryMaxAttempts: 5,
			}},
		{"backoff 0s is 1ms", &translate.Retry{Attempts: 2, Backoff: dur(t, "0s")}, translate.Timeouts{},
			&routev3.RetryPolicy{
				RetryOn:                       "connect-failure,refused-stream,reset",
				NumRetries:                    wrapperspb.UInt32(2),
				RetryBackOff:                  &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(time.Millisecond)},
				RetryHostPredicate:            hostPredicate,
				HostSelectionRetryMaxAttempts: 5,
			}},
		{"backendRequest 0s: no per-try timeout", &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur(t, "0s")},
			&routev3.RetryPolicy{
				RetryOn:                       "connect-failure,refused-stream,reset",
				NumRetries:                    wrapperspb.UInt32(1),
				RetryHostPredicate:            hostPredicate,
				HostSelectionRetryMaxAttempts: 5,
			}},
		{"attempts 0", &translate.Retry{Attempts: 0, Codes: []int{503}}, translate.Timeouts{BackendRequest: dur(t, "1s")}, nil},
		{"no retry", nil, translate.Timeouts{BackendRequest: dur(t, "1s")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRule(0, c.retry, c.timeouts)
			_, bs := generate(t, singleModel(r), translate.Options{})
			got := route0(t, routesNamed(t, bs, r.Name)).GetRoute().GetRetryPolicy()
			if c.want == nil {
				if got != nil {
					t.Fatalf("retry policy %v, want none", got)
				}
				return
			}
			if got.GetRetryOn() != c.want.GetRetryOn() {
				t.Errorf("retry_on = %q, want %q", got.GetRetryOn(), c.want.GetRetryOn())
			}
			if got.GetNumRetries().GetValue() != c.want.GetNumRetries().GetValue() {
				t.Errorf("num_retries = %v, want %v", got.GetNumRetries(), c.want.GetNumRetries())
			}
			if !proto.Equal(got.GetPerTryTimeout(), c.want.GetPerTryTimeout()) {
				t.Errorf("per_try_timeout = %v, want %v", got.GetPerTryTimeout(), c.want.GetPerTryTimeout())
			}
			if !proto.Equal(got.GetRetryBackOff(), c.want.GetRetryBackOff()) {
				t.Errorf("retry_back_off = %v, want %v", got.GetRetryBackOff(), c.want.GetRetryBackOff())
			}
			if got.GetRetryBackOff().GetMaxInterval() != nil {
				t.Errorf("max_interval %v set; the report says it is Envoy's 10x default", got.GetRetryBackOff().GetMaxInterval())
			}
			if fmt.Sprint(got.GetRetriableStatusCodes()) != fmt.Sprint(c.want.GetRetriableStatusCodes()) {
				t.Errorf("retriable_status_codes = %v, want %v", got.GetRetriableStatusCodes(), c.want.GetRetriableStatusCodes())
			}
			if len(got.GetRetryHostPredicate()) != 1 || got.GetRetryHostPredicate()[0].GetName() != "envoy.retry_host_predicates.previous_hosts" {
				t.Errorf("retry_host_predicate = %v", got.GetRetryHostPredicate())
			} else if err := got.GetRetryHostPredicate()[0].GetTypedConfig().UnmarshalTo(&previoushostsv3.PreviousHostsPredicate{}); err != nil {
				t.Errorf("host predicate config: %v", err)
			}
			if got.GetHostSelectionRetryMaxAttempts() != 5 {
				t.Errorf("host_selection_retry_max_attempts = %d, want 5", got.GetHostSelectionRetryMaxAttempts())
			}
			if !proto.Equal(got, c.want) {
				t.Errorf("policy = %v, want %v", got, c.want)
			}
		})
	}
}

func TestTimeoutPlan(t *testing.T) {
	const none = -1 // no timeout field
	cases := []struct {
		name                  string
		retry                 *translate.Retry
		request, backend      string // "" = unset
		timeout, idle, perTry time.Duration
	}{
		{"nothing", nil, "", "", none, none, none},
		{"request", nil, "3s", "", 3 * time.Second, none, none},
		{"request 0s", nil, "0s", "", 0, 0, none},
		{"long request", nil, "10m", "", 10 * time.Minute, 10 * time.Minute, none},
		{"backendRequest alone", nil, "", "2s", 2 * time.Second, none, none},
		{"backendRequest 0s alone", nil, "", "0s", 0, 0, none},
		{"single try takes the shorter", nil, "5s", "2s", 2 * time.Second, none, none},
		{"single try, request 0s", nil, "0s", "2s", 2 * time.Second, none, none},
		{"single try, backendRequest 0s", nil, "5s", "0s", 5 * time.Second, none, none},
		{"attempts 0 is a single try", &translate.Retry{Attempts: 0}, "5s", "2s", 2 * time.Second, none, none},
		{"retry, both", &translate.Retry{Attempts: 2}, "5s", "2s", 5 * time.Second, none, 2 * time.Second},
		{"retry, request only", &translate.Retry{Attempts: 2}, "5s", "", 5 * time.Second, none, none},
		{"retry, backendRequest only keeps the default", &translate.Retry{Attempts: 2}, "", "2s", none, none, 2 * time.Second},
		{"retry, request 0s", &translate.Retry{Attempts: 2}, "0s", "2s", 0, 0, 2 * time.Second},
		{"retry, backendRequest 0s", &translate.Retry{Attempts: 2}, "", "0s", 0, 0, none},
		{"retry, nothing", &translate.Retry{Attempts: 2}, "", "", none, none, none},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var to translate.Timeouts
			if c.request != "" {
				to.Request = dur(t, c.request)
			}
			if c.backend != "" {
				to.BackendRequest = dur(t, c.backend)
			}
			r := newRule(0, c.retry, to)
			_, bs := generate(t, singleModel(r), translate.Options{RetryNonIdempotent: true})
			ra := route0(t, routesNamed(t, bs, r.Name)).GetRoute()
			check := func(what string, got *durationpb.Duration, want time.Duration) {
				t.Helper()
				switch {
				case want == none && got != nil:
					t.Errorf("%s = %v, want unset", what, got.AsDuration())
				case want != none && got == nil:
					t.Errorf("%s unset, want %v", what, want)
				case want != none && got.AsDuration() != want:
					t.Errorf("%s = %v, want %v", what, got.AsDuration(), want)
				}
			}
			check("timeout", ra.GetTimeout(), c.timeout)
			check("idle_timeout", ra.GetIdleTimeout(), c.idle)
			check("per_try_timeout", ra.GetRetryPolicy().GetPerTryTimeout(), c.perTry)
			if got, want := ra.GetRetryPolicy() != nil, retries(r); got != want {
				t.Errorf("has retry policy = %v, want %v", got, want)
			}
		})
	}
}

func TestNonIdempotentMethods(t *testing.T) {
	newModel := func(method string) (*translate.Model, *translate.Rule) {
		r := newRule(0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{Request: dur(t, "9s"), BackendRequest: dur(t, "3s")})
		if method != "" {
			r.Methods = []string{method}
		}
		m := singleModel(r)
		m.Listeners[0].VirtualHosts[0].Routes[0].Match.Method = method
		return m, r
	}
	cases := []struct {
		name       string
		method     string
		optIn      bool
		wantRoutes []string // route names in order; "+" marks the full retry policy, "~" the safe one
		// wantStatus is the status of attempts, codes, connectionErrors
		// and backendTimeout.
		wantStatus translate.Status
	}{
		{"any method", "", false, []string{"default_web_r0-no-retry~", "default_web_r0+"}, translate.Approximated},
		{"any method, opted in", "", true, []string{"default_web_r0+"}, translate.Approximated},
		{"GET", "GET", false, []string{"default_web_r0+"}, translate.Approximated},
		{"POST", "POST", false, []string{"default_web_r0~"}, translate.Approximated},
		{"POST, opted in", "POST", true, []string{"default_web_r0+"}, translate.Approximated},
		{"PATCH", "PATCH", false, []string{"default_web_r0~"}, translate.Approximated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, r := newModel(c.method)
			out, bs := generate(t, m, translate.Options{RetryNonIdempotent: c.optIn})
			var got []string
			routes := routeConfig(t, bs, 0).GetVirtualHosts()[0].GetRoutes()
			for _, rt := range routes {
				name := rt.GetName()
				switch rp := rt.GetRoute().GetRetryPolicy(); {
				case rp == nil:
				case rp.GetRetryOn() == "connect-failure,refused-stream,reset-before-request":
					name += "~"
				default:
					name += "+"
				}
				got = append(got, name)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.wantRoutes) {
				t.Fatalf("routes %v, want %v", got, c.wantRoutes)
			}
			for _, rt := range routes {
				ra := rt.GetRoute()
				rp := ra.GetRetryPolicy()
				// Every route keeps the rule's timeouts: request total,
				// backendRequest per try.
				if ra.GetTimeout().AsDuration() != 9*time.Second || rp.GetPerTryTimeout().AsDuration() != 3*time.Second {
					t.Errorf("route %s: timeout %v, per_try_timeout %v, want 9s and 3s", rt.GetName(), ra.GetTimeout().AsDuration(), rp.GetPerTryTimeout().AsDuration())
				}
				if rp.GetNumRetries().GetValue() != 2 {
					t.Errorf("route %s: num_retries %v, want 2", rt.GetName(), rp.GetNumRetries())
				}
				if rt.GetPerRequestBufferLimitBytes().GetValue() != 1<<20 { //nolint:staticcheck
					t.Errorf("route %s: per_request_buffer_limit_bytes %v, want 1 MiB", rt.GetName(), rt.GetPerRequestBufferLimitBytes()) //nolint:staticcheck
				}
				if strings.HasSuffix(got[slices.Index(routes, rt)], "~") && len(rp.GetRetriableStatusCodes()) > 0 {
					t.Errorf("route %s: the safe policy retries codes %v", rt.GetName(), rp.GetRetriableStatusCodes())
				}
			}
			if len(routes) == 2 {
				want := &routev3.RouteMatch{
					PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/" + r.Name},
					Headers:       []*routev3.HeaderMatcher{regexHeader(":method", "POST|PATCH|LOCK")},
				}
				if !proto.Equal(routes[0].GetMatch(), want) {
					t.Errorf("no-retry match = %v, want %v", routes[0].GetMatch(), want)
				}
				if !proto.Equal(routes[1].GetMatch(), buildMatch(m.Listeners[0].VirtualHosts[0].Routes[0].Match)) {
					t.Errorf("retrying route match changed: %v", routes[1].GetMatch())
				}
			}
			byFeature := map[translate.Feature]translate.Finding{}
			for _, f := range out.Findings {
				byFeature[f.Feature] = f
			}
			for _, f := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryCodes, translate.FeatureRetryConnectionErrors, translate.FeatureRetryBackendTimeout} {
				got := byFeature[f]
				if got.Status != c.wantStatus {
					t.Errorf("%s: %s, want %s", f, got.Status, c.wantStatus)
				}
				nonIdem := c.method == "" || translate.IsNonIdempotent(c.method)
				caveat := func(r report.Reason) report.Params {
					for _, c := range got.Caveats {
						if c.Reason == r {
							return c.Params
						}
					}
					return nil
				}
				exempt := caveat(report.CaveatNonIdempotentExempt)
				if wantExempt := nonIdem && !c.optIn; wantExempt != (exempt != nil) || exempt != nil && exempt["methods"] != "POST, PATCH, LOCK" {
					t.Errorf("%s: caveats %v: NonIdempotentExempt{methods=POST, PATCH, LOCK} %v, want %v", f, got.Caveats, !wantExempt, wantExempt)
				}
				if body := caveat(report.CaveatBodyBufferLimit); body["limit"] != "1 MiB" {
					t.Errorf("%s: caveats %v do not name the body limit", f, got.Caveats)
				}
			}
			if _, err := translate.Run(m, []translate.Target{{Backend: New()}}, c.optIn); err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

func TestClusters(t *testing.T) {
	_, bs := generate(t, backendModel(t), translate.Options{})
	clusters := map[string]*clusterv3.Cluster{}
	var names []string
	for _, c := range bs.GetStaticResources().GetClusters() {
		clusters[c.GetName()] = c
		names = append(names, c.GetName())
	}
	if want := "[default_a_80 default_b_80 default_mixed_80 default_v6_80]"; fmt.Sprint(names) != want {
		t.Fatalf("clusters %v, want %s (sorted, weight-0 default_c_80 left out)", names, want)
	}
	for name, want := range map[string]clusterv3.Cluster_DiscoveryType{
		"default_a_80": clusterv3.Cluster_STATIC, "default_b_80": clusterv3.Cluster_STRICT_DNS,
		"default_v6_80": clusterv3.Cluster_STATIC, "default_mixed_80": clusterv3.Cluster_STRICT_DNS,
	} {
		c := clusters[name]
		if c.GetType() != want {
			t.Errorf("%s: type %v, want %v", name, c.GetType(), want)
		}
		if want == clusterv3.Cluster_STRICT_DNS && c.GetDnsLookupFamily() != clusterv3.Cluster_V4_PREFERRED {
			t.Errorf("%s: dns_lookup_family %v", name, c.GetDnsLookupFamily())
		}
		th := c.GetCircuitBreakers().GetThresholds()
		if len(th) != 1 || th[0].GetPriority() != 0 || th[0].GetMaxRetries().GetValue() != 1024 {
			t.Errorf("%s: circuit breakers %v, want DEFAULT max_retries 1024", name, th)
		}
		if c.GetConnectTimeout().AsDuration() != 10*time.Second {
			t.Errorf("%s: connect_timeout %v", name, c.GetConnectTimeout().AsDuration())
		}
		if c.GetLoadAssignment().GetClusterName() != name {
			t.Errorf("%s: load_assignment cluster_name %q", name, c.GetLoadAssignment().GetClusterName())
		}
	}
	var hosts []string
	for _, e := range clusters["default_v6_80"].GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints() {
		sa := e.GetEndpoint().GetAddress().GetSocketAddress()
		hosts = append(hosts, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
	}
	if fmt.Sprint(hosts) != "[::1:8080 fd00::2:8080]" {
		t.Errorf("v6 endpoints %v", hosts)
	}

	// Weights: zero dropped, duplicates summed, order kept.
	wc := route0(t, routesNamed(t, bs, "default_web_r0")).GetRoute().GetWeightedClusters().GetClusters()
	var got []string
	for _, w := range wc {
		got = append(got, fmt.Sprintf("%s=%d", w.GetName(), w.GetWeight().GetValue()))
	}
	if fmt.Sprint(got) != "[default_a_80=5 default_b_80=1]" {
		t.Errorf("weighted clusters %v", got)
	}
	if c := route0(t, routesNamed(t, bs, "default_web_r1")).GetRoute().GetWeightedClusters().GetClusters(); len(c) != 2 {
		t.Errorf("rule 1 weighted clusters %v", c)
	}

	// Every weight 0: a direct 500.
	_, bs = generate(t, weightsZeroModel(t), translate.Options{})
	rt := route0(t, routesNamed(t, bs, "default_web_r0"))
	if rt.GetDirectResponse().GetStatus() != 500 || rt.GetRoute() != nil {
		t.Errorf("all weights 0: route %v, want a direct 500", rt)
	}
	if n := len(bs.GetStaticResources().GetClusters()); n != 0 {
		t.Errorf("all weights 0: %d clusters, want 0", n)
	}
}

func TestVirtualHostsAndListeners(t *testing.T) {
	_, bs := generate(t, severalModel(t), translate.Options{})
	ls := bs.GetStaticResources().GetListeners()
	for i, want := range []string{"0.0.0.0:8080", "[::]:9090"} {
		sa := ls[i].GetAddress().GetSocketAddress()
		got := fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue())
		if sa.GetAddress() == "::" {
			got = fmt.Sprintf("[::]:%d", sa.GetPortValue())
		}
		if got != want {
			t.Errorf("listener %d at %s, want %s", i, got, want)
		}
		rc := routeConfig(t, bs, i)
		if !rc.GetIgnorePortInHostMatching() {
			t.Error("ignore_port_in_host_matching is off: Host headers with a port would not match")
		}
		var domains []string
		for _, vh := range rc.GetVirtualHosts() {
			domains = append(domains, fmt.Sprint(vh.GetDomains()))
		}
		if fmt.Sprint(domains) != "[[a.example.com] [*.example.com] [*]]" {
			t.Errorf("listener %d domains %v", i, domains)
		}
	}
	// The shared rule is in three matches per listener; "any method"
	// matches get a no-retry twin.
	if n := len(routesNamed(t, bs, "default_web_r0")); n != 3 {
		t.Errorf("%d retrying routes for the shared rule on listener 0, want 3", n)
	}
}

// TestNoClientIsInternal: every connection manager names no internal
// address, so Envoy strips the x-envoy retry and timeout headers of every
// client. Without internal_address_config, use_remote_address false reads
// "internal" from the client's own X-Forwarded-For (Envoy before 1.33 then
// trusted RFC 1918 addresses), and a client could send x-envoy-max-retries.
func TestNoClientIsInternal(t *testing.T) {
	m := judgeModel(t)
	_, bs := generate(t, m, translate.Options{})
	n := 0
	for _, l := range bs.GetStaticResources().GetListeners() {
		for _, fc := range chainsOf(l) {
			for _, f := range fc.GetFilters() {
				msg, err := f.GetTypedConfig().UnmarshalNew()
				if err != nil {
					t.Fatal(err)
				}
				hcm, ok := msg.(*hcmv3.HttpConnectionManager)
				if !ok {
					continue
				}
				n++
				iac := hcm.GetInternalAddressConfig()
				if iac == nil || len(iac.GetCidrRanges()) != 0 || iac.GetUnixSockets() || hcm.GetUseRemoteAddress().GetValue() {
					t.Errorf("listener %s: internal_address_config %v, use_remote_address %v: some client may be internal", l.GetName(), iac, hcm.GetUseRemoteAddress())
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no connection manager found")
	}
}
