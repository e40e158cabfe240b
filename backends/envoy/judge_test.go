package envoy

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// judgeModel has one rule of every kind the issue names: dead rules
// (weights 0, no backendRefs, only invalid refs), a partly invalid rule,
// rules for POST only, GET only and any method, huge attempts, 0s timeouts.
func judgeModel(t *testing.T) *translate.Model {
	full := &translate.Retry{Attempts: 3, Codes: []int{500, 503}, Backoff: dur(t, "100ms")}
	both := translate.Timeouts{Request: dur(t, "10s"), BackendRequest: dur(t, "1s")}
	var rules []*translate.Rule
	add := func(r *translate.Rule) *translate.Rule {
		r.Name = "default_web_r" + string(rune('a'+len(rules)))
		r.Index = len(rules)
		rules = append(rules, r)
		return r
	}
	add(newRule(0, full, both))                                                                   // any method
	add(newRule(0, full, both)).Methods = []string{"POST"}                                        // POST only
	add(newRule(0, full, both)).Methods = []string{"GET"}                                         // GET only
	add(newRule(0, full, both)).Methods = []string{"GET", "PATCH"}                                // both classes
	add(newRule(0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{}))                 // clamp
	add(newRule(0, &translate.Retry{Attempts: 0, Codes: []int{503}}, both))                       // attempts 0
	add(newRule(0, nil, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "0s")})) // no timer
	add(newRule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "0s")}))
	add(newRule(0, nil, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "0s")}))
	add(newRule(0, nil, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "2s")}))
	add(newRule(0, nil, translate.Timeouts{Request: dur(t, "1h")}))                               // beyond the stream idle timeout
	add(newRule(0, nil, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "2s")})) // the try's timer only
	zero := add(newRule(0, full, both))
	zero.Backends[0].Weight = 0
	none := add(newRule(0, full, both))
	none.Backends, none.NoBackendRefs = nil, true
	invalid := add(newRule(0, full, both))
	invalid.Backends = nil
	invalid.Invalid = []translate.InvalidBackend{{Index: 0, Weight: 1, Reason: "Service default/gone is not in the input"}}
	partial := add(newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur(t, "3s")}))
	partial.Backends = []*translate.BackendRef{backend("default_a_80", 3, "10.0.0.1")}
	partial.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "kind Bucket is not a Service"}}
	weightless := add(newRule(0, nil, translate.Timeouts{Request: dur(t, "3s")}))
	weightless.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 0, Reason: "kind Bucket is not a Service"}}
	m := singleModel(rules...)
	for i, rm := range m.Listeners[0].VirtualHosts[0].Routes {
		if ms := rules[i].Methods; len(ms) == 1 {
			rm.Match.Method = ms[0]
		}
	}
	// The rule with GET and PATCH is two matches.
	for i, rm := range m.Listeners[0].VirtualHosts[0].Routes {
		if r := rm.Rule; len(r.Methods) == 2 {
			get, patch := *rm, *rm
			get.Match.Method, patch.Match.Method = "GET", "PATCH"
			vh := m.Listeners[0].VirtualHosts[0]
			vh.Routes = slices.Replace(vh.Routes, i, i+1, &get, &patch)
			break
		}
	}
	return m
}

func observe(t *testing.T, m *translate.Model, opts translate.Options, data []byte) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	t.Helper()
	return New().Observe(m, opts, []translate.File{{Path: OutputPath, Data: data}})
}

// TestJudgeAgreesWithReport: on generated configs the judge backs every
// honoured claim (Run fails otherwise), and what it reads is what Envoy
// does.
func TestJudgeAgreesWithReport(t *testing.T) {
	for _, optIn := range []bool{false, true} {
		m := judgeModel(t)
		if _, err := translate.Run(m, []translate.Target{{Backend: New()}}, optIn); err != nil {
			t.Fatalf("opt-in %v: Run: %v", optIn, err)
		}
		for name, mm := range models(t) {
			if _, err := translate.Run(mm, []translate.Target{{Backend: New()}}, optIn); err != nil {
				t.Errorf("model %s, opt-in %v: Run: %v", name, optIn, err)
			}
		}
	}

	m := judgeModel(t)
	out, _ := generate(t, m, translate.Options{})
	obs, err := observe(t, m, translate.Options{}, out.Files[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	rule := func(i int) map[translate.MethodClass]translate.Behaviour { return obs[m.Rules[i].Name] }
	idem, non := translate.Idempotent, translate.NonIdempotent

	// Any method: GET and the like get the full policy, POST the safe one.
	if b := rule(0)[idem]; b.Retries != 3 || !slices.Equal(b.Codes, []int{500, 503}) || b.ConnErrors != translate.ConnRetryAll ||
		!b.TimeoutRetried || b.MaxRetriedBody != 1<<20 || b.MinGap != 0 ||
		b.TryTimeout != (translate.Timer{Kind: translate.TimerHeaders, Value: time.Second}) ||
		b.RequestTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: 10 * time.Second}) || b.TimeoutStatus != 504 {
		t.Errorf("any method, idempotent: %+v", b)
	}
	if b := rule(0)[non]; b.Retries != 3 || b.Codes != nil || b.ConnErrors != translate.ConnRetryUnsent || b.TimeoutRetried ||
		b.TryTimeout != (translate.Timer{Kind: translate.TimerHeaders, Value: time.Second}) {
		t.Errorf("any method, non-idempotent: %+v", b)
	}
	// POST only: the safe policy, and nothing for idempotent requests.
	if b, ok := rule(1)[non]; !ok || b.Retries != 3 || b.ConnErrors != translate.ConnRetryUnsent || len(rule(1)) != 1 {
		t.Errorf("POST only: %+v", rule(1))
	}
	if b, ok := rule(2)[idem]; !ok || b.ConnErrors != translate.ConnRetryAll || len(rule(2)) != 1 {
		t.Errorf("GET only: %+v", rule(2))
	}
	if len(rule(3)) != 2 || rule(3)[non].ConnErrors != translate.ConnRetryUnsent || rule(3)[idem].ConnErrors != translate.ConnRetryAll {
		t.Errorf("GET and PATCH: %+v", rule(3))
	}
	if b := rule(4)[idem]; b.Retries != math.MaxUint32 {
		t.Errorf("attempts 4294967297: %d retries, want the clamp %d", b.Retries, uint32(math.MaxUint32))
	}
	if b := rule(5)[idem]; b.Retries != 0 || b.TryTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: time.Second}) {
		t.Errorf("attempts 0: %+v", b)
	}
	for _, i := range []int{6, 7} {
		if b := rule(i)[idem]; !b.TryTimeout.Off() || !b.RequestTimeout.Off() {
			t.Errorf("rule %d, 0s timeouts: %+v", i, b)
		}
	}
	if b := rule(8)[idem]; !b.TryTimeout.Off() || b.RequestTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: 5 * time.Second}) {
		t.Errorf("request 5s, backendRequest 0s: %+v", b)
	}
	if b := rule(9)[idem]; b.TryTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: 2 * time.Second}) {
		t.Errorf("request 5s, backendRequest 2s: %+v", b)
	}
	if b := rule(10)[idem]; b.RequestTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: time.Hour}) {
		t.Errorf("request 1h: %+v (the stream idle timeout must not cut it)", b)
	}
	if b := rule(11)[idem]; b.TryTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: 2 * time.Second}) || !b.RequestTimeout.Off() {
		t.Errorf("request 0s, backendRequest 2s, one try: %+v", b)
	}
	for _, i := range []int{12, 13, 14} {
		for _, c := range []translate.MethodClass{idem, non} {
			if b := rule(i)[c]; b.Answer != 500 {
				t.Errorf("dead rule %d (%s): %+v, want answer 500", i, c, b)
			}
		}
	}
	if b := rule(15)[idem]; b.Answer != 0 || !b.InvalidShareAnswered {
		t.Errorf("partly invalid: %+v", b)
	}
	if b := rule(16)[idem]; !b.InvalidShareAnswered {
		t.Errorf("invalid with weight 0: %+v", b)
	}
}

// TestJudgeCatchesTampering edits the generated file or the report and
// expects the judge to contradict an honoured claim.
func TestJudgeCatchesTampering(t *testing.T) {
	m := judgeModel(t)
	out, _ := generate(t, m, translate.Options{})
	data := out.Files[0].Data
	files := map[string]fileEdit{
		"dead rule answers 503":          {"status: 500", "status: 503", "does not answer 500"},
		"invalid share answered 503":     {"cluster_not_found_response_code: INTERNAL_SERVER_ERROR", "cluster_not_found_response_code: SERVICE_UNAVAILABLE", "invalid backendRefs"},
		"validate_clusters on":           {"validate_clusters: false", "validate_clusters: true", "refuse to load"},
		"request timeout changed":        {" timeout: 10s", " timeout: 11s", "timeouts.request"},
		"request 0s cut by stream idle":  {"idle_timeout: 0s", "idle_timeout: 300s", "although request is 0s"},
		"route timeout 0s removed":       {" timeout: 0s", " timeout: 7s", "is 0s"},
		"single try timeout not shorter": {" timeout: 2s", " timeout: 5s", "timeouts.backendRequest"},
	}
	// Claims wider than the file: each is honoured in a copy of the report.
	claims := map[string]widenedClaim{
		"backoff":                  {0, translate.FeatureRetryBackoff, "pause of only 0s"},
		"attempts, any method":     {0, translate.FeatureRetryAttempts, "larger than 1048576 bytes"},
		"codes of POST":            {1, translate.FeatureRetryCodes, "larger than 1048576 bytes"},
		"resets of POST":           {1, translate.FeatureRetryConnectionErrors, "larger than 1048576 bytes"},
		"per-try timeouts of POST": {1, translate.FeatureRetryBackendTimeout, "cuts each try by headers 1s"},
		// per_try_timeout bounds the wait for the response headers only
		// (Envoy ignores it once they went downstream), not a whole try.
		"per-try timeout as a total": {0, translate.FeatureBackendRequestTimeout, "cuts each try by headers 1s, not a total of 1s"},
		"attempts clamped":           {4, translate.FeatureRetryAttempts, "retries 4294967295 times, not 4294967297"},
		"dead rule's request":        {12, translate.FeatureRequestTimeout, "never apply it"},
	}
	checkCaught(t, m, data, out.Findings, files, claims)
}

// TestJudgeReadsRouteTables covers Envoy semantics the generator does not
// use: defaults of num_retries and the route timeout, virtual host
// policies, tokens, buffer limits.
func TestJudgeReadsRouteTables(t *testing.T) {
	r := newRule(0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{})
	r.Methods = []string{"GET"}
	m := singleModel(r)
	m.Listeners[0].VirtualHosts[0].Routes[0].Match.Method = "GET"
	out, _ := generate(t, m, translate.Options{})
	data := out.Files[0].Data
	get := func(data []byte) translate.Behaviour {
		t.Helper()
		obs, err := observe(t, m, translate.Options{}, data)
		if err != nil {
			t.Fatal(err)
		}
		return obs[r.Name][translate.Idempotent]
	}
	if b := get(data); b.RequestTimeout != (translate.Timer{Kind: translate.TimerTotal, Value: 15 * time.Second}) {
		t.Errorf("no route timeout: request timer %v, want Envoy's default 15s", b.RequestTimeout)
	}
	edits := []struct {
		name     string
		old, new string
		check    func(b translate.Behaviour) bool
	}{
		{"num_retries unset is 1", "num_retries: 2", "", func(b translate.Behaviour) bool { return b.Retries == 1 }},
		{"5xx retries every 5xx", "reset,retriable-status-codes", "5xx", func(b translate.Behaviour) bool {
			return len(b.Codes) == 100 && b.ConnErrors == translate.ConnRetryAll
		}},
		{"codes need their token", "reset,retriable-status-codes", "reset", func(b translate.Behaviour) bool { return b.Codes == nil }},
		{"unsent only", "connect-failure,refused-stream,reset,retriable-status-codes", "connect-failure,reset-before-request", func(b translate.Behaviour) bool {
			return b.ConnErrors == translate.ConnRetryUnsent && b.Retries == 2
		}},
		{"unknown tokens retry nothing", "connect-failure,refused-stream,reset,retriable-status-codes", "bogus", func(b translate.Behaviour) bool { return b.Retries == 0 }},
		{"buffer limit", "per_request_buffer_limit_bytes: 1048576", "per_request_buffer_limit_bytes: 4096", func(b translate.Behaviour) bool { return b.MaxRetriedBody == 4096 }},
		{"listener caps the buffer", "per_request_buffer_limit_bytes: 1048576", "per_request_buffer_limit_bytes: 4194304", func(b translate.Behaviour) bool { return b.MaxRetriedBody == 1<<20 }},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			var bad []byte
			if e.new == "" {
				bad = removeLine(t, data, e.old)
			} else {
				bad = bytes.Replace(data, []byte(e.old), []byte(e.new), 1)
			}
			if bytes.Equal(bad, data) {
				t.Fatalf("%q is not in the file", e.old)
			}
			if b := get(bad); !e.check(b) {
				t.Errorf("behaviour %+v", b)
			}
		})
	}

	if _, err := observe(t, m, translate.Options{}, []byte("static_resources: {}")); err != nil {
		t.Errorf("empty bootstrap: %v", err)
	}
	if _, err := New().Observe(m, translate.Options{}, nil); err == nil {
		t.Error("Observe without envoy.yaml succeeded")
	}
	unknownRoute := bytes.Replace(data, []byte("name: "+r.Name), []byte("name: someone_else"), 1)
	if _, err := observe(t, m, translate.Options{}, unknownRoute); err == nil || !strings.Contains(err.Error(), "belongs to no rule") {
		t.Errorf("route of no rule: %v", err)
	}
}

// removeLine drops the line whose trimmed text is line.
func removeLine(t *testing.T, data []byte, line string) []byte {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == line {
			return []byte(strings.Join(slices.Delete(lines, i, i+1), "\n"))
		}
	}
	t.Fatalf("no line %q", line)
	return nil
}

// fileEdit is an edit of a generated envoy.yaml (old becomes new, once)
// and part of the contradiction the judge must then give (want).
type fileEdit struct{ old, new, want string }

// widenedClaim is a finding of rule made honoured in a copy of the report,
// and part of the contradiction the judge must then give (want).
type widenedClaim struct {
	rule    int
	feature translate.Feature
	want    string
}

// checkCaught checks that the judge accepts data with findings as they
// are, then contradicts each edit of the file and each widened claim.
func checkCaught(t *testing.T, m *translate.Model, data []byte, findings []translate.Finding, edits map[string]fileEdit, claims map[string]widenedClaim) {
	t.Helper()
	contradictions := func(data []byte, findings []translate.Finding) []string {
		t.Helper()
		obs, err := observe(t, m, translate.Options{}, data)
		if err != nil {
			return []string{err.Error()}
		}
		var errs []string
		for _, r := range m.Rules {
			for _, e := range translate.CheckClaims(r, findings, obs[r.Name]) {
				errs = append(errs, e.Error())
			}
		}
		return errs
	}
	if errs := contradictions(data, findings); len(errs) > 0 {
		t.Fatalf("the real output is contradicted: %v", errs)
	}
	caught := func(t *testing.T, errs []string, want string) {
		t.Helper()
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("not caught (want %q): %v", want, errs)
		}
	}
	for name, c := range edits {
		t.Run(name, func(t *testing.T) {
			bad := bytes.Replace(data, []byte(c.old), []byte(c.new), 1)
			if bytes.Equal(bad, data) {
				t.Fatalf("%q is not in the file", c.old)
			}
			caught(t, contradictions(bad, findings), c.want)
		})
	}
	for name, c := range claims {
		t.Run(name, func(t *testing.T) {
			r := m.Rules[c.rule]
			fs := slices.Clone(findings)
			found := false
			for i, f := range fs {
				if f.Route == r.Route && f.Rule == r.Index && f.Feature == c.feature {
					if f.Status == translate.Honoured {
						t.Fatalf("%s is already honoured: %s", c.feature, report.WithParams(f.Reason, f.Params))
					}
					fs[i].Status, found = translate.Honoured, true
				}
			}
			if !found {
				t.Fatalf("rule %s has no %s finding", r.Name, c.feature)
			}
			caught(t, contradictions(data, fs), c.want)
		})
	}
}
