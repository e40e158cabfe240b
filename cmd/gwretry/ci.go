package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// gap is a finding the CI reports (SARIF, annotations) list: one that is
// approximated or unsupported, with the place of its rule in the input.
type gap struct {
	f       *translate.Finding
	version string // the target's version
	file    string // slash-separated, relative to the working directory when under it; "" when unknown
	line    int    // the rule's line (the route's when unknown); 0 when unknown
}

// gaps are the findings of r that are neither honoured nor not
// applicable, by file, line, route, rule, target and feature.
func gaps(r *translate.Report, sources map[string]translate.Position) []gap {
	version := map[string]string{}
	for _, t := range r.Targets {
		version[t.Name] = t.Version
	}
	var out []gap
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Status == report.Honoured || f.Status == report.NotApplicable {
			continue
		}
		g := gap{f: f, version: version[f.Target]}
		if pos, ok := sources[f.Route]; ok && f.Gateway == "" && pos.File != "<stdin>" {
			g.file = relPath(pos.File)
			g.line = ruleLine(pos, f.Rule)
		}
		out = append(out, g)
	}
	slices.SortStableFunc(out, func(a, b gap) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.line, b.line),
			cmp.Compare(a.f.Gateway, b.f.Gateway), cmp.Compare(a.f.Route, b.f.Route), cmp.Compare(a.f.Rule, b.f.Rule),
			cmp.Compare(a.f.Target, b.f.Target), cmp.Compare(a.f.Feature, b.f.Feature))
	})
	return out
}

// relPath is p slash-separated, relative to the working directory when p
// is absolute and under it: CI tools want paths from the checkout's root,
// where gwretry runs.
func relPath(p string) string {
	if filepath.IsAbs(p) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
				p = rel
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// codes are the codes that say why f is not honoured: its caveats for an
// approximated finding that has them, else its reason.
func codes(f *translate.Finding) []report.Reason {
	if f.Status == report.Approximated && len(f.Caveats) > 0 {
		var cs []report.Reason
		for _, c := range f.Caveats {
			cs = append(cs, c.Reason)
		}
		return cs
	}
	return []report.Reason{f.Reason}
}

// subject names what f is about: "HTTPRoute shop/web rule 0 (name)" or
// "Gateway ns/gw".
func subject(f *translate.Finding) string {
	if f.Gateway != "" {
		return "Gateway " + f.Gateway
	}
	s := fmt.Sprintf("HTTPRoute %s rule %d", f.Route, f.Rule)
	if f.RuleName != "" {
		s += " (" + f.RuleName + ")"
	}
	return s
}

// gapMessage is a gap in one line of words: target, feature, status,
// what is configured, and the words of the reason or each caveat.
func gapMessage(g gap) string {
	f := g.f
	s := fmt.Sprintf("%s@%s %s %s on %s: %s", f.Target, g.version, f.Feature, f.Status, subject(f), f.Text())
	if f.Configured != "" {
		s += " [configured: " + f.Configured + "]"
	}
	return s
}
