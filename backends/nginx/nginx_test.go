package nginx

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

func TestVersions(t *testing.T) {
	b := New()
	got := b.Versions()
	want := []string{"1.22", "1.24", "1.26", "1.28"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Versions() = %v, want %v", got, want)
	}
	for _, row := range versionTable() {
		v, err := lookupVersion(row.Name)
		if err != nil || v.Name != row.Name || len(v.RetryCodes) != 7 || v.Directives == nil {
			t.Errorf("lookupVersion(%q) = %+v, %v", row.Name, v, err)
		}
	}
	if _, err := lookupVersion("1.20"); err == nil {
		t.Error("lookupVersion(1.20) succeeded")
	}
	if _, err := b.Generate(model("", []*translate.Rule{rule(0, nil, translate.Timeouts{})}), translate.Options{Version: "1.18"}); err == nil {
		t.Error("Generate with version 1.18 succeeded")
	}
}

type generateCase struct {
	name  string
	model func(t testing.TB) *translate.Model
	opts  translate.Options
	// status is the expected status of each reported feature of rule 0.
	status map[translate.Feature]translate.Status
	// contains and lacks are checked against nginx.conf.
	contains, lacks []string
	// counts are how often lines appear in nginx.conf.
	counts map[string]int
	// notes must each appear in one of the notes.
	notes []string
	// reasons are the reasons of rule 0's findings, and caveats some of
	// the caveats each records (reason and params).
	reasons map[translate.Feature]report.Reason
	caveats map[translate.Feature][]report.Caveat
}

func generateCases() []generateCase {
	retry := func(attempts int, codes ...int) *translate.Retry {
		return &translate.Retry{Attempts: attempts, Codes: codes}
	}
	one := func(r *translate.Rule) func(testing.TB) *translate.Model {
		return func(testing.TB) *translate.Model { return model("", []*translate.Rule{r}) }
	}
	// get makes a rule match only GET requests, which nginx retries
	// without the POST/PATCH/LOCK exemption.
	get := func(r *translate.Rule) *translate.Rule {
		r.Methods = []string{"GET"}
		return r
	}
	exemption := []report.Caveat{report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", "POST, PATCH, LOCK")}
	clamped := func(attempts string) []report.Caveat {
		return []report.Caveat{report.NewCaveat(report.CaveatAttemptsClamped, "configured", attempts, "max", "100")}
	}
	return []generateCase{{
		name:     "no retry, no timeouts",
		model:    one(rule(0, nil, translate.Timeouts{})),
		status:   map[translate.Feature]translate.Status{},
		contains: []string{"proxy_next_upstream off;", "server 127.0.0.1:18081 max_fails=0;", "listen 127.0.0.1:18080 default_server;", `server_name "";`},
		lacks:    []string{"proxy_next_upstream_tries", "proxy_read_timeout", "pid", "error_log"},
	}, {
		name:  "attempts 0",
		model: one(rule(0, retry(0, 500), translate.Timeouts{})),
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Honoured,
			translate.FeatureRetryCodes: translate.Honoured, translate.FeatureRetryConnectionErrors: translate.Honoured},
		contains: []string{"proxy_next_upstream off;"},
		lacks:    []string{"proxy_next_upstream_tries"},
	}, {
		name:  "attempts 3, supported codes",
		model: one(get(rule(0, retry(3, 500, 502, 503), translate.Timeouts{}))),
		// Every version in the table takes a backend's 1xx as final.
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Honoured,
			translate.FeatureRetryCodes: translate.Approximated, translate.FeatureRetryConnectionErrors: translate.Honoured},
		contains: []string{"proxy_next_upstream error timeout invalid_header http_500 http_502 http_503;",
			"proxy_next_upstream_tries 4;"},
		counts: map[string]int{"server 127.0.0.1:18081 max_fails=0;": 4},
		lacks:  []string{"non_idempotent"},
	}, {
		name:  "non-idempotent opt-in",
		model: one(rule(0, retry(1, 503), translate.Timeouts{})),
		opts:  translate.Options{RetryNonIdempotent: true},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Honoured,
			translate.FeatureRetryCodes: translate.Approximated, translate.FeatureRetryConnectionErrors: translate.Honoured},
		contains: []string{"proxy_next_upstream error timeout invalid_header http_503 non_idempotent;", "proxy_next_upstream_tries 2;"},
		lacks:    []string{"proxy_request_buffering"},
	}, {
		name: "any method without the opt-in",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(2, 503), translate.Timeouts{BackendRequest: dur(t, "1s")})})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Approximated,
			translate.FeatureRetryCodes: translate.Approximated, translate.FeatureRetryConnectionErrors: translate.Approximated,
			translate.FeatureRetryBackendTimeout: translate.Approximated},
		caveats: map[translate.Feature][]report.Caveat{translate.FeatureRetryAttempts: exemption, translate.FeatureRetryCodes: exemption,
			translate.FeatureRetryConnectionErrors: exemption, translate.FeatureRetryBackendTimeout: exemption},
		contains: []string{"proxy_next_upstream error timeout invalid_header http_503;"},
		lacks:    []string{"non_idempotent"},
	}, {
		name: "only POST without the opt-in",
		model: func(t testing.TB) *translate.Model {
			r := rule(0, retry(1, 502), translate.Timeouts{})
			r.Methods = []string{"PATCH", "POST"}
			return model("", []*translate.Rule{r})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Approximated,
			translate.FeatureRetryCodes: translate.Approximated, translate.FeatureRetryConnectionErrors: translate.Approximated},
		caveats: map[translate.Feature][]report.Caveat{translate.FeatureRetryAttempts: exemption},
	}, {
		name: "POST only, attempts 0: nothing to exempt",
		model: func(t testing.TB) *translate.Model {
			r := rule(0, retry(0, 502), translate.Timeouts{})
			r.Methods = []string{"POST"}
			return model("", []*translate.Rule{r})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Honoured,
			translate.FeatureRetryCodes: translate.Honoured, translate.FeatureRetryConnectionErrors: translate.Honoured},
	}, {
		name:     "some codes unsupported",
		model:    one(rule(0, retry(2, 429, 501, 505), translate.Timeouts{})),
		status:   map[translate.Feature]translate.Status{translate.FeatureRetryCodes: translate.Approximated},
		contains: []string{"proxy_next_upstream error timeout invalid_header http_429;"},
		lacks:    []string{"http_501", "http_505"},
	}, {
		name:     "no code supported",
		model:    one(get(rule(0, retry(2, 408, 501), translate.Timeouts{}))),
		status:   map[translate.Feature]translate.Status{translate.FeatureRetryCodes: translate.Unsupported, translate.FeatureRetryConnectionErrors: translate.Honoured},
		contains: []string{"proxy_next_upstream error timeout invalid_header;"},
	}, {
		name: "backoff",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, &translate.Retry{Attempts: 2, Backoff: dur(t, "100ms")}, translate.Timeouts{})})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryBackoff: translate.Unsupported},
	}, {
		name: "timeouts with retry",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(2, 500), translate.Timeouts{Request: dur(t, "10s"), BackendRequest: dur(t, "1s500ms")})})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryBackendTimeout: translate.Approximated,
			translate.FeatureBackendRequestTimeout: translate.Approximated, translate.FeatureRequestTimeout: translate.Approximated},
		contains: []string{"proxy_next_upstream_timeout 10000ms;", "proxy_read_timeout 1500ms;", "proxy_send_timeout 1500ms;", "proxy_connect_timeout 1500ms;"},
	}, {
		name: "request timeout only, no retry",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, nil, translate.Timeouts{Request: dur(t, "2m")})})
		},
		status:   map[translate.Feature]translate.Status{translate.FeatureRequestTimeout: translate.Approximated},
		contains: []string{"proxy_read_timeout 120000ms;"},
		lacks:    []string{"proxy_next_upstream_timeout"},
	}, {
		name: "timeouts disabled",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(1), translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "0s")})})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRequestTimeout: translate.Honoured,
			translate.FeatureBackendRequestTimeout: translate.Honoured, translate.FeatureRetryBackendTimeout: translate.Honoured},
		contains: []string{"proxy_read_timeout 100000h;", "proxy_connect_timeout 100000h;", "proxy_send_timeout 100000h;"},
		lacks:    []string{"proxy_next_upstream_timeout"},
	}, {
		name: "backendRequest with attempts 0",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(0), translate.Timeouts{BackendRequest: dur(t, "90s")})})
		},
		status:   map[translate.Feature]translate.Status{translate.FeatureRetryBackendTimeout: translate.Approximated},
		contains: []string{"proxy_next_upstream off;", "proxy_read_timeout 90000ms;"},
	}, {
		name: "attempts capped",
		model: one(get(rule(0, retry(250, 502), translate.Timeouts{},
			backend("a", 1, "127.0.0.1", "127.0.0.2")))),
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Approximated,
			translate.FeatureRetryCodes: translate.Approximated, translate.FeatureRetryConnectionErrors: translate.Approximated},
		caveats:  map[translate.Feature][]report.Caveat{translate.FeatureRetryAttempts: clamped("100")},
		contains: []string{"proxy_next_upstream_tries 101;"},
		counts:   map[string]int{"server 127.0.0.1:18081 max_fails=0;": 51},
	}, {
		name: "attempts 4294967297 capped, timeouts 0s",
		model: func(t testing.TB) *translate.Model {
			return model("", []*translate.Rule{get(rule(0, retry(4294967297, 502), translate.Timeouts{BackendRequest: dur(t, "0s")}))})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Approximated,
			translate.FeatureRetryCodes: translate.Approximated, translate.FeatureRetryConnectionErrors: translate.Approximated,
			translate.FeatureRetryBackendTimeout: translate.Approximated, translate.FeatureBackendRequestTimeout: translate.Honoured},
		caveats:  map[translate.Feature][]report.Caveat{translate.FeatureRetryAttempts: clamped("100"), translate.FeatureRetryBackendTimeout: clamped("100")},
		contains: []string{"proxy_next_upstream_tries 101;", "proxy_read_timeout 100000h;"},
		counts:   map[string]int{"server 127.0.0.1:18081 max_fails=0;": 101},
	}, {
		name: "weighted backends",
		model: one(get(rule(0, retry(3, 503), translate.Timeouts{},
			backend("a", 80, "127.0.0.1", "127.0.0.2"), backend("b", 20, "127.0.0.3"), backend("c", 0, "127.0.0.4")))),
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Honoured},
		// a: 80/2 = 40 per endpoint, b: 20 per endpoint -> 2:1; 3
		// endpoints, 4 tries -> each listed twice.
		counts: map[string]int{"server 127.0.0.1:18081 weight=2 max_fails=0;": 2,
			"server 127.0.0.2:18082 weight=2 max_fails=0;": 2, "server 127.0.0.3:18081 weight=1 max_fails=0;": 2},
		lacks: []string{"127.0.0.4"},
	}, {
		name:  "all weights zero",
		model: one(rule(0, retry(1), translate.Timeouts{}, backend("a", 0, "127.0.0.1"))),
		status: map[translate.Feature]translate.Status{translate.FeatureBackendRefs: translate.Honoured,
			translate.FeatureRetryAttempts: translate.Unsupported, translate.FeatureRetryConnectionErrors: translate.Unsupported},
		reasons:  map[translate.Feature]report.Reason{translate.FeatureBackendRefs: report.ReasonAnswers500, translate.FeatureRetryAttempts: report.ReasonRuleForwardsNothing},
		contains: []string{"location @r_default_route_r0 {\n            return 500;\n        }"},
		lacks:    []string{"\n    upstream ", "proxy_pass"},
		notes:    []string{"every backendRef has weight 0"},
	}, {
		name: "no backendRefs, with timeouts",
		model: func(t testing.TB) *translate.Model {
			r := rule(0, retry(2, 503), translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "1s")})
			r.Backends, r.NoBackendRefs = nil, true
			return model("", []*translate.Rule{r, rule(1, retry(1), translate.Timeouts{})})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureBackendRefs: translate.Honoured,
			translate.FeatureRetryAttempts: translate.Unsupported, translate.FeatureRetryCodes: translate.Unsupported,
			translate.FeatureRetryBackendTimeout: translate.Unsupported, translate.FeatureRequestTimeout: translate.Unsupported,
			translate.FeatureBackendRequestTimeout: translate.Unsupported},
		reasons:  map[translate.Feature]report.Reason{translate.FeatureBackendRefs: report.ReasonAnswers500, translate.FeatureRetryAttempts: report.ReasonRuleForwardsNothing},
		notes:    []string{"it has no backendRefs"},
		contains: []string{"return 500;", "upstream default_route_r1 {"},
		lacks:    []string{"upstream default_route_r0", "proxy_next_upstream_timeout"},
	}, {
		name: "every backendRef invalid",
		model: func(t testing.TB) *translate.Model {
			r := rule(0, retry(1), translate.Timeouts{})
			r.Backends = nil
			r.Invalid = []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}
			return model("", []*translate.Rule{r})
		},
		status:   map[translate.Feature]translate.Status{translate.FeatureBackendRefs: translate.Honoured},
		reasons:  map[translate.Feature]report.Reason{translate.FeatureBackendRefs: report.ReasonAnswers500},
		notes:    []string{"Service default/gone is not in the input"},
		contains: []string{"return 500;"},
		lacks:    []string{"proxy_pass"},
	}, {
		name: "some backendRefs invalid",
		model: func(t testing.TB) *translate.Model {
			r := get(rule(0, retry(1), translate.Timeouts{}, backend("a", 3, "127.0.0.1")))
			r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "kind Bucket is not a Service"}}
			return model("", []*translate.Rule{r})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureBackendRefs: translate.Approximated,
			translate.FeatureRetryAttempts: translate.Honoured},
		caveats: map[translate.Feature][]report.Caveat{translate.FeatureBackendRefs: {
			report.NewCaveat(report.CaveatInvalidShareToValidBackends, "share", "1", "total", "4")}},
		contains: []string{"proxy_pass http://default_route_r0;"},
		lacks:    []string{"return 500"},
	}, {
		name:     "hostname endpoint",
		model:    one(rule(0, retry(1, 503), translate.Timeouts{}, backend("a", 1, "localhost"))),
		contains: []string{"server localhost:18081 max_fails=0;"},
		notes:    []string{"endpoint localhost is a DNS name"},
	}, {
		name: "unroutable percent-escape",
		model: func(testing.TB) *translate.Model {
			return model("", []*translate.Rule{rule(0, retry(1, 503), translate.Timeouts{})}, translate.Match{PathType: translate.PathExact, Path: "/a%00b"})
		},
		status: map[translate.Feature]translate.Status{translate.FeatureRetryAttempts: translate.Unsupported,
			translate.FeatureRetryCodes: translate.Unsupported, translate.FeatureRetryConnectionErrors: translate.Unsupported},
		contains: []string{"location / {\n            return 404;"},
		notes:    []string{`percent-escape "%00" decodes to NUL`},
	}, {
		name:     "IPv6 endpoint and listener",
		model:    ipv6Model,
		contains: []string{"server [::1]:18081 max_fails=0;", "listen [::1]:18080 default_server;"},
	}, {
		name: "matches of each kind and hosts",
		model: func(testing.TB) *translate.Model {
			return matchModel()
		},
		contains: []string{`server_name a.example.com;`, `server_name *.example.com;`,
			`"~^/exact$" 1;`, `~^/p(?:/|$) 1;`, `~(?:^|&)q=([^&]*) =$1;`, `"~^GET$" 1;`, `"~^v1$" 1;`,
			`"~^=(?:a.*)$" 1;`, `"~^(?:/re/[a-z]{1,20})$" 1;`, `"~^/a[.]b[(]1[)]$" 1;`, `"~^0{5}1" @r_default_route_r1;`,
			"listen 127.0.0.1:18080;\n        server_name a.example.com;", "listen 0.0.0.0:18090 default_server;",
			"error_page 418 = $gw_s0_route;"},
		counts: map[string]int{"listen 127.0.0.1:18080 default_server;": 1, "\n    upstream ": 4, "location @no_route": 3},
		lacks:  []string{"x_under"},
		notes:  []string{"x_under", "is not routed"},
	}}
}

func ipv6Model(testing.TB) *translate.Model {
	m := model("", []*translate.Rule{rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{}, backend("a", 1, "::1"))})
	m.Listeners[0].Address = "::1"
	return m
}

func matchModel() *translate.Model {
	r := []*translate.Rule{
		rule(0, &translate.Retry{Attempts: 1, Codes: []int{500}}, translate.Timeouts{}),
		rule(1, nil, translate.Timeouts{}),
		rule(2, &translate.Retry{Attempts: 2}, translate.Timeouts{}),
		rule(3, nil, translate.Timeouts{}),
	}
	rm := func(m translate.Match, r *translate.Rule) *translate.RouteMatch {
		return &translate.RouteMatch{Match: m, Rule: r}
	}
	routes := []*translate.RouteMatch{
		rm(translate.Match{PathType: translate.PathExact, Path: "/exact", Method: "GET"}, r[0]),
		rm(translate.Match{PathType: translate.PathPrefix, Path: "/p/", Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "x-version", Value: "v1"}}}, r[1]),
		rm(translate.Match{PathType: translate.PathPrefix, Path: "/p", Query: []translate.ValueMatch{{Type: translate.StringRegex, Name: "q", Value: "a.*"}}}, r[2]),
		rm(translate.Match{PathType: translate.PathPrefix, Path: "/h", Headers: []translate.ValueMatch{{Type: translate.StringRegex, Name: "x-any", Value: ".*"}}}, r[2]),
		rm(translate.Match{PathType: translate.PathRegex, Path: "/re/[a-z]{1,20}"}, r[0]),
		rm(translate.Match{PathType: translate.PathPrefix, Path: "/u", Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "x_under", Value: "1"}}}, r[1]),
		rm(translate.Match{PathType: translate.PathExact, Path: "/a%2Eb(1)"}, r[1]),
		rm(prefix("/"), r[3]),
	}
	return &translate.Model{
		Listeners: []*translate.Listener{
			{Name: "http-18080", Address: "127.0.0.1", Port: 18080, VirtualHosts: []*translate.VirtualHost{
				{Name: "a", Hostname: "a.example.com", Routes: routes},
				{Name: "wild", Hostname: "*.example.com", Routes: routes[:2]},
			}},
			{Name: "http-18090", Address: "0.0.0.0", Port: 18090, VirtualHosts: []*translate.VirtualHost{
				{Name: "any", Hostname: "", Routes: routes[4:]},
			}},
		},
		Rules: r, RouteCount: 1, RuleCount: 4,
	}
}

func TestGenerate(t *testing.T) {
	for _, tc := range generateCases() {
		for _, v := range versionTable() {
			t.Run(tc.name+"/"+v.Name, func(t *testing.T) {
				m := tc.model(t)
				opts := tc.opts
				opts.Version = v.Name
				out, err := New().Generate(m, opts)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if len(out.Files) != 1 || out.Files[0].Path != "nginx/nginx.conf" {
					t.Fatalf("files = %v", out.Files)
				}
				conf := string(out.Files[0].Data)
				status := tc.status
				if r0 := m.Rules[0]; !v.ChecksResponseFraming && r0.Retry != nil && r0.Retry.Attempts > 0 && status[translate.FeatureRetryConnectionErrors] == translate.Honoured {
					// This version passes a malformed framing on unretried
					// when it retries (ResponseFramingNotChecked).
					status = maps.Clone(status)
					status[translate.FeatureRetryConnectionErrors] = translate.Approximated
				}
				checkFindings(t, m, out.Findings, status)
				checkDecisions(t, out.Findings, tc.reasons, tc.caveats)
				for f := range tc.reasons {
					if !slices.ContainsFunc(out.Findings, func(got translate.Finding) bool { return got.Rule == 0 && got.Feature == f }) {
						t.Errorf("no finding for %s", f)
					}
				}
				for _, s := range tc.contains {
					if !strings.Contains(conf, s) {
						t.Errorf("nginx.conf lacks %q:\n%s", s, conf)
					}
				}
				for _, s := range tc.lacks {
					if strings.Contains(conf, s) {
						t.Errorf("nginx.conf has %q:\n%s", s, conf)
					}
				}
				for line, n := range tc.counts {
					if got := strings.Count(conf, line); got != n {
						t.Errorf("nginx.conf has %q %d times, want %d", line, got, n)
					}
				}
				for _, n := range tc.notes {
					if !strings.Contains(translate.NotesText(out.Notes), n) {
						t.Errorf("no note mentions %q: %q", n, out.Notes)
					}
				}
				again, err := New().Generate(tc.model(t), opts)
				if err != nil || string(again.Files[0].Data) != conf {
					t.Errorf("second Generate differs (err %v)", err)
				}
				if _, err := translate.Run(m, []translate.Target{{Backend: New(), Version: v.Name}}, opts.RetryNonIdempotent); err != nil {
					t.Errorf("translate.Run: %v", err)
				}
				// nginx -t on the same configuration as a conf.d file,
				// which runs as any user (TestDropIn checks the full
				// layout with the distribution's paths).
				confD, err := NewWithConfig(Config{Layout: LayoutConfD})
				if err != nil {
					t.Fatal(err)
				}
				frag, err := confD.Generate(tc.model(t), opts)
				if err != nil {
					t.Fatalf("Generate conf.d: %v", err)
				}
				nginxCheckConfD(t, frag.Files[0].Data)
			})
		}
	}
}

// checkFindings checks one finding per feature of each rule, a whole
// record (report.Check) on every finding, and the expected statuses of
// rule 0.
func checkFindings(t *testing.T, m *translate.Model, fs []translate.Finding, want map[translate.Feature]translate.Status) {
	t.Helper()
	wantCount := 0
	for _, r := range m.Rules {
		wantCount += len(r.Features())
	}
	if len(fs) != wantCount {
		t.Errorf("%d findings, want %d: %+v", len(fs), wantCount, fs)
	}
	for _, f := range fs {
		if err := report.Check(f); err != nil {
			t.Errorf("%v: %+v", err, f)
		}
		if f.Rule != 0 {
			continue
		}
		if s, ok := want[f.Feature]; ok && s != f.Status {
			t.Errorf("%s: status %s, want %s (%s)", f.Feature, f.Status, s, report.WithParams(f.Reason, f.Params))
		}
	}
}

// checkDecisions checks the reasons of rule 0's findings and that each
// records the caveats given (among others).
func checkDecisions(t *testing.T, fs []translate.Finding, reasons map[translate.Feature]report.Reason, caveats map[translate.Feature][]report.Caveat) {
	t.Helper()
	for _, f := range fs {
		if f.Rule != 0 || f.Gateway != "" {
			continue
		}
		if r, ok := reasons[f.Feature]; ok && f.Reason != r {
			t.Errorf("%s: reason %s, want %s", f.Feature, f.Reason, r)
		}
		for _, want := range caveats[f.Feature] {
			found := false
			for _, c := range f.Caveats {
				found = found || reflect.DeepEqual(c, want)
			}
			if !found {
				t.Errorf("%s: caveats %v lack %v", f.Feature, f.Caveats, want)
			}
		}
	}
}

// TestPlanOrder: rules are planned as the servers that route to them are
// built, but the file and the notes are as if planned in the model's
// order: upstreams by rule, each rule's notes (a DNS name once, at the
// first rule that names it) before the servers'.
func TestPlanOrder(t *testing.T) {
	a := rule(0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}, backend("a", 1, "b.example"))
	b := rule(1, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}, backend("b", 1, "a.example", "b.example"))
	// The first server routes to b, the second to a and b; b's second
	// match cannot be routed (a server note).
	first := &translate.VirtualHost{Name: "vh0", Hostname: "first.example", Routes: []*translate.RouteMatch{{Match: prefix("/b"), Rule: b}}}
	second := &translate.VirtualHost{Name: "vh1", Hostname: "second.example", Routes: []*translate.RouteMatch{
		{Match: prefix("/a"), Rule: a},
		{Match: translate.Match{PathType: translate.PathExact, Path: "/a%00b"}, Rule: b},
	}}
	m := &translate.Model{
		Listeners: []*translate.Listener{{Name: "http-18080", Address: "127.0.0.1", Port: 18080, VirtualHosts: []*translate.VirtualHost{first, second}}},
		Rules:     []*translate.Rule{a, b}, RouteCount: 1, RuleCount: 2,
	}
	out, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conf := string(out.Files[0].Data)
	if i, j := strings.Index(conf, "upstream "+upstreamName(a)+" {"), strings.Index(conf, "upstream "+upstreamName(b)+" {"); i < 0 || j < i {
		t.Errorf("upstreams out of the rules' order (%d, %d)", i, j)
	}
	var got []string
	for _, n := range out.Notes {
		switch {
		case strings.Contains(n.Text, "is a DNS name"):
			got = append(got, strings.Fields(n.Text)[1])
		case strings.Contains(n.Text, "is not routed"):
			got = append(got, "not routed")
		}
	}
	if want := []string{"b.example", "a.example", "not routed"}; !slices.Equal(got, want) {
		t.Errorf("notes in the order %v, want %v", got, want)
	}
}
