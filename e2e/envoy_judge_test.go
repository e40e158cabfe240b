package e2e

import (
	"strings"
	"testing"

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
                name: no-retry
                route: {cluster: c}
              - match: {path_separated_prefix: PATH}
                name: retrying
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
	findings := func(backoff translate.Status) []translate.Finding {
		return []translate.Finding{
			finding(translate.FeatureRetryAttempts, h, "num_retries 2; POST, PATCH and LOCK requests are not retried"),
			finding(translate.FeatureRetryBackoff, backoff, "base_interval 200ms, fully jittered: a retry can start at once"),
			finding(translate.FeatureRetryCodes, h, "retriable-status-codes [500]"),
			finding(translate.FeatureRetryConnectionErrors, h, "connect-failure,refused-stream,reset"),
		}
	}
	tests := []struct {
		name     string
		sc       Scenario
		old, new string // replaced in envoyBootstrap
		backoff  translate.Status
		want     map[translate.Feature]Outcome // features not listed must be Backed
	}{
		{name: "as generated", sc: backoffScenario, backoff: a},
		{name: "backoff claimed honoured", sc: backoffScenario, backoff: h,
			want: map[translate.Feature]Outcome{translate.FeatureRetryBackoff: Contradicted}},
		{name: "one retry too many", sc: backoffScenario, old: "num_retries: 2", new: "num_retries: 3", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "default circuit breaker", sc: backoffScenario, old: "max_retries: 1024", new: "max_requests: 1024", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
		{name: "gateway-error retries unlisted codes", sc: backoffScenario, old: ",retriable-status-codes", new: ",retriable-status-codes,gateway-error", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryCodes: Contradicted}},
		{name: "no reset", sc: backoffScenario, old: "refused-stream,reset,", new: "refused-stream,", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryConnectionErrors: Contradicted}},
		{name: "no back-off configured", sc: backoffScenario, old: "retry_back_off: {base_interval: 0.200s}", new: "per_try_timeout: 1s", backoff: a,
			want: map[translate.Feature]Outcome{translate.FeatureRetryBackoff: Contradicted}},
		{name: "POST takes the route without retries", sc: postScenario, old: "retry_back_off: {base_interval: 0.200s}", new: "per_try_timeout: 1s"},
		{name: "POST would be retried", sc: postScenario, old: "safe_regex: {regex: POST|PATCH|LOCK}", new: "exact: LOCK",
			want: map[translate.Feature]Outcome{translate.FeatureRetryAttempts: Contradicted}},
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
			bs, err := DecodeEnvoy([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			fs := findings(tc.backoff)
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

func TestDecodeEnvoyRejectsInvalid(t *testing.T) {
	for name, broken := range map[string]string{
		"unknown field":    strings.Replace(envoyBootstrap, "stat_prefix: s", "stat_prefix: s\n          no_such_field: 1", 1),
		"invalid value":    strings.Replace(envoyBootstrap, "port_value: 10080", "port_value: 70000", 1),
		"bad typed config": strings.Replace(envoyBootstrap, "name: r\n", "name: r\n            virtual_hosts_typo: []\n", 1),
	} {
		if _, err := DecodeEnvoy([]byte(broken)); err == nil {
			t.Errorf("%s: DecodeEnvoy accepted it", name)
		}
	}
}
