//gwretry:format
package nginx

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
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
	conf, _, err := renderLayoutParsed(ds, layout, v)
	return conf, err
}

// parsedConf is the parse-back of a generated file, for the judges
// (translate.File.Parsed): the contents of its http {} block as read for
// one layout and version.
type parsedConf struct {
	layout, version string
	http            crossplane.Directives
}

// renderLayoutParsed is renderLayout, and also returns the parse of the
// bytes it compared.
func renderLayoutParsed(ds crossplane.Directives, layout string, v version) ([]byte, *parsedConf, error) {
	name := fileName(layout)
	var buf bytes.Buffer
	if err := crossplane.Build(&buf, crossplane.Config{File: name, Parsed: ds}, &crossplane.BuildOptions{Indent: 4}); err != nil {
		return nil, nil, fmt.Errorf("writing %s: %w", name, err)
	}
	buf.WriteByte('\n')
	conf := buf.Bytes()
	// What was meant is kept as a digest of each directive (each of
	// http {}'s one by one), so that the built directives are dropped
	// before the parse-back is built beside them (issue 22: at 10,000
	// routes each is about 150 MB). Equal digests are equal directives as
	// equalDirective compares them.
	meant := shapes(ds)
	ds = nil
	read, http, err := parseConfig(conf, layout, v)
	if err != nil {
		return nil, nil, err
	}
	if got := shapes(read); !slices.Equal(meant, got) {
		return nil, nil, fmt.Errorf("generated %s does not read back as written: %s", name, firstDifference(meant, got, read))
	}
	return conf, &parsedConf{layout: layout, version: v.Name, http: http}, nil
}

// shape is the SHA-256 of a directive as equalDirective compares it.
type shape [sha256.Size]byte

// shapes returns the shape of each directive of ds, in order, and for an
// http block the shape of each directive inside it after its own.
func shapes(ds crossplane.Directives) []shape {
	var out []shape
	h := sha256.New()
	var b []byte
	for _, d := range ds {
		h.Reset()
		b = appendDirective(b[:0], d)
		h.Write(b)
		out = append(out, shape(h.Sum(nil)))
		if d.Directive == "http" && d.IsBlock() {
			for _, c := range d.Block {
				h.Reset()
				b = appendDirective(b[:0], c)
				h.Write(b)
				out = append(out, shape(h.Sum(nil)))
			}
		}
	}
	return out
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

// firstDifference names the first directive whose shape differs between
// what was meant and what was read, by where it was read.
func firstDifference(meant, got []shape, read crossplane.Directives) string {
	i := 0
	for i < len(meant) && i < len(got) && meant[i] == got[i] {
		i++
	}
	n := 0
	for _, d := range read {
		if n == i {
			return fmt.Sprintf("%s on line %d differs from the directive built", d.Directive, d.Line)
		}
		n++
		if d.Directive == "http" && d.IsBlock() {
			for _, c := range d.Block {
				if n == i {
					return fmt.Sprintf("%s on line %d (in http) differs from the directive built", c.Directive, c.Line)
				}
				n++
			}
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
