package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
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

// reportText is the readable table.
func reportText(r *translate.Report) []byte {
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
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tROUTE\tRULE\tFEATURE\tSTATUS\tMESSAGE")
	for _, f := range r.Findings {
		rule := strconv.Itoa(f.Rule)
		if f.RuleName != "" {
			rule += " (" + f.RuleName + ")"
		}
		msg := f.Message
		if msg == "" {
			msg = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Target, f.Route, rule, f.Feature, f.Status, msg)
	}
	tw.Flush()
	return buf.Bytes()
}

func (o *options) writeReport(r *translate.Report, stderr io.Writer) error {
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
		data = reportText(r)
	}
	if o.reportFile != "" {
		return os.WriteFile(o.reportFile, data, 0o644)
	}
	_, err := stderr.Write(data)
	return err
}
