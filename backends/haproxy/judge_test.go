package haproxy

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// TestJudgeAgrees runs translate.Run, which fails on any honoured finding
// the judge contradicts, over dead, partly invalid and method-restricted
// rules, for every version with and without the opt-in.
func TestJudgeAgrees(t *testing.T) {
	rules := deadRules()
	add := func(r *translate.Rule) {
		r.Index = len(rules)
		r.Name = "default_web_r" + itoa(r.Index)
		rules = append(rules, r)
	}
	for _, methods := range [][]string{nil, {"GET"}, {"POST"}, {"GET", "PATCH"}} {
		for _, rt := range []*translate.Retry{nil, {Attempts: 0, Codes: []int{500}}, {Attempts: 3, Codes: []int{500, 503, 429}}} {
			for _, to := range []translate.Timeouts{{}, {Request: dur("0s"), BackendRequest: dur("1s")}, {BackendRequest: dur("0s")}} {
				r := rule(0, rt, to)
				r.Methods = methods
				add(r)
			}
		}
	}
	partial := rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
	partial.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 3, Reason: "no such Service"}}
	add(partial)
	for _, v := range New().Versions() {
		for _, optIn := range []bool{false, true} {
			generate(t, modelOf(rules...), translate.Options{Version: v, RetryNonIdempotent: optIn})
		}
	}
}

// judged generates m, lets edit change haproxy.cfg and claim change the
// findings, and returns the contradictions CheckClaims finds.
func judged(t *testing.T, m *translate.Model, opts translate.Options, edit func(string) string, claim func([]translate.Finding)) []error {
	t.Helper()
	out, err := New().Generate(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		cfg := string(out.Files[0].Data)
		edited := edit(cfg)
		if edited == cfg {
			t.Fatalf("edit changed nothing in:\n%s", cfg)
		}
		out.Files[0].Data = []byte(edited)
	}
	if claim != nil {
		claim(out.Findings)
	}
	observed, err := New().Observe(m, opts, out.Files)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, r := range m.Rules {
		errs = append(errs, translate.CheckClaims(r, out.Findings, observed[r.Name])...)
	}
	return errs
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func honour(feat translate.Feature) func([]translate.Finding) {
	return func(fs []translate.Finding) {
		for i := range fs {
			if fs[i].Feature == feat {
				fs[i].Status = translate.Honoured
			}
		}
	}
}

func TestJudgeCatches(t *testing.T) {
	opts := translate.Options{Version: "2.6"}
	retrying := func() *translate.Model {
		return modelOf(rule(0, &translate.Retry{Attempts: 2, Codes: []int{503}, Backoff: dur("1s")}, translate.Timeouts{}))
	}
	partial := func() *translate.Model {
		r := rule(0, nil, translate.Timeouts{})
		r.Backends[0].Weight = 3
		r.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "gone"}}
		return modelOf(r)
	}
	tests := map[string]struct {
		m       *translate.Model
		edit    func(string) string
		claim   func([]translate.Finding)
		version string // "" for 2.6
	}{
		// 3.0: 2.6 closes kept-alive client connections silently, so
		// attempts 0 is not claimed honoured there.
		"attempts 0 rule that retries": {modelOf(rule(0, &translate.Retry{Attempts: 0}, translate.Timeouts{})),
			replace("retries 0\n  retry-on none", "retries 2\n  retry-on conn-failure"), nil, "3.0"},
		"dead rule answering 503":                {modelOf(deadRules()[0]), replace("return status 500", "return status 503"), nil, ""},
		"invalid share too large":                {partial(), replace("rand(4) lt 1", "rand(4) lt 2"), nil, ""},
		"invalid share not answered":             {partial(), replace("  http-request return status 500 if { rand(4) lt 1 }\n", ""), nil, ""},
		"backoff claimed":                        {retrying(), nil, honour(translate.FeatureRetryBackoff), ""},
		"codes claimed despite the buffer limit": {retrying(), nil, honour(translate.FeatureRetryCodes), ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			opts := opts
			if tt.version != "" {
				opts.Version = tt.version
			}
			if errs := judged(t, tt.m, opts, tt.edit, tt.claim); len(errs) == 0 {
				t.Error("the judge found no contradiction")
			}
		})
	}
}

// TestJudgeSemantics checks what the judge derives from HAProxy's rules:
// retries read into a C int, disable-l7-retry, the buffer limit.
func TestJudgeSemantics(t *testing.T) {
	m := modelOf(rule(0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{BackendRequest: dur("1s")}))
	out, err := New().Generate(m, translate.Options{Version: "2.6"})
	if err != nil {
		t.Fatal(err)
	}
	out.Files[0].Data = []byte(strings.Replace(string(out.Files[0].Data), "retries 2\n", "retries 4294967297\n", 1))
	obs, err := New().Observe(m, translate.Options{Version: "2.6"}, out.Files)
	if err != nil {
		t.Fatal(err)
	}
	idem, non := obs[m.Rules[0].Name][translate.Idempotent], obs[m.Rules[0].Name][translate.NonIdempotent]
	if idem.Retries != 1 {
		t.Errorf("retries 4294967297: judged %d retries, want 1 (C int)", idem.Retries)
	}
	if idem.ConnErrors != translate.ConnRetryAll || len(idem.Codes) != 1 || !idem.TimeoutRetried || idem.MaxRetriedBody != defaultBufSize-defaultMaxRewrite {
		t.Errorf("idempotent = %+v", idem)
	}
	if non.ConnErrors != translate.ConnRetryUnsent || len(non.Codes) != 0 || non.TimeoutRetried || non.MaxRetriedBody != -1 {
		t.Errorf("non-idempotent = %+v, want only unsent connection failures retried", non)
	}
	if idem.TryTimeout.Kind != translate.TimerIdle || idem.TimeoutStatus != 504 || idem.MinGap != 0 {
		t.Errorf("timers = %+v", idem)
	}
}
