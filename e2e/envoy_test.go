//go:build unix

package e2e

import (
	"context"
	"testing"

	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/prove"
)

// checkEnvoyConfigs generates every scenario for every Envoy version gwretry
// knows and checks the generated route, retry policy and cluster field by
// field against the findings (JudgeEnvoy). No Envoy binary is needed.
func checkEnvoyConfigs(t *testing.T, scenarios []prove.Scenario, matrix *prove.Matrix) {
	for _, version := range envoy.New().Versions() {
		matrix.Row("envoy", version, "generated configuration only")
		for _, sc := range scenarios {
			t.Run(version+"/"+sc.Name, func(t *testing.T) {
				verdicts, err := prove.CheckConfig(context.Background(), "envoy", version, sc, cliGenerator, t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				reportVerdicts(t, "envoy", verdicts)
				matrix.Add("envoy", version, sc.Name, verdicts)
			})
		}
	}
}
