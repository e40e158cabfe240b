package prove

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// envoyBootstrap is a bootstrap for one scenario path, as gwretry writes
// it; tests replace parts of it to break it.
const envoyBootstrap = `static_resources:
  clusters:
  - circuit_breakers:
      thresholds:
      - max_retries: 1024
    connect_timeout: 10s
    load_assignment:
      cluster_name: c
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {address: 127.0.0.1, port_value: 8080}
    name: c
    type: STATIC
  listeners:
  - address:
      socket_address: {address: 127.0.0.1, port_value: 10080}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          http_filters:
          - name: envoy.filters.http.router
            typed_config:
              '@type': type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
          route_config:
            name: r
            virtual_hosts:
            - domains: ['*']
              name: any
              routes:
              - match:
                  headers:
                  - name: :method
                    string_match:
                      safe_regex: {regex: POST|PATCH|LOCK}
                  path_separated_prefix: PATH
                name: safe
                per_request_buffer_limit_bytes: 1048576
                route:
                  cluster: c
                  retry_policy:
                    num_retries: 2
                    retry_on: connect-failure,refused-stream,reset-before-request
              - match: {path_separated_prefix: PATH}
                name: retrying
                per_request_buffer_limit_bytes: 1048576
                route:
                  cluster: c
                  retry_policy:
                    num_retries: 2
                    retriable_status_codes: [500]
                    retry_back_off: {base_interval: 0.200s}
                    retry_on: connect-failure,refused-stream,reset,retriable-status-codes
          stat_prefix: s
    name: l
`

func TestJudgeEnvoy(t *testing.T) {
	backoffScenario := scenarioNamed(t, "backoff-between-tries")
	postScenario := scenarioNamed(t, "post-not-retried-by-default")
	h, a := translate.Honoured, translate.Approximated
	body := report.NewCaveat(report.CaveatBodyBufferLimit, "limit", "1 MiB")
	post := report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", "POST, PATCH, LOCK")
	findings := func(backoff, attempts translate.Status) []translate.Finding {
		fs := []translate.Finding{
			finding(translate.FeatureRetryAttempts, attempts, body, post),
			finding(translate.FeatureRetryBackoff, backoff, report.NewCaveat(report.CaveatFullJitterBackoff)),
			finding(translate.FeatureRetryCodes, a, body, post),
			finding(translate.FeatureRetryConnectionErrors, a, body, post),
		}
		fs[0].Configured = "num_retries 2"
		return fs
	}
	tests := []struct {
		name     string
		sc       Scenario
		old, new string // replaced in envoyBootstrap
		backoff  translate.Status
		attempts translate.Status              // approximated when unset
		want     map[translate.Feature]Outcome // features not listed must be Backed
	}{
		{name: "as generated", sc: backoffScenario, backoff: a},
		{name: "backoff claimed honoured", sc: backoffScenario, backoff: h,
			want: map[translate.Feature]Outcome{translate.FeatureRetryBackoff: Contradicted}},
		{name: "one retry too many", sc: backoffScenario, old: "num_retries: 2\n                    retriable_status_codes", new: "num_retries: 3\n                    retriable_status_codes", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted, translate.FeatureRetryCodes: Contradicted,
				translate.FeatureRetryConnectionErrors: Contradicted}},
		{name: "default circuit breaker", sc: backoffScenario, old: "max_retries: 1024", new: "max_requests: 1024", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "gateway-error retries unlisted codes", sc: backoffScenario, old: ",retriable-status-codes", new: ",retriable-status-codes,gateway-error", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryCodes: Contradicted}},
		{name: "no reset", sc: backoffScenario, old: "refused-stream,reset,", new: "refused-stream,", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryConnectionErrors: Contradicted}},
		{name: "no back-off configured", sc: backoffScenario, old: "retry_back_off: {base_interval: 0.200s}", new: "per_try_timeout: 1s", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryBackoff: Contradicted}},
		{name: "attempts claimed honoured", sc: backoffScenario, backoff: a, attempts: h,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "smaller buffer than the caveat says", sc: backoffScenario, old: "name: retrying\n                per_request_buffer_limit_bytes: 1048576",
			new: "name: retrying\n                per_request_buffer_limit_bytes: 65536", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted, translate.FeatureRetryCodes: Contradicted,
				translate.FeatureRetryConnectionErrors: Contradicted}},
		{name: "listener buffer when the route sets none", sc: backoffScenario, old: "name: retrying\n                per_request_buffer_limit_bytes: 1048576",
			new: "name: retrying", backoff: a},
		{name: "POST takes the safe route", sc: postScenario, old: "retry_back_off: {base_interval: 0.200s}", new: "per_try_timeout: 1s"},
		{name: "POST claimed honoured", sc: postScenario, attempts: h,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "POST would be retried", sc: postScenario, old: "safe_regex: {regex: POST|PATCH|LOCK}", new: "exact: LOCK",
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "POST retried on codes", sc: postScenario, old: "retry_on: connect-failure,refused-stream,reset-before-request",
			new:  "retry_on: connect-failure,refused-stream,reset-before-request,retriable-status-codes\n                    retriable_status_codes: [500]",
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "POST without its safe policy", sc: postScenario, old: "retry_policy:\n                    num_retries: 2\n                    retry_on: connect-failure,refused-stream,reset-before-request",
			new: "timeout: 1s", want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted,
				translate.FeatureRetryCodes: Contradicted, translate.FeatureRetryConnectionErrors: Contradicted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yaml := strings.ReplaceAll(envoyBootstrap, "PATH", tc.sc.Path())
			if tc.old != "" {
				if !strings.Contains(yaml, tc.old) {
					t.Fatalf("bootstrap has no %q", tc.old)
				}
				yaml = strings.Replace(yaml, tc.old, tc.new, 1)
			}
			bs, err := envoy.ReadBootstrap([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			attempts := tc.attempts
			if attempts == "" {
				attempts = a
			}
			fs := findings(tc.backoff, attempts)
			if tc.sc.Name == postScenario.Name {
				fs = []translate.Finding{fs[0], fs[2], fs[3]}
			}
			for _, v := range JudgeEnvoy(bs, tc.sc, false, fs) {
				want := Backed
				if w, ok := tc.want[v.Feature]; ok {
					want = w
				}
				if v.Outcome != want {
					t.Errorf("%s = %s, want %s: %s", v.Feature, v.Outcome, want, v.Reason)
				}
			}
		})
	}
}

// TestJudgeEnvoyDeadRule: a dead rule's route answers 500 itself; its
// retry findings are unsupported.
func TestJudgeEnvoyDeadRule(t *testing.T) {
	sc := scenarioNamed(t, "dead-rule-answers-500")
	dead := "name: dead\n                direct_response: {status: 500}\n              - match: {prefix: /}\n                name: retrying"
	tests := []struct {
		name, old, new string
		refs, retry    translate.Status
		want           map[translate.Feature]Outcome
	}{
		{name: "direct_response 500", old: "name: retrying", new: dead, refs: translate.Honoured, retry: translate.Unsupported},
		{name: "direct_response 503", old: "name: retrying", new: strings.Replace(dead, "500", "503", 1), refs: translate.Honoured, retry: translate.Unsupported,
			want: map[translate.Feature]Outcome{translate.FeatureBackendRefs: Contradicted}},
		{name: "retries claimed on a dead rule", old: "name: retrying", new: dead, refs: translate.Honoured, retry: translate.Honoured,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted, translate.FeatureRetryCodes: Contradicted}},
		{name: "falls through to a proxying route", refs: translate.Honoured, retry: translate.Unsupported,
			want: map[translate.Feature]Outcome{translate.FeatureBackendRefs: Contradicted,
				translate.FeatureRetryAttempts: Contradicted, translate.FeatureRetryCodes: Contradicted}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			yaml := strings.ReplaceAll(envoyBootstrap, "PATH", sc.Path())
			if tc.old != "" {
				yaml = strings.Replace(yaml, tc.old, tc.new, 1)
			}
			bs, err := envoy.ReadBootstrap([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			fs := []translate.Finding{
				finding(translate.FeatureBackendRefs, tc.refs),
				finding(translate.FeatureRetryAttempts, tc.retry),
				finding(translate.FeatureRetryCodes, tc.retry),
			}
			for _, v := range JudgeEnvoy(bs, sc, false, fs) {
				want := Backed
				if w, ok := tc.want[v.Feature]; ok {
					want = w
				}
				if v.Outcome != want {
					t.Errorf("%s = %s, want %s: %s", v.Feature, v.Outcome, want, v.Reason)
				}
			}
		})
	}
}
