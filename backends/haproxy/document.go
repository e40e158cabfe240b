package haproxy

import (
	"bytes"
	"fmt"
	"maps"
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

// renderParsed builds haproxy.cfg one section at a time, in config-parser's
// order (global and defaults, then the frontends and the backends, each by
// name; parser.String), each section written by its own config-parser and
// parsed back alone and compared with what was meant before the next is
// built: config-parser holds about 25 times the bytes it reads, so the
// whole file is never held parsed. The file is the concatenation of the
// sections, and cutting it at its section lines (parseSections, what the
// judges read) must give back exactly those sections. It also returns
// that cut, for the judges (translate.File.Parsed).
func (d *document) renderParsed() ([]byte, *cfgSections, error) {
	bySection := map[sectionRef][]entry{}
	for _, e := range d.entries {
		bySection[e.section] = append(bySection[e.section], e)
	}
	var head, fes, bes []sectionRef
	for _, s := range d.sections {
		switch s.typ {
		case parser.Frontends:
			fes = append(fes, s)
		case parser.Backends:
			bes = append(bes, s)
		default:
			head = append(head, s)
		}
	}
	byName := func(a, b sectionRef) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(fes, byName)
	slices.SortFunc(bes, byName)
	var buf bytes.Buffer
	// Where each frontend and backend begins: its section line, after
	// the blank line config-parser writes before it (which the cut
	// leaves at the end of the section before).
	var keys []sectionKey
	var starts []int
	for i, group := range append([][]sectionRef{head}, chunkOf(fes, bes)...) {
		start := buf.Len()
		if err := renderSections(&buf, group, bySection); err != nil {
			return nil, nil, err
		}
		if i == 0 {
			continue
		}
		// Each section of the group: its line in what was just written.
		// config-parser writes them in this order (by name).
		out := buf.Bytes()
		for _, s := range group {
			line := []byte("\n" + string(s.typ) + " " + s.name + "\n")
			at := bytes.Index(out[start:], line)
			if at < 0 {
				return nil, nil, fmt.Errorf("internal error: no line %q in haproxy.cfg as written", bytes.TrimSpace(line))
			}
			start += at + 1
			keys = append(keys, sectionKey{s.typ, s.name})
			starts = append(starts, start)
		}
	}
	headEnd := buf.Len()
	if len(starts) > 0 {
		headEnd = starts[0]
	}
	want := map[sectionKey]span{}
	for i, k := range keys {
		end := buf.Len()
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		want[k] = span{starts[i], end}
	}
	data := buf.Bytes()
	parsed, err := parseSections(data)
	if err == nil && !maps.Equal(parsed.spans, want) {
		err = fmt.Errorf("the file does not cut into the sections written (%d sections, %d written)", len(parsed.spans), len(want))
	}
	if err == nil {
		if first := slices.MinFunc(slices.Collect(maps.Values(parsed.spans)), func(a, b span) int { return a.start - b.start }); len(parsed.spans) > 0 && first.start != headEnd {
			err = fmt.Errorf("the first frontend or backend starts at byte %d, the head ends at %d", first.start, headEnd)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("internal error: generated haproxy.cfg does not read back as written (%w); nothing was written", err)
	}
	return data, parsed, nil
}

// chunkOf cuts the frontends, then the backends, into groups of
// sectionBatch, each written and checked by one config-parser.
func chunkOf(fes, bes []sectionRef) [][]sectionRef {
	var out [][]sectionRef
	for _, l := range [][]sectionRef{fes, bes} {
		for c := range slices.Chunk(l, sectionBatch) {
			out = append(out, c)
		}
	}
	return out
}

// renderSections writes the sections of group with one config-parser,
// parses the bytes back and checks them (verify), and appends them to buf.
func renderSections(buf *bytes.Buffer, group []sectionRef, bySection map[sectionRef][]entry) error {
	p, err := parser.New(options.NoNamedDefaultsFrom)
	if err != nil {
		return fmt.Errorf("internal error: config-parser: %w", err)
	}
	for _, s := range group {
		if s.typ == parser.Global {
			continue // always present, named "data"
		}
		if err := p.SectionsCreate(s.typ, s.name); err != nil {
			return fmt.Errorf("internal error: creating %s %s: %w", s.typ, s.name, err)
		}
	}
	for _, s := range group {
		for _, e := range bySection[s] {
			if err := p.Set(e.section.typ, e.section.name, e.attr, e.value); err != nil {
				return fmt.Errorf("internal error: setting %s in %s %s: %w", e.attr, e.section.typ, e.section.name, err)
			}
		}
	}
	out := p.String()
	if err := verify(out, group, bySection); err != nil {
		return fmt.Errorf("internal error: generated haproxy.cfg does not read back as written (%w); nothing was written", err)
	}
	buf.WriteString(out)
	return nil
}

// verify parses out with config-parser and checks that it holds exactly the
// sections of group and their attribute values, and no other line. A value
// that broke out of its word or line (a newline, a '#', a space) fails one
// of the three checks.
func verify(out string, group []sectionRef, bySection map[sectionRef][]entry) error {
	q, err := parser.New(options.String(out), options.NoNamedDefaultsFrom)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	want := map[parser.Section][]string{}
	for _, s := range group {
		want[s.typ] = append(want[s.typ], s.name)
	}
	for _, typ := range sectionTypes {
		got, err := q.SectionsGet(typ)
		if err != nil {
			return fmt.Errorf("listing %s sections: %w", typ, err)
		}
		w := slices.Sorted(slices.Values(want[typ]))
		got = slices.Sorted(slices.Values(got))
		if typ == parser.Global {
			w = []string{parser.GlobalSectionName} // always present
		}
		if !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			return fmt.Errorf("%s sections: got %q, want %q", typ, got, w)
		}
	}
	lines := 0
	for _, s := range group {
		if s.typ != parser.Global || len(bySection[s]) > 0 {
			lines++ // config-parser writes "global" only when it has lines
		}
		for _, e := range bySection[s] {
			got, err := q.Get(e.section.typ, e.section.name, e.attr)
			if err != nil {
				return fmt.Errorf("%s %s: reading %s: %w", e.section.typ, e.section.name, e.attr, err)
			}
			if !reflect.DeepEqual(got, e.value) {
				return fmt.Errorf("%s %s: %s reads back as %s, want %s", e.section.typ, e.section.name, e.attr, describe(got), describe(e.value))
			}
			lines += e.lines
		}
	}
	if n := countLines(out); n != lines {
		return fmt.Errorf("%d configuration lines, want %d", n, lines)
	}
	return nil
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
