package traefik

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/translate"
)

// manyRules puts every rule of the generation table on one listener, each
// on its own path, so one configuration holds them all.
func manyRules() *translate.Model {
	m := &translate.Model{Listeners: []*translate.Listener{{Name: "web", Address: "127.0.0.1", Port: 8080,
		VirtualHosts: []*translate.VirtualHost{{Name: "any"}}}}}
	vh := m.Listeners[0].VirtualHosts[0]
	seen := map[string]bool{}
	for i, tc := range genCases() {
		for _, r := range tc.model().Rules {
			if seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			m.Rules = append(m.Rules, r)
			vh.Routes = append(vh.Routes, &translate.RouteMatch{Rule: r,
				Match: translate.Match{PathType: translate.PathPrefix, Path: "/c" + string(rune('a'+i%26)) + r.Name}})
		}
	}
	return m
}

// observe generates m and reads the files back with the judge, after
// edit (if any) has altered dynamic.yaml.
func observe(t *testing.T, m *translate.Model, opts translate.Options, edit func(d *dynamicConfig)) (*translate.Output, map[string]map[translate.MethodClass]translate.Behaviour) {
	t.Helper()
	out, err := New().Generate(m, opts)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	files := out.Files
	if edit != nil {
		var d dynamicConfig
		if err := yaml.UnmarshalStrict(files[1].Data, &d); err != nil {
			t.Fatal(err)
		}
		edit(&d)
		data, err := yaml.Marshal(&d)
		if err != nil {
			t.Fatal(err)
		}
		files = []translate.File{files[0], {Path: files[1].Path, Data: data}}
	}
	obs, err := New().Observe(m, opts, files)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	return out, obs
}

func claimErrors(m *translate.Model, findings []translate.Finding, obs map[string]map[translate.MethodClass]translate.Behaviour) []error {
	var errs []error
	for _, r := range m.Rules {
		errs = append(errs, translate.CheckClaims(r, findings, obs[r.Name])...)
	}
	return errs
}

// TestJudgeAgreesWithEveryClaim: for one configuration holding every rule
// of the generation table, with and without the opt-in, on both versions,
// the judge confirms every honoured claim.
func TestJudgeAgreesWithEveryClaim(t *testing.T) {
	m := manyRules()
	for _, row := range versionTable() {
		for _, opt := range []bool{false, true} {
			opts := translate.Options{Version: row.Version, RetryNonIdempotent: opt}
			out, obs := observe(t, m, opts, nil)
			if errs := claimErrors(m, out.Findings, obs); len(errs) > 0 {
				t.Errorf("%s opt-in %v: %v", row.Version, opt, errs)
			}
			if len(obs) != len(m.Rules) {
				t.Errorf("%s: observed %d rules, want %d", row.Version, len(obs), len(m.Rules))
			}
			if _, err := translate.Run(m, []translate.Target{{Backend: New(), Version: row.Version}}, opt); err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
}

// TestJudgeDerivesBehaviour checks what the judge reads from the files.
func TestJudgeDerivesBehaviour(t *testing.T) {
	r := rule("b", 0, &translate.Retry{Attempts: 3, Codes: []int{502, 504}, Backoff: dur("100ms")},
		translate.Timeouts{BackendRequest: dur("2s")})
	r.Methods = []string{"GET", "POST"}
	dead := rule("dead", 0, &translate.Retry{Attempts: 1}, translate.Timeouts{})
	dead.Backends, dead.NoBackendRefs = nil, true
	part := rule("part", 0, nil, translate.Timeouts{})
	part.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "x"}}
	m := manyRules()
	m.Rules = []*translate.Rule{r, dead, part}
	m.Listeners[0].VirtualHosts[0].Routes = []*translate.RouteMatch{
		{Rule: r, Match: translate.Match{PathType: translate.PathPrefix, Path: "/b"}},
		{Rule: dead, Match: translate.Match{PathType: translate.PathPrefix, Path: "/dead"}},
		{Rule: part, Match: prefixRoot},
	}
	headers2s := translate.Timer{Kind: translate.TimerHeaders, Value: 2 * time.Second}
	none := translate.Timer{Kind: translate.TimerNone}
	base := translate.Behaviour{Retries: 3, ConnErrors: translate.ConnRetryUnsent, MaxRetriedBody: -1,
		MinGap: 100 * time.Millisecond, TryTimeout: headers2s, RequestTimeout: none, TimeoutStatus: 504,
		InvalidShareAnswered: true, RetriesSource: "attempts 4, the first try included",
		Backoff: translate.Backoff{Base: 200 * time.Millisecond, Multiplier: math.Pow(2, 1.0/3), Max: time.Minute,
			JitterMin: 0.5, JitterMax: 1.5, MaxElapsed: 15 * time.Minute}}
	v37idem := base
	v37idem.Codes, v37idem.ConnErrors, v37idem.MaxRetriedBody, v37idem.TimeoutRetried = []int{502, 504},
		translate.ConnRetryAll, 2<<20, true
	for _, tc := range []struct {
		version string
		opt     bool
		idem    translate.Behaviour
		non     translate.Behaviour
	}{
		{"3.6", false, base, base},
		{"3.7", false, v37idem, base},
		{"3.7", true, v37idem, v37idem},
	} {
		_, obs := observe(t, m, translate.Options{Version: tc.version, RetryNonIdempotent: tc.opt}, nil)
		want := map[translate.MethodClass]translate.Behaviour{translate.Idempotent: tc.idem, translate.NonIdempotent: tc.non}
		if diff := cmp.Diff(want, obs[r.Name]); diff != "" {
			t.Errorf("%s opt-in %v (-want +got):\n%s", tc.version, tc.opt, diff)
		}
		if b := obs[dead.Name][translate.Idempotent]; b.Answer != 500 {
			t.Errorf("%s: dead rule answer %d, want 500", tc.version, b.Answer)
		}
		if b := obs[part.Name][translate.Idempotent]; !b.InvalidShareAnswered || b.Answer != 0 {
			t.Errorf("%s: partly invalid rule: %+v, want its invalid share answered 500", tc.version, b)
		}
	}
}

// TestJudgeCatchesAlteredConfigs: a configuration that does less than the
// report claims is caught.
//
// Traefik never honours retry.attempts above 0 (it retries a sent request
// that failed only as a 502 status on 3.7, and then only for bodies that fit
// in its buffer), so an alteration of rule alt's retry count is caught
// through its attempts claim forced to honoured (force): the judge must
// then report the count it reads from the altered file, which the unaltered
// file does not give (each case is checked against the unaltered file too).
// Rule zero (attempts 0) is honestly honoured and needs no forcing.
func TestJudgeCatchesAlteredConfigs(t *testing.T) {
	r := rule("alt", 0, &translate.Retry{Attempts: 2, Backoff: dur("0s")},
		translate.Timeouts{BackendRequest: dur("0s"), Request: dur("0s")})
	zero := rule("zero", 0, &translate.Retry{Attempts: 0}, translate.Timeouts{})
	dead := rule("dead", 0, nil, translate.Timeouts{Request: dur("1s")})
	dead.Backends, dead.NoBackendRefs = nil, true
	m := manyRules()
	m.Rules = []*translate.Rule{r, zero, dead}
	m.Listeners[0].VirtualHosts[0].Routes = []*translate.RouteMatch{
		{Rule: dead, Match: translate.Match{PathType: translate.PathPrefix, Path: "/dead"}},
		{Rule: zero, Match: translate.Match{PathType: translate.PathPrefix, Path: "/zero"}},
		{Rule: r, Match: prefixRoot},
	}
	opts := translate.Options{Version: v36}
	claims := func(out *translate.Output, force bool) []translate.Finding {
		fs := slices.Clone(out.Findings)
		for i, f := range fs {
			if force && f.Rule == r.Index && f.Route == r.Route && f.Feature == translate.FeatureRetryAttempts {
				fs[i].Status = translate.Honoured
			}
		}
		return fs
	}
	for _, force := range []bool{false, true} {
		out, obs := observe(t, m, opts, nil)
		errs := claimErrors(m, claims(out, force), obs)
		// Forced, the only complaint about the unaltered file is the one
		// that makes the claim approximated (once per method class).
		if force && len(errs) != 2 {
			t.Errorf("unaltered file, attempts of alt forced to honoured: errors %v, want two", errs)
		}
		for _, e := range errs {
			if force && !strings.Contains(e.Error(), `retries only "unsent" connection failures`) {
				t.Errorf("unaltered file, attempts of alt forced to honoured: %v, want only the unsent-only complaint", e)
			}
		}
		if !force && len(errs) > 0 {
			t.Errorf("unaltered file: errors %v", errs)
		}
	}
	for _, tc := range []struct {
		name  string
		force bool
		edit  func(d *dynamicConfig)
		want  string
	}{
		{"keep-alive back on", false, func(d *dynamicConfig) {
			d.HTTP.ServersTransports["default_zero_r0-transport"].MaxIdleConnsPerHost = 0
		}, "re-send the request on its own"},
		{"keep-alive back on, retrying rule", true, func(d *dynamicConfig) {
			d.HTTP.ServersTransports["default_alt_r0-transport"].MaxIdleConnsPerHost = 0
		}, "re-send the request on its own"},
		{"one try fewer", true, func(d *dynamicConfig) {
			d.HTTP.Middlewares["default_alt_r0-retry"].Retry.Attempts = 2
		}, "retries 1 times, not 2"},
		{"retry middleware dropped from the router", true, func(d *dynamicConfig) {
			d.HTTP.Routers["m0002-default_alt_r0"].Middlewares = nil
		}, "retries 0 times, not 2"},
		{"retry middleware added to a rule without retries", false, func(d *dynamicConfig) {
			rt := d.HTTP.Routers["m0001-default_zero_r0"]
			rt.Middlewares = append(rt.Middlewares, "default_alt_r0-retry")
		}, "retries 2 times, not 0"},
		{"default dialTimeout back", false, func(d *dynamicConfig) {
			d.HTTP.ServersTransports["default_alt_r0-transport"].ForwardingTimeouts = nil
		}, "although backendRequest is 0s"},
		{"dead rule answers 503", false, func(d *dynamicConfig) {
			d.HTTP.Middlewares["default_dead_r0-answer500"].Errors.StatusRewrites = map[string]int{"418": 503}
		}, "does not answer 500"},
		{"dead rule without the errors middleware", false, func(d *dynamicConfig) {
			d.HTTP.Routers["m0000-default_dead_r0"].Middlewares = nil
		}, "answer 418"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, obs := observe(t, m, opts, tc.edit)
			errs := claimErrors(m, claims(out, tc.force), obs)
			if len(errs) == 0 || !strings.Contains(joinErrs(errs), tc.want) {
				t.Errorf("errors %v, want one containing %q", errs, tc.want)
			}
			out, obs = observe(t, m, opts, nil)
			if errs := claimErrors(m, claims(out, tc.force), obs); strings.Contains(joinErrs(errs), tc.want) {
				t.Errorf("the unaltered file already gives %q: %v", tc.want, errs)
			}
		})
	}
	t.Run("backoff mapped 1:1 and claimed honoured", func(t *testing.T) {
		r := rule("bo", 0, &translate.Retry{Attempts: 2, Backoff: dur("1s")}, translate.Timeouts{})
		m := single(r)
		out, obs := observe(t, m, translate.Options{Version: v36}, func(d *dynamicConfig) {
			d.HTTP.Middlewares["default_bo_r0-retry"].Retry.InitialInterval = "1s"
		})
		for i, f := range out.Findings {
			if f.Feature == translate.FeatureRetryBackoff {
				out.Findings[i].Status = translate.Honoured
			}
		}
		if errs := claimErrors(m, out.Findings, obs); !strings.Contains(joinErrs(errs), "guarantees a pause of only 500ms") {
			t.Errorf("errors %v, want the backoff claim caught (Traefik's jitter: 1s x 0.5)", errs)
		}
	})
	t.Run("3.7 fields in a 3.6 file", func(t *testing.T) {
		r := rule("st", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{})
		out, err := New().Generate(single(r), translate.Options{Version: v37})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New().Observe(single(r), translate.Options{Version: v36}, out.Files); err == nil ||
			!strings.Contains(err.Error(), "3.6 does not know") {
			t.Errorf("Observe = %v, want the 3.7-only fields refused", err)
		}
	})
}

func joinErrs(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}
