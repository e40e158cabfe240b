package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/gwretry/gwretry/translate"
)

// reportJSON is report.json: indented, with a final newline, byte for byte
// deterministic.
func reportJSON(r *translate.Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// reportText is the readable report: the findings grouped by route, each
// route headed by the file and document it was read from (sources, by
// "namespace/name"), and in each route by rule, target and feature. With
// colour, the header is bold and each status green, yellow or red.
func reportText(r *translate.Report, sources map[string]translate.Position, colour bool) []byte {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "gwretry report: %d route(s), %d rule(s); targets:", r.Routes, r.Rules)
	for _, t := range r.Targets {
		fmt.Fprintf(&buf, " %s@%s", t.Name, t.Version)
	}
	buf.WriteByte('\n')
	if len(r.Findings) == 0 {
		buf.WriteString("no rule sets a retry or timeout feature\n")
		return buf.Bytes()
	}
	fs := slices.Clone(r.Findings)
	slices.SortStableFunc(fs, func(a, b translate.Finding) int {
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Feature, b.Feature))
	})
	// A SOURCE column says where each value came from when some policy
	// shaped a rule (translate.Finding.Source).
	withSource := slices.ContainsFunc(fs, func(f translate.Finding) bool { return f.Source != "" })
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	for i, f := range fs {
		if i == 0 || f.Route != fs[i-1].Route || f.Gateway != fs[i-1].Gateway {
			tw.Flush() // each route's table is aligned on its own
			header := "\nHTTPRoute " + f.Route
			if f.Gateway != "" {
				// connection.* findings: per Gateway, no rule.
				header = "\nGateway " + f.Gateway
			}
			if pos, ok := sources[f.Route]; ok {
				header += " (" + pos.String() + ")"
			}
			fmt.Fprintln(&buf, header)
			status := "STATUS"
			if colour {
				status = ansiBold + status + ansiReset
			}
			if withSource {
				fmt.Fprintln(tw, "  RULE\tTARGET\tFEATURE\t"+status+"\tSOURCE\tMESSAGE")
			} else {
				fmt.Fprintln(tw, "  RULE\tTARGET\tFEATURE\t"+status+"\tMESSAGE")
			}
		}
		rule := strconv.Itoa(f.Rule)
		if f.Gateway != "" {
			rule = "-"
		}
		if f.RuleName != "" {
			rule += " (" + f.RuleName + ")"
		}
		msg := f.Message
		if msg == "" {
			msg = "-"
		}
		status := string(f.Status)
		if colour {
			status = statusColour(f.Status) + status + ansiReset
		}
		if withSource {
			src := f.Source
			if src == "" {
				src = "HTTPRoute"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", rule, f.Target, f.Feature, status, src, msg)
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", rule, f.Target, f.Feature, status, msg)
		}
	}
	tw.Flush()
	return buf.Bytes()
}

// writeReport writes the report in the chosen format to --report-file, or
// else to w; the text report is coloured only on a terminal (see console).
func (o *options) writeReport(r *translate.Report, sources map[string]translate.Position, w io.Writer) error {
	var data []byte
	switch o.report {
	case "none":
		return nil
	case "json":
		var err error
		if data, err = reportJSON(r); err != nil {
			return err
		}
	default:
		data = reportText(r, sources, o.reportFile == "" && o.console.colour(w))
	}
	if o.reportFile != "" {
		return os.WriteFile(o.reportFile, data, 0o644)
	}
	_, err := w.Write(data)
	return err
}
