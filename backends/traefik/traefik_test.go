package traefik

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

const (
	v36 = "3.6"
	v37 = "3.7"
)

func dur(text string) *translate.Duration {
	d, err := translate.ParseDuration(text)
	if err != nil {
		panic(err)
	}
	return &translate.Duration{Text: text, Value: d}
}

func backend(name string, weight int, hosts ...string) *translate.BackendRef {
	b := &translate.BackendRef{Name: name, Service: "default/" + name, Port: 80, Weight: weight}
	for _, h := range hosts {
		b.Endpoints = append(b.Endpoints, translate.Endpoint{Host: h, Port: 9080})
	}
	return b
}

func rule(name string, index int, rt *translate.Retry, to translate.Timeouts) *translate.Rule {
	return &translate.Rule{Name: "default_" + name + "_r0", Route: "default/" + name, Index: index, Retry: rt,
		Timeouts: to, Backends: []*translate.BackendRef{backend("default_"+name+"_80", 1, "127.0.0.1")}}
}

var prefixRoot = translate.Match{PathType: translate.PathPrefix, Path: "/"}

// single puts one rule on one listener for any host.
func single(r *translate.Rule) *translate.Model {
	return &translate.Model{Rules: []*translate.Rule{r}, Listeners: []*translate.Listener{{
		Name: "http-8080", Address: "0.0.0.0", Port: 8080, VirtualHosts: []*translate.VirtualHost{{
			Name: "any", Routes: []*translate.RouteMatch{{Match: prefixRoot, Rule: r}}}}}}}
}

// statuses is the expected status of each feature, for both versions
// unless a version overrides it.
type statuses map[translate.Feature]translate.Status

const (
	H = translate.Honoured
	A = translate.Approximated
	U = translate.Unsupported
)

type genCase struct {
	name  string
	model func() *translate.Model
	opts  translate.Options // Version is filled in per row
	// want is the status per feature for every version; per overrides it
	// for one version.
	want statuses
	per  map[string]statuses
	// check looks at the decoded dynamic configuration of one version.
	check func(t *testing.T, version string, d *dynamicConfig)
	notes []string // substrings expected in the notes
}

func ptr[T any](v T) *T { return &v }

func retryOf(t *testing.T, d *dynamicConfig, r string) *retry {
	t.Helper()
	mw := d.HTTP.Middlewares[r+"-retry"]
	if mw == nil {
		return nil
	}
	return mw.Retry
}

func genCases() []genCase {
	return []genCase{
		{
			name:  "no retry, no timeouts",
			model: func() *translate.Model { return single(rule("plain", 0, nil, translate.Timeouts{})) },
			want:  statuses{},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if d.HTTP.Middlewares != nil {
					t.Errorf("middlewares %v, want none", d.HTTP.Middlewares)
				}
				// Even a rule without retry gets upstream keep-alive off:
				// Go's transport would otherwise re-send requests itself.
				if diff := cmp.Diff(map[string]*serversTransport{"default_plain_r0-transport": {MaxIdleConnsPerHost: -1}},
					d.HTTP.ServersTransports); diff != "" {
					t.Errorf("transports (-want +got):\n%s", diff)
				}
				r := d.HTTP.Routers["m0000-default_plain_r0"]
				if r == nil || len(r.Middlewares) != 0 || r.Rule != "PathPrefix(`/`)" || r.Priority != 1 {
					t.Errorf("router = %+v", r)
				}
			},
		},
		{
			name: "attempts 0 disables retries",
			model: func() *translate.Model {
				return single(rule("zero", 1, &translate.Retry{Attempts: 0, Codes: []int{503}, Backoff: dur("1s")},
					translate.Timeouts{BackendRequest: dur("2s")}))
			},
			want: statuses{"retry.attempts": H, "retry.codes": H, "retry.backoff": H, "retry.connectionErrors": H,
				"retry.backendTimeout": A, "timeouts.backendRequest": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if d.HTTP.Middlewares != nil {
					t.Errorf("middlewares = %v, want none", d.HTTP.Middlewares)
				}
			},
		},
		{
			name: "default retry: one retry, no codes, no backoff",
			model: func() *translate.Model {
				return single(rule("def", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{}))
			},
			want: statuses{"retry.attempts": A, "retry.connectionErrors": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if diff := cmp.Diff(&retry{Attempts: 2}, retryOf(t, d, "default_def_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
				if r := d.HTTP.Routers["m0000-default_def_r0"]; !slices.Equal(r.Middlewares, []string{"default_def_r0-retry"}) {
					t.Errorf("router middlewares = %v", r.Middlewares)
				}
			},
		},
		{
			name: "codes, attempts and backoff",
			model: func() *translate.Model {
				return single(rule("full", 0, &translate.Retry{Attempts: 3, Codes: []int{500, 502, 503}, Backoff: dur("100ms")},
					translate.Timeouts{}))
			},
			want: statuses{"retry.backoff": A, "retry.connectionErrors": A},
			// 3.7 retries a status only for bodies up to 2 MiB and not for POST.
			per: map[string]statuses{v36: {"retry.attempts": A, "retry.codes": U}, v37: {"retry.attempts": A, "retry.codes": A}},
			check: func(t *testing.T, v string, d *dynamicConfig) {
				want := &retry{Attempts: 4, InitialInterval: "200ms"}
				if v == v37 {
					want.Status, want.MaxRequestBodyBytes = []string{"500", "502", "503"}, ptr(int64(2<<20))
				}
				if diff := cmp.Diff(want, retryOf(t, d, "default_full_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "non-idempotent opt-in",
			model: func() *translate.Model {
				return single(rule("post", 0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{}))
			},
			opts: translate.Options{RetryNonIdempotent: true},
			want: statuses{"retry.connectionErrors": A},
			per:  map[string]statuses{v36: {"retry.attempts": A, "retry.codes": U}, v37: {"retry.attempts": A, "retry.codes": A}},
			check: func(t *testing.T, v string, d *dynamicConfig) {
				want := &retry{Attempts: 3}
				if v == v37 {
					want.Status, want.RetryNonIdempotentMethod, want.MaxRequestBodyBytes = []string{"503"}, true, ptr(int64(2<<20))
				}
				if diff := cmp.Diff(want, retryOf(t, d, "default_post_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "retry with backendRequest and 504 in codes",
			model: func() *translate.Model {
				return single(rule("bt", 0, &translate.Retry{Attempts: 2, Codes: []int{504}},
					translate.Timeouts{BackendRequest: dur("1500ms"), Request: dur("10s")}))
			},
			want: statuses{"retry.connectionErrors": A, "timeouts.backendRequest": A,
				"timeouts.request": U},
			per: map[string]statuses{
				v36: {"retry.attempts": A, "retry.codes": U, "retry.backendTimeout": U},
				v37: {"retry.attempts": A, "retry.codes": A, "retry.backendTimeout": A},
			},
			check: func(t *testing.T, v string, d *dynamicConfig) {
				want := &retry{Attempts: 3}
				if v == v37 {
					want.Status, want.Timeout, want.MaxRequestBodyBytes = []string{"504"}, "10s", ptr(int64(2<<20))
				}
				if diff := cmp.Diff(want, retryOf(t, d, "default_bt_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
				wantT := &serversTransport{MaxIdleConnsPerHost: -1,
					ForwardingTimeouts: &forwardingTimeouts{DialTimeout: "1.5s", ResponseHeaderTimeout: "1.5s"}}
				if diff := cmp.Diff(wantT, d.HTTP.ServersTransports["default_bt_r0-transport"]); diff != "" {
					t.Errorf("transport (-want +got):\n%s", diff)
				}
				if lb := d.HTTP.Services["default_bt_r0"].LoadBalancer; lb == nil || lb.ServersTransport != "default_bt_r0-transport" {
					t.Errorf("service does not use the transport: %+v", lb)
				}
			},
		},
		{
			name: "retry with backendRequest, 504 not in codes",
			model: func() *translate.Model {
				return single(rule("bt2", 0, &translate.Retry{Attempts: 2, Codes: []int{503}},
					translate.Timeouts{BackendRequest: dur("1s")}))
			},
			want: statuses{"retry.connectionErrors": A, "timeouts.backendRequest": A,
				"retry.backendTimeout": U},
			per: map[string]statuses{v36: {"retry.attempts": A, "retry.codes": U}, v37: {"retry.attempts": A, "retry.codes": A}},
		},
		{
			name: "timeouts only, zero backendRequest",
			model: func() *translate.Model {
				return single(rule("to", 0, nil, translate.Timeouts{Request: dur("5s"), BackendRequest: dur("0s")}))
			},
			// Approximated: the entry point's readTimeout (60s) cuts a slow
			// upload (TestTraefik36ReadTimeoutCutsUntimedRequests).
			want: statuses{"timeouts.request": U, "timeouts.backendRequest": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if d.HTTP.Middlewares != nil {
					t.Errorf("middlewares %v, want none", d.HTTP.Middlewares)
				}
				// backendRequest 0s turns Traefik's 30s dialTimeout off too.
				want := &serversTransport{MaxIdleConnsPerHost: -1,
					ForwardingTimeouts: &forwardingTimeouts{DialTimeout: "0s", ResponseHeaderTimeout: "0s"}}
				if diff := cmp.Diff(want, d.HTTP.ServersTransports["default_to_r0-transport"]); diff != "" {
					t.Errorf("transport (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "zero request timeout and zero backoff",
			model: func() *translate.Model {
				return single(rule("z", 0, &translate.Retry{Attempts: 1, Backoff: dur("0s")},
					translate.Timeouts{Request: dur("0s"), BackendRequest: dur("0s")}))
			},
			want: statuses{"retry.attempts": A, "retry.backoff": H, "retry.connectionErrors": A,
				"retry.backendTimeout": H, "timeouts.request": A, "timeouts.backendRequest": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if diff := cmp.Diff(&retry{Attempts: 2}, retryOf(t, d, "default_z_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "long backoff over Traefik's caps",
			model: func() *translate.Model {
				return single(rule("slow", 0, &translate.Retry{Attempts: 20, Backoff: dur("45s")}, translate.Timeouts{}))
			},
			want: statuses{"retry.attempts": A, "retry.backoff": A, "retry.connectionErrors": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if diff := cmp.Diff(&retry{Attempts: 21, InitialInterval: "1m30s"}, retryOf(t, d, "default_slow_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "timed tries beyond Traefik's 15m retry window",
			model: func() *translate.Model {
				return single(rule("long", 0, &translate.Retry{Attempts: 10, Backoff: dur("1s")},
					translate.Timeouts{BackendRequest: dur("2m")}))
			},
			want: statuses{"retry.attempts": A, "retry.backoff": A, "retry.connectionErrors": A,
				"retry.backendTimeout": U, "timeouts.backendRequest": A},
		},
		{
			name: "weighted backends",
			model: func() *translate.Model {
				r := rule("w", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("3s")})
				r.Backends = []*translate.BackendRef{backend("default_a_80", 3, "10.0.0.1", "10.0.0.2"),
					backend("default_b_80", 1, "b.default.svc"), backend("default_c_80", 0, "::1")}
				return single(r)
			},
			want: statuses{"retry.attempts": A, "retry.connectionErrors": A, "retry.backendTimeout": U,
				"timeouts.backendRequest": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				want := &service{Weighted: &weighted{Services: []weightedService{
					{"default_w_r0-backend0", 3}, {"default_w_r0-backend1", 1}, {"default_w_r0-backend2", 0}}}}
				if diff := cmp.Diff(want, d.HTTP.Services["default_w_r0"]); diff != "" {
					t.Errorf("weighted (-want +got):\n%s", diff)
				}
				wantLB := &loadBalancer{Servers: []server{{"http://10.0.0.1:9080"}, {"http://10.0.0.2:9080"}},
					ServersTransport: "default_w_r0-transport"}
				if diff := cmp.Diff(wantLB, d.HTTP.Services["default_w_r0-backend0"].LoadBalancer); diff != "" {
					t.Errorf("backend0 (-want +got):\n%s", diff)
				}
				if got := d.HTTP.Services["default_w_r0-backend2"].LoadBalancer.Servers[0].URL; got != "http://[::1]:9080" {
					t.Errorf("IPv6 server URL = %s", got)
				}
			},
		},
		{
			name: "single backend with weight 0",
			model: func() *translate.Model {
				r := rule("w0", 0, nil, translate.Timeouts{})
				r.Backends[0].Weight = 0
				return single(r)
			},
			want: statuses{"backendRefs": H},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				checkAnswers500(t, d, "default_w0_r0")
			},
			notes: []string{"every backendRef has weight 0"},
		},
		{
			name: "dead rule with retry and timeouts: 500, nothing else applies",
			model: func() *translate.Model {
				r := rule("dead", 0, &translate.Retry{Attempts: 2, Codes: []int{503}, Backoff: dur("1s")},
					translate.Timeouts{BackendRequest: dur("1s"), Request: dur("3s")})
				r.Backends = nil
				r.Invalid = []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}
				return single(r)
			},
			want: statuses{"backendRefs": H, "retry.attempts": U, "retry.codes": U, "retry.backoff": U,
				"retry.connectionErrors": U, "retry.backendTimeout": U, "timeouts.backendRequest": U, "timeouts.request": U},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				checkAnswers500(t, d, "default_dead_r0")
				if d.HTTP.ServersTransports != nil {
					t.Errorf("transports = %v, want none for a dead rule", d.HTTP.ServersTransports)
				}
			},
			notes: []string{"noop@internal"},
		},
		{
			name: "no backendRefs",
			model: func() *translate.Model {
				r := rule("none", 0, nil, translate.Timeouts{})
				r.Backends, r.NoBackendRefs = nil, true
				return single(r)
			},
			want:  statuses{"backendRefs": H},
			check: func(t *testing.T, _ string, d *dynamicConfig) { checkAnswers500(t, d, "default_none_r0") },
		},
		{
			name: "partly invalid backendRefs: the invalid share is answered 500",
			model: func() *translate.Model {
				r := rule("part", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
				r.Backends[0].Weight = 3
				r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "kind Bucket is not a Service"}}
				return single(r)
			},
			want: statuses{"backendRefs": A, "retry.attempts": A, "retry.connectionErrors": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				want := &service{Weighted: &weighted{Services: []weightedService{
					{"default_part_r0-backend0", 3}, {noopService, 1}}}}
				if diff := cmp.Diff(want, d.HTTP.Services["default_part_r0"]); diff != "" {
					t.Errorf("weighted (-want +got):\n%s", diff)
				}
				r := d.HTTP.Routers["m0000-default_part_r0"]
				if !slices.Equal(r.Middlewares, []string{"default_part_r0-answer500", "default_part_r0-retry"}) {
					t.Errorf("router middlewares = %v, want the errors middleware outermost", r.Middlewares)
				}
			},
		},
		{
			name: "invalid backendRefs of weight 0",
			model: func() *translate.Model {
				r := rule("iw0", 0, nil, translate.Timeouts{})
				r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 0, Reason: "kind Bucket is not a Service"}}
				return single(r)
			},
			want: statuses{"backendRefs": H},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if d.HTTP.Middlewares != nil || d.HTTP.Services["default_iw0_r0"].LoadBalancer == nil {
					t.Errorf("middlewares %v service %+v, want a plain load balancer", d.HTTP.Middlewares, d.HTTP.Services["default_iw0_r0"])
				}
			},
		},
		{
			name: "huge attempts are clamped",
			model: func() *translate.Model {
				return single(rule("huge", 0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{}))
			},
			want: statuses{"retry.attempts": A, "retry.connectionErrors": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				if diff := cmp.Diff(&retry{Attempts: math.MaxInt32}, retryOf(t, d, "default_huge_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "codes on GET and POST, no opt-in",
			model: func() *translate.Model {
				r := rule("mixed", 0, &translate.Retry{Attempts: 2, Codes: []int{502, 503}}, translate.Timeouts{})
				r.Methods = []string{"GET", "POST"}
				return single(r)
			},
			want: statuses{"retry.connectionErrors": A},
			per: map[string]statuses{v36: {"retry.attempts": A, "retry.codes": U},
				v37: {"retry.attempts": A, "retry.codes": A}},
			check: func(t *testing.T, v string, d *dynamicConfig) {
				want := &retry{Attempts: 3}
				if v == v37 {
					limit := int64(2 << 20)
					want.Status, want.MaxRequestBodyBytes = []string{"502", "503"}, &limit
				}
				if diff := cmp.Diff(want, retryOf(t, d, "default_mixed_r0")); diff != "" {
					t.Errorf("retry (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "codes on POST only, no opt-in",
			model: func() *translate.Model {
				r := rule("postonly", 0, &translate.Retry{Attempts: 2, Codes: []int{503, 504}},
					translate.Timeouts{BackendRequest: dur("1s")})
				r.Methods = []string{"POST"}
				return single(r)
			},
			want: statuses{"retry.connectionErrors": A, "timeouts.backendRequest": A, "retry.backendTimeout": U},
			per: map[string]statuses{v36: {"retry.attempts": A, "retry.codes": U},
				v37: {"retry.attempts": A, "retry.codes": U}},
		},
		{
			name: "codes on GET only",
			model: func() *translate.Model {
				r := rule("getonly", 0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{})
				r.Methods = []string{"GET"}
				return single(r)
			},
			want: statuses{"retry.connectionErrors": A},
			// 3.7 buffers bodies up to 2 MiB for a status retry.
			per: map[string]statuses{v36: {"retry.attempts": A, "retry.codes": U},
				v37: {"retry.attempts": A, "retry.codes": A}},
		},
		{
			name:  "hosts, listeners and every match kind",
			model: richModel,
			want:  statuses{"retry.attempts": A, "retry.connectionErrors": A},
			check: func(t *testing.T, _ string, d *dynamicConfig) {
				want := []struct{ name, entry, rule string }{
					{"m0000-default_a_r0", "http-8080", "Host(`a.example.com`) && Path(`/exact`) && Method(`GET`)"},
					{"m0001-default_b_r0", "http-8080", "Host(`a.example.com`) && (Path(`/api`) || PathPrefix(`/api/`)) && " +
						"Header(`x-env`, `canary`) && HeaderRegexp(`x-id`, `^(?:[0-9]{3})$`)"},
					{"m0002-default_a_r0", "http-8080", "HostRegexp(`^.+[.]example[.]com$`) && PathRegexp(`^(?:/v[0-9]+/.*)$`) && " +
						"Query(`debug`, `1`) && QueryRegexp(`lang`, `^(?:en|fr)$`)"},
					{"m0003-default_b_r0", "http-8080", "PathPrefix(`/`)"},
					{"m0004-default_a_r0", "https-8443", "PathPrefix(`/`)"},
				}
				if len(d.HTTP.Routers) != len(want) {
					t.Errorf("%d routers, want %d", len(d.HTTP.Routers), len(want))
				}
				for i, w := range want {
					r := d.HTTP.Routers[w.name]
					if r == nil {
						t.Errorf("router %s missing", w.name)
						continue
					}
					if r.Rule != w.rule || !slices.Equal(r.EntryPoints, []string{w.entry}) || r.Priority != len(want)-i {
						t.Errorf("router %s = %+v, want rule %s on %s, priority %d", w.name, r, w.rule, w.entry, len(want)-i)
					}
				}
			},
		},
	}
}

// richModel has two listeners, exact, wildcard and catch-all hosts, two
// rules (one on both listeners) and every kind of match.
func richModel() *translate.Model {
	a := rule("a", 0, &translate.Retry{Attempts: 2}, translate.Timeouts{})
	b := rule("b", 0, nil, translate.Timeouts{})
	return &translate.Model{Rules: []*translate.Rule{a, b}, Listeners: []*translate.Listener{
		{Name: "http-8080", Address: "0.0.0.0", Port: 8080, VirtualHosts: []*translate.VirtualHost{
			{Name: "a.example.com", Hostname: "a.example.com", Routes: []*translate.RouteMatch{
				{Rule: a, Match: translate.Match{PathType: translate.PathExact, Path: "/exact", Method: "GET"}},
				{Rule: b, Match: translate.Match{PathType: translate.PathPrefix, Path: "/api/", Headers: []translate.ValueMatch{
					{Type: translate.StringExact, Name: "x-env", Value: "canary"},
					{Type: translate.StringRegex, Name: "x-id", Value: "[0-9]{3}"}}}},
			}},
			{Name: "wild.example.com", Hostname: "*.example.com", Routes: []*translate.RouteMatch{
				{Rule: a, Match: translate.Match{PathType: translate.PathRegex, Path: "/v[0-9]+/.*", Query: []translate.ValueMatch{
					{Type: translate.StringExact, Name: "debug", Value: "1"},
					{Type: translate.StringRegex, Name: "lang", Value: "en|fr"}}}},
			}},
			{Name: "any", Routes: []*translate.RouteMatch{{Rule: b, Match: prefixRoot}}},
		}},
		{Name: "https-8443", Address: "::", Port: 8443, VirtualHosts: []*translate.VirtualHost{
			{Name: "any-8443", Routes: []*translate.RouteMatch{{Rule: a, Match: prefixRoot}}},
		}},
	}}
}

// generate runs the backend through translate.Run, which checks the
// one-finding-per-feature contract, and returns the output too.
func generate(t *testing.T, m *translate.Model, opts translate.Options) *translate.Output {
	t.Helper()
	out, err := New().Generate(m, opts)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if _, err := translate.Run(m, []translate.Target{{Backend: New(), Version: opts.Version}}, opts.RetryNonIdempotent); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return out
}

func files(t *testing.T, out *translate.Output) (static, dynamic []byte) {
	t.Helper()
	if len(out.Files) != 2 || out.Files[0].Path != "traefik/traefik.yaml" || out.Files[1].Path != "traefik/dynamic.yaml" {
		t.Fatalf("files = %v", out.Files)
	}
	return out.Files[0].Data, out.Files[1].Data
}

func TestGenerate(t *testing.T) {
	for _, row := range versionTable() {
		for _, tc := range genCases() {
			t.Run(row.Version+"/"+tc.name, func(t *testing.T) {
				opts := tc.opts
				opts.Version = row.Version
				m := tc.model()
				out := generate(t, m, opts)
				checkFindings(t, m, out, tc.want, tc.per[row.Version])
				static, dyn := files(t, out)
				var d dynamicConfig
				if err := yaml.UnmarshalStrict(dyn, &d); err != nil {
					t.Fatalf("strict decode of dynamic.yaml: %v", err)
				}
				var s staticConfig
				if err := yaml.UnmarshalStrict(static, &s); err != nil {
					t.Fatalf("strict decode of traefik.yaml: %v", err)
				}
				checkStatic(t, m, &s)
				if !row.StatusRetry {
					checkNo37Fields(t, dyn)
				}
				if tc.check != nil {
					tc.check(t, row.Version, &d)
				}
				for _, n := range tc.notes {
					if !strings.Contains(translate.NotesText(out.Notes), n) {
						t.Errorf("no note contains %q: %v", n, out.Notes)
					}
				}
				again := generate(t, m, opts)
				if diff := cmp.Diff(out, again); diff != "" {
					t.Errorf("output is not deterministic (-first +second):\n%s", diff)
				}
			})
		}
	}
}

// checkFindings checks one finding per feature with the expected status,
// and a message on every approximated or unsupported one.
func checkFindings(t *testing.T, m *translate.Model, out *translate.Output, want, override statuses) {
	t.Helper()
	got := map[string]statuses{}
	n := 0
	for _, r := range m.Rules {
		n += len(r.Features())
		got[r.Name] = statuses{}
	}
	if len(out.Findings) != n {
		t.Errorf("%d findings, want %d (rule.Features)", len(out.Findings), n)
	}
	for _, f := range out.Findings {
		for _, r := range m.Rules {
			if r.Route == f.Route && r.Index == f.Rule {
				got[r.Name][f.Feature] = f.Status
			}
		}
		if f.Status != translate.Honoured && f.Reason == "" {
			t.Errorf("%s %s has no reason", f.Feature, f.Status)
		}
	}
	for _, r := range m.Rules {
		exp := statuses{}
		for _, f := range r.Features() {
			exp[f] = want[f]
			if s, ok := override[f]; ok {
				exp[f] = s
			}
		}
		if diff := cmp.Diff(exp, got[r.Name]); diff != "" {
			t.Errorf("rule %s statuses (-want +got):\n%s", r.Name, diff)
		}
	}
}

// checkAnswers500 checks that every router of rule name sends its requests
// to noop@internal through the errors middleware that rewrites 418 to 500.
func checkAnswers500(t *testing.T, d *dynamicConfig, name string) {
	t.Helper()
	if diff := cmp.Diff(answerMiddleware(), d.HTTP.Middlewares[name+"-answer500"]); diff != "" {
		t.Errorf("errors middleware (-want +got):\n%s", diff)
	}
	if d.HTTP.Services[name] != nil {
		t.Errorf("dead rule %s has a service: %+v", name, d.HTTP.Services[name])
	}
	n := 0
	for rn, r := range d.HTTP.Routers {
		if strings.HasSuffix(rn, "-"+name) {
			n++
			if r.Service != noopService || !slices.Equal(r.Middlewares, []string{name + "-answer500"}) {
				t.Errorf("router %s = %+v, want noop@internal behind %s-answer500 only", rn, r, name)
			}
		}
	}
	if n == 0 {
		t.Errorf("no router for dead rule %s: its requests would fall through to other rules", name)
	}
}

func checkStatic(t *testing.T, m *translate.Model, s *staticConfig) {
	t.Helper()
	if s.Global.CheckNewVersion || s.Global.SendAnonymousUsage || s.Providers.File.Filename != DynamicFile || s.Log.Level == "" {
		t.Errorf("static = %+v", s)
	}
	if len(s.EntryPoints) != len(m.Listeners) {
		t.Errorf("%d entry points, want %d", len(s.EntryPoints), len(m.Listeners))
	}
	for _, l := range m.Listeners {
		want := l.Address + ":" + strconv.Itoa(l.Port)
		if strings.Contains(l.Address, ":") {
			want = "[" + l.Address + "]:" + strconv.Itoa(l.Port)
		}
		if got := s.EntryPoints[l.Name].Address; got != want {
			t.Errorf("entry point %s address = %q, want %q", l.Name, got, want)
		}
	}
}

// checkNo37Fields fails when a 3.6 file names a field that only 3.7 knows:
// Traefik 3.6 would then drop the whole dynamic configuration.
func checkNo37Fields(t *testing.T, dyn []byte) {
	t.Helper()
	var d dynamicConfig
	if err := yaml.UnmarshalStrict(dyn, &d); err != nil {
		t.Fatal(err)
	}
	for n, mw := range d.HTTP.Middlewares {
		if rt := mw.Retry; rt != nil && (rt.Status != nil || rt.Timeout != "" || rt.RetryNonIdempotentMethod || rt.MaxRequestBodyBytes != nil) {
			t.Errorf("3.6 output: middleware %s uses 3.7-only retry fields: %+v", n, rt)
		}
	}
	for _, f := range []string{"timeout:", "retryNonIdempotentMethod", "maxRequestBodyBytes", "disableRetryOnNetworkError"} {
		if bytes.Contains(dyn, []byte(f)) {
			t.Errorf("3.6 output contains the 3.7-only field %s:\n%s", f, dyn)
		}
	}
}

// TestTraefik36LoadsEveryCase runs every 3.6 output of the table through
// the real Traefik v3.6.12. 3.7 outputs are only checked by strict decoding:
// Traefik 3.7 cannot be built from the module proxy.
func TestTraefik36LoadsEveryCase(t *testing.T) {
	proxytest.Require(t, "traefik")
	for _, tc := range genCases() {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Version = v36
			static, dyn := files(t, generate(t, tc.model(), opts))
			proxytest.TraefikCheck(t, static, dyn)
		})
	}
}

// TestTraefik36RejectsThe37Output proves both that the version gate matters
// and that the oracle sees a dropped configuration: Traefik 3.6 must not
// load a 3.7 file that uses retry.status.
func TestTraefik36RejectsThe37Output(t *testing.T) {
	proxytest.Require(t, "traefik")
	m := single(rule("s", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}))
	static, dyn := files(t, generate(t, m, translate.Options{Version: v37}))
	cfg := proxytest.WriteTraefikConfig(t, static, dyn, nil)
	p := proxytest.StartTraefik(t, cfg.StaticPath, cfg.API)
	defer p.Stop()
	if err := cfg.WaitLoaded(p, 3*time.Second); err == nil {
		t.Fatalf("Traefik 3.6 loaded a 3.7 configuration:\n%s", dyn)
	}
	if !strings.Contains(p.Output(), "field not found, node: ") {
		t.Errorf("Traefik's log does not name the unknown field:\n%s", p.Output())
	}
}

func TestVersions(t *testing.T) {
	if got, want := New().Versions(), []string{"3.6", "3.7"}; !slices.Equal(got, want) {
		t.Errorf("Versions() = %v, want %v", got, want)
	}
	if New().Name() != "traefik" {
		t.Errorf("Name() = %q", New().Name())
	}
	m := single(rule("v", 0, nil, translate.Timeouts{}))
	for _, v := range []string{"3.5", "3.6.12", "4.0"} {
		if _, err := New().Generate(m, translate.Options{Version: v}); err == nil {
			t.Errorf("Generate with version %q: no error", v)
		}
	}
	// "" is the newest version, as for every backend (translate.LookupVersion).
	if _, err := New().Generate(m, translate.Options{}); err != nil {
		t.Errorf("Generate with no version: %v", err)
	}
}

func TestNotesSayHowToRun(t *testing.T) {
	out := generate(t, single(rule("n", 0, nil, translate.Timeouts{})), translate.Options{Version: v36})
	joined := translate.NotesText(out.Notes)
	for _, s := range []string{DynamicFile, "traefik:v3.6", "--target traefik@3.6", "never retries without"} {
		if !strings.Contains(joined, s) {
			t.Errorf("notes do not mention %q:\n%s", s, joined)
		}
	}
}
