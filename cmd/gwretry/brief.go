package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// writeBrief writes the default text report, for a reviewer's ten
// seconds: a summary per target, the targets that serve none of the
// rules on one line, then for each rule one line per target that does not
// honour everything, its features grouped by why, and last the caveats
// in words, once each (the per-method answer, NonIdempotentExempt, is
// one of them). --report table lists every finding; wide adds the words.
func writeBrief(w io.Writer, r *translate.Report, sources map[string]input.Position, colour bool) error {
	buf := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(buf, "report: %d route(s), %d rule(s)\n", r.Routes, r.Rules)
	if len(r.Findings) == 0 {
		buf.WriteString("no rule sets a retry or timeout feature\n")
		return buf.Flush()
	}
	idle := writeCounts(buf, r)

	fs := r.Findings
	order := make([]int32, 0, len(fs))
	for i := range fs {
		if f := &fs[i]; f.Status != report.Honoured && f.Status != report.NotApplicable && !slices.Contains(idle, f.Target) {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(i, j int32) int {
		a, b := &fs[i], &fs[j]
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Target, b.Target))
	})
	caveats := map[report.Reason][]string{} // code -> its distinct renderings
	usedBy := map[report.Reason]map[string]bool{}
	uses := map[report.Reason][]use{}
	tw := tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0)
	for start := 0; start < len(order); {
		first := &fs[order[start]]
		end := start
		for end < len(order) && sameRule(&fs[order[end]], first) {
			end++
		}
		tw.Flush()
		fmt.Fprintf(buf, "\n%s\n", ruleHeading(first, sources))
		for t := start; t < end; {
			target := fs[order[t]].Target
			var line []string
			groups := map[string][]string{} // why -> features, in the order met
			var whys []string
			for ; t < end && fs[order[t]].Target == target; t++ {
				f := &fs[order[t]]
				why := briefWhy(f, caveats)
				for _, c := range f.Caveats {
					if usedBy[c.Reason] == nil {
						usedBy[c.Reason] = map[string]bool{}
					}
					usedBy[c.Reason][target] = true
					uses[c.Reason] = append(uses[c.Reason], use{target, c.Params})
				}
				if _, ok := groups[why]; !ok {
					whys = append(whys, why)
				}
				groups[why] = append(groups[why], string(f.Feature))
			}
			for _, why := range whys {
				said := why
				if colour {
					st := report.Unsupported
					if strings.HasPrefix(why, "~") {
						st = report.Approximated
					}
					said = statusColour(st) + why + ansiReset
				}
				line = append(line, strings.Join(groups[why], " ")+": "+said)
			}
			fmt.Fprintf(tw, "  %s\t%s\n", target, strings.Join(line, "; "))
		}
		start = end
	}
	tw.Flush()
	// The caveats several targets share, in words, once: the questions
	// a reviewer asks of every data plane (are POST requests retried?).
	// With one target shown, every caveat is said in words.
	shown := map[string]bool{}
	for _, i := range order {
		shown[fs[i].Target] = true
	}
	heading := "\ncaveats (what differs from the Gateway API):"
	shared := slices.Sorted(maps.Keys(caveats))
	if len(shown) > 1 {
		heading = "\nshared caveats (what differs from the Gateway API on several targets):"
		shared = slices.DeleteFunc(shared, func(c report.Reason) bool { return len(usedBy[c]) < 2 })
	}
	if len(shared) > 0 {
		fmt.Fprintln(buf, heading)
		for _, k := range shared {
			words := caveats[k]
			if len(words) > 1 {
				words = []string{merged(k, uses[k])}
			}
			fmt.Fprintf(buf, "  %s: %s\n", k, words[0])
		}
	}
	fmt.Fprintln(buf, "\nunlisted features are honoured; every finding in words: --report wide; codes: docs/report.md; timelines: gwretry explain")
	return buf.Flush()
}

// writeCounts writes the summary per target and returns the targets whose
// every finding is not applicable: they serve none of the rules, and the
// rest of the report leaves them out.
func writeCounts(w io.Writer, r *translate.Report) (idle []string) {
	by := statusCounts(r)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TARGET\tHONOURED\tAPPROXIMATED\tUNSUPPORTED\tNOT APPLICABLE\t")
	for _, t := range r.Targets {
		c := by[t.Name]
		if c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] > 0 {
			idle = append(idle, t.Name+"@"+t.Version)
			continue
		}
		fmt.Fprintf(tw, "%s@%s\t%d\t%d\t%d\t%d\t\n", t.Name, t.Version, c[0], c[1], c[2], c[3])
	}
	tw.Flush()
	if len(idle) > 0 {
		fmt.Fprintf(w, "serve none of these rules (every finding not applicable): %s\n", strings.Join(idle, ", "))
	}
	for i, t := range idle {
		idle[i], _, _ = strings.Cut(t, "@")
	}
	return idle
}

func sameRule(a, b *translate.Finding) bool {
	return a.Gateway == b.Gateway && a.Route == b.Route && a.Rule == b.Rule
}

func ruleHeading(f *translate.Finding, sources map[string]input.Position) string {
	if f.Gateway != "" {
		return "Gateway " + f.Gateway + " (connection timeouts)"
	}
	h := fmt.Sprintf("HTTPRoute %s rule %d", f.Route, f.Rule)
	if f.RuleName != "" {
		h += " (" + f.RuleName + ")"
	}
	if pos, ok := sources[f.Route]; ok {
		if line := ruleLine(pos, f.Rule); line > 0 {
			h += fmt.Sprintf("  %s:%d", pos.File, line) // where an editor jumps to
		} else {
			h += "  " + pos.String()
		}
	}
	return h
}

// briefWhy is why f is not honoured, in codes: "unsupported NoBackoff", or
// the caveats of an approximated finding ("~ IdleTimer NoTotalRequestTimeout"),
// each recorded in caveats with its words.
func briefWhy(f *translate.Finding, caveats map[report.Reason][]string) string {
	if f.Status != report.Approximated || len(f.Caveats) == 0 {
		return string(f.Status) + " " + string(f.Reason)
	}
	var cs []string
	for _, c := range f.Caveats {
		if e, ok := report.Lookup(c.Reason); ok {
			if words := e.Render(c.Params); !slices.Contains(caveats[c.Reason], words) {
				caveats[c.Reason] = append(caveats[c.Reason], words)
			}
		}
		cs = append(cs, string(c.Reason))
	}
	return "~ " + strings.Join(cs, " ")
}

// use is one target's parameters of a caveat.
type use struct {
	target string
	params report.Params
}

// merged renders caveat c once for uses whose parameters differ: each
// parameter lists its values, with the targets that have each when more
// than one target uses c ("1 MiB (envoy) or 2 MiB (traefik)").
func merged(c report.Reason, uses []use) string {
	e, _ := report.Lookup(c)
	targets := map[string]bool{}
	for _, u := range uses {
		targets[u.target] = true
	}
	p := report.Params{}
	for _, name := range e.Params {
		var vals []string
		who := map[string][]string{}
		for _, u := range uses {
			v := u.params[name]
			if !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
			if !slices.Contains(who[v], u.target) {
				who[v] = append(who[v], u.target)
			}
		}
		// Name the targets only when they differ in this value.
		same := true
		for _, v := range vals {
			same = same && len(who[v]) == len(targets)
		}
		if len(targets) > 1 && len(vals) > 1 && !same {
			for i, v := range vals {
				vals[i] = v + " (" + strings.Join(who[v], ", ") + ")"
			}
		}
		p[name] = strings.Join(vals, " or ")
	}
	return e.Render(p)
}
