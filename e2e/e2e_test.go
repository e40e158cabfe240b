//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

// liveTarget is a data plane the scenarios run against.
type liveTarget struct {
	name string
	// version returns the MAJOR.MINOR passed to --target and a
	// description of the binary.
	version func(t *testing.T, bin string) (string, string)
	// start runs the generated configuration in out and returns the
	// address to send requests to.
	start func(t *testing.T, out, listen string) string
	// optional targets skip when absent, even in CI.
	optional bool
}

func liveTargets() []liveTarget {
	return []liveTarget{
		{name: "nginx", version: versionFrom(`nginx/(\d+\.\d+)(\.\d+)?`, "-v"),
			start: func(t *testing.T, out, listen string) string {
				return proxytest.StartNginx(t, filepath.Join(out, "nginx", "nginx.conf"), listen).Addr
			}},
		{name: "haproxy", version: versionFrom(`HAProxy version (\d+\.\d+)(\.\d+)?`, "-v"),
			start: func(t *testing.T, out, listen string) string {
				return proxytest.StartHAProxy(t, filepath.Join(out, "haproxy", "haproxy.cfg"), listen).Addr
			}},
		{name: "traefik", version: traefikVersion, start: startTraefik},
		{name: "envoy", version: versionFrom(`version: [0-9a-f]+/(\d+\.\d+)(\.\d+)?`, "--version"), optional: true,
			start: func(t *testing.T, out, listen string) string {
				return proxytest.StartEnvoy(t, filepath.Join(out, "envoy", "envoy.yaml"), listen).Addr
			}},
	}
}

// versionFrom runs the binary with arg and reads its version with re.
func versionFrom(re, arg string) func(t *testing.T, bin string) (string, string) {
	return func(t *testing.T, bin string) (string, string) {
		t.Helper()
		out, _ := exec.Command(bin, arg).CombinedOutput()
		m := regexp.MustCompile(re).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("%s %s: no version in %q", bin, arg, out)
		}
		return m[1], filepath.Base(bin) + " " + m[1] + m[2] + ", live"
	}
}

// traefikVersion reads `traefik version`; the test build from the module
// proxy says "dev", and is proxytest.TraefikVersion.
func traefikVersion(t *testing.T, bin string) (string, string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	full := proxytest.TraefikVersion
	if m := regexp.MustCompile(`Version:\s+v?(\d+\.\d+\.\d+)`).FindStringSubmatch(string(out)); m != nil {
		full = "v" + m[1]
	}
	short := regexp.MustCompile(`^v(\d+\.\d+)`).FindStringSubmatch(full)
	if short == nil {
		t.Fatalf("traefik version %q", full)
	}
	return short[1], "traefik " + full + ", live"
}

// startTraefik runs a test copy of the generated configuration (the file
// provider reads the copy of dynamic.yaml; the API is on for WaitLoaded)
// and waits until Traefik has loaded it.
func startTraefik(t *testing.T, out, _ string) string {
	t.Helper()
	static := readFile(t, filepath.Join(out, "traefik", "traefik.yaml"))
	dynamic := readFile(t, filepath.Join(out, "traefik", "dynamic.yaml"))
	cfg := proxytest.WriteTraefikConfig(t, static, dynamic, nil)
	if len(cfg.EntryPoints) != 1 {
		t.Fatalf("traefik.yaml has entry points %v, want one", cfg.EntryPoints)
	}
	var addr string
	for _, a := range cfg.EntryPoints {
		addr = a
	}
	p := proxytest.StartTraefik(t, cfg.StaticPath, cfg.API)
	if err := cfg.WaitLoaded(p, 10*time.Second); err != nil {
		t.Fatalf("Traefik did not load the configuration: %v\n%s", err, p.Output())
	}
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

// TestScenarios runs every scenario against every installed data plane and
// judges the report with what the proxy did; with -matrix it then writes
// the capability matrix. It also runs the static Envoy checks, so that the
// matrix has every target.
func TestScenarios(t *testing.T) {
	matrix := NewMatrix()
	scenarios := Scenarios()
	for _, tg := range liveTargets() {
		t.Run(tg.name, func(t *testing.T) {
			bin := proxytest.Find(tg.name)
			if bin == "" {
				matrix.Skip(tg.name+" (live)", "binary not found")
			}
			if tg.optional && bin == "" {
				t.Skipf("%s not installed; its configuration is checked statically", tg.name)
			}
			bin = proxytest.Require(t, tg.name)
			version, desc := tg.version(t, bin)
			matrix.Row(tg.name, version, desc)
			for _, sc := range scenarios {
				t.Run(sc.Name, func(t *testing.T) {
					verdicts := runScenario(t, tg, version, sc)
					matrix.Add(tg.name, version, sc.Name, verdicts)
				})
			}
		})
	}
	t.Run("envoy-config", func(t *testing.T) { checkEnvoyConfigs(t, scenarios, matrix) })
	if path := matrixPath(); path != "" {
		if err := os.WriteFile(path, matrix.Markdown(scenarios), 0o644); err != nil {
			t.Fatalf("writing the matrix: %v", err)
		}
		t.Logf("wrote %s", path)
	}
}

// runScenario generates, starts, sends and judges one scenario on one
// target, and fails the test when the report and the proxy disagree.
func runScenario(t *testing.T, tg liveTarget, version string, sc Scenario) []Verdict {
	run := observe(t, tg, version, sc)
	verdicts := Judge(sc.Test, run.findings, run.obs)
	reportVerdicts(t, tg.name, verdicts)
	checkTimeline(t, tg.name+"@"+version, sc, run)
	t.Logf("observed:\n%s", run.obs)
	if t.Failed() {
		t.Logf("findings:\n%s\nconfiguration:\n%s", formatFindings(run.findings), run.config)
	}
	return verdicts
}

// scenarioRun is what one scenario run on one target produced.
type scenarioRun struct {
	findings []translate.Finding
	obs      Observation
	config   string
	// listen and endpoints are the --listen and --endpoint values the
	// configuration was generated with.
	listen    string
	endpoints []string
}

// observe generates the scenario's configuration with the CLI, starts the
// real proxy on it, sends the requests and returns the rule's findings and
// what happened.
func observe(t *testing.T, tg liveTarget, version string, sc Scenario) scenarioRun {
	t.Helper()
	dir := t.TempDir()
	servers, endpointFlag := startEndpoints(t, sc)
	ready := flaky.New(t, "ready")
	listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
	out := filepath.Join(dir, "out")
	endpoints := []string{endpointFlag, fmt.Sprintf("ready.%s:8080=%s", Namespace, ready.Addr())}
	report := generate(t, dir, sc, tg.name+"@"+version, listen, endpoints...)
	run := scenarioRun{findings: ruleFindings(report, tg.name, sc.Route()), config: configText(out, tg.name),
		listen: listen, endpoints: endpoints}
	addr := tg.start(t, out, listen)
	waitReady(t, addr)
	run.obs = send(t, addr, sc, servers)
	return run
}

// startEndpoints starts the scenario's flaky servers and returns them with
// the --endpoint value of its Service.
func startEndpoints(t *testing.T, sc Scenario) ([]*flaky.Server, string) {
	t.Helper()
	var servers []*flaky.Server
	var addrs []string
	for _, e := range sc.endpoints() {
		if e.Refused {
			a, err := flaky.RefusedAddr()
			if err != nil {
				t.Fatal(err)
			}
			addrs = append(addrs, a)
			continue
		}
		s := flaky.New(t, e.Name)
		if sc.KeepAlive {
			var err error
			if s, err = flaky.StartKeepAlive(e.Name); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
		}
		s.Handle(sc.Path(), e.Script)
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	return servers, fmt.Sprintf("%s.%s:8080=%s", sc.Name, Namespace, strings.Join(addrs, ","))
}

// generate runs the CLI on the scenario's manifest and returns the report.
func generate(t *testing.T, dir string, sc Scenario, target, listen string, endpoints ...string) *translate.Report {
	t.Helper()
	var flags []string
	if sc.RetryNonIdempotent {
		flags = append(flags, "--retry-non-idempotent")
	}
	return generateManifest(t, dir, sc.Manifest(), target, listen, endpoints, flags...)
}

// generateManifest runs the CLI on manifest for target into dir/out and
// returns its report.
func generateManifest(t *testing.T, dir, manifest, target, listen string, endpoints []string, flags ...string) *translate.Report {
	t.Helper()
	file := filepath.Join(dir, "route.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"translate", file, "--target", target, "--listen", listen, "-o", out, "--report", "none"}
	for _, e := range endpoints {
		args = append(args, "--endpoint", e)
	}
	args = append(args, flags...)
	cmd := exec.Command(gwretryBin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gwretry %s: %v\n%s\nmanifest:\n%s", strings.Join(args, " "), err, stderr.String(), manifest)
	}
	var report translate.Report
	if err := json.Unmarshal(readFile(t, filepath.Join(out, "report.json")), &report); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	return &report
}

// ruleFindings returns the findings of rule 0 of route on target.
func ruleFindings(r *translate.Report, target, route string) []translate.Finding {
	var out []translate.Finding
	for _, f := range r.Findings {
		if f.Target == target && f.Route == route && f.Rule == 0 {
			out = append(out, f)
		}
	}
	return out
}

// waitReady polls the readiness route until the proxy answers 200 from
// the ready endpoint.
func waitReady(t *testing.T, addr string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := client.Get("http://" + addr + ReadyPath)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && resp.Header.Get(flaky.EndpointHeader) == "ready" {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("proxy on %s never routed %s to the ready endpoint: %s", addr, ReadyPath, last)
}

// send sends the scenario's requests one after the other and collects what
// the client and the endpoints saw.
func send(t *testing.T, addr string, sc Scenario, servers []*flaky.Server) Observation {
	t.Helper()
	transport := &http.Transport{DisableKeepAlives: !sc.KeepAlive, MaxIdleConnsPerHost: 1}
	defer transport.CloseIdleConnections()
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	if sc.KeepAlive {
		// Warm the client and upstream connections: the measured
		// requests then arrive on kept-alive ones.
		resp, err := client.Get("http://" + addr + sc.Path())
		if err != nil {
			t.Fatalf("warm-up request: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, s := range servers {
			s.WaitIdle(3 * time.Second)
		}
	}
	var obs Observation
	for i := range sc.requests() {
		id := strconv.Itoa(i + 1)
		req, err := http.NewRequest(sc.method(), "http://"+addr+sc.Path(), strings.NewReader(sc.body()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(flaky.RequestHeader, id)
		r := Result{Method: sc.method(), Path: sc.Path()}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			r.Err = err.Error()
		} else {
			r.Status = resp.StatusCode
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			r.Complete = err == nil && (sc.WantBody == "" || string(body) == sc.WantBody)
			if err != nil {
				r.Err = err.Error()
			}
		}
		r.Duration = time.Since(start)
		for _, s := range servers {
			if !s.WaitIdle(3 * time.Second) {
				t.Errorf("endpoint %s still busy 3s after the answer", s.Name())
			}
		}
		for _, h := range flaky.Merge(servers...) {
			if h.Request == id {
				r.Hits = append(r.Hits, h)
			}
		}
		obs = append(obs, r)
	}
	return obs
}

func formatFindings(fs []translate.Finding) string {
	var lines []string
	for _, f := range fs {
		lines = append(lines, fmt.Sprintf("    %s = %s %q", f.Feature, f.Status, f.Message))
	}
	return strings.Join(lines, "\n")
}

// configText returns the generated configuration of a target for failure
// messages.
func configText(out, target string) string {
	var b strings.Builder
	_ = filepath.WalkDir(filepath.Join(out, target), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "--- %s\n%s", filepath.Base(p), data)
		}
		return nil
	})
	return b.String()
}

// TestHarnessCatchesALieOnRealNginx runs the backoff scenario on the real
// nginx, then judges it with a report doctored to claim that nginx honours
// backoff: the harness must fail, showing the finding and the observation.
func TestHarnessCatchesALieOnRealNginx(t *testing.T) {
	tg := liveTargets()[0]
	bin := proxytest.Require(t, tg.name)
	version, _ := tg.version(t, bin)
	sc := scenarioNamed(t, "backoff-between-tries")
	run := observe(t, tg, version, sc)
	lie := slices.Clone(run.findings)
	found := false
	for i, f := range lie {
		if f.Feature == translate.FeatureRetryBackoff {
			lie[i].Status, lie[i].Message, found = translate.Honoured, "retries wait at least 200ms", true
		}
	}
	if !found {
		t.Fatalf("no backoff finding in %v", run.findings)
	}
	rec := &recordingTB{TB: t}
	reportVerdicts(rec, tg.name, Judge(sc.Test, lie, run.obs))
	if len(rec.errors) == 0 {
		t.Fatalf("the harness accepted a report claiming nginx honours backoff; observed:\n%s", run.obs)
	}
	if !strings.Contains(rec.errors[0], "retry.backoff = honoured") || !strings.Contains(rec.errors[0], "want at least 200ms") {
		t.Errorf("the failure does not show the finding and the gap:\n%s", rec.errors[0])
	}
	rec = &recordingTB{TB: t}
	reportVerdicts(rec, tg.name, Judge(sc.Test, run.findings, run.obs))
	if len(rec.errors) != 0 {
		t.Errorf("the real report failed: %v", rec.errors)
	}
}
