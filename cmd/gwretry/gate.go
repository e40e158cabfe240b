package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// gate is what --fail-on counts: findings at or above a status, narrowed
// by --fail-include and widened back by --fail-exclude, as a linter
// enables and disables checks by name. A selector names a target
// ("nginx"), a feature ("retry.backoff") or a reason or caveat code of the
// catalogue ("NoBackoff"). Not-applicable findings never count.
type gate struct {
	limit            report.Status // "" counts nothing
	include, exclude []string
}

// newGate checks the flags' values: a selector that names nothing known
// is a usage error, so that a typo cannot silently accept a gap.
func newGate(failOn, include, exclude string, targets []string) (gate, error) {
	g := gate{}
	switch failOn {
	case "none":
	case string(report.Approximated), string(report.Unsupported):
		g.limit = report.Status(failOn)
	default:
		return g, usageErrorf("--fail-on %q: want none, approximated or unsupported", failOn)
	}
	var err error
	if g.include, err = selectors("--fail-include", include, targets); err != nil {
		return g, err
	}
	g.exclude, err = selectors("--fail-exclude", exclude, targets)
	return g, err
}

func selectors(flag, list string, targets []string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		_, reason := report.Lookup(report.Reason(s))
		if !reason && !slices.Contains(targets, s) && !slices.Contains(report.Features(), report.Feature(s)) {
			return nil, usageErrorf("%s %q: not a target, a feature or a reason code (docs/report.md lists the reasons)", flag, s)
		}
		out = append(out, s)
	}
	return out, nil
}

// matches reports whether selector s names f: its target, its feature,
// its reason, or, for a finding with caveats, every one of them (a finding
// is accepted by its caveats only when all are accepted: a new caveat
// still counts).
func matches(sel []string, f *translate.Finding, all bool) bool {
	for _, s := range sel {
		if s == f.Target || s == string(f.Feature) || s == string(f.Reason) {
			return true
		}
	}
	if len(f.Caveats) == 0 {
		return false
	}
	has := func(c report.Caveat) bool { return slices.Contains(sel, string(c.Reason)) }
	if all {
		return !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return !has(c) })
	}
	return slices.ContainsFunc(f.Caveats, has)
}

// counts reports whether the gate counts f.
func (g gate) counts(f *translate.Finding) bool {
	if g.limit == "" || f.Status == report.NotApplicable || f.Status.Rank() < g.limit.Rank() {
		return false
	}
	if len(g.include) > 0 && !matches(g.include, f, false) {
		return false
	}
	return !matches(g.exclude, f, true)
}

// check prints each counted finding on w, one line with its reason and
// caveats, and returns the exit error when any counts.
func (g gate) check(r *translate.Report, w io.Writer) error {
	n := 0
	for i := range r.Findings {
		f := &r.Findings[i]
		if !g.counts(f) {
			continue
		}
		n++
		where := fmt.Sprintf("HTTPRoute %s rule %d", f.Route, f.Rule)
		if f.Gateway != "" {
			where = "Gateway " + f.Gateway
		}
		why := report.WithParams(f.Reason, f.Params)
		if len(f.Caveats) > 0 {
			var cs []string
			for _, c := range f.Caveats {
				cs = append(cs, report.WithParams(c.Reason, c.Params))
			}
			why = strings.Join(cs, " ")
		}
		fmt.Fprintf(w, "fail: %s %s %s %s: %s\n", f.Target, where, f.Feature, f.Status, why)
	}
	if n == 0 {
		return nil
	}
	return &exitError{code: exitFailOn, err: fmt.Errorf("--fail-on %s: %d finding(s) counted (listed above; --fail-exclude accepts a target, feature or reason)", g.limit, n)}
}
