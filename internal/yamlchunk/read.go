package yamlchunk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	yamlv3 "go.yaml.in/yaml/v3"
)

// YAMLToJSONStrict reads the first YAML document of y, rejecting a mapping
// with a key twice, and returns it as JSON: for the documents yaml.v2
// writes (JSONToYAML's), the same JSON value as sigs.k8s.io/yaml's
// YAMLToJSONStrict, its members in the document's order instead of
// sorted. It holds yaml.v3's node tree of y instead of yaml.v2's tree, a
// second tree of it with string keys and encoding/json's sorting of
// every mapping, and drops each node once it is written.
//
// It is stricter than sigs.k8s.io/yaml where yaml.v2 never writes what it
// rejects: aliases, merge keys, keys that are not strings, tags other than
// the core schema's scalars, a second document, and the plain scalars
// that YAML 1.1 (yaml.v2) reads as booleans but YAML 1.2 (yaml.v3, which
// resolves the others here) as strings (yes, on, n, ...) are errors.
func YAMLToJSONStrict(y []byte) ([]byte, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(y))
	var doc yamlv3.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return []byte("null"), nil
		}
		return nil, err
	}
	var extra yamlv3.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("line %d: a second YAML document", extra.Line)
	}
	w := &jsonWriter{scalars: map[scalarKey]any{}}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("reading YAML: no document")
	}
	root := doc.Content[0]
	doc.Content = nil
	if err := w.write(root); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

type jsonWriter struct {
	buf bytes.Buffer
	// enc writes strings and floats, each followed by a newline (white
	// space between JSON tokens).
	enc *json.Encoder
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

// write writes n as JSON, and drops its children once written.
func (w *jsonWriter) write(n *yamlv3.Node) error {
	switch n.Kind {
	case yamlv3.MappingNode:
		if t := n.ShortTag(); t != "!!map" {
			return fmt.Errorf("line %d: a mapping tagged %s", n.Line, t)
		}
		seen := make(map[string]struct{}, len(n.Content)/2)
		w.buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yamlv3.ScalarNode || k.ShortTag() != "!!str" {
				return fmt.Errorf("line %d: a mapping key that is not a string (%s)", k.Line, k.ShortTag())
			}
			if err := notYAML11Bool(k); err != nil {
				return err
			}
			if _, dup := seen[k.Value]; dup {
				return fmt.Errorf("line %d: key %q already set in the mapping", k.Line, k.Value)
			}
			seen[k.Value] = struct{}{}
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.enc.Encode(k.Value); err != nil {
				return err
			}
			w.buf.WriteByte(':')
			if err := w.write(n.Content[i+1]); err != nil {
				return err
			}
			n.Content[i], n.Content[i+1] = nil, nil
		}
		w.buf.WriteByte('}')
		return nil
	case yamlv3.SequenceNode:
		if t := n.ShortTag(); t != "!!seq" {
			return fmt.Errorf("line %d: a sequence tagged %s", n.Line, t)
		}
		w.buf.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				w.buf.WriteByte(',')
			}
			if err := w.write(e); err != nil {
				return err
			}
			n.Content[i] = nil
		}
		w.buf.WriteByte(']')
		return nil
	case yamlv3.ScalarNode:
		return w.scalar(n)
	case yamlv3.AliasNode:
		return fmt.Errorf("line %d: an alias (*%s)", n.Line, n.Value)
	}
	return fmt.Errorf("line %d: unexpected YAML node kind %d", n.Line, n.Kind)
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
