package yamlchunk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// yamlToJSONStrictTree is YAMLToJSONStrict as it was before it read
// events: through yaml.v3's node tree of the whole document. The event
// reader must give the same bytes and refuse the same inputs.
func yamlToJSONStrictTree(y []byte) ([]byte, error) {
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
	w := &jsonWriter{buf: &bytes.Buffer{}, scalars: map[scalarKey]any{}}
	w.enc = json.NewEncoder(w.buf)
	w.enc.SetEscapeHTML(false)
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("reading YAML: no document")
	}
	if err := w.writeTree(doc.Content[0]); err != nil {
		return nil, err
	}
	return w.buf.Bytes(), nil
}

// write writes n as JSON, and drops its children once written.
func (w *jsonWriter) writeTree(n *yamlv3.Node) error {
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
			if err := w.writeTree(n.Content[i+1]); err != nil {
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
			if err := w.writeTree(e); err != nil {
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

// TestEventsAsNodeTree: the event reader gives the node tree's bytes, and
// refuses what it refuses, on every case of TestYAMLToJSONStrict, on
// documents JSONToYAML writes, and on hostile ones.
func TestEventsAsNodeTree(t *testing.T) {
	long := strings.Repeat("word ", 40)
	docs := []string{
		"a: 1\nb: x\nc: [1, 2.5, -3, 1e5, 0x1F, 0o17, 1_000]\nd: {}\ne: []\nf: null\ng: ~\nh: true\ni: \"yes\"\nj: ''\nk: 18446744073709551615\nl: 18446744073709551616\nm: -9223372036854775808\n",
		"a: \"1\"\nb: 'true'\nc: \"null\"\nd: \"2001-12-14\"\ne: \"<<\"\n\"80\": x\n",
		"a: " + strings.TrimSpace(strings.ReplaceAll(long, "word word ", "word\n  word ")) + "\nb: \"tab\\there \\\" \\\\ \\u00e9 \\x41\"\nc: |\n  two\n  lines\nd: >\n  folded\n  text\n",
		"l:\n- a: 1\n  b:\n  - [x, {u: z}]\n- - 1\n  - 2\nm:\n  q:\n    o: p\n",
		"a: <<\n", "a: !!str 12\nb: !!int \"12\"\nc: !!float 1\nd: ! 12\n", "", "# only a comment\n", "---\n", "--- 1\n", "- 1\n- a\n", "x\n", "null\n",
		"a: &x 1\nb: 2\n", "--- !!map\na: 1\n", "!!seq [1]\n", "!!map [1]\n", "!!seq {a: 1}\n", "a: !!map {}\n", "? [a]\n: 1\n", "? {a: 1}\n: 1\n", "*x\n",
		"a: 1\nb: 2\na: 3\n", "l:\n- x: 1\n  x: 1\n", "a: 1\n\"a\": 1\n", "a: [1\n", "a: .inf\n", "a: .nan\n", "a: &x 1\nb: *x\n", "a: &x {c: 1}\nb:\n  <<: *x\n",
		"1: a\n", "true: a\n", "null: a\n", "a: 1\n---\nb: 2\n", "a: 1\n--- [\n", "a: !!binary aGk=\n", "a: 2001-12-14\n", "a: yes\n", "n: 1\n", "a: !foo x\n", "a: !<tag:yaml.org,2002:str> 1\n",
		"a:\n  b: c\n d: e\n", "\t a: 1\n", "a: 'x\n", "a: \"\\q\"\n", "%YAML 1.1\n---\na: 1\n", "a: 1 # c\n", "a: 0b101\nb: +1\nc: -0\nd: .5\ne: 1e21\nf: 9223372036854775807\n",
	}
	for _, d := range docs {
		want, wantErr := yamlToJSONStrictTree([]byte(d))
		got, err := YAMLToJSONStrict([]byte(d))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%q: events: %v (%s); node tree: %v (%s)", d, err, got, wantErr, want)
			continue
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Errorf("%q: events give %s, the node tree %s", d, got, want)
		}
	}
}
