package envoy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// egRouteRetryCaveats are, by rule and feature, the params of each
// EnvoyGatewayRouteRetry caveat of out's findings.
func egRouteRetryCaveats(out *translate.Output) map[string]report.Params {
	got := map[string]report.Params{}
	for _, f := range out.Findings {
		for _, c := range f.Caveats {
			if c.Reason == report.CaveatEnvoyGatewayRouteRetry {
				got[fmt.Sprintf("%d %s", f.Rule, f.Feature)] = c.Params
			}
		}
	}
	return got
}

// TestEnvoyGatewayRouteRetry: where the input holds a BackendTrafficPolicy
// (Envoy Gateway runs the objects), a rule's own retry gets the caveat
// EnvoyGatewayRouteRetry on retry.connectionErrors and retry.codes (when
// set), with
// Envoy Gateway's triggers and codes (503 when the rule lists none): the
// deliberate difference from egctl that TestEgctlBTP also asserts. A
// retry from the policy and an input without one get none.
func TestEnvoyGatewayRouteRetry(t *testing.T) {
	triggers := "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes"
	gwPolicy := egPolicy("g", "Gateway gw", "2024-01-01T00:00:00Z", "  retry: {numRetries: 3, retryOn: {triggers: [gateway-error]}}\n")
	tests := []struct {
		name, rules, policies string
		want                  map[string]string // "rule feature": codes
	}{
		{"own retry without codes beside a Gateway's policy", egRule("/a", "") + egRule("/b", "    retry: {attempts: 2}\n"), gwPolicy,
			// No codes: the rule has no retry.codes finding.
			map[string]string{"1 retry.connectionErrors": "[503]"}},
		{"own retry with codes", egRule("/a", "    retry: {attempts: 2, codes: [500, 502]}\n"), gwPolicy,
			map[string]string{"0 retry.codes": "[500, 502]", "0 retry.connectionErrors": "[500, 502]"}},
		{"own retry replacing the route's policy", egRule("/a", "    retry: {attempts: 1, codes: [500]}\n"),
			egPolicy("p", "HTTPRoute r", "2024-01-01T00:00:00Z", "  retry: {numRetries: 4, retryOn: {triggers: [gateway-error]}}\n"),
			map[string]string{"0 retry.codes": "[500]", "0 retry.connectionErrors": "[500]"}},
		{"no BackendTrafficPolicy", egRule("/a", "    retry: {attempts: 2}\n"), "", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(p, []byte(fmt.Sprintf(egctlBase, tt.rules)+tt.policies), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _ := generate(t, egModel(t, p), translate.Options{})
			got := egRouteRetryCaveats(out)
			var keys []string
			for k, params := range got {
				keys = append(keys, k)
				if params["triggers"] != triggers || params["codes"] != tt.want[k] {
					t.Errorf("%s: params %v, want triggers %s, codes %s", k, params, triggers, tt.want[k])
				}
			}
			var want []string
			for k := range tt.want {
				want = append(want, k)
			}
			slices.Sort(keys)
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				t.Errorf("caveats on %v, want %v", keys, want)
			}
		})
	}
}
