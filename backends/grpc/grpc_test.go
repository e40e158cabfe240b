package grpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// model builds the Model of testdata/grpc/input.yaml.
func model(t testing.TB) *translate.Model {
	t.Helper()
	in, err := input.Load([]string{"../../testdata/grpc/input.yaml"}, nil, translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ro := translate.ResolveOptions{}
	for _, e := range []string{"users:8080=127.0.0.1:9100", "orders:8080=127.0.0.1:9101"} {
		ep, err := translate.ParseEndpoint(e)
		if err != nil {
			t.Fatal(err)
		}
		ro.Endpoints = append(ro.Endpoints, ep)
	}
	m, err := resolve.Build(in, ro)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// modelYAML builds the Model of the manifests in doc, with the Services
// users:8080 and orders:8080 given endpoints.
func modelYAML(t testing.TB, doc string) *translate.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := input.Load([]string{path}, nil, translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ro := translate.ResolveOptions{}
	for _, e := range []string{"users:8080=127.0.0.1:9100", "orders:8080=127.0.0.1:9101"} {
		ep, err := translate.ParseEndpoint(e)
		if err != nil {
			t.Fatal(err)
		}
		ro.Endpoints = append(ro.Endpoints, ep)
	}
	m, err := resolve.Build(in, ro)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// runModel generates m through translate.Run (every honoured claim
// checked by the judge) and returns the findings and the service config.
func runModel(t testing.TB, m *translate.Model) ([]translate.Finding, []byte) {
	t.Helper()
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "1.84"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := translate.FileData(res.Files, configPath)
	if err != nil {
		t.Fatal(err)
	}
	return res.Report.Findings, data
}

// run generates through translate.Run, which checks one finding per
// feature and every honoured claim against the judge.
func run(t testing.TB, b *Backend) (*translate.Result, []byte) {
	t.Helper()
	res, err := translate.Run(model(t), []translate.Target{{Backend: b, Version: "1.84"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	data, err := translate.FileData(res.Files, configPath)
	if err != nil {
		t.Fatal(err)
	}
	return res, data
}

// strict decodes data into the typed structs, refusing unknown fields.
func strict(t testing.TB, data []byte) *ServiceConfig {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sc ServiceConfig
	if err := dec.Decode(&sc); err != nil {
		t.Fatalf("strict decoding: %v\n%s", err, data)
	}
	return &sc
}

// TestServiceConfigA6 checks every rule of gRFC A6 on the output, written
// out here rather than through validate.
func TestServiceConfigA6(t *testing.T) {
	_, data := run(t, New())
	sc := strict(t, data)
	seen := map[Name]bool{}
	for i, mc := range sc.MethodConfig {
		if len(mc.Name) == 0 {
			t.Errorf("methodConfig[%d]: no name", i)
		}
		for _, n := range mc.Name {
			if seen[n] {
				t.Errorf("methodConfig[%d]: duplicate name %v", i, n)
			}
			seen[n] = true
			if n.Service == "" && n.Method != "" {
				t.Errorf("methodConfig[%d]: method without service", i)
			}
		}
		positive := func(field, s string) {
			d, err := parseDuration(s)
			if err != nil || d <= 0 || !strings.HasSuffix(s, "s") {
				t.Errorf("methodConfig[%d].%s %q: want a positive proto JSON duration", i, field, s)
			}
		}
		if mc.Timeout != "" {
			positive("timeout", mc.Timeout)
		}
		rp := mc.RetryPolicy
		if rp == nil {
			continue
		}
		if rp.MaxAttempts <= 1 || rp.MaxAttempts > 5 {
			t.Errorf("methodConfig[%d]: maxAttempts %d", i, rp.MaxAttempts)
		}
		positive("initialBackoff", rp.InitialBackoff)
		positive("maxBackoff", rp.MaxBackoff)
		ib, _ := parseDuration(rp.InitialBackoff)
		mb, _ := parseDuration(rp.MaxBackoff)
		if mb != 10*ib {
			t.Errorf("methodConfig[%d]: maxBackoff %s is not 10 × initialBackoff %s", i, rp.MaxBackoff, rp.InitialBackoff)
		}
		if rp.BackoffMultiplier != 2 {
			t.Errorf("methodConfig[%d]: backoffMultiplier %v", i, rp.BackoffMultiplier)
		}
		if len(rp.RetryableStatusCodes) == 0 {
			t.Errorf("methodConfig[%d]: no retryableStatusCodes", i)
		}
		for _, c := range rp.RetryableStatusCodes {
			if !validStatus(c) {
				t.Errorf("methodConfig[%d]: status %q", i, c)
			}
		}
	}
	// What each name gets.
	want := map[Name]string{
		{Service: "users.v1.Users", Method: "GetUser"}: "4 0.125s 2s", // attempts 3, backoff 100ms × 1.25
		{Service: "users.v1.Users"}:                    "2 0.025s ",   // attempts 1, A44's default backoff
		{Service: "orders.Orders", Method: "Get"}:      "5 0.025s ",   // attempts 9 capped; backoff 0s is unset
		{Service: "orders.Admin"}:                      "5 0.025s ",   // the same rule's second match
		{Service: "orders.Orders", Method: "List"}:     "3 0.025s ",   // the regex match is left out
		{Service: "pay.P", Method: "Pay"}:              "2 0.025s ",   // invalid backendRef beside a valid one
		{}:                                             "0 1.500s",    // PathPrefix /: every method; attempts 0
		{Service: "hosted.H", Method: "M"}:             "2 1.250s ",   // backoff 1s
	}
	got := map[Name]string{}
	for _, mc := range sc.MethodConfig {
		for _, n := range mc.Name {
			s := "0 "
			if rp := mc.RetryPolicy; rp != nil {
				s = strings.TrimSpace(strings.Join([]string{string(rune('0' + rp.MaxAttempts)), rp.InitialBackoff}, " ")) + " "
			}
			got[n] = s + mc.Timeout
		}
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%v: got %q, want %q", n, got[n], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("names %v, want those of %v (the dead rule, the untranslatable one and the duplicate get none)", got, want)
	}
	if sc.RetryThrottling != nil {
		t.Errorf("retryThrottling without the flag")
	}
}

func TestThrottlingWritten(t *testing.T) {
	b, err := NewWithConfig(Config{RetryThrottling: "10,0.1"})
	if err != nil {
		t.Fatal(err)
	}
	res, data := run(t, b)
	sc := strict(t, data)
	if sc.RetryThrottling == nil || *sc.RetryThrottling != (RetryThrottling{MaxTokens: 10, TokenRatio: 0.1}) {
		t.Errorf("retryThrottling %+v", sc.RetryThrottling)
	}
	n := 0
	for _, f := range res.Report.Findings {
		if f.Feature != translate.FeatureRetryAttempts || f.Reason != report.ReasonConfigured {
			continue // no retryPolicy written
		}
		n++
		i := slices.IndexFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatRetriesThrottled })
		if i < 0 || f.Caveats[i].Params["maxTokens"] != "10" || f.Caveats[i].Params["tokenRatio"] != "0.1" {
			t.Errorf("%s rule %d: attempts finding does not name the throttling: %+v", f.Route, f.Rule, f.Caveats)
		}
	}
	if n == 0 {
		t.Error("no retry.attempts finding configures a retryPolicy")
	}
}

func TestFindings(t *testing.T) {
	res, _ := run(t, New())
	type key struct {
		rule    int
		feature translate.Feature
	}
	got := map[key]translate.Finding{}
	for _, f := range res.Report.Findings {
		if f.Route == "default/api" {
			got[key{f.Rule, f.Feature}] = f
		}
	}
	// Each case names the finding's reason and, where it has one, a caveat
	// or what it configures; params are those of the reason (caveat ""),
	// or of the caveat: which matches no name expresses and why, which
	// rule holds a name.
	type params = report.Params
	cases := []struct {
		rule       int
		feature    translate.Feature
		reason     report.Reason
		caveat     report.Reason
		configured string
		params     params
	}{
		{0, translate.FeatureRetryCodes, report.ReasonConfigured, report.CaveatUnlistedCodesRetried, "retryableStatusCodes UNAVAILABLE", nil},
		{0, translate.FeatureRetryBackoff, report.ReasonConfigured, report.CaveatPushbackOverridesBackoff, "initialBackoff 0.125s", nil},
		{0, translate.FeatureRequestTimeout, report.ReasonConfigured, report.CaveatDeadlineExceededNot504, "timeout 2s", nil},
		{1, translate.FeatureRetryCodes, report.ReasonConfigured, report.CaveatUnknownStatusRetried, "retryableStatusCodes UNKNOWN UNAVAILABLE", nil},
		{2, translate.FeatureRetryAttempts, report.ReasonConfigured, report.CaveatAttemptsClamped, "maxAttempts 5", nil},
		// 431 becomes both INTERNAL and UNKNOWN.
		{2, translate.FeatureRetryCodes, report.ReasonConfigured, report.CaveatUnknownStatusRetried, "retryableStatusCodes UNKNOWN UNIMPLEMENTED INTERNAL UNAVAILABLE", nil},
		{2, translate.FeatureBackendRequestTimeout, report.ReasonTimeoutDisabled, "", "", nil},
		{3, translate.FeatureRetryAttempts, report.ReasonConfigured, report.CaveatMatchesNotSelectable, "maxAttempts 3", params{"causes": "RegularExpression"}},
		{4, translate.FeatureRetryAttempts, report.ReasonNoNameSelectsCalls, "", "", params{"unnamed": "path /healthz, method GET, query, headers", "names": "none", "rules": "none"}},
		{4, translate.FeatureRetryConnectionErrors, report.ReasonNoNameSelectsCalls, "", "", params{"unnamed": "path /healthz, method GET, query, headers", "names": "none", "rules": "none"}},
		// The name gRPC would reject twice belongs to the rule that takes
		// precedence.
		{5, translate.FeatureRetryAttempts, report.ReasonNoNameSelectsCalls, "", "", params{"unnamed": "none", "names": "users.v1.Users/GetUser", "rules": "HTTPRoute default/api rule 0"}},
		{5, translate.FeatureBackendRequestTimeout, report.ReasonNoNameSelectsCalls, "", "", params{"unnamed": "none", "names": "users.v1.Users/GetUser", "rules": "HTTPRoute default/api rule 0"}},
		{6, translate.FeatureBackendRefs, report.ReasonNotAnswered500, "", "", nil},
		{6, translate.FeatureRequestHeaderModifier, report.ReasonNotExpressible, "", "", nil},
		{6, translate.FeatureRetryAttempts, report.ReasonRuleForwardsNothing, "", "", nil},
		{7, translate.FeatureBackendRefs, report.ReasonTrafficNotSplit, "", "", params{"weight": "1"}},
		// The catch-all rule 8 would retry nothing, but the hostname-bound
		// route's name hosted.H/M takes its calls to that method on every
		// channel (a service config has no hostnames).
		{8, translate.FeatureRetryAttempts, report.ReasonRetriesDisabled, report.CaveatCallsTakenByOtherRule, "", nil},
		{8, translate.FeatureRetryCodes, report.ReasonRetriesDisabled, report.CaveatCallsTakenByOtherRule, "", params{"names": "hosted.H/M", "rules": "HTTPRoute default/hosted rule 0"}},
	}
	for _, c := range cases {
		f, ok := got[key{c.rule, c.feature}]
		if !ok {
			t.Errorf("rule %d %s: no finding", c.rule, c.feature)
			continue
		}
		i := slices.IndexFunc(f.Caveats, func(cv report.Caveat) bool { return cv.Reason == c.caveat })
		if f.Reason != c.reason || (c.caveat != "" && i < 0) || f.Configured != c.configured {
			t.Errorf("rule %d %s: %s %+v %q, want %s with caveat %q configuring %q", c.rule, c.feature, f.Reason, f.Caveats, f.Configured, c.reason, c.caveat, c.configured)
			continue
		}
		if c.params == nil {
			continue
		}
		p := f.Params
		if c.caveat != "" {
			p = f.Caveats[i].Params
		}
		if !maps.Equal(p, c.params) {
			t.Errorf("rule %d %s: params %v, want %v", c.rule, c.feature, p, c.params)
		}
	}
}

// TestAttemptsExtremes: the Gateway API sets no maximum on attempts, so
// the largest int is valid input; attempts+1 overflowed to a negative
// maxAttempts and the run ended with an internal error (exit 70).
func TestAttemptsExtremes(t *testing.T) {
	cases := []struct {
		attempts    string
		maxAttempts int
		clamped     bool
	}{
		{"1", 2, false},
		{"4", 5, false},
		{"5", 5, true},
		{"2147483648", 5, true},
		{"9223372036854775807", 5, true},
	}
	for _, c := range cases {
		t.Run(c.attempts, func(t *testing.T) {
			m := testmodel.LoadText(t, `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
  - matches: [{path: {type: Exact, value: /a.B/C}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: `+c.attempts+`}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec: {ports: [{port: 8080}]}
`, translate.ResolveOptions{}, "svc.ns:8080=127.0.0.1:9100")
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "1.84"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			data, err := translate.FileData(res.Files, configPath)
			if err != nil {
				t.Fatal(err)
			}
			sc := strict(t, data)
			if got := sc.MethodConfig[0].RetryPolicy.MaxAttempts; got != c.maxAttempts {
				t.Errorf("maxAttempts %d, want %d", got, c.maxAttempts)
			}
			for _, f := range res.Report.Findings {
				if f.Feature != translate.FeatureRetryAttempts {
					continue
				}
				i := slices.IndexFunc(f.Caveats, func(cv report.Caveat) bool { return cv.Reason == report.CaveatAttemptsClamped })
				if f.Configured != fmt.Sprintf("maxAttempts %d", c.maxAttempts) || (i >= 0) != c.clamped ||
					c.clamped && (f.Caveats[i].Params["configured"] != "4" || f.Caveats[i].Params["max"] != "4") {
					t.Errorf("retry.attempts configures %q with caveats %+v, want maxAttempts %d, clamped %v", f.Configured, f.Caveats, c.maxAttempts, c.clamped)
				}
			}
		})
	}
}
