//gwretry:format
package haproxy

import (
	"bytes"
	"fmt"
	"slices"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	cperrors "github.com/haproxytech/client-native/v5/config-parser/errors"
	"github.com/haproxytech/client-native/v5/config-parser/options"
)

// sectionKeywords are the words that open a section of haproxy.cfg, as
// HAProxy and config-parser read them (the first word of a line, whatever
// the indentation).
var sectionKeywords = map[string]parser.Section{
	"global": parser.Global, "defaults": parser.Defaults, "userlist": parser.UserList, "peers": parser.Peers,
	"mailers": parser.Mailers, "resolvers": parser.Resolvers, "cache": parser.Cache, "ring": parser.Ring,
	"log-forward": parser.LogForward, "http-errors": parser.HTTPErrors, "fcgi-app": parser.FCGIApp,
	"frontend": parser.Frontends, "backend": parser.Backends, "listen": parser.Listen, "program": parser.Program,
}

type sectionKey struct {
	typ  parser.Section
	name string
}

// span is one section's bytes in haproxy.cfg, [start, end).
type span struct{ start, end int }

// sectionBatch is how many frontends, or backends, are parsed together:
// config-parser's set-up of a parser (every section kind's parsers) costs
// more than reading one section, and a batch of 100 backend sections is
// still about a megabyte parsed. Batch i of a type is its sections
// i*sectionBatch to (i+1)*sectionBatch-1, in file order.
const sectionBatch = 100

// cfgSections is haproxy.cfg cut into its sections, so that it is read one
// section at a time rather than parsed whole (config-parser holds about
// 25 times a file's bytes): the head (everything before the first
// frontend or backend: global and defaults) is parsed once, and each
// frontend and backend section is parsed from its own bytes when it is
// read (cfgSections.section). It is never modified once built, so
// judges running at once may share it.
type cfgSections struct {
	data  []byte
	head  parser.Parser
	names map[parser.Section][]string // frontends and backends, in file order
	spans map[sectionKey]span
	index map[sectionKey]int // position in names[typ]
}

// parseSections cuts data at every line whose first word opens a section
// and parses the head. Every section after the first frontend or backend
// must be a frontend or a backend (gwretry writes global and defaults
// first, as config-parser orders them), and no two may share a name.
func parseSections(data []byte) (*cfgSections, error) {
	c := &cfgSections{data: data, names: map[parser.Section][]string{}, spans: map[sectionKey]span{}, index: map[sectionKey]int{}}
	headEnd := -1
	var cur *sectionKey
	start := 0
	closeSection := func(end int) error {
		if cur == nil {
			return nil
		}
		if _, dup := c.spans[*cur]; dup {
			return fmt.Errorf("parsing %s: two %s sections %s", OutputPath, cur.typ, cur.name)
		}
		c.spans[*cur] = span{start, end}
		c.index[*cur] = len(c.names[cur.typ])
		c.names[cur.typ] = append(c.names[cur.typ], cur.name)
		return nil
	}
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += off + 1
		}
		fields := bytes.Fields(data[off:end])
		if len(fields) > 0 {
			if typ, ok := sectionKeywords[string(fields[0])]; ok {
				isFB := typ == parser.Frontends || typ == parser.Backends
				switch {
				case isFB:
					if len(fields) != 2 {
						return nil, fmt.Errorf("parsing %s: %q: a %s section needs one name", OutputPath, bytes.TrimSpace(data[off:end]), typ)
					}
					if headEnd < 0 {
						headEnd = off
					}
					if err := closeSection(off); err != nil {
						return nil, err
					}
					cur, start = &sectionKey{typ: typ, name: string(fields[1])}, off
				case headEnd >= 0:
					return nil, fmt.Errorf("parsing %s: %s section after the first frontend or backend", OutputPath, typ)
				}
			}
		}
		off = end
	}
	if headEnd < 0 {
		headEnd = len(data)
	}
	if err := closeSection(len(data)); err != nil {
		return nil, err
	}
	head, err := parser.New(options.String(string(data[:headEnd])), options.NoNamedDefaultsFrom)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", OutputPath, err)
	}
	c.head = head
	return c, nil
}

// SectionsGet lists the sections of one type: frontends and backends in
// file order, the others as the head's parse lists them.
func (c *cfgSections) SectionsGet(typ parser.Section) ([]string, error) {
	if typ == parser.Frontends || typ == parser.Backends {
		return slices.Clone(c.names[typ]), nil
	}
	return c.head.SectionsGet(typ)
}

// batchOf returns the batch that holds a frontend or backend (see
// sectionBatch), or -1 when there is no such section.
func (c *cfgSections) batchOf(typ parser.Section, name string) int {
	i, ok := c.index[sectionKey{typ, name}]
	if !ok {
		return -1
	}
	return i / sectionBatch
}

// position orders sections as the file does: global and defaults (the
// head) first, then by their first byte.
func (c *cfgSections) position(typ parser.Section, name string) int {
	if s, ok := c.spans[sectionKey{typ, name}]; ok {
		return s.start
	}
	return -1
}

// batch returns the parse of batch b of typ's sections, their bytes alone,
// which must parse as exactly those sections.
func (c *cfgSections) batch(typ parser.Section, b int) (parser.Parser, error) {
	names := c.names[typ]
	if b < 0 || b*sectionBatch >= len(names) {
		return nil, cperrors.ErrSectionMissing
	}
	names = names[b*sectionBatch : min(len(names), (b+1)*sectionBatch)]
	first, last := c.spans[sectionKey{typ, names[0]}], c.spans[sectionKey{typ, names[len(names)-1]}]
	for _, n := range names {
		if s := c.spans[sectionKey{typ, n}]; s.start < first.start || s.end > last.end {
			return nil, fmt.Errorf("parsing %s: %s %s is not between %s and %s", OutputPath, typ, n, names[0], names[len(names)-1])
		}
	}
	what := fmt.Sprintf("%s %s to %s of %s", typ, names[0], names[len(names)-1], OutputPath)
	// Sections of the other type between them would be parsed too.
	for _, t := range []parser.Section{parser.Frontends, parser.Backends} {
		if t == typ {
			continue
		}
		for _, n := range c.names[t] {
			if s := c.spans[sectionKey{t, n}]; s.start >= first.start && s.start < last.end {
				return nil, fmt.Errorf("parsing %s: %s %s among them", what, t, n)
			}
		}
	}
	q, err := parser.New(options.String(string(c.data[first.start:last.end])), options.NoNamedDefaultsFrom)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", what, err)
	}
	for _, t := range []parser.Section{parser.Frontends, parser.Backends} {
		got, err := q.SectionsGet(t)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: listing %s: %w", what, t, err)
		}
		want := []string{}
		if t == typ {
			want = slices.Clone(names)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			return nil, fmt.Errorf("parsing %s: %s sections %q", what, t, got)
		}
	}
	return q, nil
}
