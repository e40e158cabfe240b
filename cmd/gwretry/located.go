package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// lineOf is the line of the input where field of the object at p lies, as
// far as the loader knows it: the line of rule i for a field under
// spec.rules[i], else the object's line (or the line a YAML parser named);
// 0 when unknown.
func lineOf(p translate.Position, field string) int {
	if rest, ok := strings.CutPrefix(field, "spec.rules["); ok {
		if n, _, ok := strings.Cut(rest, "]"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(p.RuleLines) {
				return p.RuleLines[i]
			}
		}
	}
	return p.Line
}

// ruleLine is the line of rule i of the route at p, else the route's line.
func ruleLine(p translate.Position, i int) int {
	return lineOf(p, fmt.Sprintf("spec.rules[%d]", i))
}

// parserLine is a YAML parser's "line N: " (of the document), which the
// FILE:LINE prefix says in the file's lines.
var parserLine = regexp.MustCompile(`line [0-9]+: `)

// located is an input error as compilers write theirs, FILE:LINE first,
// for editors and CI logs to link: "route.yaml:12: document 2: HTTPRoute
// ns/r: spec.rules[0].retry.codes[0]: ...". Without a line it is the
// error as translate says it.
func located(e *input.InputError) string {
	line := lineOf(e.Pos, e.Field)
	if line <= 0 || e.Pos.File == "" {
		return e.Error()
	}
	c := *e
	c.Pos.File = ""
	if c.Object == "" && c.Field == "" {
		c.Msg = parserLine.ReplaceAllString(c.Msg, "")
	}
	return fmt.Sprintf("%s:%d: %s", e.Pos.File, line, strings.TrimPrefix(c.Error(), ": "))
}

// locatedList is an ErrorList that prints each error located; errors.As
// still finds the list.
type locatedList struct{ l input.ErrorList }

func (l locatedList) Error() string {
	msgs := make([]string, len(l.l))
	for i, e := range l.l {
		msgs[i] = located(e)
	}
	return strings.Join(msgs, "\n")
}

func (l locatedList) Unwrap() error { return l.l }

// locatedError is one InputError printed located.
type locatedError struct{ e *input.InputError }

func (l locatedError) Error() string { return located(l.e) }
func (l locatedError) Unwrap() error { return l.e }
