//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// proveOptions are the flags of prove.
type proveOptions struct {
	target, proxy, report, channel string
	// tlsDir holds the certificates of the Gateways' Secrets
	// (DIR/NS/NAME/tls.crt and tls.key): with it, HTTPS listeners are
	// generated and their listener.https claims proven.
	tlsDir string
	// files are -f/--filename: PATHs, as the arguments.
	files                            []string
	retryNonIdempotent, assumeGrants bool
	timeout, scenarioTimeout         time.Duration
	limits                           input.Limits
	// suite runs the end-to-end suite's own scenarios instead of the
	// input's rules; matrix writes docs/matrix.md from their verdicts.
	suite  bool
	matrix string
	// available builds the backends: backends.Configured, or a test's own.
	available func(backends.Settings) ([]translate.Backend, error)
	// cl reads a cluster when no PATH is given.
	cl clusterFlags
}

// liveTargetNames are the data planes prove can start: the targets with
// a binary in the registry (backends.Live).
func liveTargetNames() []string {
	var names []string
	for _, t := range backends.Live() {
		names = append(names, t.Name)
	}
	return names
}

// liveKind is the binary of the target named name, or nil.
func liveKind(name string) *dataplane.Kind {
	t, _ := backends.Lookup(name)
	return t.Live
}

func newProveCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	o := &proveOptions{limits: input.DefaultLimits(), available: backends.Configured}
	cmd := &cobra.Command{
		Use:   "prove [PATH...] --target NAME[@VERSION]",
		Short: "Run the real data plane on the generated configuration and check every claim of the report",
		Long: `prove translates PATH... (or, without, the cluster: -n, -A, -l, --context; read once into
--dump DIR or a temporary directory) for one target, derives scenarios from each rule's own retry and
timeout settings, runs the real data plane binary on the generated configuration, and reports
for every claim of the report (each feature of each rule) whether it held or was contradicted,
with what was observed.

Each claim becomes one or more requests against a scripted backend that stands in for the
rule's Services: listed codes (retried) and an unlisted one (not retried), every try failing
(exactly attempts retries), connections closed and refused, a slow first try (cut by
backendRequest and retried), a slow backend (cut by request), the gap between tries
(backoff), a POST with a body, and a kept-alive upstream connection closed under the proxy.
The rule's filters get a request of their own, each judged on its own: headers set, added
and removed at the backend (RequestHeaderModifier) and in the answer (ResponseHeaderModifier),
the host and path the backend gets (URLRewrite), the status and Location of a redirect
(RequestRedirect), a copy at the mirror's Service (RequestMirror). With --tls-dir, on nginx and
HAProxy, each rule served on an HTTPS listener gets a request over TLS whose certificate must be
its Secret's (listener.https). Requests match the rule: its path, method, headers, query parameters and hostname. They are
made from the rule's first match that prove can invert, on the first listener and hostname
that serve it: a rule with several matches or hostnames is proven on that one request only,
and each of its claims says so (coverage). Features that no scenario can test (a path regular expression, a timeout longer than prove waits) are
listed as not exercised, with the reason. Every finding of a rule under test is listed, exercised
or not, with its decision record: reason, configured fact and caveats.

A claim holds when the proxy did what the Gateway API defines, or when what it did instead is
stated by the finding's record: an unsupported reason, or a reason or caveat that names the
shortfall with parameters that agree with what was seen (a code not retried needs
CodesNotRetried naming that code, a POST not retried NonIdempotentExempt naming POST, a body not
retried a buffer limit below its size). Messages are never read.

The proxy runs on loopback only: --listen and every Service's endpoints are rewritten to
127.0.0.1. Every process is stopped by its pid when its scenario ends; --scenario-timeout
bounds each scenario and --timeout the whole run.

The binary is --proxy, or found as GWRETRY_<NAME>, on PATH, or in /usr/sbin. Without
@VERSION, the version is the binary's own (nginx -v); with it, the configuration for that
version is proven against the binary given. Envoy's configuration is first checked with
` + "`envoy --mode validate`" + `.

Exit codes: 0 every claim that was exercised held, 1 invalid input, 2 usage (also: no binary
found), 5 a claim was contradicted, 70 an internal error (also: a scenario could not be run, or
the data plane did not start on the generated configuration: said once, with its first lines).`,
		Example: `  # the shipped example against the nginx on PATH
  gwretry prove testdata/examples/retry.yaml --target nginx

  # the HAProxy image a team deploys, in CI
  gwretry prove manifests/ --target haproxy@3.0 --proxy /usr/sbin/haproxy --report json

  # Envoy, validated first, then run
  gwretry prove manifests/ --target envoy --proxy ./envoy`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.suite {
				return nil
			}
			return o.cl.checkSource("prove", append(args, o.files...))
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return runProve(o, append(args, o.files...), stdin, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "NAME or NAME@VERSION of one of "+strings.Join(liveTargetNames(), ", ")+" (required)")
	f.StringVar(&o.proxy, "proxy", "", "data plane `BINARY` to run (default: GWRETRY_<NAME>, then PATH, then /usr/sbin)")
	addFilenameFlag(f, &o.files)
	f.StringVarP(&o.report, "report", "o", "text", "output on stdout: text or json")
	f.StringVar(&o.tlsDir, "tls-dir", "", "prove HTTPS listeners (listener.https, nginx and haproxy) with the certificate of Secret NS/NAME in `DIR`/NS/NAME/tls.crt and tls.key")
	f.BoolVar(&o.retryNonIdempotent, "retry-non-idempotent", false, "translate with --retry-non-idempotent: POST, PATCH and LOCK are then expected to be retried")
	f.BoolVar(&o.assumeGrants, "assume-reference-grants", false, "permit every cross-namespace backendRef, for inputs without their ReferenceGrants")
	f.StringVar(&o.channel, "channel", "standard", "Gateway API release channel: standard or experimental")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "time cap of the whole run")
	f.DurationVar(&o.scenarioTimeout, "scenario-timeout", time.Minute, "time cap of one scenario (derived scenarios wait at most a third of it on the backend)")
	o.cl.add(f, "HTTPRoutes")
	f.BoolVar(&o.suite, "suite", false, "run the end-to-end suite's scenarios (prove/scenarios.go) instead of PATH's rules")
	f.StringVar(&o.matrix, "matrix", "", "with --suite: write the capability matrix (docs/matrix.md) of the runs to `FILE`")
	_ = f.MarkHidden("suite")
	_ = f.MarkHidden("matrix")
	return cmd
}

// proveSchemaVersion is 2 since each claim carries its finding's
// decision record (reason, params, configured, caveats) instead of its
// message.
const proveSchemaVersion = 2

// proveJSON is prove's --report json.
type proveJSON struct {
	SchemaVersion int          `json:"schemaVersion"`
	Target        string       `json:"target"`
	Version       string       `json:"version"`
	Binary        string       `json:"binary"`
	BinaryVersion string       `json:"binaryVersion"`
	Claims        []proveClaim `json:"claims"`
	Held          int          `json:"held"`
	Contradicted  int          `json:"contradicted"`
	NotExercised  int          `json:"notExercised"`
}

// proveClaim is one claim of the report, a finding of a rule under test,
// and what the scenarios made of it.
type proveClaim struct {
	Route    string            `json:"route"`
	Rule     int               `json:"rule"`
	RuleName string            `json:"ruleName,omitempty"`
	Feature  translate.Feature `json:"feature"`
	Status   translate.Status  `json:"status,omitempty"`
	// Decision is the finding's record: reason, parameters, configured
	// fact and caveats, as in the report. The verdicts read it; nothing
	// reads the finding's message.
	report.Decision
	// Outcome is held, contradicted or not exercised.
	Outcome string `json:"outcome"`
	Why     string `json:"why,omitempty"`
	// Request is the host and path of the request the scenarios send:
	// one that the rule's first exercisable match selects.
	Request string `json:"request,omitempty"`
	// Coverage says, when the rule serves more than one place (match,
	// hostname, listener), that only Request's was exercised.
	Coverage  string       `json:"coverage,omitempty"`
	Scenarios []proveCheck `json:"scenarios,omitempty"`
}

// proveCheck is one scenario's verdict on a claim.
type proveCheck struct {
	Scenario string `json:"scenario"`
	Outcome  string `json:"outcome"`
	Reason   string `json:"reason"`
	Observed string `json:"observed,omitempty"`
}

// Outcomes of a claim.
const (
	claimHeld         = "held"
	claimContradicted = "contradicted"
	claimNotExercised = "not exercised"
)

func runProve(o *proveOptions, paths []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.report != "text" && o.report != "json" {
		return usageErrorf("--report %q: want text or json", o.report)
	}
	if o.matrix != "" && !o.suite {
		return usageErrorf("--matrix needs --suite")
	}
	if o.timeout <= 0 || o.scenarioTimeout <= 0 {
		return usageErrorf("--timeout and --scenario-timeout must be positive")
	}
	if o.target == "" {
		return usageErrorf("--target is required: one of %s, as NAME or NAME@VERSION", strings.Join(liveTargetNames(), ", "))
	}
	ch, err := translate.ParseChannel(o.channel)
	if err != nil {
		return usageErrorf("--%v", err)
	}
	available, err := o.available(backends.Settings{})
	if err != nil {
		return &exitError{code: exitInternal, err: err}
	}
	targets, err := translate.ParseTargets(o.target, available)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	for _, t := range targets {
		if liveKind(t.Backend.Name()) == nil {
			return usageErrorf("--target %q: prove runs %s", o.target, strings.Join(liveTargetNames(), ", "))
		}
	}
	if o.suite {
		return runSuite(o, targets, ch, stdout, stderr)
	}
	if len(targets) != 1 {
		return usageErrorf("--target %q: prove runs one data plane: %s", o.target, strings.Join(liveTargetNames(), ", "))
	}
	target := targets[0]
	name := target.Backend.Name()
	kind := liveKind(name)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	bin := o.proxy
	if bin == "" {
		if bin = kind.Find(); bin == "" {
			return usageErrorf("no %s binary found (on PATH, in /usr/sbin or as %s): install it or pass --proxy BINARY", name, kind.EnvVar)
		}
	} else if !dataplane.IsExecutable(bin) {
		return usageErrorf("--proxy %q is not an executable file", bin)
	}
	live, err := liveOf(target, bin, strings.Contains(o.target, "@"))
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		// The cluster is read once, into --dump DIR or a temporary
		// directory, which every scenario then reads as files.
		dir, cleanup, err := o.cl.snapshot(o.limits)
		if err != nil {
			return err
		}
		defer cleanup()
		paths = []string{dir}
	}
	in, err := readInputs(paths, stdin, o.limits)
	if err != nil {
		return err
	}
	if o.tlsDir != "" {
		abs, err := filepath.Abs(o.tlsDir)
		if err != nil {
			return usageErrorf("--tls-dir %q: %v", o.tlsDir, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return usageErrorf("--tls-dir %q is not a directory", o.tlsDir)
		}
		o.tlsDir = abs
	}
	m, err := proveModel(in, o, ch, nil)
	if err != nil {
		return err
	}
	noHTTPS := ""
	switch {
	case !liveKind(name).ProvesHTTPS:
		noHTTPS = fmt.Sprintf("prove does not exercise HTTPS listeners on %s: the claim is listed with its record, unproven", name)
	case o.tlsDir == "":
		noHTTPS = "HTTPS listeners are proven only with --tls-dir DIR, the certificates of the Gateways' Secrets (DIR/NAMESPACE/NAME/tls.crt and tls.key)"
	}
	scenarios, unexercised := prove.Derive(m, prove.DeriveOptions{RetryNonIdempotent: o.retryNonIdempotent, Longest: o.scenarioTimeout / 3, NoHTTPS: noHTTPS})
	res, err := translate.Run(m, []translate.Target{{Backend: target.Backend, Version: live.Version}}, o.retryNonIdempotent)
	if err != nil {
		return &exitError{code: exitInternal, err: err}
	}
	start := time.Now()
	out, runErrs := proveLive(ctx, o, live, scenarios, userGenerator(o, ch, in), nil)
	out.addUnexercised(unexercised, res.Report.Findings)
	out.addCoverage(m)
	if err := writeProve(stdout, o.report, out, len(scenarios), time.Since(start)); err != nil {
		return err
	}
	if err := proveExit(out, runErrs); err != nil {
		return err
	}
	if out.Held == 0 {
		fmt.Fprintf(stderr, "prove: no claim was exercised on %s %s: each of the %d finding(s) is listed with why\n", live.Name, live.Full, out.NotExercised)
		return nil
	}
	fmt.Fprintf(stderr, "prove: every exercised claim held on %s %s (%d held, %d not exercised)\n", live.Name, live.Full, out.Held, out.NotExercised)
	return nil
}

// liveOf is the data plane binary bin as the target to prove: at the
// version given with @VERSION, else at the binary's own version, which
// gwretry must know.
func liveOf(target translate.Target, bin string, versionGiven bool) (prove.Live, error) {
	name := target.Backend.Name()
	short, full, err := liveKind(name).Version(context.Background(), bin)
	if err != nil {
		return prove.Live{}, usageErrorf("%s: %v", bin, err)
	}
	version := target.Version
	if !versionGiven {
		if !slices.Contains(target.Backend.Versions(), short) {
			return prove.Live{}, usageErrorf("%s is %s %s, a version gwretry has no table for (it knows %s): pass --target %s@VERSION to prove that version's configuration on this binary",
				bin, name, full, strings.Join(target.Backend.Versions(), ", "), name)
		}
		version = short
	}
	return prove.Live{Name: name, Bin: bin, Version: version, Full: full}, nil
}

// proveExit is the error (and exit code) of a run's result.
func proveExit(out proveJSON, runErrs []string) error {
	switch {
	case out.Contradicted > 0:
		return &exitError{code: exitContradicted, err: fmt.Errorf("prove: %d claim(s) contradicted by %s %s", out.Contradicted, out.Target, out.BinaryVersion)}
	case len(runErrs) == 1:
		return &exitError{code: exitInternal, err: fmt.Errorf("prove: %s", runErrs[0])}
	case len(runErrs) > 0:
		return &exitError{code: exitInternal, err: fmt.Errorf("prove: %d scenario(s) could not be run:\n  %s", len(runErrs), strings.Join(runErrs, "\n  "))}
	}
	return nil
}

// firstLines keeps the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("(%d more lines)", len(lines)-n))
	}
	return "  " + strings.Join(lines, "\n  ")
}

// proveLive runs scenarios on one data plane binary and gathers the
// verdicts per claim; matrix, when set, gets them too.
func proveLive(ctx context.Context, o *proveOptions, live prove.Live, scenarios []prove.Scenario, gen prove.Generator, matrix *prove.Matrix) (proveJSON, []string) {
	claims := map[claimKey]*proveClaim{}
	var order []claimKey
	var runErrs []string
	for _, sc := range scenarios {
		if ctx.Err() != nil {
			runErrs = append(runErrs, fmt.Sprintf("%s: not run: the --timeout of %s is up", sc.Name, o.timeout))
			continue
		}
		sctx, scancel := context.WithTimeout(ctx, o.scenarioTimeout)
		run, err := prove.Observe(sctx, live, sc, gen, "")
		scancel()
		var se *prove.StartError
		switch {
		case errors.As(err, &se):
			// The proxy refused or could not run the configuration: no
			// claim can be checked, on this scenario or the next ones,
			// which run the same configuration. That is one harness
			// failure, said once, with the binary's first lines.
			runErrs = append(runErrs, fmt.Sprintf("%s %s did not start on the generated configuration (scenario %q), so no claim could be checked:\n%s",
				live.Name, live.Full, sc.Name, firstLines(se.Error(), 15)))
			out := proveJSON{SchemaVersion: proveSchemaVersion, Target: live.Name, Version: live.Version, Binary: live.Bin, BinaryVersion: live.Full, Claims: []proveClaim{}}
			out.finish()
			return out, runErrs
		case err != nil:
			runErrs = append(runErrs, fmt.Sprintf("%s: %v", sc.Name, err))
			continue
		}
		verdicts := prove.Judge(sc.Test, run.Findings, run.Obs)
		if matrix != nil {
			matrix.Add(live.Name, live.Version, sc.Name, verdicts)
		}
		for _, v := range verdicts {
			k := claimKey{sc.Route(), sc.RuleIndex(), v.Feature}
			c := claims[k]
			if c == nil {
				c = &proveClaim{Route: k.route, Rule: k.rule, Feature: k.feature, Outcome: claimNotExercised}
				if sc.User != nil {
					c.Request = sc.User.Host + sc.User.Path
				}
				claims[k] = c
				order = append(order, k)
			}
			for _, f := range run.Findings {
				if f.Feature == v.Feature {
					c.Status, c.Decision, c.RuleName = f.Status, f.Decision, f.RuleName
				}
			}
			check := proveCheck{Scenario: sc.Name, Outcome: string(v.Outcome), Reason: v.Reason}
			switch v.Outcome {
			case prove.Contradicted:
				c.Outcome = claimContradicted
				check.Observed = strings.TrimSpace(run.Obs.String())
			case prove.Backed:
				if c.Outcome == claimNotExercised {
					c.Outcome = claimHeld
				}
			}
			c.Scenarios = append(c.Scenarios, check)
		}
	}
	out := proveJSON{SchemaVersion: proveSchemaVersion, Target: live.Name, Version: live.Version, Binary: live.Bin, BinaryVersion: live.Full, Claims: []proveClaim{}}
	for _, k := range order {
		out.Claims = append(out.Claims, *claims[k])
	}
	out.finish()
	return out, runErrs
}

// addUnexercised adds the claims no scenario tests, with their findings,
// then every other finding of the rules under test (those with a claim):
// the report's whole record of each rule is listed, exercised or not, with
// its reason. The claims and findings are indexed once: a scan of either
// per unexercised feature would grow with the square of the rules.
func (out *proveJSON) addUnexercised(us []prove.Unexercised, findings []translate.Finding) {
	claims := make(map[claimKey]int, len(out.Claims))
	for i, c := range out.Claims {
		claims[claimKey{c.Route, c.Rule, c.Feature}] = i
	}
	found := map[claimKey]*translate.Finding{}
	for i, f := range findings {
		if f.Target == out.Target {
			found[claimKey{f.Route, f.Rule, f.Feature}] = &findings[i]
		}
	}
	for _, u := range us {
		k := claimKey{u.Route, u.Rule, u.Feature}
		if i, ok := claims[k]; ok {
			if out.Claims[i].Why == "" && out.Claims[i].Outcome == claimNotExercised {
				out.Claims[i].Why = u.Why
			}
			continue
		}
		c := proveClaim{Route: u.Route, Rule: u.Rule, Feature: u.Feature, Outcome: claimNotExercised, Why: u.Why}
		if f := found[k]; f != nil {
			c.Status, c.Decision, c.RuleName = f.Status, f.Decision, f.RuleName
		}
		claims[k] = len(out.Claims)
		out.Claims = append(out.Claims, c)
	}
	for i, f := range findings {
		k := claimKey{f.Route, f.Rule, f.Feature}
		if f.Target != out.Target || f.Gateway != "" || f.Route == "" {
			continue
		}
		if j, ok := claims[k]; ok {
			if c := &out.Claims[j]; c.Reason == "" {
				c.Status, c.Decision, c.RuleName = f.Status, f.Decision, f.RuleName
			}
			continue
		}
		claims[k] = len(out.Claims)
		out.Claims = append(out.Claims, proveClaim{Route: f.Route, Rule: f.Rule, RuleName: f.RuleName, Feature: f.Feature,
			Status: f.Status, Decision: findings[i].Decision, Outcome: claimNotExercised,
			Why: fmt.Sprintf("prove derives no scenario for %s: the finding is listed with its reason, not checked on the data plane", f.Feature)})
	}
	out.finish()
}

// addCoverage says on every claim that scenarios exercised whether its
// rule serves other places than the one request they sent: prove derives
// its requests from the rule's first exercisable match on the first
// listener and hostname that serve it, so a rule with several matches (or
// hostnames, or listeners) is proven on that one only.
func (out *proveJSON) addCoverage(m *translate.Model) {
	type ruleKey struct {
		route string
		rule  int
	}
	places := map[ruleKey]int{}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				places[ruleKey{rm.Rule.Route, rm.Rule.Index}]++
			}
		}
	}
	for i := range out.Claims {
		c := &out.Claims[i]
		n := places[ruleKey{c.Route, c.Rule}]
		if c.Outcome == claimNotExercised || n < 2 {
			continue
		}
		req := c.Request
		if req == "" {
			req = "one request"
		}
		c.Coverage = fmt.Sprintf("exercised only on %s, from the first match prove can invert; the rule serves %d places (matches, hostnames and listeners), the other %d are not exercised", req, n, n-1)
	}
}

// finish sorts the claims and counts them.
func (out *proveJSON) finish() {
	slices.SortStableFunc(out.Claims, func(a, b proveClaim) int {
		if c := strings.Compare(a.Route, b.Route); c != 0 {
			return c
		}
		if a.Rule != b.Rule {
			return a.Rule - b.Rule
		}
		return strings.Compare(string(a.Feature), string(b.Feature))
	})
	out.Held, out.Contradicted, out.NotExercised = 0, 0, 0
	for i, c := range out.Claims {
		if c.Outcome == claimNotExercised && c.Why == "" {
			out.Claims[i].Why = "no scenario could tell whether it holds (another feature hid it)"
		}
		switch c.Outcome {
		case claimHeld:
			out.Held++
		case claimContradicted:
			out.Contradicted++
		default:
			out.NotExercised++
		}
	}
}

// runSuite runs the end-to-end suite's scenarios on every installed
// version of each target (dataplane.Installed, or --proxy), prints a
// summary per version, and with --matrix writes docs/matrix.md from the
// verdicts, with the static Envoy rows.
func runSuite(o *proveOptions, targets []translate.Target, ch translate.Channel, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	scenarios := prove.Scenarios()
	gen := suiteGenerator(o, ch)
	matrix := prove.NewMatrix()
	var outs []proveJSON
	var runErrs []string
	for _, t := range targets {
		name := t.Backend.Name()
		kind := liveKind(name)
		bins := kind.Installed()
		if o.proxy != "" {
			if len(targets) != 1 {
				return usageErrorf("--proxy names one binary: give one --target with it")
			}
			bins = []string{o.proxy}
		}
		if len(bins) == 0 {
			matrix.Skip(name+" (live)", "binary not found")
			fmt.Fprintf(stderr, "prove: no %s binary found; not run live\n", name)
		}
		for _, bin := range bins {
			live, err := liveOf(t, bin, false)
			if err != nil {
				return err
			}
			matrix.Row(name, live.Version, kind.Describe(live.Full)+", live")
			start := time.Now()
			out, errs := proveLive(ctx, o, live, scenarios, gen, matrix)
			fmt.Fprintf(stderr, "prove: %s %s: %d held, %d contradicted, %d not exercised in %s\n", name, live.Full,
				out.Held, out.Contradicted, out.NotExercised, time.Since(start).Round(100*time.Millisecond))
			outs = append(outs, out)
			runErrs = append(runErrs, errs...)
		}
		if o.matrix != "" && len(bins) == 0 && prove.ConfigJudged(name) {
			for _, version := range t.Backend.Versions() {
				matrix.Row(name, version, "generated configuration only")
				for _, sc := range scenarios {
					verdicts, err := prove.CheckConfig(ctx, name, version, sc, gen, "")
					if err != nil {
						runErrs = append(runErrs, fmt.Sprintf("%s %s %s: %v", name, version, sc.Name, err))
						continue
					}
					matrix.Add(name, version, sc.Name, verdicts)
				}
			}
		}
	}
	if o.report == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(outs); err != nil {
			return err
		}
	} else {
		for _, out := range outs {
			if out.Contradicted == 0 {
				continue
			}
			out.Claims = slices.DeleteFunc(out.Claims, func(c proveClaim) bool { return c.Outcome != claimContradicted })
			if err := writeProve(stdout, "text", out, len(scenarios), 0); err != nil {
				return err
			}
		}
	}
	if o.matrix != "" {
		if err := os.WriteFile(o.matrix, matrix.Markdown(scenarios), 0o644); err != nil {
			return &exitError{code: exitInput, err: err}
		}
	}
	for _, out := range outs {
		if err := proveExit(out, nil); err != nil {
			return err
		}
	}
	return proveExit(proveJSON{}, runErrs)
}

type claimKey struct {
	route   string
	rule    int
	feature translate.Feature
}

// proveInput is what prove translates for every scenario: the user's
// paths, or the documents read once from stdin (which cannot be read
// twice).
type proveInput struct {
	paths []string
	data  []byte
}

func readInputs(paths []string, stdin io.Reader, lim input.Limits) (proveInput, error) {
	if !slices.Contains(paths, "-") {
		return proveInput{paths: paths}, nil
	}
	if len(paths) > 1 {
		return proveInput{}, usageErrorf("prove reads - (stdin) alone, not with other paths")
	}
	data, err := io.ReadAll(io.LimitReader(stdin, lim.MaxInputBytes+1))
	if err != nil {
		return proveInput{}, inputError(fmt.Errorf("reading stdin: %w", err))
	}
	return proveInput{data: data}, nil
}

// proveModel loads and resolves the inputs. With ro nil, every port of
// every Service of the input points at a placeholder endpoint, so that
// every backendRef to a Service of the input resolves.
func proveModel(pi proveInput, o *proveOptions, ch translate.Channel, ro *translate.ResolveOptions) (*translate.Model, error) {
	paths, stdin := pi.paths, io.Reader(nil)
	if pi.paths == nil {
		paths, stdin = []string{"-"}, strings.NewReader(string(pi.data))
	}
	in, err := input.Load(paths, stdin, o.limits)
	if in == nil || err != nil {
		if err == nil {
			err = errors.New("nothing read")
		}
		return nil, inputError(err)
	}
	if len(in.Routes) == 0 {
		return nil, inputError(fmt.Errorf("no HTTPRoute (gateway.networking.k8s.io/v1 or v1beta1) in %s: found %s", strings.Join(paths, ", "), input.Found(in)))
	}
	if ro == nil {
		ro = &translate.ResolveOptions{}
		for _, s := range in.Services {
			for _, p := range s.Obj.Spec.Ports {
				ro.Endpoints = append(ro.Endpoints, translate.EndpointOverride{Service: s.Obj.Name, Namespace: s.Obj.Namespace,
					Port: int(p.Port), Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: 1}}})
			}
		}
	}
	ro.Channel, ro.AssumeReferenceGrants = ch, o.assumeGrants
	if ro.Listen == nil || ro.ListenTLS != nil {
		// Without --listen the HTTPS listeners bind their own ports;
		// with it, only a scenario that binds them (ListenTLS) has them.
		ro.TLSDir = o.tlsDir
	}
	m, err := resolve.Build(in, *ro)
	if err != nil {
		return nil, inputError(err)
	}
	return m, nil
}

// userGenerator translates the user's inputs for one scenario.
func userGenerator(o *proveOptions, ch translate.Channel, in proveInput) prove.Generator {
	return func(_ context.Context, dir string, sc prove.Scenario, target, listen string, endpoints []string) (*translate.Report, error) {
		ro, err := translate.ParseFlags(listen, endpoints)
		if err != nil {
			return nil, err
		}
		if sc.User != nil && sc.User.ListenTLS != "" {
			if ro.ListenTLS, err = translate.ParseListen(sc.User.ListenTLS); err != nil {
				return nil, err
			}
		}
		m, err := proveModel(in, o, ch, &ro)
		if err != nil {
			return nil, err
		}
		return generateInto(dir, m, target, o.available, o.retryNonIdempotent)
	}
}

// suiteGenerator translates a suite scenario's own manifest.
func suiteGenerator(o *proveOptions, ch translate.Channel) prove.Generator {
	return func(_ context.Context, dir string, sc prove.Scenario, target, listen string, endpoints []string) (*translate.Report, error) {
		ro, err := translate.ParseFlags(listen, endpoints)
		if err != nil {
			return nil, err
		}
		m, err := proveModel(proveInput{data: []byte(sc.Manifest())}, o, ch, &ro)
		if err != nil {
			return nil, err
		}
		return generateInto(dir, m, target, o.available, sc.RetryNonIdempotent)
	}
}

// generateInto runs the backend of target on m and writes its files and
// report.json under dir/out.
func generateInto(dir string, m *translate.Model, target string, backendsOf func(backends.Settings) ([]translate.Backend, error), retryNonIdempotent bool) (*translate.Report, error) {
	available, err := backendsOf(backends.Settings{})
	if err != nil {
		return nil, err
	}
	targets, err := translate.ParseTargets(target, available)
	if err != nil {
		return nil, err
	}
	res, err := translate.Run(m, targets, retryNonIdempotent)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(filepath.Join(dir, "out"), res); err != nil {
		return nil, err
	}
	return res.Report, nil
}

func writeProve(w io.Writer, format string, out proveJSON, scenarios int, took time.Duration) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s) with the configuration for --target %s@%s: %d scenario(s) in %s\n\n",
		out.Target, out.BinaryVersion, out.Binary, out.Target, out.Version, scenarios, took.Round(100*time.Millisecond))
	for _, c := range out.Claims {
		rule := fmt.Sprintf("%s rule %d", c.Route, c.Rule)
		if c.RuleName != "" {
			rule += " (" + c.RuleName + ")"
		}
		status := string(c.Status)
		if status == "" {
			status = "-"
		}
		fmt.Fprintf(&b, "%-13s %s %s = %s", strings.ToUpper(c.Outcome), rule, c.Feature, status)
		if c.Reason != "" {
			fmt.Fprintf(&b, " (%s)", report.WithParams(c.Reason, c.Params))
		}
		b.WriteString("\n")
		if rec := recordLine(c.Decision); rec != "" {
			fmt.Fprintf(&b, "    %s\n", rec)
		}
		switch c.Outcome {
		case claimHeld:
			var names []string
			for _, s := range c.Scenarios {
				if s.Outcome == string(prove.Backed) {
					names = append(names, scenarioLabel(s.Scenario))
				}
			}
			fmt.Fprintf(&b, "    held in: %s\n", strings.Join(names, "; "))
			if c.Coverage != "" {
				fmt.Fprintf(&b, "    %s\n", c.Coverage)
			}
		case claimContradicted:
			for _, s := range c.Scenarios {
				if s.Outcome == string(prove.Contradicted) {
					fmt.Fprintf(&b, "    contradicted by: %s\n      %s\n", scenarioLabel(s.Scenario), indent(s.Reason, "      "))
				}
			}
			if c.Coverage != "" {
				fmt.Fprintf(&b, "    %s\n", c.Coverage)
			}
		default:
			fmt.Fprintf(&b, "    %s\n", c.Why)
		}
	}
	fmt.Fprintf(&b, "\n%d held, %d contradicted, %d not exercised\n", out.Held, out.Contradicted, out.NotExercised)
	_, err := io.WriteString(w, b.String())
	return err
}

// recordLine shows what a finding's record says beyond its reason: the
// configured fact and the caveats with their parameters.
func recordLine(d report.Decision) string {
	var parts []string
	if d.Configured != "" {
		parts = append(parts, "configured: "+d.Configured)
	}
	if len(d.Caveats) > 0 {
		var cs []string
		for _, c := range d.Caveats {
			cs = append(cs, report.WithParams(c.Reason, c.Params))
		}
		parts = append(parts, "caveats: "+strings.Join(cs, ", "))
	}
	return strings.Join(parts, "; ")
}

// scenarioLabel drops the rule from a derived scenario's name.
func scenarioLabel(name string) string {
	if _, after, ok := strings.Cut(name, ": "); ok {
		return after
	}
	return name
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+prefix)
}
