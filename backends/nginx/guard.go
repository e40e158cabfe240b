//gwretry:format
package nginx

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// checkArgs rejects any directive name or argument that nginx-go-crossplane
// cannot write safely: a backslash that does not escape a backslash or a
// tab (another can escape the closing quote), a
// leading '#' (written bare, it starts a comment), a control character or a
// non-ASCII byte. Values come from an allowlisted Model; this is the second
// line of defence.
func checkArgs(ds crossplane.Directives) error {
	for _, d := range ds {
		for _, s := range append([]string{d.Directive}, d.Args...) {
			if err := checkArg(s); err != nil {
				return fmt.Errorf("directive %q: %w", d.Directive, err)
			}
		}
		if err := checkArgs(d.Block); err != nil {
			return err
		}
	}
	return nil
}

func checkArg(s string) error {
	if len(s) > 4096 {
		return fmt.Errorf("argument of %d bytes is too long", len(s))
	}
	if strings.HasPrefix(s, "#") {
		return fmt.Errorf("argument %q starts with '#'", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '\\' || s[i+1] == 't') {
			// An escaped backslash or tab (textArg): nginx reads one.
			i++
			continue
		}
		if s[i] == '\\' && i+1 < len(s) && !strings.ContainsRune("\"'nr", rune(s[i+1])) {
			// A backslash nginx's tokenizer keeps with the character
			// after it (a PCRE escape, \d or \x5c: nginxRegex).
			i++
			continue
		}
		// A byte that is not ASCII: nginx's tokenizer and crossplane
		// pass it through as it is (textArg: a value HTTP carries).
		if c := s[i]; c == '\\' || c < 0x20 || c == 0x7f {
			return fmt.Errorf("argument %q has a backslash nginx would read as an escape, or a control character", s)
		}
	}
	return nil
}

// render writes a complete nginx.conf with crossplane and parses the text
// back with the version's directive table: an unknown directive, a wrong
// context or argument count, or any difference from what was meant is an
// internal error, and no configuration is returned.
func render(ds crossplane.Directives, v version) ([]byte, error) {
	return renderLayout(ds, LayoutFull, v)
}

// renderLayout writes ds as the file of a layout: for LayoutFull the whole
// nginx.conf, for LayoutConfD the contents of http {}. It parses the text
// back as nginx would read it and compares.
func renderLayout(ds crossplane.Directives, layout string, v version) ([]byte, error) {
	conf, _, err := renderLayoutParsed(ds, nil, layout, v)
	return conf, err
}

// builtBlock is a directive of http {} (a server block, a map, an
// upstream) as planConfig keeps it once built: its text as
// crossplane.Build writes it alone (at no indentation) and its shape.
// The directives themselves are dropped (issue 22: the server blocks
// and the routing maps were most of the directives built at 10,000
// routes, 150 and 110 MB).
type builtBlock struct {
	// text is nil when the text is in a blockStore, at at.
	text []byte
	at   int64
	n    int
	// shape is shapeOf the directive.
	shape shaped
}

// blockStore keeps the text of the directives built in a scratch file of
// translate.Options.Spool instead of memory, until the file is written
// (issue 22: at 68,000 routes the text of http's directives, 146 MB, was
// held from the first server block built to the file's writing). A nil
// blockStore keeps them in memory.
type blockStore struct {
	f    *os.File
	w    *bufio.Writer
	size int64
}

// newBlockStore returns a store in spool, nil when spool is "".
func newBlockStore(spool string) (*blockStore, error) {
	if spool == "" {
		return nil, nil
	}
	f, err := translate.CreateSpooled(spool, "blocks.tmp")
	if err != nil {
		return nil, err
	}
	return &blockStore{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// build is buildBlock of each of ds, appended to out, each text written
// to the store (when there is one).
func (s *blockStore) build(out []builtBlock, ds crossplane.Directives) ([]builtBlock, error) {
	for _, d := range ds {
		b, err := buildBlock(d)
		if err != nil {
			return out, err
		}
		if s != nil {
			if _, err := s.w.Write(b.text); err != nil {
				return out, err
			}
			b.at, b.n, b.text = s.size, len(b.text), nil
			s.size += int64(b.n)
		}
		out = append(out, b)
	}
	return out, nil
}

// text returns b's text, read from the store into buf when it is there.
func (s *blockStore) text(b builtBlock, buf []byte) ([]byte, error) {
	if b.text != nil || s == nil {
		return b.text, nil
	}
	if err := s.w.Flush(); err != nil {
		return nil, err
	}
	text := slices.Grow(buf[:0], b.n)[:b.n]
	_, err := s.f.ReadAt(text, b.at)
	return text, err
}

// close removes the store's file.
func (s *blockStore) close() {
	if s != nil {
		s.f.Close()
		os.Remove(s.f.Name())
	}
}

// buildBlock checks directive d (checkArgs) and writes it.
func buildBlock(d *crossplane.Directive) (builtBlock, error) {
	ds := crossplane.Directives{d}
	if err := checkArgs(ds); err != nil {
		return builtBlock{}, err
	}
	var buf bytes.Buffer
	if err := crossplane.Build(&buf, crossplane.Config{Parsed: ds}, &crossplane.BuildOptions{Indent: 4}); err != nil {
		return builtBlock{}, fmt.Errorf("writing a %s directive: %w", d.Directive, err)
	}
	return builtBlock{text: bytes.Clone(buf.Bytes()), shape: shapeOf(d)}, nil
}

// withBlocks returns conf, crossplane.Build's text of a file of layout
// whose http {} lacks the directives built, with them written at the end
// of http {} as Build writes them there (writeBlocks), or nil when conf
// has no http {} to end with them.
func withBlocks(conf []byte, blocks []builtBlock, layout string) []byte {
	if len(blocks) == 0 {
		return conf
	}
	n := len(conf)
	for _, s := range blocks {
		n += len(s.text) + 1 + (bytes.Count(s.text, []byte("\n"))+1)*4
	}
	out := bytes.NewBuffer(make([]byte, 0, n))
	if writeBlocks(out, conf, blocks, nil, layout, false) != nil {
		return nil
	}
	return out.Bytes()
}

// writeBlocks writes conf with blocks at the end of its http {}: each on
// its own lines, indented as a directive of http (4 spaces in
// nginx.conf), their texts in memory or in store. drop lets each block's
// text go once written.
func writeBlocks(w io.Writer, conf []byte, blocks []builtBlock, store *blockStore, layout string, drop bool) error {
	var tail []byte
	if layout == LayoutFull && len(blocks) > 0 {
		// http {} is the last block: its closing brace ends the text.
		if !bytes.HasSuffix(conf, []byte("\n}")) {
			return fmt.Errorf("writing %s: no http block to end with the directives built", fileName(layout))
		}
		conf, tail = conf[:len(conf)-2], conf[len(conf)-2:]
	}
	if _, err := w.Write(conf); err != nil {
		return err
	}
	written := len(conf) > 0
	var buf []byte
	for i := range blocks {
		text, err := store.text(blocks[i], buf)
		if err != nil {
			return err
		}
		if blocks[i].text == nil {
			buf = text // the store's: reused for the next one
		}
		if drop {
			blocks[i].text = nil
		}
		if written {
			if _, err := w.Write([]byte("\n")); err != nil {
				return err
			}
		}
		written = true
		if layout != LayoutFull {
			if _, err := w.Write(text); err != nil {
				return err
			}
			continue
		}
		// Indented by 4 spaces, as a directive of http: "    " before
		// the text and after each of its newlines.
		for {
			if _, err := w.Write([]byte("    ")); err != nil {
				return err
			}
			at := bytes.IndexByte(text, '\n')
			if at < 0 {
				break
			}
			if _, err := w.Write(text[:at+1]); err != nil {
				return err
			}
			text = text[at+1:]
		}
		if _, err := w.Write(text); err != nil {
			return err
		}
	}
	_, err := w.Write(tail)
	return err
}

// renderLayoutParsed is renderLayout, and also returns the parse of the
// bytes it compared.
func renderLayoutParsed(ds crossplane.Directives, blocks []builtBlock, layout string, v version) ([]byte, *httpParts, error) {
	name := fileName(layout)
	var buf bytes.Buffer
	if err := crossplane.Build(&buf, crossplane.Config{File: name, Parsed: ds}, &crossplane.BuildOptions{Indent: 4}); err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", name, err)
	}
	conf := withBlocks(buf.Bytes(), blocks, layout)
	if conf == nil {
		return nil, nil, fmt.Errorf("writing %s: no http block to end with the directives built", name)
	}
	conf = append(conf, '\n')
	parts, err := checkReadBack(ds, blocks, layout, v, memory(conf))
	if err != nil {
		return nil, nil, err
	}
	return conf, parts, nil
}

// renderSpooled is renderLayoutParsed writing the file into a new file
// of spool (translate.Options.Spool) as it goes, each block's text let go
// once written, and reading it back from there; it returns the file's
// path.
func renderSpooled(ds crossplane.Directives, blocks []builtBlock, store *blockStore, layout string, v version, spool string) (string, *httpParts, error) {
	name := fileName(layout)
	var buf bytes.Buffer
	if err := crossplane.Build(&buf, crossplane.Config{File: name, Parsed: ds}, &crossplane.BuildOptions{Indent: 4}); err != nil {
		return "", nil, fmt.Errorf("writing %s: %w", name, err)
	}
	path, err := translate.WriteSpooled(spool, name, func(w io.Writer) error {
		if err := writeBlocks(w, buf.Bytes(), blocks, store, layout, true); err != nil {
			return err
		}
		_, err := w.Write([]byte("\n"))
		return err
	})
	if err != nil {
		return "", nil, err
	}
	parts, err := checkReadBack(ds, blocks, layout, v, onDisk(path))
	if err != nil {
		os.Remove(path)
		return "", nil, err
	}
	return path, parts, nil
}

// checkReadBack reads src back in parts and compares it with ds and
// blocks, the directives meant.
func checkReadBack(ds crossplane.Directives, blocks []builtBlock, layout string, v version, src source) (*httpParts, error) {
	name := fileName(layout)
	// What was meant is kept as a digest of each directive (each of
	// http {}'s one by one), so that the built directives are dropped
	// before the file is read back, and the file is read back in parts
	// (readParts: its server blocks, upstreams and routing maps a batch
	// at a time): issue 22, at
	// 10,000 routes the directives built and their parse were about
	// 150 MB each. Equal digests are equal directives as equalDirective
	// compares them.
	meant := shapesWith(ds, blocks, layout)
	ds = nil
	parts, err := readPartsFrom(src, layout, v)
	if err != nil {
		return nil, err
	}
	got, err := parts.shapes()
	if err != nil {
		return nil, err
	}
	if !slices.EqualFunc(meant, got, func(a, b shaped) bool { return a.sum == b.sum }) {
		return nil, fmt.Errorf("generated %s does not read back as written: %s", name, firstDifference(meant, got))
	}
	return parts, nil
}

// shapesWith is shapes of ds with the directives blocks at the end of
// http {} (of ds itself for conf.d).
func shapesWith(ds crossplane.Directives, blocks []builtBlock, layout string) []shaped {
	var out []shaped
	add := func() {
		for _, s := range blocks {
			out = append(out, s.shape)
		}
	}
	if layout == LayoutConfD {
		out = shapes(ds)
		add()
		return out
	}
	for _, d := range ds {
		if !isHTTP(d) {
			out = append(out, shapeOf(d))
			continue
		}
		out = append(out, headerShape(d, len(d.Block)+len(blocks)))
		for _, c := range d.Block {
			out = append(out, shapeOf(c))
		}
		add()
	}
	return out
}

// shaped is the SHA-256 of a directive as equalDirective compares it
// (of http's name, arguments and number of directives only, each of
// which has its own), and where it was read.
type shaped struct {
	sum  [sha256.Size]byte
	name string
	line int
}

// shapes returns the shape of each directive of ds, in order, and for an
// http block its own shape followed by the shape of each directive inside
// it.
func shapes(ds crossplane.Directives) []shaped {
	var out []shaped
	for _, d := range ds {
		if !isHTTP(d) {
			out = append(out, shapeOf(d))
			continue
		}
		out = append(out, headerShape(d, len(d.Block)))
		for _, c := range d.Block {
			out = append(out, shapeOf(c))
		}
	}
	return out
}

func isHTTP(d *crossplane.Directive) bool { return d.Directive == "http" && d.IsBlock() }

func shapeOf(d *crossplane.Directive) shaped {
	return shaped{sum: sha256.Sum256(appendDirective([]byte{'d'}, d)), name: d.Directive, line: d.Line}
}

// headerShape is the shape of http block d with n directives, not counting
// them.
func headerShape(d *crossplane.Directive, n int) shaped {
	b := appendDirective([]byte{'h'}, &crossplane.Directive{Directive: d.Directive, Args: d.Args, Comment: d.Comment})
	b = binary.AppendUvarint(b, uint64(n))
	return shaped{sum: sha256.Sum256(b), name: d.Directive, line: d.Line}
}

// appendDirective appends an encoding of d that tells apart exactly what
// equalDirective tells apart: its name, arguments (none and an empty list
// alike), whether it is a block or a comment, and its block's directives.
func appendDirective(b []byte, d *crossplane.Directive) []byte {
	b = appendText(b, d.Directive)
	flags := byte(0)
	if d.IsBlock() {
		flags |= 1
	}
	if d.IsComment() {
		flags |= 2
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(len(d.Args)))
	for _, a := range d.Args {
		b = appendText(b, a)
	}
	if d.IsBlock() {
		b = binary.AppendUvarint(b, uint64(len(d.Block)))
		for _, c := range d.Block {
			b = appendDirective(b, c)
		}
	}
	return b
}

func appendText(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// firstDifference names the first directive read whose shape differs from
// the one built, with its line.
func firstDifference(meant, got []shaped) string {
	for i := range min(len(meant), len(got)) {
		if meant[i].sum != got[i].sum {
			return fmt.Sprintf("%s on line %d differs from the %s built", got[i].name, got[i].line, meant[i].name)
		}
	}
	return fmt.Sprintf("%d directives built, %d read", len(meant), len(got))
}

// equalDirective reports whether two directives are the same, blocks
// included, as simplify would show them: name, arguments (none and an
// empty list alike), whether each is a block or a comment, not their
// positions.
func equalDirective(a, b *crossplane.Directive) bool {
	if a.Directive != b.Directive || a.IsBlock() != b.IsBlock() || a.IsComment() != b.IsComment() ||
		!slices.Equal(a.Args, b.Args) {
		return false
	}
	if !a.IsBlock() {
		return true
	}
	return slices.EqualFunc(a.Block, b.Block, equalDirective)
}

// fileName is the base name of the file a layout writes.
func fileName(layout string) string {
	if layout == LayoutConfD {
		return "gwretry.conf"
	}
	return "nginx.conf"
}

// parseConfig parses a generated file with crossplane and the version's
// directive table, as nginx reads it. It returns the file's directives and
// the contents of its http {} block. A conf.d file is parsed where nginx
// reads it, inside http {} (as `include /etc/nginx/conf.d/*.conf;` in
// Debian's nginx.conf places it), so directives that are not allowed there
// are errors too. No include is followed.
func parseConfig(data []byte, layout string, v version) (file, http crossplane.Directives, err error) {
	name := fileName(layout)
	text := data
	if layout == LayoutConfD {
		text = slices.Concat([]byte("events {}\nhttp {\n"), data, []byte("\n}\n"))
	}
	payload, err := crossplane.Parse(name, &crossplane.ParseOptions{
		Open: func(string) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(text)), nil
		},
		Glob:                     func(string) ([]string, error) { return nil, errors.New("include is not allowed") },
		SingleFile:               true,
		StopParsingOnError:       true,
		ErrorOnUnknownDirectives: true,
		ParseComments:            true,
		DirectiveSources:         []crossplane.MatchFunc{v.Directives},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("generated %s does not parse: %w", name, err)
	}
	if len(payload.Errors) > 0 {
		return nil, nil, fmt.Errorf("generated %s does not parse: %v", name, payload.Errors[0].Error)
	}
	if len(payload.Config) != 1 {
		return nil, nil, fmt.Errorf("generated %s parsed into %d files", name, len(payload.Config))
	}
	top := payload.Config[0].Parsed
	var httpBlocks []*crossplane.Directive
	for _, d := range top {
		if d.Directive == "http" {
			httpBlocks = append(httpBlocks, d)
		}
	}
	if len(httpBlocks) != 1 {
		return nil, nil, fmt.Errorf("generated %s has %d http blocks, want 1", name, len(httpBlocks))
	}
	http = httpBlocks[0].Block
	if layout == LayoutConfD {
		return http, http, nil
	}
	return top, http, nil
}

// quantifierRE is the only use of braces allowed in a regular expression:
// a repetition count such as {3}, {2,} or {1,5}.
var quantifierRE = regexp.MustCompile(`\{[0-9]{1,4}(,[0-9]{0,4})?\}`)

// checkRegexes rejects regular expressions with a brace that is not part of
// a repetition count. The allowlist admits braces for counts; a bare '{' or
// '}' is legal RE2 (a literal) but is the start of a block in nginx syntax,
// so gwretry refuses it rather than rely on quoting alone.
func checkRegexes(m *translate.Model) error {
	check := func(where, re string) error {
		if strings.ContainsAny(quantifierRE.ReplaceAllString(re, ""), "{}") {
			return fmt.Errorf("%s: regular expression %q has a '{' or '}' that is not a repetition count like {2,5}", where, re)
		}
		return nil
	}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				where := "virtual host " + vh.Name + " rule " + rm.Rule.Name
				if rm.Match.PathType == translate.PathRegex {
					if err := check(where+" path", rm.Match.Path); err != nil {
						return err
					}
				}
				for _, v := range slices.Concat(rm.Match.Headers, rm.Match.Query) {
					if v.Type == translate.StringRegex {
						if err := check(where+" "+v.Name, v.Value); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}
