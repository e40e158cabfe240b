package envoy

import (
	"bytes"
	"fmt"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// chunkNodes is the size, in nodes, above which jsonToYAML writes a list
// one element at a time.
const chunkNodes = 2048

// chunkToken starts the placeholders jsonToYAML writes in place of a list
// or an element; a document that contains it is written in one piece.
const chunkToken = "gwretrychunk"

// jsonToYAML is sigs.k8s.io/yaml's JSONToYAML(j), byte for byte, without
// holding one yaml.v2 emitter event per node of the whole document: that
// emitter never drops the events it has written, which for an 8 MB
// envoy.yaml is a queue of a quarter of a gigabyte. A large list that is a
// mapping's value is written by yaml.v2 one element at a time, each
// element inside its ancestors alone (so at the column, and with the line
// folding, it has in the whole document), and spliced in where the list
// belongs. Every byte is yaml.v2's; the caller parses the result back and
// compares it with what it meant, and tests compare it with JSONToYAML.
func jsonToYAML(j []byte) ([]byte, error) {
	if bytes.Contains(j, []byte(chunkToken)) {
		return yaml.JSONToYAML(j)
	}
	// yaml.Unmarshal, as JSONToYAML does, to keep integers integers.
	var obj any
	if err := yamlv2.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	w := &chunkWriter{}
	return w.render(nil, obj)
}

// step is one step of a path from the document's root: a mapping key, or
// (key == nil) a list element.
type step struct{ key any }

type chunkWriter struct{ n int }

// wrap returns v inside its ancestors along path, each with only the key
// or the one element that leads to v.
func wrap(path []step, v any) any {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].key == nil {
			v = []any{v}
		} else {
			v = map[any]any{path[i].key: v}
		}
	}
	return v
}

// render returns the YAML of wrap(path, v), writing the large lists in v
// one element at a time.
func (w *chunkWriter) render(path []step, v any) ([]byte, error) {
	type chunk struct {
		token string
		path  []step
		list  []any
	}
	var chunks []chunk
	// Replace every large list that is a mapping's value, in mappings
	// reached through mappings only, by a placeholder scalar.
	var find func(sub []step, m map[any]any)
	find = func(sub []step, m map[any]any) {
		for k, val := range m {
			switch x := val.(type) {
			case map[any]any:
				find(append(sub[:len(sub):len(sub)], step{key: k}), x)
			case []any:
				if nodes(x) > chunkNodes {
					w.n++
					tok := chunkToken + strconv.Itoa(w.n)
					chunks = append(chunks, chunk{token: tok, path: append(sub[:len(sub):len(sub)], step{key: k}), list: x})
					m[k] = tok
				}
			}
		}
	}
	if m, ok := v.(map[any]any); ok {
		find(path[:len(path):len(path)], m)
	}
	doc, err := yamlv2.Marshal(wrap(path, v))
	if err != nil {
		return nil, err
	}
	for _, c := range chunks {
		elem := append(c.path[:len(c.path):len(c.path)], step{})
		marker, err := yamlv2.Marshal(wrap(elem, chunkToken))
		if err != nil {
			return nil, err
		}
		at := bytes.Index(marker, []byte(chunkToken))
		if at < 0 {
			return nil, fmt.Errorf("writing YAML: no placeholder in %q", marker)
		}
		prefix := marker[:at]
		lead := prefix[bytes.LastIndexByte(prefix, '\n')+1:]
		var body bytes.Buffer
		body.WriteString(":\n")
		for _, e := range c.list {
			t, err := w.render(elem, e)
			if err != nil {
				return nil, err
			}
			if !bytes.HasPrefix(t, prefix) {
				return nil, fmt.Errorf("writing YAML: an element does not start as its placeholder %q", prefix)
			}
			body.Write(lead)
			body.Write(t[len(prefix):])
		}
		old := []byte(": " + c.token + "\n")
		if bytes.Count(doc, old) != 1 {
			return nil, fmt.Errorf("writing YAML: placeholder %s not found once", c.token)
		}
		doc = bytes.Replace(doc, old, body.Bytes(), 1)
	}
	return doc, nil
}

// nodes counts the nodes of v, stopping once above chunkNodes.
func nodes(v any) int {
	n := 0
	var count func(v any)
	count = func(v any) {
		if n > chunkNodes {
			return
		}
		n++
		switch x := v.(type) {
		case map[any]any:
			for _, e := range x {
				count(e)
			}
		case []any:
			for _, e := range x {
				count(e)
			}
		}
	}
	count(v)
	return n
}
