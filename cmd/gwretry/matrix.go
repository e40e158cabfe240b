package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// matrixCell is what one target version reports for one feature over the
// scenario rules: each status and the scenarios that got it.
type matrixCell struct {
	Target    string              `json:"target"`
	Version   string              `json:"version"`
	Feature   translate.Feature   `json:"feature"`
	Scenarios map[string][]string `json:"scenarios"`
}

func newMatrixCmd(stdout io.Writer) *cobra.Command {
	var target, output string
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Print what each data plane version honours, feature by feature",
		Long: `matrix prints the capability table: for each target version and each retry and timeout
feature, the statuses (honoured, approximated, unsupported) that gwretry reports, and for how
many rules. The rules are the end-to-end suite's scenarios (prove/scenarios.go, listed in
docs/matrix.md): each is translated here by the backends themselves, so the table is what
their own version tables and checks say, with nothing kept in a second table. A feature can
have several statuses when it depends on the values (which codes are listed, whether the
request is a POST).

docs/matrix.md is the same table proven live: there each status names the scenarios whose
real proxy behaved as the finding says. This command runs no proxy.

--target picks the targets: NAME for every version gwretry knows of it, NAME@VERSION for
one, all (the default) for every version of every target.`,
		Example: `  gwretry matrix
  gwretry matrix --target nginx@1.22,haproxy
  gwretry matrix --target traefik -o json | jq '.[] | select(.feature == "retry.codes")'`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			targets, err := matrixTargets(target)
			if err != nil {
				return err
			}
			if output != "text" && output != "json" {
				return usageErrorf("-o %q: want text or json", output)
			}
			cells, err := capabilities(targets)
			if err != nil {
				return err
			}
			var data []byte
			if output == "json" {
				if data, err = json.MarshalIndent(cells, "", "  "); err != nil {
					return err
				}
				data = append(data, '\n')
			} else {
				data = matrixText(cells)
			}
			_, err = stdout.Write(data)
			return err
		},
	}
	cmd.Flags().StringVar(&target, "target", "all", "comma list of NAME (every version), NAME@VERSION or all ("+strings.Join(backendNames(), ", ")+")")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "format: text or json")
	return cmd
}

// matrixTargets parses --target as translate does, except that a NAME
// without a version stands for every version of it.
func matrixTargets(spec string) ([]translate.Target, error) {
	all := backends.All()
	parsed, err := translate.ParseTargets(spec, all)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	pinned := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		if name, _, ok := strings.Cut(strings.TrimSpace(item), "@"); ok {
			pinned[name] = true
		}
	}
	var out []translate.Target
	for _, t := range parsed {
		if pinned[t.Backend.Name()] {
			out = append(out, t)
			continue
		}
		for _, v := range t.Backend.Versions() {
			out = append(out, translate.Target{Backend: t.Backend, Version: v})
		}
	}
	return out, nil
}

// capabilities translates every scenario rule for every target version and
// collects the statuses of the findings, in target, version and feature
// order.
func capabilities(targets []translate.Target) ([]matrixCell, error) {
	type key struct {
		target, version string
		feature         translate.Feature
	}
	cells := map[key]*matrixCell{}
	var order []key
	for _, s := range prove.Scenarios() {
		in, err := input.Load([]string{"-"}, strings.NewReader(s.Manifest()), input.DefaultLimits())
		if err != nil {
			return nil, &translate.InternalError{Err: fmt.Errorf("scenario %s: %w", s.Name, err)}
		}
		m, err := resolve.Build(in, translate.ResolveOptions{})
		if err != nil {
			return nil, &translate.InternalError{Err: fmt.Errorf("scenario %s: %w", s.Name, err)}
		}
		for _, t := range targets {
			res, err := translate.Run(m, []translate.Target{t}, s.RetryNonIdempotent)
			if err != nil {
				return nil, &translate.InternalError{Err: fmt.Errorf("scenario %s on %s@%s: %w", s.Name, t.Backend.Name(), t.Version, err)}
			}
			for _, f := range res.Report.Findings {
				if f.Route != s.Route() {
					continue // the readiness route
				}
				k := key{t.Backend.Name(), t.Version, f.Feature}
				c := cells[k]
				if c == nil {
					c = &matrixCell{Target: k.target, Version: k.version, Feature: f.Feature, Scenarios: map[string][]string{}}
					cells[k] = c
					order = append(order, k)
				}
				if !slices.Contains(c.Scenarios[string(f.Status)], s.Name) {
					c.Scenarios[string(f.Status)] = append(c.Scenarios[string(f.Status)], s.Name)
				}
			}
		}
	}
	rank := map[string]int{}
	for i, t := range targets {
		if _, ok := rank[t.Backend.Name()+"@"+t.Version]; !ok {
			rank[t.Backend.Name()+"@"+t.Version] = i
		}
	}
	slices.SortStableFunc(order, func(a, b key) int {
		if d := rank[a.target+"@"+a.version] - rank[b.target+"@"+b.version]; d != 0 {
			return d
		}
		return strings.Compare(string(a.feature), string(b.feature))
	})
	out := make([]matrixCell, 0, len(order))
	for _, k := range order {
		c := cells[k]
		for _, names := range c.Scenarios {
			slices.Sort(names)
		}
		out = append(out, *c)
	}
	return out, nil
}

// matrixText is the table: one line per target version and feature, the
// statuses best first, each with its number of scenario rules.
func matrixText(cells []matrixCell) []byte {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tVERSION\tFEATURE\tSTATUSES (scenario rules)")
	for _, c := range cells {
		var parts []string
		for _, s := range []translate.Status{translate.Honoured, translate.Approximated, translate.Unsupported} {
			if n := len(c.Scenarios[string(s)]); n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", s, n))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Target, c.Version, c.Feature, strings.Join(parts, ", "))
	}
	tw.Flush()
	buf.WriteString("\nThe rules are the end-to-end scenarios (docs/matrix.md); -o json names them. docs/matrix.md shows which statuses real proxies confirmed.\n")
	return buf.Bytes()
}
