package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// writeAnnotations writes GitHub Actions workflow commands, one per
// finding worth counting: with --fail-on, each finding the gate counts, as
// an error (it fails the build); without, each approximated finding as a
// warning and each unsupported one as an error:
//
//	::warning file=F,line=L,title=T::MESSAGE
//
// at the rule's line in its manifest (a Gateway's connection findings have
// no file); the title names the target, feature, status and the codes, the
// message says the reason or caveats in the catalogue's words. GitHub shows
// them on the pull request's diff.
func writeAnnotations(w io.Writer, r *translate.Report, sources map[string]translate.Position, gt gate) error {
	buf := bufio.NewWriterSize(w, 1<<16)
	for _, g := range gaps(r, sources) {
		f := g.f
		level := "warning"
		switch {
		case gt.limit != "" && !gt.counts(f):
			continue
		case gt.limit != "" || f.Status == report.Unsupported:
			level = "error"
		}
		var props []string
		if g.file != "" {
			props = append(props, "file="+escapeProperty(g.file))
			if g.line > 0 {
				props = append(props, fmt.Sprintf("line=%d", g.line))
			}
		}
		var cs []string
		for _, c := range codes(f) {
			cs = append(cs, string(c))
		}
		title := fmt.Sprintf("gwretry %s@%s %s %s (%s)", f.Target, g.version, f.Feature, f.Status, strings.Join(cs, " "))
		props = append(props, "title="+escapeProperty(title))
		fmt.Fprintf(buf, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(gapMessage(g)))
	}
	return buf.Flush()
}

// escapeData escapes a workflow command's message as the Actions runner
// and @actions/core do: %, CR and LF.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a workflow command's property value: as data,
// and ':' and ',', which end a value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
