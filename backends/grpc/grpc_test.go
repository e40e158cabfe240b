package grpc

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// model builds the Model of testdata/grpc/input.yaml.
func model(t testing.TB) *translate.Model {
	t.Helper()
	in, err := translate.Load([]string{"../../testdata/grpc/input.yaml"}, nil, translate.DefaultLimits())
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
	m, err := translate.Build(in, ro)
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
	in, err := translate.Load([]string{path}, nil, translate.DefaultLimits())
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
	m, err := translate.Build(in, ro)
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
	for _, f := range res.Report.Findings {
		if f.Feature == translate.FeatureRetryAttempts && f.Status == translate.Approximated && !strings.Contains(f.Message, "attempts is 0") && !strings.Contains(f.Message, "retryThrottling (maxTokens 10, tokenRatio 0.1)") {
			t.Errorf("rule %d: attempts finding does not name the throttling: %s", f.Rule, f.Message)
		}
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
	cases := []struct {
		rule    int
		feature translate.Feature
		status  translate.Status
		says    string
	}{
		{0, translate.FeatureRetryCodes, translate.Approximated, "UNAVAILABLE also retries 429, 502, 504"},
		{0, translate.FeatureRetryBackoff, translate.Approximated, "initialBackoff 0.125s, 1.25 × the backoff"},
		{0, translate.FeatureRequestTimeout, translate.Approximated, "DEADLINE_EXCEEDED"},
		{1, translate.FeatureRetryCodes, translate.Approximated, "every call the server ends with UNKNOWN"},
		{2, translate.FeatureRetryAttempts, translate.Approximated, "attempts 9 is capped"},
		{2, translate.FeatureRetryCodes, translate.Approximated, "431 → INTERNAL and UNKNOWN"},
		{2, translate.FeatureBackendRequestTimeout, translate.Honoured, "no per-attempt timeout"},
		{3, translate.FeatureRetryAttempts, translate.Approximated, "not those of: match RegularExpression"},
		{4, translate.FeatureRetryAttempts, translate.Unsupported, "it matches method GET"},
		{4, translate.FeatureRetryConnectionErrors, translate.Unsupported, "not a gRPC method path"},
		{5, translate.FeatureRetryAttempts, translate.Unsupported, "HTTPRoute default/api rule 0, which takes precedence"},
		{5, translate.FeatureBackendRequestTimeout, translate.Unsupported, "names a method twice"},
		{6, translate.FeatureBackendRefs, translate.Unsupported, "cannot answer a call itself"},
		{6, translate.FeatureRequestHeaderModifier, translate.Unsupported, "metadata"},
		{6, translate.FeatureRetryAttempts, translate.Unsupported, "forwards nothing"},
		{7, translate.FeatureBackendRefs, translate.Unsupported, "does not route or split"},
		// The catch-all rule 8 would retry nothing, but the hostname-bound
		// route's name hosted.H/M takes its calls to that method on every
		// channel (a service config has no hostnames).
		{8, translate.FeatureRetryAttempts, translate.Approximated, "no retryPolicy"},
		{8, translate.FeatureRetryCodes, translate.Approximated, "calls to hosted.H/M get the methodConfig of HTTPRoute default/hosted rule 0, also on the hostnames"},
	}
	for _, c := range cases {
		f, ok := got[key{c.rule, c.feature}]
		if !ok {
			t.Errorf("rule %d %s: no finding", c.rule, c.feature)
			continue
		}
		if f.Status != c.status || !strings.Contains(f.Message, c.says) {
			t.Errorf("rule %d %s: %s %q, want %s containing %q", c.rule, c.feature, f.Status, f.Message, c.status, c.says)
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
		says        string
	}{
		{"1", 2, "maxAttempts 2"},
		{"4", 5, "maxAttempts 5"},
		{"5", 5, "attempts 5 is capped"},
		{"2147483648", 5, "attempts 2147483648 is capped"},
		{"9223372036854775807", 5, "attempts 9223372036854775807 is capped"},
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
				if f.Feature == translate.FeatureRetryAttempts && !strings.Contains(f.Message, c.says) {
					t.Errorf("retry.attempts %q, want it to say %q", f.Message, c.says)
				}
			}
		})
	}
}
