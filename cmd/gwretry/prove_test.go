//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/e2e"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestProveExample runs `gwretry prove` on the shipped example for every
// installed data plane, as the README shows: every claim exercised holds,
// the run stays within its time cap, and no proxy is left running. The
// data planes run in parallel: the scenarios mostly wait.
func TestProveExample(t *testing.T) {
	tmp := privateTemp(t)
	t.Run("targets", func(t *testing.T) {
		for _, name := range []string{"nginx", "haproxy", "traefik", "envoy"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				proveExample(t, name)
			})
		}
	})
	if left := leftProxies(t, tmp); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// privateTemp points TMPDIR at a directory of the test's own, so that the
// processes prove starts name it in their command lines (their
// configuration and run directories are under it).
func privateTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return dir
}

func proveExample(t *testing.T, name string) {
	if name == "envoy" && proxytest.Find(name) == "" {
		t.Skip("envoy not installed")
	}
	proxytest.Require(t, name)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"prove", example, "--target", name, "--report", "json", "--timeout", "3m"},
		strings.NewReader(""), &stdout, &stderr)
	took := time.Since(start)
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if took > 3*time.Minute {
		t.Errorf("took %v, past --timeout 3m", took)
	}
	var out proveJSON
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("--report json: %v", err)
	}
	if out.Target != name || out.Held == 0 || out.Contradicted != 0 {
		t.Errorf("target %s, %d held, %d contradicted; want %s, some held, none contradicted", out.Target, out.Held, out.Contradicted, name)
	}
	for _, c := range out.Claims {
		if c.Outcome == claimHeld && len(c.Scenarios) == 0 {
			t.Errorf("%s rule %d %s held without a scenario", c.Route, c.Rule, c.Feature)
		}
		if c.Outcome == claimNotExercised && c.Why == "" {
			t.Errorf("%s rule %d %s not exercised without a reason", c.Route, c.Rule, c.Feature)
		}
	}
}

// leftProxies lists the processes still running on a configuration that
// prove wrote under tmp (their command line names it) and this process's
// children.
func leftProxies(t *testing.T, tmp string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := strconv.Itoa(os.Getpid())
	var left []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		// stat: pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		child := len(fields) > 1 && fields[1] == self
		if child || bytes.Contains(cmdline, []byte(tmp)) {
			left = append(left, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return left
}

// backoffLiar is nginx, except that it claims to honour retry.backoff. It
// is no translate.Judge, so only the real proxy can catch it.
type backoffLiar struct{ nginx *nginx.Backend }

func (b backoffLiar) Name() string           { return b.nginx.Name() }
func (b backoffLiar) Versions() []string     { return b.nginx.Versions() }
func (b backoffLiar) Scope() translate.Scope { return b.nginx.Scope() }

func (b backoffLiar) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	out, err := b.nginx.Generate(m, opts)
	if err != nil {
		return nil, err
	}
	for i, f := range out.Findings {
		if f.Feature == translate.FeatureRetryBackoff {
			out.Findings[i].Decide(report.Decide(report.ReasonConfigured))
			out.Findings[i].Message = "retries wait the backoff"
		}
	}
	return out, nil
}

// TestProveCatchesALie: a backend that says nginx honours backoff makes
// prove exit 5 and name the claim, with what nginx did.
func TestProveCatchesALie(t *testing.T) {
	proxytest.Require(t, "nginx")
	tmp := privateTemp(t)
	o := &proveOptions{limits: translate.DefaultLimits(), target: "nginx@1.22", report: "text", channel: "standard",
		timeout: 2 * time.Minute, scenarioTimeout: 30 * time.Second,
		available: func(backends.Settings) ([]translate.Backend, error) {
			return []translate.Backend{backoffLiar{nginx.New()}}, nil
		}}
	var stdout, stderr bytes.Buffer
	err := runProve(o, []string{example}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, &stderr); code != exitContradicted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitContradicted, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "CONTRADICTED  shop/storefront rule 0 (catalogue) retry.backoff = honoured") ||
		!strings.Contains(out, "want at least 100ms") || !strings.Contains(out, "1 contradicted") {
		t.Errorf("the output does not name the claim and the gap:\n%s", out)
	}
	if strings.Count(out, "CONTRADICTED") != 1 {
		t.Errorf("more than the lie was contradicted:\n%s", out)
	}
	if left := leftProxies(t, tmp); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// TestProveTimeCap: when --timeout is up, the remaining scenarios are not
// run, prove says so and exits 70, promptly and with nothing left running.
func TestProveTimeCap(t *testing.T) {
	proxytest.Require(t, "nginx")
	tmp := privateTemp(t)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run([]string{"prove", example, "--target", "nginx", "--timeout", "1ms"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInternal || !strings.Contains(stderr.String(), "--timeout of 1ms is up") {
		t.Errorf("exit %d, want %d with the time cap named\nstderr:\n%s", code, exitInternal, stderr.String())
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v after a 1ms cap", took)
	}
	if left := leftProxies(t, tmp); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

func TestProveUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no target", []string{"prove", example}, "--target is required"},
		{"two targets", []string{"prove", example, "--target", "nginx,haproxy"}, "prove runs one data plane"},
		{"not a live target", []string{"prove", example, "--target", "grpc"}, "prove runs nginx, haproxy, traefik, envoy"},
		{"missing binary", []string{"prove", example, "--target", "nginx", "--proxy", "/nonexistent/nginx"}, "not an executable file"},
		{"bad report", []string{"prove", example, "--target", "nginx", "--report", "yaml"}, "want text or json"},
		{"no path", []string{"prove", "--target", "nginx"}, "at least one PATH"},
		{"matrix without suite", []string{"prove", example, "--target", "nginx", "--matrix", "x.md"}, "--matrix needs --suite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d with %q", code, stderr.String(), exitUsage, tc.want)
			}
		})
	}
}

// TestProveCoverage: a claim of a rule with several matches or hostnames
// says that prove exercised only the one request it sent; a rule with one
// match on one hostname says nothing. (A rule without hostnames is also
// served on every other route's hostname of its listener: each is a place
// of its own.)
func TestProveCoverage(t *testing.T) {
	const input = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: shop
  namespace: shop
spec:
  hostnames: [a.example.com, b.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /one}
    - path: {type: PathPrefix, value: /two}
    retry: {attempts: 2, codes: [503]}
    backendRefs: [{name: web, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: single
  namespace: shop
spec:
  hostnames: [c.example.com]
  rules:
  - retry: {attempts: 2, codes: [503]}
    backendRefs: [{name: web, port: 80}]
`
	in, err := translate.Load([]string{"-"}, strings.NewReader(input), translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := translate.Build(in, translate.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := proveJSON{Claims: []proveClaim{
		{Route: "shop/shop", Rule: 0, Feature: translate.FeatureRetryCodes, Outcome: claimHeld, Request: "a.example.com/one"},
		{Route: "shop/shop", Rule: 0, Feature: translate.FeatureRetryAttempts, Outcome: claimNotExercised, Why: "x"},
		{Route: "shop/single", Rule: 0, Feature: translate.FeatureRetryCodes, Outcome: claimHeld, Request: "/"},
	}}
	out.addCoverage(m)
	for _, tc := range []struct {
		i    int
		want string
	}{
		{0, "exercised only on a.example.com/one, from the first match prove can invert; the rule serves 4 places (matches, hostnames and listeners), the other 3 are not exercised"},
		{1, ""},
		{2, ""},
	} {
		if got := out.Claims[tc.i].Coverage; got != tc.want {
			t.Errorf("claim %d: coverage %q, want %q", tc.i, got, tc.want)
		}
	}
	var text bytes.Buffer
	if err := writeProve(&text, "text", out, 1, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "held in: \n    exercised only on a.example.com/one") {
		t.Errorf("text output lacks the coverage:\n%s", text.String())
	}
}

// TestProveAddUnexercised: an unexercised feature becomes a claim with
// its target's finding, or gives its reason to a claim that no scenario
// decided; a held claim keeps its outcome.
func TestProveAddUnexercised(t *testing.T) {
	out := proveJSON{Target: "nginx", Claims: []proveClaim{
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Outcome: claimHeld},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryBackoff, Outcome: claimNotExercised},
	}}
	out.addUnexercised([]e2e.Unexercised{
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Why: "ignored"},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryBackoff, Why: "too long"},
		{Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Why: "regex"},
		{Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Why: "twice"},
	}, []translate.Finding{
		{Target: "haproxy", Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Status: translate.Unsupported, Message: "other target"},
		{Target: "nginx", Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Status: translate.Honoured, RuleName: "r"},
	})
	want := []proveClaim{
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryBackoff, Outcome: claimNotExercised, Why: "too long"},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Outcome: claimHeld},
		{Route: "ns/b", Rule: 1, RuleName: "r", Feature: translate.FeatureRequestTimeout, Status: translate.Honoured, Outcome: claimNotExercised, Why: "regex"},
	}
	if diff := cmp.Diff(want, out.Claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if out.Held != 1 || out.NotExercised != 2 {
		t.Errorf("held %d, not exercised %d; want 1, 2", out.Held, out.NotExercised)
	}
}
