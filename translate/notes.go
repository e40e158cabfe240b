package translate

import (
	"fmt"
	"strings"
)

// Severity is how much a note matters.
type Severity string

// Severities.
const (
	// SeverityInfo is a fact the user may want to know: a default chosen,
	// how to run a generated file. -q hides it.
	SeverityInfo Severity = "info"
	// SeverityWarning is something in the input that is not used as it
	// is written: a route attached nowhere, a rule that answers 500, a
	// reference assumed permitted, weights rounded. It is always shown.
	SeverityWarning Severity = "warning"
)

// Note is one line of the report that is not a finding.
type Note struct {
	Severity Severity `json:"severity"`
	// Target is the data plane the note is about; "" for the input.
	Target string `json:"target,omitempty"`
	// Object is what the note concerns ("HTTPRoute shop/cart",
	// "Gateway infra/gw"); "" for the whole input or configuration.
	Object string `json:"object,omitempty"`
	Text   string `json:"text"`
}

// String writes the note as one line: "warning: nginx: HTTPRoute ns/r: text".
func (n Note) String() string {
	parts := []string{string(n.Severity)}
	if n.Target != "" {
		parts = append(parts, n.Target)
	}
	if n.Object != "" {
		parts = append(parts, n.Object)
	}
	return strings.Join(append(parts, n.Text), ": ")
}

// Info returns an informational note about object ("" for all).
func Info(object, format string, args ...any) Note {
	return Note{Severity: SeverityInfo, Object: object, Text: fmt.Sprintf(format, args...)}
}

// Warning returns a warning about object ("" for all).
func Warning(object, format string, args ...any) Note {
	return Note{Severity: SeverityWarning, Object: object, Text: fmt.Sprintf(format, args...)}
}

// InfoNotes turns lines of text into informational notes about the whole
// configuration.
func InfoNotes(texts ...string) []Note {
	out := make([]Note, len(texts))
	for i, t := range texts {
		out[i] = Note{Severity: SeverityInfo, Text: t}
	}
	return out
}

// RuleObject names a rule in notes: "HTTPRoute ns/name rule 2".
func RuleObject(r *Rule) string { return fmt.Sprintf("HTTPRoute %s rule %d", r.Route, r.Index) }

// GroupNotes returns the notes without repeats, grouped by the object they
// concern: the groups in the order their objects first appear, the notes of
// each in their order.
func GroupNotes(ns []Note) []Note {
	seen := make(map[Note]bool, len(ns))
	groups := map[string][]Note{}
	var order []string
	for _, n := range ns {
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, ok := groups[n.Object]; !ok {
			order = append(order, n.Object)
		}
		groups[n.Object] = append(groups[n.Object], n)
	}
	out := make([]Note, 0, len(seen))
	for _, o := range order {
		out = append(out, groups[o]...)
	}
	return out
}

// NotesText is the notes as lines, for messages and tests.
func NotesText(ns []Note) string {
	lines := make([]string, len(ns))
	for i, n := range ns {
		lines[i] = n.String()
	}
	return strings.Join(lines, "\n")
}
