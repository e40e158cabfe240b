//go:build unix

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/backends/envoy"
)

// checkEnvoyConfigs generates every scenario for every Envoy version gwretry
// knows and checks the generated route, retry policy and cluster field by
// field against the findings (JudgeEnvoy). No Envoy binary is needed.
func checkEnvoyConfigs(t *testing.T, scenarios []Scenario, matrix *Matrix) {
	for _, version := range envoy.New().Versions() {
		matrix.Row("envoy", version, "generated configuration only")
		for _, sc := range scenarios {
			t.Run(version+"/"+sc.Name, func(t *testing.T) {
				dir := t.TempDir()
				var addrs []string
				for i := range sc.endpoints() {
					addrs = append(addrs, fmt.Sprintf("127.0.0.%d:8080", i+1))
				}
				report := generate(t, dir, sc, "envoy@"+version, "127.0.0.1:10080",
					fmt.Sprintf("%s.%s:8080=%s", sc.Name, Namespace, strings.Join(addrs, ",")),
					fmt.Sprintf("ready.%s:8080=127.0.0.9:8080", Namespace))
				findings := ruleFindings(report, "envoy", sc.Route())
				if len(findings) == 0 {
					t.Fatalf("the report has no envoy finding for %s", sc.Route())
				}
				data := readFile(t, filepath.Join(dir, "out", "envoy", "envoy.yaml"))
				bs, err := DecodeEnvoy(data)
				if err != nil {
					t.Fatalf("%v\n%s", err, data)
				}
				verdicts := JudgeEnvoy(bs, sc, sc.RetryNonIdempotent, findings)
				reportVerdicts(t, "envoy", verdicts)
				matrix.Add("envoy", version, sc.Name, verdicts)
			})
		}
	}
}
