package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

func newDiffCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	o := &options{limits: input.DefaultLimits(), available: backends.Configured}
	var from, to, output string
	var failOnChange bool
	cmd := &cobra.Command{
		Use:   "diff [PATH...] --from A[@VERSION] --to B[@VERSION]",
		Short: "Show what the same rules do differently on another data plane",
		Long: `diff reads PATH... (or, without, the cluster: -n, -A, -l, --context) like translate, generates the configuration of both data planes, reads
each back as the report's judges do, and prints for every rule and method class only what
differs: the status a data plane answers by itself, how many retries it makes and on which
failures, the timer that cuts a try, the pause between tries, and the worst case of a request
whose every try fails. Each difference names the reason or caveat codes of both sides' findings
(docs/report.md). Everything comes from the generated files as the judges read them, never from
a report's words; what a judge does not read back is said, not guessed.

-o json prints {"schemaVersion": 1, "from", "to", "rules": [{route, rule, ruleName, methods,
differences: [{what, from, to, fromWhy, toWhy}]}]}; -o markdown a table per rule, for the pull
request that performs the migration. With --fail-on-change the command exits 3 when anything
differs.`,
		Example: `  # what changes for each rule when moving from nginx 1.26 to Envoy
  gwretry diff manifests/ --from nginx@1.26 --to envoy

  # in CI: fail when HAProxy would behave otherwise than Traefik
  gwretry diff route.yaml --from traefik --to haproxy --fail-on-change -o markdown`,
		Args: o.needPaths("diff"),
		RunE: func(_ *cobra.Command, args []string) error {
			return runDiff(o, from, to, output, failOnChange, append(args, o.files...), stdin, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the data plane moved from: NAME or NAME@VERSION (required)")
	f.StringVar(&to, "to", "", "the data plane moved to: NAME or NAME@VERSION (required)")
	f.StringVarP(&output, "output", "o", "text", "format: text, json or markdown")
	f.BoolVar(&failOnChange, "fail-on-change", false, "exit 3 when any rule behaves differently")
	o.addInputFlags(cmd)
	return cmd
}

// ruleDiff is what differs for one rule and method class.
type ruleDiff struct {
	Route       string                `json:"route"`
	Rule        int                   `json:"rule"`
	RuleName    string                `json:"ruleName,omitempty"`
	Methods     translate.MethodClass `json:"methods"`
	Differences []difference          `json:"differences"`
}

// difference is one aspect of a rule's behaviour that differs, with the
// codes of the findings behind each side.
type difference struct {
	What    string `json:"what"`
	From    string `json:"from"`
	To      string `json:"to"`
	FromWhy string `json:"fromWhy"`
	ToWhy   string `json:"toWhy"`
}

type diffReport struct {
	SchemaVersion int                  `json:"schemaVersion"`
	From          translate.TargetInfo `json:"from"`
	To            translate.TargetInfo `json:"to"`
	Rules         []ruleDiff           `json:"rules"`
}

func runDiff(o *options, from, to, output string, failOnChange bool, paths []string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case output != "text" && output != "json" && output != "markdown":
		return usageErrorf("-o %q: want text, json or markdown", output)
	case from == "" || to == "":
		return usageErrorf("diff needs --from and --to, each NAME or NAME@VERSION (%s)", strings.Join(backendNames(), ", "))
	case strings.Contains(from, ",") || strings.Contains(to, ","):
		return usageErrorf("--from and --to name one data plane each")
	}
	ro, err := o.resolveOptions()
	if err != nil {
		return err
	}
	var pair []translate.Target
	for _, spec := range []string{from, to} {
		o.target = spec
		ts, err := o.targets()
		if err != nil {
			return err
		}
		pair = append(pair, ts[0])
	}
	_, m, err := o.loadModel(paths, stdin, ro, nil)
	if err != nil {
		return err
	}
	d, err := diffTargets(m, pair[0], pair[1], o.retryNonIdempotent)
	if err != nil {
		var ie *translate.InternalError
		if !errors.As(err, &ie) {
			err = &translate.InternalError{Err: err}
		}
		return &exitError{code: exitInternal, err: err}
	}
	switch output {
	case "json":
		data, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		if _, err := stdout.Write(append(data, '\n')); err != nil {
			return err
		}
	case "markdown":
		err = writeDiffMarkdown(stdout, d)
	default:
		err = writeDiffText(stdout, d)
	}
	if err != nil {
		return err
	}
	if n := len(d.Rules); failOnChange && n > 0 {
		return &exitError{code: exitFailOn, err: fmt.Errorf("--fail-on-change: %d rule and method class(es) behave differently on %s", n, d.To.Name+"@"+d.To.Version)}
	}
	return nil
}

// diffTargets compares what the judges read from a's and b's
// configurations (translate.Explain's timelines) rule by rule, and names
// the findings behind each side from the records (translate.Run).
func diffTargets(m *translate.Model, a, b translate.Target, retryNonIdempotent bool) (*diffReport, error) {
	targets := []translate.Target{a, b}
	var sides [2][]translate.Timeline
	for i, t := range targets {
		ex, err := translate.Explain(m, []translate.Target{t}, retryNonIdempotent)
		if err != nil {
			return nil, err
		}
		sides[i] = ex.Timelines
	}
	findings := map[string]*translate.Finding{} // target/route/rule/feature
	key := func(target, route string, rule int, f report.Feature) string {
		return target + "\x00" + route + "\x00" + strconv.Itoa(rule) + "\x00" + string(f)
	}
	for i, t := range targets {
		res, err := translate.Run(m, []translate.Target{t}, retryNonIdempotent)
		if err != nil {
			return nil, err
		}
		for j := range res.Report.Findings {
			f := &res.Report.Findings[j]
			findings[key(strconv.Itoa(i), f.Route, f.Rule, f.Feature)] = f
		}
	}
	// why is the codes behind one side of a difference: the worst status
	// of the features involved and their reasons or caveats, each once.
	why := func(side int, tl translate.Timeline, fs ...report.Feature) string {
		worst, codes := report.Status(""), []string{}
		for _, feat := range fs {
			f := findings[key(strconv.Itoa(side), tl.Route, tl.Rule, feat)]
			if f == nil {
				continue
			}
			if worst == "" || f.Status.Rank() > worst.Rank() {
				worst = f.Status
			}
			for _, c := range whyCodes(f) {
				if !slices.Contains(codes, c) {
					codes = append(codes, c)
				}
			}
		}
		switch {
		case worst == "":
			return "-"
		case len(codes) == 0:
			return string(worst)
		}
		return string(worst) + " " + strings.Join(codes, " ")
	}
	d := &diffReport{SchemaVersion: 1, Rules: []ruleDiff{},
		From: translate.TargetInfo{Name: a.Backend.Name(), Version: a.Version},
		To:   translate.TargetInfo{Name: b.Backend.Name(), Version: b.Version}}
	// Each side's timelines are in the model's rule order, but a mesh
	// target also explains the rules attached to Services: the sides are
	// paired by rule and method class, never by position, and a rule only
	// one side explains is a difference of its own.
	type pairKey struct {
		route   string
		rule    int
		methods translate.MethodClass
	}
	xs, ys := sides[0], sides[1]
	byKey := map[pairKey]translate.Timeline{}
	for _, tl := range ys {
		byKey[pairKey{tl.Route, tl.Rule, tl.Methods}] = tl
	}
	paired := map[pairKey]bool{}
	absent := translate.Timeline{Unread: true}
	var pairs [][2]translate.Timeline
	for _, x := range xs {
		k := pairKey{x.Route, x.Rule, x.Methods}
		y, ok := byKey[k]
		if !ok {
			y = absent
			y.Route, y.Rule, y.RuleName, y.Methods = x.Route, x.Rule, x.RuleName, x.Methods
		}
		paired[k] = true
		pairs = append(pairs, [2]translate.Timeline{x, y})
	}
	for _, y := range ys {
		if !paired[pairKey{y.Route, y.Rule, y.Methods}] {
			x := absent
			x.Route, x.Rule, x.RuleName, x.Methods = y.Route, y.Rule, y.RuleName, y.Methods
			pairs = append(pairs, [2]translate.Timeline{x, y})
		}
	}
	for _, p := range pairs {
		x, y := p[0], p[1]
		rd := ruleDiff{Route: x.Route, Rule: x.Rule, RuleName: x.RuleName, Methods: x.Methods}
		add := func(what, from, to string, fs ...report.Feature) {
			if from != to {
				rd.Differences = append(rd.Differences, difference{What: what, From: from, To: to, FromWhy: why(0, x, fs...), ToWhy: why(1, y, fs...)})
			}
		}
		if x.Unread || y.Unread {
			add("read back", readBack(x), readBack(y))
		} else {
			add("answer", answerText(x), answerText(y), report.FeatureBackendRefs)
			add("retries", strconv.Itoa(x.Retries), strconv.Itoa(y.Retries), report.FeatureRetryAttempts)
			add("retried on", retriedText(x), retriedText(y), report.FeatureRetryCodes, report.FeatureRetryConnectionErrors)
			add("try cut by", tryTimer(x), tryTimer(y), report.FeatureBackendRequestTimeout, report.FeatureRetryBackendTimeout)
			add("pause between tries", pauseText(x), pauseText(y), report.FeatureRetryBackoff)
			add("worst case", x.WorstCase.String(), y.WorstCase.String(), report.FeatureRequestTimeout)
		}
		if len(rd.Differences) > 0 {
			d.Rules = append(d.Rules, rd)
		}
	}
	return d, nil
}

// whyCodes are the codes of a finding that is not plainly honoured: its
// caveats, or its reason.
func whyCodes(f *translate.Finding) []string {
	if len(f.Caveats) > 0 {
		var cs []string
		for _, c := range f.Caveats {
			cs = append(cs, string(c.Reason))
		}
		return cs
	}
	if f.Reason == report.ReasonConfigured {
		return nil
	}
	return []string{string(f.Reason)}
}

// readBack says whether a side's judge read the rule back: "not served"
// for a rule the target does not explain at all (a Service-attached rule
// on a gateway target).
func readBack(tl translate.Timeline) string {
	switch {
	case tl.Target == "":
		return "not served"
	case tl.Unread:
		return "not read back"
	}
	return "read back"
}

func answerText(tl translate.Timeline) string {
	if tl.Answer != 0 {
		return "answers " + strconv.Itoa(tl.Answer) + " itself"
	}
	return "proxies"
}

func retriedText(tl translate.Timeline) string {
	if len(tl.RetriedOn) == 0 || tl.Retries == 0 {
		return "nothing"
	}
	return strings.Join(tl.RetriedOn, "; ")
}

func tryTimer(tl translate.Timeline) string {
	if len(tl.Tries) == 0 {
		return "-"
	}
	return tl.Tries[0].Timeout
}

func pauseText(tl translate.Timeline) string {
	if len(tl.Tries) < 2 {
		return "-"
	}
	t := tl.Tries[1]
	if t.PauseMax != t.PauseMin {
		return t.PauseMin.String() + " to " + t.PauseMax.String()
	}
	return t.PauseMin.String()
}

func methodsText(c translate.MethodClass) string {
	if c == translate.NonIdempotent {
		return "POST, PATCH, LOCK"
	}
	return "other methods"
}

func ruleText(rd ruleDiff) string {
	s := "HTTPRoute " + rd.Route + " rule " + strconv.Itoa(rd.Rule)
	if rd.RuleName != "" {
		s += " (" + rd.RuleName + ")"
	}
	return s
}

// writeDiffText writes one block per rule and method class that differs,
// one line per difference: what, both sides, and the codes behind them.
func writeDiffText(w io.Writer, d *diffReport) error {
	bw := bufio.NewWriter(w)
	a, b := d.From.Name+"@"+d.From.Version, d.To.Name+"@"+d.To.Version
	if len(d.Rules) == 0 {
		fmt.Fprintf(bw, "%s and %s do the same with every rule, as their configurations read back\n", a, b)
		return bw.Flush()
	}
	fmt.Fprintf(bw, "what changes from %s to %s (only what differs; codes: docs/report.md)\n", a, b)
	for _, rd := range d.Rules {
		fmt.Fprintf(bw, "\n%s, %s\n", ruleText(rd), methodsText(rd.Methods))
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  \t%s\t%s\t\n", strings.ToUpper(a), strings.ToUpper(b))
		for _, x := range rd.Differences {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t[%s | %s]\n", x.What, x.From, x.To, x.FromWhy, x.ToWhy)
		}
		tw.Flush()
	}
	return bw.Flush()
}

// writeDiffMarkdown writes a table per rule and method class that
// differs, for a pull-request comment.
func writeDiffMarkdown(w io.Writer, d *diffReport) error {
	bw := bufio.NewWriter(w)
	a, b := d.From.Name+"@"+d.From.Version, d.To.Name+"@"+d.To.Version
	fmt.Fprintf(bw, "### What changes from %s to %s\n\n", a, b)
	if len(d.Rules) == 0 {
		bw.WriteString("Nothing: every rule behaves the same, as both configurations read back.\n")
		return bw.Flush()
	}
	for _, rd := range d.Rules {
		fmt.Fprintf(bw, "**%s**, %s\n\n| | %s | %s |\n|---|---|---|\n", mdEscape(ruleText(rd)), methodsText(rd.Methods), a, b)
		for _, x := range rd.Differences {
			fmt.Fprintf(bw, "| %s | %s<br>`%s` | %s<br>`%s` |\n", x.What, mdEscape(x.From), x.FromWhy, mdEscape(x.To), x.ToWhy)
		}
		bw.WriteString("\n")
	}
	bw.WriteString("Only what differs is listed; codes: docs/report.md.\n")
	return bw.Flush()
}
