//gwretry:format
package nginx

import (
	"bytes"
	"fmt"
	"slices"

	crossplane "github.com/nginxinc/nginx-go-crossplane"
)

// serverBatch is how many server blocks httpParts parses at once: the
// parse of a whole generated file was three times its size (170 MB for
// nginx.conf at 10,000 routes, issue 22), and its server blocks are more
// than half of it.
const serverBatch = 200

// httpParts is a generated file read in parts, as the read-back check and
// the judges read it: the file with the server blocks of its http {}
// block left out (blank lines in their place, so every line keeps its
// number), parsed once (top, and http: the maps, upstreams, constants and
// http-level directives every server reads), and where each server block
// is, parsed a batch at a time by eachServers.
type httpParts struct {
	top, http crossplane.Directives
	// servers are the server blocks of http {}, in file order.
	servers []serverSpan
	data    []byte
	layout  string
	v       version
}

// serverSpan is a server block's lines: data[start:end], the first on
// line (of the text parsed: for conf.d, the file wrapped as parseConfig
// wraps it).
type serverSpan struct {
	start, end, line int
}

// readParts reads data, a file of layout written by this backend, in
// parts. It finds the server blocks of http {} by their lines, as
// crossplane.Build writes them: "server {" and a closing "}" alone on a
// line at the indentation of http's directives (none for conf.d, 4
// spaces in nginx.conf); anything else stays in the head. The parts are
// checked by parsing them: a cut in the wrong place does not parse or
// does not read back as what was built (renderLayoutParsed compares
// every directive).
func readParts(data []byte, layout string, v version) (*httpParts, error) {
	indent, shift := "    ", 0
	if layout == LayoutConfD {
		indent, shift = "", 2
	}
	open, closing := []byte(indent+"server {"), []byte(indent+"}")
	p := &httpParts{data: data, layout: layout, v: v}
	line, at, in := 1, 0, -1
	for at < len(data) {
		end := bytes.IndexByte(data[at:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += at + 1
		}
		text := bytes.TrimSuffix(data[at:end], []byte("\n"))
		switch {
		case in < 0 && bytes.Equal(text, open):
			in = len(p.servers)
			p.servers = append(p.servers, serverSpan{start: at, line: line + shift})
		case in >= 0 && bytes.Equal(text, closing):
			p.servers[in].end = end
			in = -1
		}
		line, at = line+1, end
	}
	if in >= 0 {
		// An unclosed server block: the whole file is read as one.
		p.servers = nil
	}
	// The head is the file with a blank line for each line of a server
	// block, sized exactly.
	size := len(data)
	for _, sp := range p.servers {
		size -= sp.end - sp.start - bytes.Count(data[sp.start:sp.end], []byte("\n"))
	}
	head := make([]byte, 0, size)
	from := 0
	for _, sp := range p.servers {
		head = append(head, data[from:sp.start]...)
		for range bytes.Count(data[sp.start:sp.end], []byte("\n")) {
			head = append(head, '\n')
		}
		from = sp.end
	}
	head = append(head, data[from:]...)
	top, http, err := parseConfig(head, layout, v)
	if err != nil {
		return nil, err
	}
	p.top, p.http = top, http
	return p, nil
}

// eachServers parses the server blocks a batch at a time, in file order,
// and gives each batch's directives (server blocks, their lines those of
// the file) to fn. A batch must read as exactly its server blocks.
func (p *httpParts) eachServers(fn func(servers crossplane.Directives) error) error {
	name := fileName(p.layout)
	for from := 0; from < len(p.servers); from += serverBatch {
		batch := p.servers[from:min(from+serverBatch, len(p.servers))]
		text := []byte("http {\n")
		for _, s := range batch {
			text = append(text, p.data[s.start:s.end]...)
		}
		text = append(text, "}\n"...)
		_, http, err := parseConfig(text, LayoutFull, p.v)
		if err != nil {
			return fmt.Errorf("%s, the server blocks from line %d: %w", name, batch[0].line, err)
		}
		if len(http) != len(batch) || slices.ContainsFunc(http, func(d *crossplane.Directive) bool { return d.Directive != "server" }) {
			return fmt.Errorf("%s, the server blocks from line %d: read as %d directives, not %d server blocks", name, batch[0].line, len(http), len(batch))
		}
		// The batch's text starts with "http {" on line 1: its first
		// server is on line 2, and each further line follows the file's,
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
		out = append(out, headerShape(d, len(p.http)+len(p.servers)))
		var err error
		if out, err = p.childShapes(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// childShapes appends the shapes of http's directives, in file order.
func (p *httpParts) childShapes(out []shaped) ([]shaped, error) {
	rest := p.http
	err := p.eachServers(func(servers crossplane.Directives) error {
		for _, s := range servers {
			for len(rest) > 0 && rest[0].Line < s.Line {
				out = append(out, shapeOf(rest[0]))
				rest = rest[1:]
			}
			out = append(out, shapeOf(s))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range rest {
		out = append(out, shapeOf(d))
	}
	return out, nil
}
