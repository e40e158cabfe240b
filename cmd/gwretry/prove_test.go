//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
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
		// The package's shared API server (etcd and kube-apiserver,
		// internal/kubeapitest, in a kubeapitest-* directory) runs until
		// TestMain stops it: not a proxy prove started.
		if child && bytes.Contains(cmdline, []byte("/kubeapitest-")) {
			continue
		}
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
			// A whole lie: the record says configured, so the contract
			// holds and only the real proxy can catch it.
			out.Findings[i].Decide(report.Decide(report.ReasonConfigured).Set("a backoff"))
		}
	}
	return out, nil
}

// TestProveCatchesALie: a backend that says nginx honours backoff makes
// prove exit 5 and name the claim, with what nginx did.
func TestProveCatchesALie(t *testing.T) {
	proxytest.Require(t, "nginx")
	tmp := privateTemp(t)
	o := &proveOptions{limits: input.DefaultLimits(), target: "nginx@1.22", report: "text", channel: "standard",
		timeout: 2 * time.Minute, scenarioTimeout: 30 * time.Second,
		available: func(backends.Settings) ([]translate.Backend, error) {
			return []translate.Backend{backoffLiar{nginx.New()}}, nil
		}}
	var stdout, stderr bytes.Buffer
	err := runProve(o, []string{example}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, "gwretry", &stderr); code != exitContradicted {
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

// tamperedNginx is nginx whose generated nginx.conf is edited after
// gwretry wrote it and before the proxy starts, each old string replaced by
// its new one; the report is nginx's own, untouched. It is no
// translate.Judge, so only the real proxy can catch it.
type tamperedNginx struct {
	nginx *nginx.Backend
	edits [][2]string
	// applied counts the configurations each edit changed.
	applied []atomic.Int32
}

func (b *tamperedNginx) Name() string           { return b.nginx.Name() }
func (b *tamperedNginx) Versions() []string     { return b.nginx.Versions() }
func (b *tamperedNginx) Scope() translate.Scope { return b.nginx.Scope() }

func (b *tamperedNginx) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	out, err := b.nginx.Generate(m, opts)
	if err != nil {
		return nil, err
	}
	for i, f := range out.Files {
		if path.Base(f.Path) != "nginx.conf" {
			continue
		}
		conf := string(f.Data)
		for j, e := range b.edits {
			if strings.Contains(conf, e[0]) {
				conf = strings.ReplaceAll(conf, e[0], e[1])
				b.applied[j].Add(1)
			}
		}
		out.Files[i].Data, out.Files[i].Parsed = []byte(conf), nil
	}
	return out, nil
}

// TestProveCatchesATamperedConfig: the example's nginx.conf is edited
// before nginx starts (one retry fewer, and a read timeout of 3s instead of
// backendRequest 1s) while the report stays the one gwretry wrote for the
// real configuration. The records' caveats (NonIdempotentExempt, which
// names POST, not the GET that was sent; IdleTimer, which does not let a
// silent try run past the timer) do not back what nginx did, so prove
// exits 5 and names both claims.
func TestProveCatchesATamperedConfig(t *testing.T) {
	bin := proxytest.Require(t, "nginx")
	tmp := privateTemp(t)
	tampered := &tamperedNginx{nginx: nginx.New(), edits: [][2]string{
		{"proxy_next_upstream_tries 3;", "proxy_next_upstream_tries 2;"},
		{"proxy_read_timeout 1000ms;", "proxy_read_timeout 3000ms;"},
	}, applied: make([]atomic.Int32, 2)}
	o := &proveOptions{limits: input.DefaultLimits(), target: "nginx@1.22", proxy: bin, report: "json", channel: "standard",
		timeout: 3 * time.Minute, scenarioTimeout: 30 * time.Second,
		available: func(backends.Settings) ([]translate.Backend, error) {
			return []translate.Backend{tampered}, nil
		}}
	var stdout, stderr bytes.Buffer
	err := runProve(o, []string{example}, strings.NewReader(""), &stdout, &stderr)
	if code := exitCode(err, "gwretry", &stderr); code != exitContradicted {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitContradicted, stdout.String(), stderr.String())
	}
	for i, e := range tampered.edits {
		if tampered.applied[i].Load() == 0 {
			t.Errorf("the edit %q -> %q changed no configuration", e[0], e[1])
		}
	}
	var out proveJSON
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("--report json: %v\n%s", err, stdout.String())
	}
	contradicted := map[translate.Feature]proveClaim{}
	for _, c := range out.Claims {
		if c.Outcome == claimContradicted {
			if c.Route != "shop/storefront" || c.Rule != 0 {
				t.Errorf("%s rule %d %s contradicted; only the catalogue rule was tampered with", c.Route, c.Rule, c.Feature)
			}
			contradicted[c.Feature] = c
		}
	}
	for _, f := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureBackendRequestTimeout} {
		c, ok := contradicted[f]
		switch {
		case !ok:
			t.Errorf("%s of the catalogue rule was not contradicted; contradicted: %v\n%s", f, slices.Collect(maps.Keys(contradicted)), stdout.String())
		case c.Status != translate.Approximated || c.Reason != report.ReasonConfigured || len(c.Caveats) == 0:
			t.Errorf("%s: status %s, record %+v; want the approximated record gwretry wrote", f, c.Status, c.Decision)
		}
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
	const manifest = `apiVersion: gateway.networking.k8s.io/v1
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
	in, err := input.Load([]string{"-"}, strings.NewReader(manifest), input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := resolve.Build(in, translate.ResolveOptions{})
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
// decided; a held claim keeps its outcome. Every other finding of every
// rule is listed with its record, not exercised, whether or not a
// scenario tested the rule; the findings of other targets and Gateways
// are not.
func TestProveAddUnexercised(t *testing.T) {
	configured := report.Decide(report.ReasonConfigured)
	answers500 := report.Decide(report.ReasonAnswers500)
	exempt := report.Decide(report.ReasonConfigured).Set("proxy_next_upstream http_500").
		With(report.NewCaveat(report.CaveatNonIdempotentExempt, "methods", "POST, PATCH, LOCK"))
	out := proveJSON{Target: "nginx", Claims: []proveClaim{
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Outcome: claimHeld},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryBackoff, Outcome: claimNotExercised},
	}}
	out.addUnexercised([]prove.Unexercised{
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Why: "ignored"},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryBackoff, Why: "too long"},
		{Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Why: "regex"},
		{Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Why: "twice"},
	}, []translate.Finding{
		{Target: "haproxy", Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Status: translate.Unsupported, Decision: report.Decide(report.ReasonNotExpressible)},
		{Target: "nginx", Route: "ns/b", Rule: 1, Feature: translate.FeatureRequestTimeout, Status: translate.Honoured, RuleName: "r", Decision: configured},
		{Target: "nginx", Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Status: translate.Approximated, Decision: exempt},
		{Target: "nginx", Route: "ns/a", Rule: 0, Feature: translate.FeatureBackendRefs, Status: translate.Honoured, Decision: answers500},
		{Target: "nginx", Route: "ns/c", Rule: 0, Feature: translate.FeatureBackendRefs, Status: translate.Honoured, Decision: answers500},
		{Target: "nginx", Gateway: "ns/gw", Feature: translate.FeatureConnClientTimeout, Status: translate.Honoured, Decision: configured},
	})
	want := []proveClaim{
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureBackendRefs, Status: translate.Honoured, Decision: answers500, Outcome: claimNotExercised,
			Why: "prove derives no scenario for backendRefs: the finding is listed with its reason, not checked on the data plane"},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryBackoff, Outcome: claimNotExercised, Why: "too long"},
		{Route: "ns/a", Rule: 0, Feature: translate.FeatureRetryCodes, Status: translate.Approximated, Decision: exempt, Outcome: claimHeld},
		{Route: "ns/b", Rule: 1, RuleName: "r", Feature: translate.FeatureRequestTimeout, Status: translate.Honoured, Decision: configured, Outcome: claimNotExercised, Why: "regex"},
		{Route: "ns/c", Rule: 0, Feature: translate.FeatureBackendRefs, Status: translate.Honoured, Decision: answers500, Outcome: claimNotExercised,
			Why: "prove derives no scenario for backendRefs: the finding is listed with its reason, not checked on the data plane"},
	}
	if diff := cmp.Diff(want, out.Claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if out.Held != 1 || out.NotExercised != 4 {
		t.Errorf("held %d, not exercised %d; want 1, 4", out.Held, out.NotExercised)
	}
	var text bytes.Buffer
	if err := writeProve(&text, "text", out, 1, 0); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"NOT EXERCISED ns/a rule 0 backendRefs = honoured (Answers500)\n    prove derives no scenario for backendRefs",
		"HELD          ns/a rule 0 retry.codes = approximated (Configured)\n    configured: proxy_next_upstream http_500; caveats: NonIdempotentExempt{methods=POST, PATCH, LOCK}\n",
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text output lacks %q:\n%s", line, text.String())
		}
	}
}
