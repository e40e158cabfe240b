package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// reportJSON is report.json: indented, with a final newline, byte for byte
// deterministic.
func reportJSON(r *translate.Report) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeReportJSON(&buf, r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// findingsKey is how json.MarshalIndent writes an empty findings array at
// the top level of a report: a key at the top level is the only text
// after a newline and exactly two spaces (strings escape their newlines).
const findingsKey = "\n  \"findings\": []"

// writeReportJSON writes report.json to w: the report as
// json.MarshalIndent(r, "", "  ") writes it and a newline, except that
// each finding is one line of compact JSON: a changed record is a changed
// line in a review's diff, and the file is about half the size (a finding
// is a dozen short fields). It writes one finding at a time rather than
// the whole report in memory (at 10,000 routes it holds more than half a
// million findings); only the brackets and commas between them are
// written here.
func writeReportJSON(w io.Writer, r *translate.Report) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	whole := func() error {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		bw.Write(b)
		bw.WriteByte('\n')
		return bw.Flush()
	}
	if len(r.Findings) == 0 {
		return whole()
	}
	shell := *r
	shell.Findings = []translate.Finding{}
	head, err := json.MarshalIndent(&shell, "", "  ")
	if err != nil {
		return err
	}
	at := bytes.Index(head, []byte(findingsKey))
	if at < 0 || bytes.Count(head, []byte(findingsKey)) != 1 {
		// Cannot happen with Report's fields; never write a report that
		// is not MarshalIndent's.
		return whole()
	}
	at += len(findingsKey) - len("]")
	bw.Write(head[:at])
	for i := range r.Findings {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		b, err := json.Marshal(&r.Findings[i])
		if err != nil {
			return err
		}
		bw.Write(b)
	}
	bw.WriteString("\n  ")
	bw.Write(head[at:])
	bw.WriteByte('\n')
	return bw.Flush()
}

// reportText is the readable report: the findings grouped by route, each
// route headed by the file and document it was read from (sources, by
// "namespace/name"), and in each route by rule, target and feature, one
// line each: what is configured and why the status is what it is (the
// reason of an unsupported or not-applicable finding, the caveats of an
// approximated one), read from the decision records. wide adds each
// finding's message. With colour, the header is bold and each status
// green, yellow or red. A summary per target ends it.
func reportText(r *translate.Report, sources map[string]input.Position, colour, wide bool) []byte {
	var buf bytes.Buffer
	writeReportText(&buf, r, sources, colour, wide)
	return buf.Bytes()
}

// why is the WHY column: the reason of a finding that configures nothing,
// the caveats of an approximated one, "-" for an honoured one.
func why(f *translate.Finding) string {
	switch {
	case f.Status == translate.Unsupported || f.Status == translate.NotApplicable:
		return string(f.Reason)
	case len(f.Caveats) > 0:
		var cs []string
		for _, c := range f.Caveats {
			cs = append(cs, string(c.Reason))
		}
		return strings.Join(cs, " ")
	case f.Reason != report.ReasonConfigured:
		return string(f.Reason)
	}
	return "-"
}

// writeReportText writes reportText to w as it goes, and returns w's
// first error.
func writeReportText(w io.Writer, r *translate.Report, sources map[string]input.Position, colour, wide bool) error {
	buf := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(buf, "gwretry report: %d route(s), %d rule(s); targets:", r.Routes, r.Rules)
	for _, t := range r.Targets {
		fmt.Fprintf(buf, " %s@%s", t.Name, t.Version)
	}
	buf.WriteByte('\n')
	if len(r.Findings) == 0 {
		buf.WriteString("no rule sets a retry or timeout feature\n")
		return buf.Flush()
	}
	// The findings in report order, as indices: a copy of the findings
	// themselves would double what the report holds.
	fs := r.Findings
	order := make([]int32, len(fs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		a, b := &fs[i], &fs[j]
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Target, b.Target), cmp.Compare(a.Feature, b.Feature))
	})
	// A SOURCE column says where each value came from when some policy
	// shaped a rule (translate.Finding.Source).
	withSource := slices.ContainsFunc(fs, func(f translate.Finding) bool { return f.Source != "" })
	tw := tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0)
	for i, at := range order {
		f := &fs[at]
		if i == 0 || f.Route != fs[order[i-1]].Route || f.Gateway != fs[order[i-1]].Gateway {
			tw.Flush() // each route's table is aligned on its own
			header := "\nHTTPRoute " + f.Route
			if f.Gateway != "" {
				// connection.* findings: per Gateway, no rule.
				header = "\nGateway " + f.Gateway
			}
			if pos, ok := sources[f.Route]; ok {
				header += " (" + pos.String() + ")"
			}
			fmt.Fprintln(buf, header)
			status := "STATUS"
			if colour {
				status = ansiBold + status + ansiReset
			}
			head := "  RULE\tTARGET\tFEATURE\t" + status
			if withSource {
				head += "\tSOURCE"
			}
			head += "\tCONFIGURED\tWHY"
			if wide {
				head += "\tMESSAGE"
			}
			fmt.Fprintln(tw, head)
		}
		rule := strconv.Itoa(f.Rule)
		if f.Gateway != "" {
			rule = "-"
		}
		if f.RuleName != "" {
			rule += " (" + f.RuleName + ")"
		}
		msg := f.Text()
		if msg == "" {
			msg = "-"
		}
		status := string(f.Status)
		if colour {
			status = statusColour(f.Status) + status + ansiReset
		}
		line := fmt.Sprintf("  %s\t%s\t%s\t%s", rule, f.Target, f.Feature, status)
		if withSource {
			src := f.Source
			if src == "" {
				src = "HTTPRoute"
			}
			line += "\t" + src
		}
		configured := f.Configured
		if configured == "" {
			configured = "-"
		}
		line += "\t" + configured + "\t" + why(f)
		if wide {
			line += "\t" + msg
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	writeSummary(buf, r)
	return buf.Flush()
}

// writeSummary ends the text report: per target, how many findings have
// each status, and where the reasons are explained.
func writeSummary(w io.Writer, r *translate.Report) {
	by := statusCounts(r)
	fmt.Fprintln(w, "\nsummary (findings: honoured, approximated, unsupported, not applicable):")
	for _, t := range r.Targets {
		c := by[t.Name]
		fmt.Fprintf(w, "  %s@%s: %d honoured, %d approximated, %d unsupported, %d not applicable\n", t.Name, t.Version, c[0], c[1], c[2], c[3])
	}
	fmt.Fprintln(w, "reasons and caveats: docs/report.md; messages: --report wide")
}

// statusCounts counts each target's findings by status: honoured,
// approximated, unsupported, not applicable.
func statusCounts(r *translate.Report) map[string][4]int {
	by := map[string][4]int{}
	for i := range r.Findings {
		f := &r.Findings[i]
		c := by[f.Target]
		switch f.Status {
		case translate.Honoured:
			c[0]++
		case translate.Approximated:
			c[1]++
		case translate.Unsupported:
			c[2]++
		default:
			c[3]++
		}
		by[f.Target] = c
	}
	return by
}

// writeReport writes the report in the chosen format to --report-file, or
// else to w; the text report is coloured only on a terminal (see console).
func (o *options) writeReport(r *translate.Report, sources map[string]input.Position, w io.Writer) error {
	var write func(io.Writer) error
	switch o.report {
	case "none":
		return nil
	case "json":
		write = func(w io.Writer) error { return writeReportJSON(w, r) }
	case "sarif":
		write = func(w io.Writer) error { return writeSARIF(w, r, sources) }
	case "github":
		write = func(w io.Writer) error { return writeAnnotations(w, r, sources, o.gate) }
	case "markdown":
		write = func(w io.Writer) error { return writeMarkdown(w, r, sources) }
	case "html":
		write = func(w io.Writer) error { return writeHTML(w, r, sources) }
	default:
		colour := o.reportFile == "" && o.console.colour(w)
		if o.report == "text" {
			write = func(w io.Writer) error { return writeBrief(w, r, sources, colour) }
			break
		}
		wide := o.report == "wide"
		write = func(w io.Writer) error { return writeReportText(w, r, sources, colour, wide) }
	}
	if o.reportFile == "" {
		return write(w)
	}
	f, err := os.OpenFile(o.reportFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
