package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// writeBrief writes the default text report, for a reviewer's ten
// seconds: a summary per target, the targets that serve none of the
// rules on one line, then for each rule one line per target that does not
// honour everything (its unsupported features with their reasons, then
// its approximated features with their caveat codes), and last the
// caveats in words, once each (the per-method answer, NonIdempotentExempt,
// is one of them). No line is longer than maxBriefLine where the words
// allow: a long line keeps the caveat codes fewest lines have and counts
// the others (+N), and long parameter lists are shortened; --report table
// lists every finding, wide adds the words, json has every parameter.
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
	// A rule's line per target, built first: which caveat codes a long
	// line keeps depends on how many lines each code is on.
	type targetLine struct {
		heading string // the rule's heading, on its first target's line
		target  string
		groups  []briefGroup
		codes   []report.Reason // of the approximated features
		kinds   map[string]int  // the rule's findings for the target, by feature prefix
	}
	// Every finding of a rule and target, honoured ones too, by feature
	// prefix: a line writes "retry.*" when it names them all.
	kinds := map[string]map[string]int{}
	ruleKey := func(f *translate.Finding) string {
		return f.Gateway + "\x00" + f.Route + "\x00" + strconv.Itoa(f.Rule) + "\x00" + f.Target
	}
	for i := range fs {
		k := ruleKey(&fs[i])
		if kinds[k] == nil {
			kinds[k] = map[string]int{}
		}
		kinds[k][featurePrefix(fs[i].Feature)]++
	}
	var lines []targetLine
	onLines := map[report.Reason]int{}
	width := 0 // of the target column
	for start := 0; start < len(order); {
		first := &fs[order[start]]
		end := start
		for end < len(order) && sameRule(&fs[order[end]], first) {
			end++
		}
		heading := ruleHeading(first, sources)
		for t := start; t < end; {
			target := fs[order[t]].Target
			width = max(width, len(target))
			tl := targetLine{heading: heading, target: target, kinds: kinds[ruleKey(&fs[order[t]])]}
			heading = ""
			for ; t < end && fs[order[t]].Target == target; t++ {
				f := &fs[order[t]]
				why := briefWhy(f, caveats)
				for _, c := range f.Caveats {
					if usedBy[c.Reason] == nil {
						usedBy[c.Reason] = map[string]bool{}
					}
					usedBy[c.Reason][target] = true
					uses[c.Reason] = append(uses[c.Reason], use{target, c.Params})
					if !slices.Contains(tl.codes, c.Reason) {
						tl.codes = append(tl.codes, c.Reason)
						onLines[c.Reason]++
					}
				}
				tl.groups = addToGroup(tl.groups, why, f.Feature)
			}
			lines = append(lines, tl)
		}
		start = end
	}
	for _, tl := range lines {
		if tl.heading != "" {
			fmt.Fprintf(buf, "\n%s\n", tl.heading)
		}
		prefix := fmt.Sprintf("  %-*s  ", width, tl.target)
		for i, l := range briefLine(tl.groups, tl.codes, tl.kinds, onLines, maxBriefLine-len(prefix), colour) {
			if i > 0 {
				prefix = strings.Repeat(" ", len(prefix))
			}
			fmt.Fprintf(buf, "%s%s\n", prefix, l)
		}
	}
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
			budget := maxBriefLine - len(k) - len("  : ")
			words := caveats[k][0]
			if len(caveats[k]) > 1 || len(words) > budget {
				words = mergedShort(k, uses[k], budget)
			}
			for i, l := range wrapWords("  "+string(k)+": "+words, maxBriefLine, "      ") {
				if i > 0 {
					buf.WriteString("\n")
				}
				buf.WriteString(l)
			}
			buf.WriteString("\n")
		}
	}
	fmt.Fprintln(buf, "\nunlisted features are honoured; x.*: the rule's other x.* features; +N: more caveats; words: --report wide; codes: docs/report.md; timelines: gwretry explain")
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

// maxBriefLine is the length the brief report's lines keep within.
const maxBriefLine = 160

// briefGroup is the features of a rule and target that share why they
// are not honoured: "unsupported NoBackoff", or "~" for the approximated
// ones with caveats, whose codes the line lists once for all.
type briefGroup struct {
	why      string
	features []report.Feature
}

func addToGroup(gs []briefGroup, why string, f report.Feature) []briefGroup {
	if strings.HasPrefix(why, "~") {
		why = "~"
	}
	for i := range gs {
		if gs[i].why == why {
			gs[i].features = append(gs[i].features, f)
			return gs
		}
	}
	return append(gs, briefGroup{why: why, features: []report.Feature{f}})
}

// briefLine writes a rule's groups for one target, each line within
// budget characters: "retry.backoff: unsupported NoBackoff;
// retry.{attempts,codes} timeouts.request: ~ IdleTimer NonIdempotentExempt".
// When the caveat codes do not fit, those on the fewest lines of the
// report are kept and the others counted (+N); when not one would be
// kept, the groups go on as many lines as they need instead, the
// approximated features on a line of their own. The features and the
// reasons are always written.
//
// The approximated features of a kind (retry, timeouts, ...) are written
// "retry.*" when they are two or more and the line names every feature of
// that kind the rule has for the target: the others are unsupported, none
// honoured.
func briefLine(gs []briefGroup, codes []report.Reason, kinds map[string]int, onLines map[report.Reason]int, budget int, colour bool) []string {
	// Unsupported and reason-approximated groups first, then the "~" one.
	slices.SortStableFunc(gs, func(a, b briefGroup) int {
		return cmp.Compare(boolInt(a.why == "~"), boolInt(b.why == "~"))
	})
	named := map[string]int{} // features on the line by prefix
	for _, g := range gs {
		for _, f := range g.features {
			named[featurePrefix(f)]++
		}
	}
	star := func(prefix string, n int) bool { return n >= 2 && prefix != "" && named[prefix] == kinds[prefix] }
	features := func(g briefGroup) string {
		if g.why == "~" {
			return compactFeatures(g.features, star)
		}
		return compactFeatures(g.features, nil)
	}
	said := func(g briefGroup, codesSaid string) (plain, shown string) {
		why := g.why
		if why == "~" {
			why = strings.TrimSpace("~ " + codesSaid)
		}
		shown = why
		if colour {
			st := report.Unsupported
			if strings.HasPrefix(why, "~") || strings.HasPrefix(why, string(report.Approximated)) {
				st = report.Approximated
			}
			shown = statusColour(st) + why + ansiReset
		}
		head := features(g) + ": "
		return head + why, head + shown
	}
	var fixed, fixedShown []string // the groups without caveat codes
	var approx *briefGroup
	for i := range gs {
		if gs[i].why == "~" {
			approx = &gs[i]
			continue
		}
		p, sh := said(gs[i], "")
		fixed, fixedShown = append(fixed, p), append(fixedShown, sh)
	}
	if approx == nil {
		return packGroups(fixed, fixedShown, budget)
	}
	// One line, when the codes fit or three of them do.
	head := len(strings.Join(fixed, "; ")) + len(features(*approx)) + len(": ~ ")
	if len(fixed) > 0 {
		head += len("; ")
	}
	if cs, kept := fitCodes(codes, onLines, budget-head); kept == len(codes) || kept >= 1 {
		_, sh := said(*approx, cs)
		return []string{strings.Join(append(fixedShown, sh), "; ")}
	}
	lines := packGroups(fixed, fixedShown, budget)
	cs, _ := fitCodes(codes, onLines, budget-len(features(*approx))-len(": ~ "))
	_, sh := said(*approx, cs)
	return append(lines, sh)
}

// packGroups puts the groups on as few lines within budget as it can, in
// order; a group longer than budget has a line of its own.
func packGroups(plain, shown []string, budget int) []string {
	var lines []string
	cur, curShown := "", ""
	for i, p := range plain {
		switch {
		case cur == "":
			cur, curShown = p, shown[i]
		case len(cur)+2+len(p) <= budget:
			cur, curShown = cur+"; "+p, curShown+"; "+shown[i]
		default:
			lines = append(lines, curShown)
			cur, curShown = p, shown[i]
		}
	}
	if cur != "" {
		lines = append(lines, curShown)
	}
	return lines
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fitCodes lists codes, sorted, within budget characters, and says how
// many it lists: when they do not all fit, the codes on the fewest lines
// are kept and the rest counted, "IdleTimer NoTotalRequestTimeout +3".
func fitCodes(codes []report.Reason, onLines map[report.Reason]int, budget int) (string, int) {
	join := func(cs []report.Reason) string {
		s := make([]string, len(cs))
		for i, c := range slices.Sorted(slices.Values(cs)) {
			s[i] = string(c)
		}
		return strings.Join(s, " ")
	}
	if s := join(codes); len(s) <= budget {
		return s, len(codes)
	}
	byRarity := slices.Clone(codes)
	slices.SortStableFunc(byRarity, func(a, b report.Reason) int {
		return cmp.Or(cmp.Compare(onLines[a], onLines[b]), cmp.Compare(a, b))
	})
	for n := len(byRarity) - 1; n > 0; n-- {
		if s := join(byRarity[:n]) + " +" + strconv.Itoa(len(codes)-n); len(s) <= budget {
			return s, n
		}
	}
	return "+" + strconv.Itoa(len(codes)), 0
}

// featurePrefix is a feature's kind: "retry" of "retry.codes",
// "backendRefs.filters" of "backendRefs.filters.requestMirror", "" of
// "backendRefs".
func featurePrefix(f report.Feature) string {
	if i := strings.LastIndex(string(f), "."); i >= 0 {
		return string(f)[:i]
	}
	return ""
}

// compactFeatures writes features sharing a prefix once:
// "retry.{attempts,codes} timeouts.request", in the order met; "retry.*"
// when star says the prefix's features are all there.
func compactFeatures(fs []report.Feature, star func(prefix string, n int) bool) string {
	var prefixes []string
	members := map[string][]string{}
	for _, f := range fs {
		prefix := featurePrefix(f)
		name := string(f)
		if prefix != "" {
			name = name[len(prefix)+1:]
		}
		if _, ok := members[prefix]; !ok {
			prefixes = append(prefixes, prefix)
		}
		members[prefix] = append(members[prefix], name)
	}
	out := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		ms := members[p]
		switch {
		case p == "":
			out = append(out, ms...)
		case star != nil && star(p, len(ms)):
			out = append(out, p+".*")
		case len(ms) == 1:
			out = append(out, p+"."+ms[0])
		default:
			out = append(out, p+".{"+strings.Join(ms, ",")+"}")
		}
	}
	return strings.Join(out, " ")
}

// mergedShort renders caveat c once for uses whose parameters differ, as
// merged does, within budget characters where it can: runs of numbers
// become ranges (505-599), and a list still too long keeps its first
// values and counts the rest ("… +12", every value: --report wide).
func mergedShort(c report.Reason, uses []use, budget int) string {
	short := make([]use, len(uses))
	for i, u := range uses {
		p := report.Params{}
		for k, v := range u.params {
			p[k] = numberRanges(v)
		}
		short[i] = use{u.target, p}
	}
	words := merged(c, short)
	if len(words) <= budget {
		return words
	}
	for keep := 4; keep >= 1; keep-- {
		cut := make([]use, len(short))
		for i, u := range short {
			p := report.Params{}
			for k, v := range u.params {
				p[k] = firstItems(v, keep)
			}
			cut[i] = use{u.target, p}
		}
		if words = merged(c, cut); len(words) <= budget {
			break
		}
	}
	return words
}

// numberRanges writes a comma-separated list of whole numbers with its
// runs of three or more as ranges: "409, 505, 506, 507" -> "409, 505-507".
// Any other value is returned as it is.
func numberRanges(v string) string {
	items := strings.Split(v, ", ")
	ns := make([]int, len(items))
	for i, it := range items {
		n, err := strconv.Atoi(it)
		if err != nil {
			return v
		}
		ns[i] = n
	}
	var out []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j-i >= 2 {
			out = append(out, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			for k := i; k <= j; k++ {
				out = append(out, strconv.Itoa(ns[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(out, ", ")
}

// firstItems keeps the first n items of a comma-separated list and counts
// the rest: "a, b, c" with n 1 -> "a, … +2".
func firstItems(v string, n int) string {
	items := strings.Split(v, ", ")
	if len(items) <= n {
		return v
	}
	return strings.Join(items[:n], ", ") + ", … +" + strconv.Itoa(len(items)-n)
}

// wrapWords breaks s at spaces into lines of at most width characters
// where it can; the lines after the first start with indent.
func wrapWords(s string, width int, indent string) []string {
	var lines []string
	for len(s) > width {
		i := strings.LastIndex(s[:width+1], " ")
		if i <= len(indent) {
			break // one word longer than the line
		}
		lines = append(lines, s[:i])
		s = indent + s[i+1:]
	}
	return append(lines, s)
}
