package main

import (
	"bytes"
	"cmp"
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
	"github.com/gwretry/gwretry/translate"
)

func newExplainCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	o := &options{limits: input.DefaultLimits(), available: backends.Configured}
	var output string
	var side sides
	cmd := &cobra.Command{
		Use:   "explain [PATH...]",
		Short: "Show when each try of each rule starts on each data plane",
		Long: `explain reads PATH... (or, without, the cluster: -n, -A, -l, --context) like translate, generates each target's configuration, reads it
back as the report's check does, and prints for every rule and method class the timeline of
tries the data plane makes when every try fails: the pause before each try (backoff, jitter,
turn-around), its earliest start (every try before failed at once), its latest start (every try
before ran until its timer cut it, or waited out the turn-around when that is longer), the timer that cuts it, and the worst-case total. It lists
the retries the rule asks for that the data plane never makes, and why: a retry count capped by
the configuration (nginx's upstream entries, gRPC's maxAttempts cap of 5), or retries that the
request timeout or a retry budget always cuts.

Times count from the start of the first try. Everything comes from the generated files as the
judge reads them, the facts the report's honoured findings are checked against. Nothing is
written.

-o json prints {"schemaVersion": 1, "timelines": [...]}; each timeline has target, version,
route, rule, ruleName, methods (idempotent or non-idempotent), answer (a status the data plane
answers itself, else absent), requestedRetries, retries, retriedOn, tries (try, pauseMinMs,
pauseMaxMs, earliestStartMs, latestStartMs, timeout, note), worstCaseMs, neverHappen (firstTry,
lastTry, reason) and notes. Times are milliseconds; null means unbounded.

--from A --to B (instead of --target) puts the two data planes' timelines of each rule side by
side, A's then B's, as gwretry diff compares them; --rule NAMESPACE/NAME:INDEX keeps one rule.
--from ingress-nginx reads Ingresses (and --configmap) as gwretry diff --from ingress-nginx does:
ingress-nginx's timelines are those of its template's configuration for each Ingress path, B's
those of the imported HTTPRoutes.`,
		Example: `  # the tries HAProxy makes for each rule
  gwretry explain route.yaml --target haproxy

  # compare nginx and Traefik 3.7, as JSON
  gwretry explain manifests/ --target nginx,traefik@3.7 -o json

  # one rule on the data plane moved from and the one moved to
  gwretry explain route.yaml --from nginx@1.26 --to envoy --rule shop/storefront:0

  # the worst case of every rule on every data plane
  gwretry explain route.yaml --target all -o json | jq '.timelines[] | {target, route, rule, worstCaseMs}'`,
		Args: o.needPaths("explain"),
		RunE: func(_ *cobra.Command, args []string) error {
			return runExplain(o, output, side, append(args, o.files...), stdin, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.target, "target", "", "comma list of NAME or NAME@VERSION ("+strings.Join(backendNames(), ", ")+") or all (required)")
	f.StringVarP(&output, "output", "o", "text", "format: text or json")
	f.StringVar(&side.from, "from", "", "with --to, instead of --target: the data plane moved from, NAME or NAME@VERSION")
	f.StringVar(&side.to, "to", "", "with --from: the data plane moved to")
	f.StringVar(&side.rule, "rule", "", "only the rule `NAMESPACE/NAME:INDEX`")
	side.ing.addFlags(f, false)
	o.addInputFlags(cmd)
	return cmd
}

// sides are explain's --from, --to and --rule.
type sides struct {
	from, to, rule string
	// ing are the flags of --from ingress-nginx.
	ing ingressFlags
}

func runExplain(o *options, output string, side sides, paths []string, stdin io.Reader, stdout io.Writer) error {
	if output != "text" && output != "json" {
		return usageErrorf("-o %q: want text or json", output)
	}
	route, index, err := side.ruleKey()
	if err != nil {
		return err
	}
	ro, err := o.resolveOptions()
	if err != nil {
		return err
	}
	var targets []translate.Target
	fromIngress := side.from == ingressNginx || side.from == ingressNginx+"@"+nginxconf.Version
	switch {
	case !fromIngress && side.ing.set():
		return usageErrorf("--configmap and the controller's flags go with --from ingress-nginx")
	case fromIngress && len(paths) == 0:
		return usageErrorf("--from ingress-nginx reads the Ingresses from PATH; for a cluster's, write them first with 'gwretry import ingress-nginx --dump DIR' and give DIR (with --configmap DIR/<its file>)")
	case (side.from == "") != (side.to == ""):
		return usageErrorf("--from and --to go together")
	case side.from != "" && o.target != "":
		return usageErrorf("--from and --to replace --target")
	case side.from != "":
		for _, spec := range []string{side.from, side.to} {
			if strings.Contains(spec, ",") {
				return usageErrorf("--from and --to name one data plane each")
			}
			if spec == side.from && fromIngress {
				continue
			}
			o.target = spec
			ts, err := o.targets()
			if err != nil {
				return err
			}
			targets = append(targets, ts[0])
		}
	default:
		if targets, err = o.targets(); err != nil {
			return err
		}
	}
	var m *translate.Model
	var from *diffSide
	if fromIngress {
		// ingress-nginx's side is the diff's: its template's
		// configuration for the Ingress paths, read back.
		listen := o.listen
		if listen == "" {
			listen = "0.0.0.0:8080"
		}
		di, err := loadIngressDiff(paths, stdin, o.limits, ro, side.ing, listen)
		if err != nil {
			return err
		}
		if from, err = ingressNginxSide(di); err != nil {
			return &exitError{code: exitInternal, err: err}
		}
		m = di.model
	} else if _, m, err = o.loadModel(paths, stdin, ro, nil); err != nil {
		return err
	}
	ex, err := translate.Explain(m, targets, o.retryNonIdempotent)
	if err == nil && from != nil {
		ex.Timelines = append(from.timelines, ex.Timelines...)
	}
	if err != nil {
		var ie *translate.InternalError
		if !errors.As(err, &ie) {
			err = &translate.InternalError{Err: err}
		}
		return &exitError{code: exitInternal, err: err}
	}
	if route != "" {
		ex.Timelines = slices.DeleteFunc(ex.Timelines, func(tl translate.Timeline) bool { return tl.Route != route || tl.Rule != index })
		if len(ex.Timelines) == 0 {
			return usageErrorf("--rule %s: no such rule is translated", side.rule)
		}
	}
	if side.from != "" {
		// Side by side: each rule and method class, A's timeline then B's.
		slices.SortStableFunc(ex.Timelines, func(a, b translate.Timeline) int {
			return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Methods, b.Methods))
		})
	}
	var data []byte
	if output == "json" {
		if data, err = json.MarshalIndent(ex, "", "  "); err != nil {
			return err
		}
		data = append(data, '\n')
	} else {
		data = explainText(ex)
	}
	_, err = stdout.Write(data)
	return err
}

// explainText writes one block per timeline: a heading, the table of
// tries, the worst case, the retries that never happen and the notes.
func explainText(ex *translate.Explanation) []byte {
	var b bytes.Buffer
	for i, tl := range ex.Timelines {
		if i > 0 {
			b.WriteString("\n")
		}
		rule := tl.Route + " rule " + strconv.Itoa(tl.Rule)
		if tl.RuleName != "" {
			rule += " (" + tl.RuleName + ")"
		}
		methods := "GET, PUT, DELETE and other idempotent requests"
		if tl.Methods == translate.NonIdempotent {
			methods = "POST, PATCH and LOCK requests"
		}
		fmt.Fprintf(&b, "%s@%s  %s  %s\n", tl.Target, tl.Version, rule, methods)
		if !tl.Unread && tl.Answer == 0 {
			on := "nothing"
			if len(tl.RetriedOn) > 0 {
				on = strings.Join(tl.RetriedOn, "; ")
			}
			asks := fmt.Sprintf("the rule asks for %d", tl.RequestedRetries)
			if tl.Target == ingressNginx {
				// ingress-nginx's side is its own configuration: the
				// rule is the one the import made of the Ingress path.
				asks = fmt.Sprintf("the imported rule asks for %d", tl.RequestedRetries)
			}
			fmt.Fprintf(&b, "  retries: %s (%s), on %s\n", retriesText(tl), asks, on)
			w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "  TRY\tPAUSE BEFORE\tEARLIEST START\tLATEST START\tTRY TIMEOUT\tNOTE")
			for _, t := range tl.Tries {
				pause := "-"
				if t.Try > 1 {
					pause = t.PauseMin.String()
					if t.PauseMax != t.PauseMin {
						pause += " to " + t.PauseMax.String()
					}
				}
				fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%s\t%s\n", t.Try, pause, t.EarliestStart, t.LatestStart, t.Timeout, t.Note)
			}
			w.Flush()
			fmt.Fprintf(&b, "  worst case: %s\n", tl.WorstCase)
		}
		for _, n := range tl.Never {
			tries := "try " + strconv.Itoa(n.FirstTry)
			if n.LastTry != n.FirstTry {
				tries = fmt.Sprintf("tries %d to %d", n.FirstTry, n.LastTry)
			}
			fmt.Fprintf(&b, "  never: %s: %s\n", tries, n.Reason)
		}
		for _, n := range tl.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	return b.Bytes()
}

// ruleKey parses --rule NAMESPACE/NAME:INDEX; "" when it is not given.
func (s sides) ruleKey() (string, int, error) {
	if s.rule == "" {
		return "", 0, nil
	}
	route, idx, ok := strings.Cut(s.rule, ":")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil || n < 0 || !strings.Contains(route, "/") {
		return "", 0, usageErrorf("--rule %q: want NAMESPACE/NAME:INDEX (shop/storefront:0)", s.rule)
	}
	return route, n, nil
}
