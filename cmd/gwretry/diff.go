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
	"github.com/gwretry/gwretry/importer/ingressnginx/nginxconf"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

func newDiffCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	o := &options{limits: input.DefaultLimits(), available: backends.Configured}
	var from, to, output string
	var failOnChange bool
	ing := &ingressFlags{}
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

-o json prints {"schemaVersion": 1, "from", "to", "rules": [{route, rule, ruleName, ingress, path, methods,
differences: [{what, from, to, fromWhy, toWhy}]}]}; -o markdown a table per rule, for the pull
request that performs the migration. With --fail-on-change the command exits 3 when anything
differs.

--from ingress-nginx reads Ingresses (and --configmap, the controller's ConfigMap) as gwretry
import ingress-nginx does: B is the target's configuration of the imported HTTPRoutes, and the
ingress-nginx side is what the nginx configuration ingress-nginx's template writes for each
Ingress path does (--ingress-nginx-conf FILE writes it), read back, never the HTTPRoute; each
difference names the Ingress path (docs/diff.md).`,
		Example: `  # what changes for each rule when moving from nginx 1.26 to Envoy
  gwretry diff manifests/ --from nginx@1.26 --to envoy

  # what changes for each Ingress path when leaving ingress-nginx for HAProxy
  gwretry diff ingresses.yaml --from ingress-nginx --configmap controller-cm.yaml --to haproxy

  # in CI: fail when HAProxy would behave otherwise than Traefik
  gwretry diff route.yaml --from traefik --to haproxy --fail-on-change -o markdown`,
		Args: o.needPaths("diff"),
		RunE: func(_ *cobra.Command, args []string) error {
			return runDiff(o, ing, from, to, output, failOnChange, append(args, o.files...), stdin, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the data plane moved from: NAME or NAME@VERSION (required)")
	f.StringVar(&to, "to", "", "the data plane moved to: NAME or NAME@VERSION (required)")
	f.StringVarP(&output, "output", "o", "text", "format: text, json or markdown")
	f.BoolVar(&failOnChange, "fail-on-change", false, "exit 3 when any rule behaves differently")
	ing.addFlags(f, true)
	o.addInputFlags(cmd)
	return cmd
}

// ruleDiff is what differs for one rule and method class.
type ruleDiff struct {
	Route    string `json:"route"`
	Rule     int    `json:"rule"`
	RuleName string `json:"ruleName,omitempty"`
	// Ingress and Path name the Ingress path of the rule when the diff
	// is from ingress-nginx.
	Ingress     string                `json:"ingress,omitempty"`
	Path        string                `json:"path,omitempty"`
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

func runDiff(o *options, ing *ingressFlags, from, to, output string, failOnChange bool, paths []string, stdin io.Reader, stdout io.Writer) error {
	fromIngress := from == ingressNginx || strings.HasPrefix(from, ingressNginx+"@")
	switch {
	case to == ingressNginx || strings.HasPrefix(to, ingressNginx+"@"):
		return usageErrorf("--to %s: ingress-nginx is a source only (--from ingress-nginx with its Ingresses)", to)
	case fromIngress && from != ingressNginx && from != ingressNginx+"@"+nginxconf.Version:
		return usageErrorf("--from %s: gwretry writes ingress-nginx %s's configuration (--from ingress-nginx or ingress-nginx@%s)", from, nginxconf.Version, nginxconf.Version)
	case !fromIngress && ing.set():
		return usageErrorf("--configmap, --ingress-nginx-conf and the controller's flags go with --from ingress-nginx")
	case fromIngress && len(paths) == 0:
		return usageErrorf("--from ingress-nginx reads the Ingresses from PATH; for a cluster's, write them first with 'gwretry import ingress-nginx --dump DIR' and give DIR (with --configmap DIR/<its file>)")
	}
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
		if spec == from && fromIngress {
			continue
		}
		o.target = spec
		ts, err := o.targets()
		if err != nil {
			return err
		}
		pair = append(pair, ts[0])
	}
	var d *diffReport
	if fromIngress {
		d, err = diffFromIngress(o, ing, ro, pair[0], paths, stdin)
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
	} else {
		var m *translate.Model
		if _, m, err = o.loadModel(paths, stdin, ro, nil); err != nil {
			return err
		}
		d, err = diffTargets(m, pair[0], pair[1], o.retryNonIdempotent)
	}
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

// diffSide is one side of a diff: the timelines of its rules as its
// judge read them from the configuration, and the codes behind each.
type diffSide struct {
	info      translate.TargetInfo
	timelines []translate.Timeline
	// why names the codes behind a side's aspect: the worst status of
	// the findings of the features fs and their reasons or caveats.
	why func(tl translate.Timeline, fs ...report.Feature) string
	// paths names the Ingress path of a rule on the ingress-nginx side.
	paths map[diffKey]nginxconf.Location
}

type diffKey struct {
	route string
	rule  int
}

// diffTargets compares what the judges read from a's and b's
// configurations (translate.Explain's timelines) rule by rule, and names
// the findings behind each side from the records (translate.Run).
func diffTargets(m *translate.Model, a, b translate.Target, retryNonIdempotent bool) (*diffReport, error) {
	var sides [2]*diffSide
	for i, t := range []translate.Target{a, b} {
		s, err := targetSide(m, t, retryNonIdempotent)
		if err != nil {
			return nil, err
		}
		sides[i] = s
	}
	return diffSides(sides[0], sides[1]), nil
}

// targetSide explains t's configuration for m and keeps the findings of
// its report.
func targetSide(m *translate.Model, t translate.Target, retryNonIdempotent bool) (*diffSide, error) {
	ex, err := translate.Explain(m, []translate.Target{t}, retryNonIdempotent)
	if err != nil {
		return nil, err
	}
	findings := map[string]*translate.Finding{} // route/rule/feature
	key := func(route string, rule int, f report.Feature) string {
		return route + "\x00" + strconv.Itoa(rule) + "\x00" + string(f)
	}
	res, err := translate.Run(m, []translate.Target{t}, retryNonIdempotent)
	if err != nil {
		return nil, err
	}
	for j := range res.Report.Findings {
		f := &res.Report.Findings[j]
		findings[key(f.Route, f.Rule, f.Feature)] = f
	}
	why := func(tl translate.Timeline, fs ...report.Feature) string {
		worst, codes := report.Status(""), []string{}
		for _, feat := range fs {
			f := findings[key(tl.Route, tl.Rule, feat)]
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
		return whyText(string(worst), codes)
	}
	return &diffSide{info: translate.TargetInfo{Name: t.Backend.Name(), Version: t.Version}, timelines: ex.Timelines, why: why}, nil
}

// whyText is "STATUS CODE...", the status alone, or "-" for no finding.
func whyText(worst string, codes []string) string {
	switch {
	case worst == "":
		return "-"
	case len(codes) == 0:
		return worst
	}
	return worst + " " + strings.Join(codes, " ")
}

// diffSides pairs the sides' timelines by rule and method class and keeps
// what differs. When a side is ingress-nginx, only the rules made of its
// Ingress paths are compared (the import adds redirect rules of its own).
func diffSides(a, b *diffSide) *diffReport {
	d := &diffReport{SchemaVersion: 1, Rules: []ruleDiff{}, From: a.info, To: b.info}
	// Each side's timelines are in the model's rule order, but a mesh
	// target also explains the rules attached to Services: the sides are
	// paired by rule and method class, never by position, and a rule only
	// one side explains is a difference of its own.
	type pairKey struct {
		route   string
		rule    int
		methods translate.MethodClass
	}
	xs, ys := a.timelines, b.timelines
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
		if !paired[pairKey{y.Route, y.Rule, y.Methods}] && a.paths == nil {
			x := absent
			x.Route, x.Rule, x.RuleName, x.Methods = y.Route, y.Rule, y.RuleName, y.Methods
			pairs = append(pairs, [2]translate.Timeline{x, y})
		}
	}
	for _, p := range pairs {
		x, y := p[0], p[1]
		rd := ruleDiff{Route: x.Route, Rule: x.Rule, RuleName: x.RuleName, Methods: x.Methods}
		if loc, ok := a.paths[diffKey{x.Route, x.Rule}]; ok {
			rd.Ingress, rd.Path = loc.Ingress, loc.Path
		}
		add := func(what, from, to string, fs ...report.Feature) {
			if from != to {
				rd.Differences = append(rd.Differences, difference{What: what, From: from, To: to, FromWhy: a.why(x, fs...), ToWhy: b.why(y, fs...)})
			}
		}
		if x.Unread || y.Unread {
			add("read back", readBack(x), readBack(y))
		} else {
			add("answer", answerText(x), answerText(y), report.FeatureBackendRefs)
			add("retries", retriesText(x), retriesText(y), report.FeatureRetryAttempts)
			add("retried on", retriedText(x), retriedText(y), report.FeatureRetryCodes, report.FeatureRetryConnectionErrors)
			add("try cut by", tryTimer(x), tryTimer(y), report.FeatureBackendRequestTimeout, report.FeatureRetryBackendTimeout)
			add("pause between tries", pauseText(x), pauseText(y), report.FeatureRetryBackoff)
			add("worst case", x.WorstCase.String(), y.WorstCase.String(), report.FeatureRequestTimeout)
		}
		if len(rd.Differences) > 0 {
			d.Rules = append(d.Rules, rd)
		}
	}
	return d
}

// retriesText is the number of retries, or "unbounded".
func retriesText(tl translate.Timeline) string {
	if tl.Retries >= nginxconf.UnboundedRetries {
		return "unbounded"
	}
	return strconv.Itoa(tl.Retries)
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
	if rd.Ingress != "" {
		return "Ingress " + rd.Ingress + " " + rd.Path + " (HTTPRoute " + rd.Route + " rule " + strconv.Itoa(rd.Rule) + ")"
	}
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
