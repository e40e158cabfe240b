package yamlchunk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/gwretry/gwretry/internal/thirdparty/yamlv3events"
)

// YAMLToJSONStrict reads the first YAML document of y, rejecting a mapping
// with a key twice, and returns it as JSON: for the documents yaml.v2
// writes (JSONToYAML's), the same JSON value as sigs.k8s.io/yaml's
// YAMLToJSONStrict, its members in the document's order instead of
// sorted. It reads yaml.v3's parser's events one at a time
// (internal/thirdparty/yamlv3events) and writes each as it comes: it
// holds no tree of y, only the keys of the mappings it is inside (for the
// duplicate check) and the JSON. Each scalar is resolved and decoded by
// yaml.v3 itself, as a one-scalar node built as yaml.v3's decoder builds
// it, so the values are those of yaml.v3's node tree
// (TestEventsAsNodeTree).
//
// It is stricter than sigs.k8s.io/yaml where yaml.v2 never writes what it
// rejects: aliases, merge keys, keys that are not strings, tags other than
// the core schema's scalars, a second document, and the plain scalars
// that YAML 1.1 (yaml.v2) reads as booleans but YAML 1.2 (yaml.v3, which
// resolves the others here) as strings (yes, on, n, ...) are errors.
func YAMLToJSONStrict(y []byte) ([]byte, error) {
	return YAMLToJSONPieces(y, nil, nil)
}

// YAMLToJSONPieces is YAMLToJSONStrict, with the values of the mappings
// and the elements of the sequences at the mapping keys split chooses
// (from the root, the sequences on the way not counted; nil: none) given
// one at a time, as JSON, to piece with their mapping's or sequence's
// path, their key ("" in a sequence) and their index, and each of those
// mappings and sequences written as {} or [] in the JSON it returns. Every
// check is the same (a key given twice in a split mapping too); a reader
// that needs the document's value in pieces (Envoy's bootstrap, one
// cluster or listener at a time; Traefik's routers) holds the JSON of one
// piece instead of the whole. Pieces nest as YAMLToJSONNested's do.
func YAMLToJSONPieces(y []byte, split func(path []string) bool, piece func(path []string, key string, i int, j []byte) error) ([]byte, error) {
	var nested func(path []string, at []int, key string, i int, j []byte) error
	if piece != nil {
		nested = func(path []string, _ []int, key string, i int, j []byte) error { return piece(path, key, i, j) }
	}
	return YAMLToJSONNested(y, split, nested)
}

// YAMLToJSONNested is YAMLToJSONPieces, its piece also given at: the
// index of each sequence element the piece is inside, from the root. A
// split mapping or sequence inside a piece is split too (split is asked
// with the path from the root): its pieces are given before the piece
// they are in, whose JSON has {} or [] in their place. A reader that
// needs a large piece in smaller ones (Envoy's listener, one virtual host
// at a time) puts them together with at. piece must not keep path or at.
func YAMLToJSONNested(y []byte, split func(path []string) bool, piece func(path []string, at []int, key string, i int, j []byte) error) ([]byte, error) {
	w := &jsonWriter{buf: &bytes.Buffer{}, scalars: map[scalarKey]any{}, split: split, piece: piece}
	if split == nil {
		w.buf.Grow(len(y) / 2)
	}
	return w.document(yamlv3events.NewParser(y))
}

// ReaderToJSONNested is YAMLToJSONNested of what r reads, read a few KB
// at a time: a writer that streamed a large file to disk reads it back
// without holding it (Envoy's bootstrap under -o DIR).
func ReaderToJSONNested(r io.Reader, split func(path []string) bool, piece func(path []string, at []int, key string, i int, j []byte) error) ([]byte, error) {
	w := &jsonWriter{buf: &bytes.Buffer{}, scalars: map[scalarKey]any{}, split: split, piece: piece}
	return w.document(yamlv3events.NewReaderParser(r))
}

// document writes the one document p reads as JSON.
func (w *jsonWriter) document(p *yamlv3events.Parser) ([]byte, error) {
	w.enc = json.NewEncoder(writeTo{w})
	w.enc.SetEscapeHTML(false)
	ev, err := p.Next()
	if err != nil {
		return nil, err
	}
	if ev.Kind != yamlv3events.StreamStart {
		return nil, fmt.Errorf("line %d: reading YAML: no stream", ev.Line)
	}
	if ev, err = p.Next(); err != nil {
		return nil, err
	}
	switch ev.Kind {
	case yamlv3events.StreamEnd:
		return []byte("null"), nil
	case yamlv3events.DocumentStart:
	default:
		return nil, fmt.Errorf("line %d: reading YAML: no document", ev.Line)
	}
	if ev, err = p.Next(); err != nil {
		return nil, err
	}
	if err := w.event(p, ev); err != nil {
		return nil, err
	}
	if ev, err = p.Next(); err != nil {
		return nil, err
	}
	if ev.Kind != yamlv3events.DocumentEnd {
		return nil, fmt.Errorf("line %d: reading YAML: more than one node in the document", ev.Line)
	}
	if ev, err = p.Next(); err != nil {
		return nil, err
	}
	switch ev.Kind {
	case yamlv3events.StreamEnd:
	case yamlv3events.DocumentStart:
		return nil, fmt.Errorf("line %d: a second YAML document", ev.Line)
	default:
		return nil, fmt.Errorf("line %d: reading YAML: unexpected event after the document", ev.Line)
	}
	return w.buf.Bytes(), nil
}

// node is the yaml.Node yaml.v3's decoder builds for ev (decode.go,
// parser.node and parser.scalar), without its children: its Tag, Value,
// Style and Line.
func node(kind yamlv3.Kind, ev yamlv3events.Event) *yamlv3.Node {
	n := &yamlv3.Node{Kind: kind, Value: ev.Value, Line: ev.Line}
	if ev.Tag != "" && ev.Tag != "!" {
		n.Tag = ev.Tag
		n.Tag = n.ShortTag()
		n.Style = yamlv3.TaggedStyle
	}
	if kind != yamlv3.ScalarNode {
		return n
	}
	var style yamlv3.Style
	switch ev.Style {
	case yamlv3events.DoubleQuoted:
		style = yamlv3.DoubleQuotedStyle
	case yamlv3events.SingleQuoted:
		style = yamlv3.SingleQuotedStyle
	case yamlv3events.Literal:
		style = yamlv3.LiteralStyle
	case yamlv3events.Folded:
		style = yamlv3.FoldedStyle
	}
	if n.Tag == "" {
		switch {
		case style != 0:
			n.Tag = "!!str"
		case ev.Value == "<<":
			n.Tag = "!!merge"
		default:
			n.Tag = n.ShortTag()
		}
	}
	n.Style |= style
	return n
}

// event writes the node that starts with ev as JSON, reading its
// children's events from p.
func (w *jsonWriter) event(p *yamlv3events.Parser, ev yamlv3events.Event) error {
	// Only a mapping's value (or the root) is split: a sequence's element
	// has its sequence's path.
	element := w.element
	w.element = false
	switch ev.Kind {
	case yamlv3events.MappingStart:
		if t := node(yamlv3.MappingNode, ev).ShortTag(); t != "!!map" {
			return fmt.Errorf("line %d: a mapping tagged %s", ev.Line, t)
		}
		split := w.split != nil && !element && w.split(w.path)
		doc := w.buf
		var piece bytes.Buffer
		seen := map[string]struct{}{}
		w.buf.WriteByte('{')
		for i := 0; ; i++ {
			kev, err := p.Next()
			if err != nil {
				return err
			}
			if kev.Kind == yamlv3events.MappingEnd {
				break
			}
			if kev.Kind != yamlv3events.Scalar {
				what := "a mapping"
				switch kev.Kind {
				case yamlv3events.SequenceStart:
					what = "a sequence"
				case yamlv3events.Alias:
					return fmt.Errorf("line %d: an alias (*%s)", kev.Line, kev.Value)
				}
				return fmt.Errorf("line %d: a mapping key that is not a string (%s)", kev.Line, what)
			}
			k := node(yamlv3.ScalarNode, kev)
			if t := k.ShortTag(); t != "!!str" {
				return fmt.Errorf("line %d: a mapping key that is not a string (%s)", k.Line, t)
			}
			if err := notYAML11Bool(k); err != nil {
				return err
			}
			if _, dup := seen[k.Value]; dup {
				return fmt.Errorf("line %d: key %q already set in the mapping", k.Line, k.Value)
			}
			seen[k.Value] = struct{}{}
			if split {
				vev, err := p.Next()
				if err != nil {
					return err
				}
				if err := w.writePiece(p, vev, &piece, true, k.Value, i); err != nil {
					return err
				}
				w.buf = doc
				continue
			}
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.enc.Encode(k.Value); err != nil {
				return err
			}
			w.buf.WriteByte(':')
			vev, err := p.Next()
			if err != nil {
				return err
			}
			w.path = append(w.path, k.Value)
			err = w.event(p, vev)
			w.path = w.path[:len(w.path)-1]
			if err != nil {
				return err
			}
		}
		w.buf.WriteByte('}')
		return nil
	case yamlv3events.SequenceStart:
		if t := node(yamlv3.SequenceNode, ev).ShortTag(); t != "!!seq" {
			return fmt.Errorf("line %d: a sequence tagged %s", ev.Line, t)
		}
		split := w.split != nil && !element && w.split(w.path)
		doc := w.buf
		doc.WriteByte('[')
		var piece bytes.Buffer
		for i := 0; ; i++ {
			eev, err := p.Next()
			if err != nil {
				return err
			}
			if eev.Kind == yamlv3events.SequenceEnd {
				break
			}
			w.at = append(w.at, i)
			w.element = true
			if split {
				err = w.writePiece(p, eev, &piece, false, "", i)
			} else {
				if i > 0 {
					w.buf.WriteByte(',')
				}
				err = w.event(p, eev)
			}
			w.at = w.at[:len(w.at)-1]
			if err != nil {
				return err
			}
		}
		w.buf.WriteByte(']')
		return nil
	case yamlv3events.Scalar:
		return w.scalar(node(yamlv3.ScalarNode, ev))
	case yamlv3events.Alias:
		return fmt.Errorf("line %d: an alias (*%s)", ev.Line, ev.Value)
	}
	return fmt.Errorf("line %d: unexpected YAML event %d", ev.Line, ev.Kind)
}

// writePiece writes the node that starts with ev, the value of key in a
// split mapping (mapping) or the element i of a split sequence, alone
// into piece (its own pieces given before it), and gives it to w.piece.
func (w *jsonWriter) writePiece(p *yamlv3events.Parser, ev yamlv3events.Event, piece *bytes.Buffer, mapping bool, key string, i int) error {
	piece.Reset()
	doc := w.buf
	w.buf = piece
	if mapping {
		w.path = append(w.path, key)
	}
	err := w.event(p, ev)
	w.buf = doc
	at := w.at
	if mapping {
		w.path = w.path[:len(w.path)-1]
	} else {
		at = at[:len(at)-1] // without the element's own index, i
	}
	if err != nil {
		return err
	}
	return w.piece(w.path, at, key, i, piece.Bytes())
}

type jsonWriter struct {
	// buf is where the JSON goes: the document's, or a piece's.
	buf *bytes.Buffer
	// enc writes strings and floats, each followed by a newline (white
	// space between JSON tokens), to buf.
	enc *json.Encoder
	// path is the keys of the mappings being written, from the root.
	path []string
	// at is the index of each sequence element being written, from the
	// root.
	at []int
	// element is set while the next node is a sequence's element.
	element bool
	// split, when set, says which mappings' values and sequences'
	// elements are pieces: each is written to its own buffer and given
	// to piece, and the mapping or sequence is written as {} or [] in
	// the document.
	split func(path []string) bool
	piece func(path []string, at []int, key string, i int, j []byte) error
	// scalars are the ints, floats and booleans decoded so far.
	scalars map[scalarKey]any
}

type scalarKey struct{ tag, value string }

// notYAML11Bool rejects a plain scalar that yaml.v3 reads as a string and
// yaml.v2 (YAML 1.1) as a boolean: yaml.v2 quotes those strings.
func notYAML11Bool(n *yamlv3.Node) error {
	if n.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 || len(n.Value) > 3 {
		return nil
	}
	switch n.Value {
	case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF":
		return fmt.Errorf("line %d: %s is a boolean in YAML 1.1 and a string in YAML 1.2: quote it", n.Line, n.Value)
	}
	return nil
}

// scalar writes a scalar node as the JSON value yaml.v3 decodes it to.
func (w *jsonWriter) scalar(n *yamlv3.Node) error {
	tag := n.ShortTag()
	switch tag {
	case "!!str":
		if err := notYAML11Bool(n); err != nil {
			return err
		}
		return w.enc.Encode(n.Value)
	case "!!merge":
		// yaml.v2 writes the string "<<" plain, and reads it so as a
		// value (a key "<<" merges: an error above).
		return w.enc.Encode(n.Value)
	case "!!null":
		w.buf.WriteString("null")
		return nil
	case "!!bool", "!!int", "!!float":
	default:
		return fmt.Errorf("line %d: a scalar tagged %s", n.Line, tag)
	}
	key := scalarKey{tag, n.Value}
	v, ok := w.scalars[key]
	if !ok {
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		w.scalars[key] = v
	}
	switch x := v.(type) {
	case bool:
		w.buf.WriteString(strconv.FormatBool(x))
	case int:
		w.buf.WriteString(strconv.Itoa(x))
	case int64:
		w.buf.WriteString(strconv.FormatInt(x, 10))
	case uint64:
		w.buf.WriteString(strconv.FormatUint(x, 10))
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Errorf("line %d: %s has no JSON value", n.Line, n.Value)
		}
		return w.enc.Encode(x)
	default:
		return fmt.Errorf("line %d: %s %q decodes to %T", n.Line, tag, n.Value, v)
	}
	return nil
}

// writeTo is the io.Writer of w's encoder: whichever buffer w writes to.
type writeTo struct{ w *jsonWriter }

func (t writeTo) Write(b []byte) (int, error) { return t.w.buf.Write(b) }
