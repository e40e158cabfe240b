//gwretry:format
package nginx

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	crossplane "github.com/nginxinc/nginx-go-crossplane"
)

// batchSize is how many blocks of a kind httpParts parses at once: the
// parse of a whole generated file was three times its size (170 MB for
// nginx.conf at 10,000 routes, issue 22), and its server blocks, routing
// maps and upstreams are nearly all of it.
const batchSize = 200

// partKind is a kind of http-level block that httpParts reads a batch at
// a time rather than with the head.
type partKind int

const (
	// partServer: server blocks.
	partServer partKind = iota
	// partUpstream: upstream blocks.
	partUpstream
	// partRouteMap: the maps of a server's routing, which define a
	// variable of that server ($gw_s<index>_...): no other directive than
	// the server's location / reads them.
	partRouteMap
	partKinds
)

// directive is the name of the directives of a kind.
func (k partKind) directive() string {
	return [partKinds]string{"server", "upstream", "map"}[k]
}

// httpParts is a generated file read in parts, as the read-back check and
// the judges read it: the file with the server blocks, upstreams and
// routing maps of its http {} block left out (blank lines in their
// place, so every line keeps its number), parsed once (top, and http:
// the constants, the filters' maps and the http-level directives every
// server reads), and where each block left out is, parsed a batch at a
// time by each.
type httpParts struct {
	top, http crossplane.Directives
	// spans are the blocks of each kind left out, in file order.
	spans  [partKinds][]blockSpan
	src    source
	layout string
	v      version
}

// source is a file's bytes, read at offsets: in memory, or a file on
// disk (a spooled file, translate.Options.Spool), opened for each read.
type source interface {
	open() (io.ReaderAt, func() error, error)
}

// memory is a file held in memory.
type memory []byte

func (m memory) open() (io.ReaderAt, func() error, error) {
	return bytes.NewReader(m), func() error { return nil }, nil
}

// onDisk is the file at a path.
type onDisk string

func (d onDisk) open() (io.ReaderAt, func() error, error) {
	f, err := os.Open(string(d))
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// blockSpan is a block's lines: data[start:end], the first on line (of
// the text parsed: for conf.d, the file wrapped as parseConfig wraps it).
type blockSpan struct {
	start, end, line int
}

// readParts reads data, a file of layout written by this backend, in
// parts. It finds the blocks it leaves out of the head by their lines, as
// crossplane.Build writes them at the indentation of http's directives
// (none for conf.d, 4 spaces in nginx.conf): "server {", "upstream NAME
// {" or "map SOURCE $gw_s<index>_NAME {" alone on a line, up to the
// first "}" alone on a line at that indentation; anything else stays in
// the head. The parts are checked by parsing them: a cut in the wrong
// place does not parse, or does not read as a block of its kind, or does
// not read back as what was built (renderLayoutParsed compares every
// directive).
func readParts(data []byte, layout string, v version) (*httpParts, error) {
	return readPartsFrom(memory(data), layout, v)
}

// readPartsFrom is readParts of src, read a line at a time: only the
// head (a blank line for each line left out) is held.
func readPartsFrom(src source, layout string, v version) (_ *httpParts, err error) {
	indent, shift := "    ", 0
	if layout == LayoutConfD {
		indent, shift = "", 2
	}
	closing := []byte(indent + "}")
	p := &httpParts{src: src, layout: layout, v: v}
	r, closeFile, err := src.open()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := closeFile(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	// The head is the file with a blank line for each line of a block
	// left out.
	var head []byte
	lines := bufio.NewReaderSize(io.NewSectionReader(r, 0, math.MaxInt64), 1<<16)
	var long []byte // a line longer than the reader's buffer
	line, at, in := 1, 0, partKind(-1)
	for {
		chunk, rerr := lines.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull {
			long = append(long, chunk...)
			continue
		}
		if rerr != nil && rerr != io.EOF {
			return nil, rerr
		}
		data := chunk
		if long != nil {
			data = append(long, chunk...)
			long = nil
		}
		if len(data) == 0 {
			break
		}
		end := at + len(data)
		text := bytes.TrimSuffix(data, []byte("\n"))
		outside := in < 0
		switch {
		case in < 0:
			if k, ok := opensPart(text, indent); ok {
				in = k
				outside = false
				p.spans[k] = append(p.spans[k], blockSpan{start: at, line: line + shift})
			}
		case bytes.Equal(text, closing):
			p.spans[in][len(p.spans[in])-1].end = end
			in = -1
		}
		if outside {
			head = append(head, data...)
		} else if bytes.HasSuffix(data, []byte("\n")) {
			head = append(head, '\n')
		}
		line, at = line+1, end
		if rerr == io.EOF {
			break
		}
	}
	if in >= 0 {
		// An unclosed block: the whole file is read as one.
		p.spans = [partKinds][]blockSpan{}
		head = make([]byte, at)
		if _, err := r.ReadAt(head, 0); err != nil && err != io.EOF {
			return nil, err
		}
	}
	top, http, err := parseConfig(head, layout, v)
	if err != nil {
		return nil, err
	}
	p.top, p.http = top, http
	return p, nil
}

// opensPart reports whether line, of http's directives at indent, opens
// a block that readParts leaves out of the head, and of which kind.
func opensPart(line []byte, indent string) (partKind, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(indent))
	if !ok {
		return 0, false
	}
	if bytes.Equal(rest, []byte("server {")) {
		return partServer, true
	}
	args, ok := bytes.CutSuffix(rest, []byte(" {"))
	if !ok {
		return 0, false
	}
	switch {
	case bytes.HasPrefix(args, []byte("upstream ")):
		return partUpstream, true
	case bytes.HasPrefix(args, []byte("map ")):
		// The variable defined is the last argument: crossplane writes a
		// variable name bare.
		if routeMapVariable(args[bytes.LastIndexByte(args, ' ')+1:]) {
			return partRouteMap, true
		}
	}
	return 0, false
}

// routeMapVariable reports whether name is a variable of a server's
// routing: $gw_s, the server's index, '_' and more.
func routeMapVariable(name []byte) bool {
	rest, ok := bytes.CutPrefix(name, []byte("$gw_s"))
	digits := 0
	for ok && digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	return ok && digits > 0 && digits+1 < len(rest) && rest[digits] == '_'
}

// eachServers is each(partServer, fn).
func (p *httpParts) eachServers(fn func(servers crossplane.Directives) error) error {
	return p.each(partServer, fn)
}

// each parses the blocks of kind k a batch at a time, in file order, and
// gives each batch's directives (blocks of that kind, their lines those
// of the file) to fn. A batch must read as exactly its blocks.
func (p *httpParts) each(k partKind, fn func(blocks crossplane.Directives) error) error {
	name := fileName(p.layout)
	spans := p.spans[k]
	if len(spans) == 0 {
		return nil
	}
	r, closeFile, err := p.src.open()
	if err != nil {
		return err
	}
	defer closeFile()
	for from := 0; from < len(spans); from += batchSize {
		batch := spans[from:min(from+batchSize, len(spans))]
		size := len("http {\n}\n")
		for _, s := range batch {
			size += s.end - s.start
		}
		text := make([]byte, 0, size)
		text = append(text, "http {\n"...)
		for _, s := range batch {
			n := len(text)
			text = text[:n+s.end-s.start]
			if _, err := r.ReadAt(text[n:], int64(s.start)); err != nil {
				return fmt.Errorf("%s, the %s block on line %d: %w", name, k.directive(), s.line, err)
			}
		}
		text = append(text, "}\n"...)
		_, http, err := parseConfig(text, LayoutFull, p.v)
		if err != nil {
			return fmt.Errorf("%s, the %s blocks from line %d: %w", name, k.directive(), batch[0].line, err)
		}
		if len(http) != len(batch) || slices.ContainsFunc(http, func(d *crossplane.Directive) bool { return d.Directive != k.directive() || !d.IsBlock() }) {
			return fmt.Errorf("%s, the %s blocks from line %d: read as %d directives, not %d %s blocks", name, k.directive(), batch[0].line, len(http), len(batch), k.directive())
		}
		// The batch's text starts with "http {" on line 1: its first
		// block is on line 2, and each further line follows the file's,
		// the blank lines between blocks aside.
		for i, d := range http {
			shiftLines(d, batch[i].line-d.Line)
		}
		if err := fn(http); err != nil {
			return err
		}
	}
	return nil
}

// shiftLines adds n to the line of d and of every directive inside it.
func shiftLines(d *crossplane.Directive, n int) {
	d.Line += n
	for _, c := range d.Block {
		shiftLines(c, n)
	}
}

// shapes returns the shapes of the file as shapes returns those of the
// directives built: each top-level directive's, http's own followed by
// each of its directives' (a conf.d file is http's directives), the
// server blocks parsed a batch at a time and put back in their place by
// line.
func (p *httpParts) shapes() ([]shaped, error) {
	if p.layout == LayoutConfD {
		return p.childShapes(nil)
	}
	var out []shaped
	for _, d := range p.top {
		if !isHTTP(d) {
			out = append(out, shapeOf(d))
			continue
		}
		out = append(out, headerShape(d, p.children()))
		var err error
		if out, err = p.childShapes(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// childShapes appends the shapes of http's directives, in file order:
// the head's, and each kind's read a batch at a time, put back in their
// place by line.
func (p *httpParts) childShapes(out []shaped) ([]shaped, error) {
	var children []shaped
	for _, d := range p.http {
		children = append(children, shapeOf(d))
	}
	for k := range partKinds {
		err := p.each(k, func(blocks crossplane.Directives) error {
			for _, d := range blocks {
				children = append(children, shapeOf(d))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Each directive of http starts a line of its own (crossplane.Build
	// writes them so): the order by line is the file's.
	slices.SortStableFunc(children, func(a, b shaped) int { return cmp.Compare(a.line, b.line) })
	return append(out, children...), nil
}

// children is how many directives http {} has.
func (p *httpParts) children() int {
	n := len(p.http)
	for _, spans := range p.spans {
		n += len(spans)
	}
	return n
}
