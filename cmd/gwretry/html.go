package main

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// htmlReport is what the page shows: the rule x target matrix, each cell
// the worst status of the rule's findings on the target (not applicable
// only when all are), the features behind it on hover (title) and click
// (details), every caveat code as a footnote in words.
type htmlReport struct {
	Tool      string
	Routes    int
	Rules     int
	Targets   []translate.TargetInfo
	Rows      []htmlRow
	Footnotes []htmlFootnote
}

type htmlRow struct {
	Label, Where string
	Route        string
	Rule         int
	Gateway      string
	Cells        []htmlCell
}

type htmlCell struct {
	Target string
	Status report.Status // "" when the target has no finding on the rule
	Title  string
	Notes  []int // footnote numbers of the caveats
	Lines  []htmlLine
}

type htmlLine struct {
	Feature    report.Feature
	Status     report.Status
	Configured string
	Reason     report.Reason
	Words      string       // the reason's words, for a finding not honoured for its reason
	Caveats    []htmlCaveat // the caveats, each a footnote
}

type htmlCaveat struct {
	Code report.Reason
	N    int
}

type htmlFootnote struct {
	N     int
	Code  report.Reason
	Words string
}

// writeHTML writes the report as one self-contained page: no script, style
// sheet, font or image from anywhere else.
func writeHTML(w io.Writer, r *translate.Report, sources map[string]translate.Position) error {
	page := htmlReport{Tool: toolVersion(), Routes: r.Routes, Rules: r.Rules, Targets: r.Targets}
	col := map[string]int{}
	for i, t := range r.Targets {
		col[t.Name] = i
	}
	fs := r.Findings
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &fs[i], &fs[j]
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Feature, b.Feature))
	})
	notes := map[report.Reason]int{}
	uses := map[report.Reason][]use{}
	for start := 0; start < len(order); {
		first := &fs[order[start]]
		end := start
		for end < len(order) && sameRule(&fs[order[end]], first) {
			end++
		}
		row := htmlRow{Label: subject(first), Route: first.Route, Rule: first.Rule, Gateway: first.Gateway, Cells: make([]htmlCell, len(r.Targets))}
		if first.Gateway != "" {
			row.Label += " (connection timeouts)"
		} else if pos, ok := sources[first.Route]; ok {
			row.Where = fmt.Sprintf("%s:%d", relPath(pos.File), ruleLine(pos, first.Rule))
		}
		for i, t := range r.Targets {
			row.Cells[i].Target = t.Name
		}
		for _, at := range order[start:end] {
			f := &fs[at]
			i, ok := col[f.Target]
			if !ok {
				continue
			}
			c := &row.Cells[i]
			if c.Status == "" || f.Status.Rank() > c.Status.Rank() {
				c.Status = f.Status
			}
			l := htmlLine{Feature: f.Feature, Status: f.Status, Configured: f.Configured, Reason: f.Reason}
			if f.Status != report.Honoured && (f.Status != report.Approximated || len(f.Caveats) == 0) {
				if e, ok := report.Lookup(f.Reason); ok {
					l.Words = e.Render(f.Params)
				}
			}
			for _, cv := range f.Caveats {
				n, ok := notes[cv.Reason]
				if !ok {
					n = len(notes) + 1
					notes[cv.Reason] = n
				}
				uses[cv.Reason] = append(uses[cv.Reason], use{f.Target, cv.Params})
				l.Caveats = append(l.Caveats, htmlCaveat{cv.Reason, n})
				if !slices.Contains(c.Notes, n) {
					c.Notes = append(c.Notes, n)
				}
			}
			c.Lines = append(c.Lines, l)
		}
		for i := range row.Cells {
			c := &row.Cells[i]
			slices.Sort(c.Notes)
			var title []string
			for _, l := range c.Lines {
				s := string(l.Feature) + ": " + string(l.Status)
				if l.Words != "" {
					s += " (" + string(l.Reason) + ": " + l.Words + ")"
				}
				for _, cv := range l.Caveats {
					s += fmt.Sprintf(" %s[%d]", cv.Code, cv.N)
				}
				title = append(title, s)
			}
			c.Title = strings.Join(title, "\n")
		}
		page.Rows = append(page.Rows, row)
		start = end
	}
	for code, n := range notes {
		page.Footnotes = append(page.Footnotes, htmlFootnote{N: n, Code: code, Words: merged(code, uses[code])})
	}
	slices.SortFunc(page.Footnotes, func(a, b htmlFootnote) int { return cmp.Compare(a.N, b.N) })
	return htmlPage.Execute(w, page)
}

var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gwretry report: {{.Routes}} route(s), {{.Rules}} rule(s)</title>
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#1b1f24}
h1{font-size:1.3em;margin:0 0 .3em}
.meta{color:#57606a;margin:0 0 1em}
table.matrix{border-collapse:collapse}
.matrix th,.matrix td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top}
.matrix thead th{background:#f6f8fa}
.matrix th.rule{text-align:left;font-weight:normal;max-width:22em}
.where{display:block;color:#57606a;font-size:.85em}
.version{display:block;font-weight:normal;color:#57606a}
td.cell{min-width:7em}
.honoured{background:#d3f4dc}
.approximated{background:#fff1b8}
.unsupported{background:#ffd5d2}
.notApplicable{background:#eaeef2;color:#57606a}
.none{background:#fff}
details summary{cursor:pointer}
.st{white-space:nowrap}
details ul{margin:.3em 0 0;padding-left:1.1em;font-size:.9em}
sup a{text-decoration:none}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #d0d7de}
ol.footnotes li{margin:.2em 0}
code{font-size:.92em}
</style>
</head>
<body>
<h1>gwretry report</h1>
<p class="meta">{{.Routes}} route(s), {{.Rules}} rule(s); targets:{{range .Targets}} {{.Name}}@{{.Version}}{{end}}; gwretry {{.Tool}}</p>
<p class="legend"><span class="honoured">honoured</span><span class="approximated">approximated</span><span class="unsupported">unsupported</span><span class="notApplicable">notApplicable</span> Each cell is the worst status of the rule's features on the target; hover for them, click for the details.</p>
<table class="matrix">
<thead><tr><th>rule</th>{{range .Targets}}<th data-target="{{.Name}}">{{.Name}}<span class="version">{{.Version}}</span></th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
{{- $row := .}}
<tr><th class="rule" scope="row">{{.Label}}{{if .Where}}<span class="where">{{.Where}}</span>{{end}}</th>
{{- range .Cells}}
<td class="cell {{if .Status}}{{.Status}}{{else}}none{{end}}" data-route="{{$row.Route}}" data-rule="{{$row.Rule}}" data-gateway="{{$row.Gateway}}" data-target="{{.Target}}" data-status="{{.Status}}" title="{{.Title}}">
{{- if .Lines}}<details><summary><span class="st">{{.Status}}</span>{{if .Notes}} <sup>{{range $i, $n := .Notes}}{{if $i}} {{end}}<a href="#note-{{$n}}">{{$n}}</a>{{end}}</sup>{{end}}</summary><ul>
{{- range .Lines}}
<li><code>{{.Feature}}</code> {{.Status}}{{if .Configured}}: <code>{{.Configured}}</code>{{end}}{{if .Words}}; <code>{{.Reason}}</code>: {{.Words}}{{end}}{{range .Caveats}} <a href="#note-{{.N}}">{{.Code}}<sup>{{.N}}</sup></a>{{end}}</li>
{{- end}}
</ul></details>{{else}}&ndash;{{end}}</td>
{{- end}}
</tr>
{{- end}}
</tbody>
</table>
{{- if .Footnotes}}
<h2>Caveats: what differs from the Gateway API</h2>
<ol class="footnotes">
{{- range .Footnotes}}
<li id="note-{{.N}}" value="{{.N}}"><code>{{.Code}}</code>: {{.Words}}</li>
{{- end}}
</ol>
{{- end}}
<p class="meta">Reasons and caveat codes: docs/report.md. Every record: report.json (--report json).</p>
<script>
// #selftest: the test that loads this page in a browser reads each
// cell's computed colour from the DOM.
if (location.hash === "#selftest") {
  for (const td of document.querySelectorAll("td.cell")) td.dataset.bg = getComputedStyle(td).backgroundColor;
  document.body.dataset.selftest = "done";
}
</script>
</body>
</html>
`))
