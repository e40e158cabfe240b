package ingressnginx

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/report"
)

// TestPlanFor maps effective settings to the rule's retry and timeouts.
func TestPlanFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string
		want plan
	}{
		{"defaults", nil, plan{attempts: 2, backendRequest: 60}},
		{"codes sorted, deduplicated", map[string]string{NextUpstream: "http_504 error http_502 http_504"}, plan{attempts: 2, codes: []int{502, 504}, backendRequest: 60}},
		{"off", map[string]string{NextUpstream: "off http_502"}, plan{backendRequest: 60}},
		{"no condition", map[string]string{NextUpstream: "non_idempotent"}, plan{backendRequest: 60}},
		{"invalid_header alone retries", map[string]string{NextUpstream: "invalid_header"}, plan{attempts: 2, backendRequest: 60}},
		{"tries 1", map[string]string{NextUpstreamTries: "1", NextUpstream: "http_502"}, plan{backendRequest: 60}},
		{"tries 0", map[string]string{NextUpstreamTries: "0"}, plan{attempts: 1, backendRequest: 60}},
		{"tries 10", map[string]string{NextUpstreamTries: "10"}, plan{attempts: 9, backendRequest: 60}},
		{"next timeout at read", map[string]string{NextUpstreamTimeout: "60"}, plan{attempts: 2, backendRequest: 60, request: 60}},
		{"next timeout below read", map[string]string{NextUpstreamTimeout: "59"}, plan{attempts: 2, backendRequest: 60}},
		{"next timeout without retries", map[string]string{NextUpstreamTimeout: "90", NextUpstream: "off"}, plan{backendRequest: 60}},
		{"read timeout", map[string]string{ReadTimeout: "5"}, plan{attempts: 2, backendRequest: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &settings{values: map[string]value{}}
			for k, v := range Defaults() {
				if msg := s.parseSetting(k, v); msg != "" {
					t.Fatal(msg)
				}
			}
			for k, v := range tc.set {
				if msg := s.parseSetting(k, v); msg != "" {
					t.Fatal(msg)
				}
			}
			if diff := cmp.Diff(tc.want, planFor(s), cmp.AllowUnexported(plan{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseSetting accepts what ingress-nginx accepts and gwretry can
// carry, and nothing else.
func TestParseSetting(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{NextUpstream, "error timeout", true},
		{NextUpstream, "error  timeout", false}, // ingress-nginx's regexp allows one space
		{NextUpstream, "http_501", false},
		{NextUpstream, "", false},
		{NextUpstream, "error;", false},
		// ingress-nginx's regexp lets tokens run together; nginx refuses
		// them, and "http_500http_502" would become retry code 0.
		{NextUpstream, "http_500http_502", false},
		{NextUpstream, "errortimeout", false},
		{NextUpstream, "error\ttimeout", true},
		{NextUpstreamTries, "0", true},
		{NextUpstreamTries, "-1", false},
		{NextUpstreamTries, "3.5", false},
		{NextUpstreamTimeout, "0", true},
		{ReadTimeout, "0", false},
		{ReadTimeout, "359996401", false},
		{ReadTimeout, "359996400", true},
		{ReadTimeout, "359964000", true},
		{SendTimeout, "60s", false},
		{ConnectTimeout, "1", true},
		{RetryNonIdempotent, "true", true},
		{RetryNonIdempotent, "yes", false},
	} {
		var s settings
		msg := s.parseSetting(tc.name, tc.value)
		if (msg == "") != tc.ok {
			t.Errorf("%s %q: ok %v, want %v (%s)", tc.name, tc.value, msg == "", tc.ok, msg)
		}
	}
}

// TestSeconds writes GEP-2257 durations.
func TestSeconds(t *testing.T) {
	for n, want := range map[int]string{1: "1s", 60: "1m", 90: "1m30s", 3600: "1h", 100000: "27h46m40s", maxSeconds: "99999h"} {
		if got := seconds(n); got != want {
			t.Errorf("seconds(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestFindingRecords: what each retry and timeout setting becomes, as
// records (reason, params, caveats) and the status they give.
func TestFindingRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  map[string]string
		// want maps a setting to "status Reason{params} [Caveat{params} ...]".
		want map[string]string
	}{
		{"defaults", nil, map[string]string{
			NextUpstream:        "approximated ConditionsCarried{codes=} NonIdempotentNotListed{methods=POST, LOCK, PATCH}",
			NextUpstreamTries:   "carried TriesCarried{attempts=2}",
			NextUpstreamTimeout: "carried NoLimit",
			ConnectTimeout:      "not-carried NoConnectTimeout",
			ReadTimeout:         "approximated IdleTimerBecomesTotal{backendRequest=1m}",
			SendTimeout:         "not-carried NoSendTimeout{backendRequest=1m}",
		}},
		{"every condition", map[string]string{NextUpstream: "error timeout http_502 http_504 non_idempotent", NextUpstreamTimeout: "90"}, map[string]string{
			NextUpstream:        "carried ConditionsCarriedAllMethods{codes=502, 504}",
			NextUpstreamTimeout: "approximated RequestTimeoutEndsAll{request=1m30s}",
		}},
		{"invalid_header only", map[string]string{NextUpstream: "invalid_header", NextUpstreamTimeout: "30"}, map[string]string{
			NextUpstream:        "approximated ConditionsCarried{codes=} ErrorNotListed InvalidHeaderUnmapped NonIdempotentNotListed{methods=POST, LOCK, PATCH} TimeoutNotListed",
			NextUpstreamTimeout: "not-carried RetryWindowDropped{backendRequest=1m}",
		}},
		{"off", map[string]string{NextUpstream: "off http_502"}, map[string]string{
			NextUpstream:      "carried RetriesOff",
			NextUpstreamTries: "carried NothingRetried",
		}},
		{"no condition", map[string]string{NextUpstream: "non_idempotent"}, map[string]string{NextUpstream: "carried NoRetryCondition"}},
		{"one try", map[string]string{NextUpstreamTries: "1", NextUpstreamTimeout: "5"}, map[string]string{
			NextUpstream:        "carried NothingRetried",
			NextUpstreamTries:   "carried NothingRetried",
			NextUpstreamTimeout: "carried NothingRetried",
		}},
		{"unlimited tries", map[string]string{NextUpstreamTries: "0"}, map[string]string{NextUpstreamTries: "approximated UnlimitedTries"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &settings{values: map[string]value{}}
			for k, v := range Defaults() {
				s.parseSetting(k, v)
				s.values[k] = value{raw: v, source: FromDefault}
			}
			for k, v := range tc.set {
				if msg := s.parseSetting(k, v); msg != "" {
					t.Fatal(msg)
				}
				s.values[k] = value{raw: v, source: FromAnnotation}
			}
			got := map[string]string{}
			for _, f := range findings(s, planFor(s)) {
				if err := report.CheckImport(f.Reason, f.Params, f.Caveats); err != nil {
					t.Errorf("%s: %v", f.Annotation, err)
				}
				rec := string(report.ImportStatus(f.Reason, f.Caveats)) + " " + report.WithParams(f.Reason, f.Params)
				for _, c := range f.Caveats {
					rec += " " + report.WithParams(c.Reason, c.Params)
				}
				got[strings.TrimPrefix(f.Annotation, Prefix)] = rec
			}
			for k, want := range tc.want {
				if got[k] != want {
					t.Errorf("%s: got %q, want %q", k, got[k], want)
				}
			}
		})
	}
}
