package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// writeMarkdown writes the report for a pull-request comment (GitHub
// flavoured Markdown): the summary table per target, then per rule a
// table of the targets that do not honour everything, their features
// grouped by the reason or caveat codes, and last every code met, in the
// catalogue's words, once each (with the parameters of every target that
// has it). It is the brief report's content, in Markdown.
func writeMarkdown(w io.Writer, r *translate.Report, sources map[string]translate.Position) error {
	buf := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(buf, "### gwretry report: %d route(s), %d rule(s)\n\n", r.Routes, r.Rules)
	if len(r.Findings) == 0 {
		buf.WriteString("No rule sets a retry or timeout feature.\n")
		return buf.Flush()
	}
	counts := statusCounts(r)
	buf.WriteString("| target | honoured | approximated | unsupported | not applicable |\n|---|--:|--:|--:|--:|\n")
	var idle []string
	for _, t := range r.Targets {
		c := counts[t.Name]
		if c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] > 0 {
			idle = append(idle, t.Name)
		}
		fmt.Fprintf(buf, "| %s@%s | %d | %d | %d | %d |\n", t.Name, t.Version, c[0], c[1], c[2], c[3])
	}
	if len(idle) > 0 {
		fmt.Fprintf(buf, "\n%s serve none of these rules (every finding not applicable).\n", mdList(idle))
	}

	words := map[report.Reason][]string{} // code -> its distinct renderings
	uses := map[report.Reason][]use{}
	note := func(code report.Reason, p report.Params, target string) {
		e, ok := report.Lookup(code)
		if !ok {
			return
		}
		if s := e.Render(p); !slices.Contains(words[code], s) {
			words[code] = append(words[code], s)
		}
		uses[code] = append(uses[code], use{target, p})
	}
	gs := gaps(r, sources)
	for start := 0; start < len(gs); {
		first := gs[start].f
		end := start
		for end < len(gs) && sameRule(gs[end].f, first) {
			end++
		}
		heading := subject(first)
		if first.Gateway != "" {
			heading += " (connection timeouts)"
		}
		if g := gs[start]; g.file != "" {
			where := g.file
			if g.line > 0 {
				where += fmt.Sprintf(":%d", g.line)
			}
			heading += " · `" + where + "`"
		}
		fmt.Fprintf(buf, "\n#### %s\n\n| target | features: why |\n|---|---|\n", mdEscape(heading))
		// One row per target, in the targets' order; features grouped
		// by why, in the order met.
		for _, t := range r.Targets {
			var whys []string
			groups := map[string][]string{}
			for _, g := range gs[start:end] {
				f := g.f
				if f.Target != t.Name {
					continue
				}
				var why string
				if f.Status == report.Approximated && len(f.Caveats) > 0 {
					var cs []string
					for _, c := range f.Caveats {
						note(c.Reason, c.Params, f.Target)
						cs = append(cs, "`"+string(c.Reason)+"`")
					}
					why = "approximated: " + strings.Join(cs, " ")
				} else {
					note(f.Reason, f.Params, f.Target)
					why = string(f.Status) + ": `" + string(f.Reason) + "`"
				}
				if _, ok := groups[why]; !ok {
					whys = append(whys, why)
				}
				groups[why] = append(groups[why], "`"+string(f.Feature)+"`")
			}
			if len(whys) == 0 {
				continue
			}
			var cells []string
			for _, why := range whys {
				cells = append(cells, strings.Join(groups[why], " ")+" "+why)
			}
			fmt.Fprintf(buf, "| %s@%s | %s |\n", t.Name, t.Version, mdEscape(strings.Join(cells, "<br>")))
		}
		start = end
	}
	if len(words) > 0 {
		buf.WriteString("\n<details><summary>What the codes mean</summary>\n\n")
		for _, k := range slices.Sorted(maps.Keys(words)) {
			said := words[k]
			if len(said) > 1 {
				said = []string{merged(k, uses[k])}
			}
			fmt.Fprintf(buf, "- `%s`: %s\n", k, mdEscape(said[0]))
		}
		buf.WriteString("\n</details>\n")
	}
	buf.WriteString("\nUnlisted features are honoured. Codes: [docs/report.md](" + catalogueURI + ").\n")
	return buf.Flush()
}

// mdEscape escapes what would end a table cell or start markup in text
// that is not ours: '|', '<' and '>' (kept in the <br> we join cells
// with), backslashes.
func mdEscape(s string) string {
	s = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
	return strings.ReplaceAll(s, "&lt;br&gt;", "<br>")
}

func mdList(names []string) string {
	var out []string
	for _, n := range names {
		out = append(out, "`"+n+"`")
	}
	return strings.Join(out, ", ")
}
