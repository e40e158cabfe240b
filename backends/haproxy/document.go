package haproxy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	"github.com/haproxytech/client-native/v5/config-parser/common"
	"github.com/haproxytech/client-native/v5/config-parser/options"
)

// document is the configuration gwretry means to write: its sections and,
// for each, the attributes set through config-parser. The same record is
// used to build haproxy.cfg and to check it after parsing it back.
type document struct {
	sections []sectionRef
	entries  []entry
}

type sectionRef struct {
	typ  parser.Section
	name string
}

// entry is one attribute of one section, with the value handed to
// config-parser (a pointer for single-line attributes, a slice for
// multi-line ones) and the number of lines it writes.
type entry struct {
	section sectionRef
	attr    string
	value   common.ParserData
	lines   int
}

// sectionTypes are every section kind config-parser knows; all but global,
// defaults, frontend and backend must stay empty.
var sectionTypes = []parser.Section{parser.Global, parser.Defaults, parser.UserList, parser.Peers,
	parser.Mailers, parser.Resolvers, parser.Cache, parser.Ring, parser.LogForward, parser.HTTPErrors,
	parser.FCGIApp, parser.Frontends, parser.Backends, parser.Listen, parser.Program}

func (d *document) addSection(typ parser.Section, name string) sectionRef {
	s := sectionRef{typ: typ, name: name}
	d.sections = append(d.sections, s)
	return s
}

// set records a single-line attribute.
func (d *document) set(s sectionRef, attr string, value common.ParserData) {
	d.entries = append(d.entries, entry{section: s, attr: attr, value: value, lines: 1})
}

// setLines records a multi-line attribute (acl, server, http-request, ...)
// whose value is a slice of n items.
func (d *document) setLines(s sectionRef, attr string, value common.ParserData, n int) {
	if n > 0 {
		d.entries = append(d.entries, entry{section: s, attr: attr, value: value, lines: n})
	}
}

// render builds haproxy.cfg with config-parser, which chooses the line
// order, then parses it back and compares it with what was meant.
func (d *document) render() ([]byte, error) {
	data, _, err := d.renderParsed()
	return data, err
}

// renderParsed is render, and also returns the parse of the bytes it
// compared, for the judges (translate.File.Parsed).
func (d *document) renderParsed() ([]byte, parser.Parser, error) {
	p, err := parser.New(options.NoNamedDefaultsFrom)
	if err != nil {
		return nil, nil, fmt.Errorf("internal error: config-parser: %w", err)
	}
	for _, s := range d.sections {
		if s.typ == parser.Global {
			continue // always present, named "data"
		}
		if err := p.SectionsCreate(s.typ, s.name); err != nil {
			return nil, nil, fmt.Errorf("internal error: creating %s %s: %w", s.typ, s.name, err)
		}
	}
	for _, e := range d.entries {
		if err := p.Set(e.section.typ, e.section.name, e.attr, e.value); err != nil {
			return nil, nil, fmt.Errorf("internal error: setting %s in %s %s: %w", e.attr, e.section.typ, e.section.name, err)
		}
	}
	out := p.String()
	q, err := d.verify(out)
	if err != nil {
		return nil, nil, fmt.Errorf("internal error: generated haproxy.cfg does not read back as written (%w); nothing was written", err)
	}
	return []byte(out), q, nil
}

// verify parses out with config-parser and checks that it holds exactly the
// sections and attribute values of d, and no other line. A value that broke
// out of its word or line (a newline, a '#', a space) fails one of the
// three checks.
func (d *document) verify(out string) (parser.Parser, error) {
	q, err := parser.New(options.String(out), options.NoNamedDefaultsFrom)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	want := map[parser.Section][]string{}
	for _, s := range d.sections {
		want[s.typ] = append(want[s.typ], s.name)
	}
	for _, typ := range sectionTypes {
		got, err := q.SectionsGet(typ)
		if err != nil {
			return nil, fmt.Errorf("listing %s sections: %w", typ, err)
		}
		w := slices.Sorted(slices.Values(want[typ]))
		got = slices.Sorted(slices.Values(got))
		if typ == parser.Global {
			w = []string{parser.GlobalSectionName} // always present
		}
		if !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			return nil, fmt.Errorf("%s sections: got %q, want %q", typ, got, w)
		}
	}
	lines := 0
	for _, s := range d.sections {
		if s.typ != parser.Global || d.hasEntries(s) {
			lines++ // config-parser writes "global" only when it has lines
		}
	}
	for _, e := range d.entries {
		got, err := q.Get(e.section.typ, e.section.name, e.attr)
		if err != nil {
			return nil, fmt.Errorf("%s %s: reading %s: %w", e.section.typ, e.section.name, e.attr, err)
		}
		if !reflect.DeepEqual(got, e.value) {
			return nil, fmt.Errorf("%s %s: %s reads back as %s, want %s", e.section.typ, e.section.name, e.attr, describe(got), describe(e.value))
		}
		lines += e.lines
	}
	if n := countLines(out); n != lines {
		return nil, fmt.Errorf("%d configuration lines, want %d", n, lines)
	}
	return q, nil
}

// countLines counts non-blank lines.
func countLines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n
}

func describe(v any) string {
	s := fmt.Sprintf("%+v", v)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func (d *document) hasEntries(s sectionRef) bool {
	for _, e := range d.entries {
		if e.section == s {
			return true
		}
	}
	return false
}
