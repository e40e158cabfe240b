package grpc

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

func TestDecodeRejects(t *testing.T) {
	rp := `"retryPolicy":{"maxAttempts":2,"initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}`
	cases := []struct{ name, json, want string }{
		{"unknown field", `{"methodConfig":[],"hedging":1}`, "unknown field"},
		{"trailing data", `{"methodConfig":[]} {}`, "data after"},
		{"no name", `{"methodConfig":[{"name":[]}]}`, "name is empty"},
		{"method without service", `{"methodConfig":[{"name":[{"method":"M"}]}]}`, "without a service"},
		{"duplicate name", `{"methodConfig":[{"name":[{"service":"a.S"}]},{"name":[{"service":"a.S"}]}]}`, "also named"},
		{"maxAttempts 1", `{"methodConfig":[{"name":[{}],` + strings.Replace(rp, `"maxAttempts":2`, `"maxAttempts":1`, 1) + `}]}`, "greater than 1"},
		{"zero backoff", `{"methodConfig":[{"name":[{}],` + strings.Replace(rp, `"0.1s"`, `"0s"`, 1) + `}]}`, "positive duration"},
		{"not proto duration", `{"methodConfig":[{"name":[{}],` + strings.Replace(rp, `"1s"`, `"1m"`, 1) + `}]}`, "positive duration"},
		{"missing field", `{"methodConfig":[{"name":[{}],` + strings.Replace(rp, `"backoffMultiplier":2,`, ``, 1) + `}]}`, "backoffMultiplier 0"},
		{"no codes", `{"methodConfig":[{"name":[{}],` + strings.Replace(rp, `"UNAVAILABLE"`, ``, 1) + `}]}`, "retryableStatusCodes: empty"},
		{"bad code", `{"methodConfig":[{"name":[{}],` + strings.Replace(rp, `"UNAVAILABLE"`, `"BUSY"`, 1) + `}]}`, "unknown status"},
		{"zero timeout", `{"methodConfig":[{"name":[{}],"timeout":"0s"}]}`, "timeout"},
		{"throttling", `{"methodConfig":[],"retryThrottling":{"maxTokens":1001,"tokenRatio":0.1}}`, "maxTokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := decode([]byte(c.json))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("decode: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestParseThrottling(t *testing.T) {
	cases := []struct {
		in   string
		want *RetryThrottling
	}{
		{"10,0.1", &RetryThrottling{MaxTokens: 10, TokenRatio: 0.1}},
		{"1000,1", &RetryThrottling{MaxTokens: 1000, TokenRatio: 1}},
		{"0,0.1", nil}, {"1001,0.1", nil}, {"10,0", nil}, {"10,0.0001", nil}, {"10", nil}, {"a,b", nil}, {"10,-1", nil},
	}
	for _, c := range cases {
		got, err := parseThrottling(c.in)
		switch {
		case c.want == nil && err == nil:
			t.Errorf("%q: accepted %+v", c.in, got)
		case c.want != nil && (err != nil || *got != *c.want):
			t.Errorf("%q: %+v, %v", c.in, got, err)
		}
	}
}

func TestNameOf(t *testing.T) {
	m := func(typ translate.PathMatchType, p string) translate.Match {
		return translate.Match{PathType: typ, Path: p}
	}
	cases := []struct {
		match translate.Match
		want  Name
		ok    bool
	}{
		{m(translate.PathExact, "/a.b.S/M"), Name{Service: "a.b.S", Method: "M"}, true},
		{m(translate.PathPrefix, "/a.b.S"), Name{Service: "a.b.S"}, true},
		{m(translate.PathPrefix, "/a.b.S/M"), Name{Service: "a.b.S", Method: "M"}, true},
		{m(translate.PathPrefix, "/"), Name{}, true},
		{translate.Match{PathType: translate.PathExact, Path: "/a.S/M", Method: "POST"}, Name{Service: "a.S", Method: "M"}, true},
		{m(translate.PathExact, "/a.S"), Name{}, false},
		{m(translate.PathExact, "/a.S/M/x"), Name{}, false},
		{m(translate.PathExact, "/a-b.S/M"), Name{}, false},
		{m(translate.PathExact, "/a..S/M"), Name{}, false},
		{m(translate.PathRegex, "/a.S/.*"), Name{}, false},
		{translate.Match{PathType: translate.PathExact, Path: "/a.S/M", Method: "GET"}, Name{}, false},
		{translate.Match{PathType: translate.PathPrefix, Path: "/", Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "x", Value: "y"}}}, Name{}, false},
	}
	for _, c := range cases {
		got, why := nameOf(c.match)
		if (why == "") != c.ok || got != c.want {
			t.Errorf("%+v: %v %q, want %v ok=%v", c.match, got, why, c.want, c.ok)
		}
	}
}

func TestProtoDuration(t *testing.T) {
	for in, want := range map[string]string{"1s": "1s", "1500ms": "1.500s", "1ms": "0.001s", "125ms": "0.125s", "1h": "3600s"} {
		d, err := translate.ParseDuration(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := protoDuration(d); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
		if back, err := parseDuration(want); err != nil || back != d {
			t.Errorf("%s: read back %v, %v", want, back, err)
		}
	}
	if got := protoDuration(1250 * 1000); got != "0.001250s" {
		t.Errorf("1.25ms: %s", got)
	}
}

// TestJudgeCatchesLies tampers with the file and checks that the judge
// contradicts the honoured claims.
func TestJudgeCatchesLies(t *testing.T) {
	m := modelYAML(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: default}
spec:
  rules:
  - retry: {attempts: 0, codes: [503]}
    timeouts: {request: 1500ms}
    backendRefs: [{name: users, port: 8080}]
`)
	b := New()
	out, err := b.Generate(m, translate.Options{Version: "1.84"})
	if err != nil {
		t.Fatal(err)
	}
	data := strings.Replace(string(out.Files[0].Data), `"timeout": "1.500s"`,
		`"timeout": "1.500s", "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}`, 1)
	if data == string(out.Files[0].Data) {
		t.Fatal("tampering failed")
	}
	obs, err := b.Observe(m, translate.Options{}, []translate.File{{Path: configPath, Data: []byte(data)}})
	if err != nil {
		t.Fatal(err)
	}
	var rule *translate.Rule
	for _, r := range m.Rules {
		if r.Route == "default/api" && r.Index == 0 {
			rule = r
		}
	}
	errs := translate.CheckClaims(rule, out.Findings, obs[rule.Name])
	if len(errs) == 0 || !strings.Contains(errs[0].Error(), "retries 2 times, not 0") {
		t.Errorf("the judge misses a retryPolicy on an attempts 0 rule: %v", errs)
	}
}
