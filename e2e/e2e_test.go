//go:build unix

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// liveTarget is a data plane the scenarios run against.
type liveTarget struct {
	name string
	// optional targets skip when absent, even in CI.
	optional bool
	kind     *dataplane.Kind
}

// liveTargets are the binaries gwretry runs (dataplane.Kinds), in prove's
// order.
func liveTargets() []liveTarget {
	var out []liveTarget
	for _, k := range dataplane.Kinds() {
		out = append(out, liveTarget{name: k.Name, optional: k.Optional, kind: k})
	}
	return out
}

// version returns the MAJOR.MINOR passed to --target and a description
// of the binary.
func (tg liveTarget) version(t *testing.T, bin string) (string, string) {
	t.Helper()
	short, full, err := tg.kind.Version(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	return short, tg.kind.Describe(full) + ", live"
}

// start runs the generated configuration in out and returns the address
// to send requests to; the proxy stops when the test ends.
func (tg liveTarget) start(t *testing.T, out, listen string) string {
	t.Helper()
	return tg.startBin(t, proxytest.Require(t, tg.name), out, listen)
}

// startBin is start with the binary bin (one of dataplane.Installed).
func (tg liveTarget) startBin(t *testing.T, bin, out, listen string) string {
	t.Helper()
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)
	p, addr, err := prove.StartProxy(context.Background(), prove.Live{Name: tg.name, Bin: bin}, out, listen, t.TempDir(), ports)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return addr
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestScenarios runs every scenario against every installed data plane
// version (the one on PATH and those built into the cache by make test)
// and judges the report with what the proxy did. It also runs the static
// Envoy checks. docs/matrix.md is written from the same runs by
// `gwretry prove --suite --matrix` (make matrix).
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("every scenario on every data plane, and the static Envoy checks: in the full tier (make test), not the fast one")
	}
	matrix := prove.NewMatrix()
	scenarios := prove.Scenarios()
	for _, tg := range liveTargets() {
		t.Run(tg.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("live scenarios: not in the fast tier (-short)")
			}
			bins := dataplane.Installed(tg.name)
			if tg.optional && len(bins) == 0 {
				t.Skipf("%s not installed; its configuration is checked statically", tg.name)
			}
			if len(bins) == 0 {
				bins = []string{proxytest.Require(t, tg.name)}
			}
			for _, bin := range bins {
				version, desc := tg.version(t, bin)
				t.Run(version, func(t *testing.T) {
					matrix.Row(tg.name, version, desc)
					for _, sc := range scenarios {
						t.Run(sc.Name, func(t *testing.T) {
							verdicts := runScenario(t, tg, bin, version, sc)
							matrix.Add(tg.name, version, sc.Name, verdicts)
						})
					}
				})
			}
		})
	}
	t.Run("envoy-config", func(t *testing.T) { checkEnvoyConfigs(t, scenarios, matrix) })
}

// runScenario generates, starts, sends and judges one scenario on one
// target, and fails the test when the report and the proxy disagree.
func runScenario(t *testing.T, tg liveTarget, bin, version string, sc prove.Scenario) []prove.Verdict {
	run := observe(t, tg, bin, version, sc)
	verdicts := prove.Judge(sc.Test, run.Findings, run.Obs)
	reportVerdicts(t, tg.name, verdicts)
	checkTimeline(t, tg.name+"@"+version, sc, run)
	t.Logf("observed:\n%s", run.Obs)
	if t.Failed() {
		t.Logf("findings:\n%s\nconfiguration:\n%s", formatFindings(run.Findings), run.Config)
	}
	return verdicts
}

// eachInstalled runs f as a subtest for every installed binary of tg
// (dataplane.Installed: nginx 1.22 and 1.26, HAProxy 2.6 and 3.0...),
// named by its version; an optional target that is not installed is
// skipped.
func eachInstalled(t *testing.T, tg liveTarget, f func(t *testing.T, bin, version string)) {
	t.Helper()
	bins := dataplane.Installed(tg.name)
	if tg.optional && len(bins) == 0 {
		t.Skipf("%s not installed", tg.name)
	}
	if len(bins) == 0 {
		bins = []string{proxytest.Require(t, tg.name)}
	}
	for _, bin := range bins {
		version, _ := tg.version(t, bin)
		t.Run(version, func(t *testing.T) { f(t, bin, version) })
	}
}

// scenarioTimeout bounds one scenario run.
const scenarioTimeout = time.Minute

// observe runs the scenario with Observe, generating with the CLI, and
// fails the test when it cannot.
func observe(t *testing.T, tg liveTarget, bin, version string, sc prove.Scenario) prove.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTimeout)
	defer cancel()
	run, err := prove.Observe(ctx, prove.Live{Name: tg.name, Bin: bin, Version: version}, sc, cliGenerator, t.TempDir())
	if err != nil {
		t.Fatalf("%v\nconfiguration:\n%s\nproxy log:\n%s", err, run.Config, run.Log)
	}
	return run
}

// cliGenerator generates a scenario's configuration with the gwretry CLI.
func cliGenerator(ctx context.Context, dir string, sc prove.Scenario, target, listen string, endpoints []string) (*translate.Report, error) {
	var flags []string
	if sc.RetryNonIdempotent {
		flags = append(flags, "--retry-non-idempotent")
	}
	return runCLI(ctx, dir, sc.Manifest(), target, listen, endpoints, flags...)
}

// runCLI runs the CLI on manifest for target into dir/out and returns its
// report.
func runCLI(ctx context.Context, dir, manifest, target, listen string, endpoints []string, flags ...string) (*translate.Report, error) {
	file := filepath.Join(dir, "route.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "out")
	args := []string{"translate", file, "--target", target, "--listen", listen, "--output-dir", out, "--report", "none"}
	for _, e := range endpoints {
		args = append(args, "--endpoint", e)
	}
	args = append(args, flags...)
	cmd := exec.CommandContext(ctx, gwretryBin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("gwretry %s: %w\n%s\nmanifest:\n%s", strings.Join(args, " "), err, stderr.String(), manifest)
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		return nil, err
	}
	var report translate.Report
	if err := json.Unmarshal(data, &report); err != nil {
		return nil, fmt.Errorf("report.json: %w", err)
	}
	return &report, nil
}

// generate runs the CLI on the scenario's manifest and returns the report.
func generate(t *testing.T, dir string, sc prove.Scenario, target, listen string, endpoints ...string) *translate.Report {
	t.Helper()
	r, err := cliGenerator(context.Background(), dir, sc, target, listen, endpoints)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// generateManifest runs the CLI on manifest for target into dir/out and
// returns its report.
func generateManifest(t *testing.T, dir, manifest, target, listen string, endpoints []string, flags ...string) *translate.Report {
	t.Helper()
	r, err := runCLI(context.Background(), dir, manifest, target, listen, endpoints, flags...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ruleFindings returns the findings of rule 0 of route on target.
func ruleFindings(r *translate.Report, target, route string) []translate.Finding {
	return prove.RuleFindings(r, target, route, 0)
}

// waitReadyT is waitReady for a test.
func waitReadyT(t *testing.T, addr string) {
	t.Helper()
	if err := prove.WaitReady(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
}

func formatFindings(fs []translate.Finding) string {
	var lines []string
	for _, f := range fs {
		lines = append(lines, fmt.Sprintf("    %s = %s (%s)", f.Feature, f.Status, prove.RecordText(f.Decision)))
	}
	return strings.Join(lines, "\n")
}

// TestHarnessCatchesALieOnRealNginx runs the backoff scenario on the real
// nginx, then judges it with a report doctored to claim that nginx honours
// backoff: the harness must fail, showing the finding and the observation.
func TestHarnessCatchesALieOnRealNginx(t *testing.T) {
	tg := liveTargets()[0]
	bin := proxytest.Require(t, tg.name)
	version, _ := tg.version(t, bin)
	sc := scenarioNamed(t, "backoff-between-tries")
	run := observe(t, tg, bin, version, sc)
	lie := slices.Clone(run.Findings)
	found := false
	for i, f := range lie {
		if f.Feature == translate.FeatureRetryBackoff {
			lie[i].Status, lie[i].Decision, found = translate.Honoured, report.Decide(report.ReasonConfigured).Set("retries wait at least 200ms"), true
		}
	}
	if !found {
		t.Fatalf("no backoff finding in %v", run.Findings)
	}
	rec := &recordingTB{TB: t}
	reportVerdicts(rec, tg.name, prove.Judge(sc.Test, lie, run.Obs))
	if len(rec.errors) == 0 {
		t.Fatalf("the harness accepted a report claiming nginx honours backoff; observed:\n%s", run.Obs)
	}
	if !strings.Contains(rec.errors[0], "retry.backoff = honoured") || !strings.Contains(rec.errors[0], "want at least 200ms") {
		t.Errorf("the failure does not show the finding and the gap:\n%s", rec.errors[0])
	}
	rec = &recordingTB{TB: t}
	reportVerdicts(rec, tg.name, prove.Judge(sc.Test, run.Findings, run.Obs))
	if len(rec.errors) != 0 {
		t.Errorf("the real report failed: %v", rec.errors)
	}
}
