// Package yamlchunk writes large YAML documents with yaml.v2, byte for
// byte as sigs.k8s.io/yaml does, in a fraction of the memory and time, and
// reads them back as JSON (YAMLToJSONStrict) with yaml.v3's node tree
// instead of yaml.v2's tree and two copies of it.
package yamlchunk

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// chunkNodes is the size, in nodes, above which JSONToYAML writes a list
// one element at a time.
const chunkNodes = 2048

// batchNodes is the size, in nodes, up to which renderMap writes
// consecutive keys of a large mapping together.
const batchNodes = 200

// chunkToken starts the placeholders JSONToYAML writes in place of a list
// or an element; a document that contains it is written in one piece.
const chunkToken = "gwretrychunk"

// JSONToYAML is sigs.k8s.io/yaml's JSONToYAML(j), byte for byte, without
// holding one yaml.v2 emitter event per node of the whole document: that
// emitter never drops the events it has written, which for an 8 MB
// envoy.yaml is a queue of a quarter of a gigabyte. A large list that is a
// mapping's value is written by yaml.v2 one element at a time, each
// element inside its ancestors alone (so at the column, and with the line
// folding, it has in the whole document), and spliced in where the list
// belongs. Every byte is yaml.v2's; the caller parses the result back and
// compares it with what it meant, and tests compare it with JSONToYAML.
// An 8 MB envoy.yaml at 1,000 routes is the case it was written for.
func JSONToYAML(j []byte) ([]byte, error) {
	return NewWriter().JSONToYAML(j)
}

// Writer writes many documents as JSONToYAML does, resolving each
// distinct number and ordering each distinct set of mapping keys once
// for all of them.
type Writer struct{ r *jsonReader }

// NewWriter returns a Writer with nothing resolved yet.
func NewWriter() *Writer { return &Writer{r: newJSONReader()} }

// JSONToYAML is the package's JSONToYAML(j).
func (w *Writer) JSONToYAML(j []byte) ([]byte, error) {
	if bytes.Contains(j, []byte(chunkToken)) {
		return yaml.JSONToYAML(j)
	}
	obj, err := w.r.read(j)
	if err != nil {
		return nil, err
	}
	cw := &chunkWriter{}
	return cw.render(nil, obj)
}

// Element returns the lines JSONToYAML writes for the JSON value j as an
// element of the list that is the value at the mapping keys path of a
// larger document: "- " at that list's indentation, then j's lines, each
// at the column and with the line folding it has in the whole document.
// A writer that holds the document's pieces rather than the document
// (Envoy's bootstrap, one cluster or listener at a time) writes each
// element of a list with it after the keys' own lines ("key:\n" at two
// spaces a level); it reads the whole document back to check it.
func (w *Writer) Element(path []string, j []byte) ([]byte, error) {
	steps := make([]Step, 0, len(path)+1)
	for _, k := range path {
		steps = append(steps, Key(k))
	}
	return w.ElementAt(append(steps, Item()), j)
}

// ElementAt is Element for the list element at path, which goes through
// mappings and lists and ends with Item: Envoy's virtual hosts are
// elements of a list inside a listener, itself an element of a list. The
// lines are those JSONToYAML writes for the element inside any document
// that has it at that path (a list element's first key is on its "- "
// line, and the keys after it at the same column).
func (w *Writer) ElementAt(steps []Step, j []byte) ([]byte, error) {
	if len(steps) == 0 || steps[len(steps)-1].key != nil {
		return nil, fmt.Errorf("writing YAML: an element's path must end with a list's item")
	}
	prefix, lead, err := placeholder(steps, chunkToken)
	if err != nil {
		return nil, err
	}
	v, err := w.r.read(j)
	if err != nil {
		return nil, err
	}
	var t []byte
	if bytes.Contains(j, []byte(chunkToken)) {
		// The placeholders of large pieces would be ambiguous: yaml.v2
		// writes the element whole.
		t, err = yamlv2.Marshal(wrap(steps, v))
	} else {
		t, err = (&chunkWriter{}).render(steps, v)
	}
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(t, prefix) {
		return nil, fmt.Errorf("writing YAML: an element does not start as its placeholder %q", prefix)
	}
	return append(slices.Clip(lead), t[len(prefix):]...), nil
}

// Entries appends to out the lines JSONToYAML writes for a mapping that
// is the value at the mapping keys path of a larger document, given as
// its keys (distinct) and value, which returns a key's value as JSON: the
// keys in yaml.v2's order, a few at a time, at the column and with the
// line folding they have in the whole document. A writer that holds a large
// mapping's values rather than its JSON (Traefik's routers, one at a
// time) writes the mapping's key line itself ("key:\n" at two spaces a
// level), then these; it reads the whole document back to check it.
func (w *Writer) Entries(out [][]byte, path []string, keys []string, value func(key string) ([]byte, error)) ([][]byte, error) {
	err := w.EntriesTo(func(b []byte) error { out = append(out, b); return nil }, path, keys, value)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EntriesTo is Entries giving each piece to emit as it is written (a
// writer that streams the document to disk holds none of them).
func (w *Writer) EntriesTo(emit func([]byte) error, path []string, keys []string, value func(key string) ([]byte, error)) error {
	steps := make([]Step, 0, len(path))
	for _, k := range path {
		steps = append(steps, Step{key: k})
	}
	prefix, lead, err := placeholder(steps, yamlv2.MapSlice{{Key: chunkToken, Value: chunkToken}})
	if err != nil {
		return err
	}
	sorted := slices.Clone(keys)
	order, err := w.r.order(sorted)
	if err != nil {
		return err
	}
	// Entries are written a few together, up to batchNodes nodes (at
	// least one), as renderMap writes a large mapping's keys: the lines
	// of consecutive keys of a block mapping are those of each key alone,
	// and each yaml.v2 emitter costs a few KB before its first event.
	var batch yamlv2.MapSlice
	size := 0
	write := func(entries yamlv2.MapSlice, whole bool) error {
		var t []byte
		var err error
		if whole {
			t, err = yamlv2.Marshal(wrap(steps, entries))
		} else {
			t, err = (&chunkWriter{}).render(steps, entries)
		}
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(t, prefix) {
			return fmt.Errorf("writing YAML: key %q does not start as its placeholder %q", entries[0].Key, prefix)
		}
		return emit(append(slices.Clip(lead), t[len(prefix):]...))
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := write(batch, false)
		batch, size = nil, 0
		return err
	}
	for _, o := range order {
		k := sorted[o]
		j, err := value(k)
		if err != nil {
			return err
		}
		v, err := w.r.read(j)
		if err != nil {
			return err
		}
		entry := yamlv2.MapItem{Key: k, Value: v}
		if bytes.Contains(j, []byte(chunkToken)) || strings.Contains(k, chunkToken) {
			// The placeholders of large pieces would be ambiguous:
			// yaml.v2 writes the entry whole, alone.
			if err := flush(); err != nil {
				return err
			}
			if err := write(yamlv2.MapSlice{entry}, true); err != nil {
				return err
			}
			continue
		}
		n := nodes(v)
		if len(batch) > 0 && size+n > batchNodes {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, entry)
		size += n
	}
	return flush()
}

// readJSON returns the tree that yaml.v2's Unmarshal reads from the JSON
// j, as JSONToYAML does (to keep integers integers), but with every
// mapping a yaml.v2 MapSlice already in the order yaml.v2 writes a map's
// keys: []any, strings, booleans, nil, and numbers as yaml.v2 resolves
// their text. yaml.v2 writes a MapSlice as it writes the map, in a third
// of the memory of a map[any]any. encoding/json reads the JSON (the last
// of a key given twice, as yaml.v2 keeps it), several times faster than
// yaml.v2's parser reads it as flow-style YAML; yaml.v2 still resolves
// every distinct number (an int, int64, uint64 or float64, as it
// chooses), and sorts every distinct set of keys, once. Unlike yaml.v2,
// it also reads the escapes \/ and \u of a surrogate pair, which neither
// encoding/json nor protojson writes.
func readJSON(j []byte) (any, error) {
	return newJSONReader().read(j)
}

func newJSONReader() *jsonReader {
	return &jsonReader{numbers: map[json.Number]any{}, orders: map[string][]int{}}
}

// read is readJSON(j), with r's numbers and orders. A document of more
// than wholeJSON bytes it reads (readStream) the objects and arrays of
// the first streamDepth levels token by token and
// decodes each value below whole, converting it at once, so that
// encoding/json's tree of the whole document (about 6 x the JSON, 300 MB
// for Envoy's bootstrap at 10,000 routes) is never held: only the tree
// being built and one subtree (a listener, a cluster) in encoding/json's
// form at a time. TestReadStreamAsTree compares it with readTree.
func (r *jsonReader) read(j []byte) (any, error) {
	if len(j) <= wholeJSON {
		// Small: decoded whole, several times faster than token by
		// token (an Envoy virtual host, a Traefik router).
		return r.readTree(j)
	}
	return r.readStream(j)
}

// readStream is read token by token down to streamDepth.
func (r *jsonReader) readStream(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	v, err := r.stream(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("reading JSON: data after the top-level value (%v)", err)
	}
	return v, nil
}

// streamDepth is how many levels read reads token by token: below it a
// value is decoded whole, and the decoder's buffer holds all its text. At
// eight an Envoy listener's virtual hosts are each decoded alone (listener,
// filter_chains, a chain, filters, a filter, typed_config, route_config,
// virtual_hosts); at four its connection manager was decoded whole, a
// buffer of 56 MB at 10,000 routes (issue 22).
const streamDepth = 8

// wholeJSON is the size up to which read decodes a document whole.
const wholeJSON = 64 << 10

// readTree is read through encoding/json's tree of the whole document.
func (r *jsonReader) readTree(j []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("reading JSON: data after the top-level value (%v)", err)
	}
	return r.convert(v)
}

// stream reads the next value of dec as convert returns it.
func (r *jsonReader) stream(dec *json.Decoder, depth int) (any, error) {
	if depth >= streamDepth {
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		return r.convert(v)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			out := []any{}
			for dec.More() {
				e, err := r.stream(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return out, nil
		case '{':
			var keys []string
			var values []any
			var index map[string]int
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("reading JSON: a key %v", kt)
				}
				v, err := r.stream(dec, depth+1)
				if err != nil {
					return nil, err
				}
				// A key given twice keeps its last value, as
				// encoding/json's map does.
				if index == nil {
					index = map[string]int{}
				}
				if i, dup := index[k]; dup {
					values[i] = v
					continue
				}
				index[k] = len(keys)
				keys = append(keys, k)
				values = append(values, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if len(keys) < 2 {
				out := make(yamlv2.MapSlice, 0, len(keys))
				for i, k := range keys {
					out = append(out, yamlv2.MapItem{Key: k, Value: values[i]})
				}
				return out, nil
			}
			// order sorts the keys it is given: by key, then in
			// yaml.v2's order.
			sorted := slices.Clone(keys)
			order, err := r.order(sorted)
			if err != nil {
				return nil, err
			}
			out := make(yamlv2.MapSlice, len(sorted))
			for i, o := range order {
				k := sorted[o]
				out[i] = yamlv2.MapItem{Key: k, Value: values[index[k]]}
			}
			return out, nil
		}
		return nil, fmt.Errorf("reading JSON: unexpected %v", t)
	case json.Number:
		return r.number(t)
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("reading JSON: unexpected %T", tok)
}

type jsonReader struct {
	numbers map[json.Number]any
	// orders are, by set of keys (sorted, each length-prefixed), the
	// indexes of those sorted keys in yaml.v2's order.
	orders map[string][]int
	keys   []byte
}

// convert returns v, as encoding/json decodes it, as readJSON returns it;
// it empties v's objects on the way, so that each is dropped once
// converted.
func (r *jsonReader) convert(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) < 2 {
			out := make(yamlv2.MapSlice, 0, len(x))
			for k, e := range x {
				ce, err := r.convert(e)
				if err != nil {
					return nil, err
				}
				out = append(out, yamlv2.MapItem{Key: k, Value: ce})
			}
			return out, nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		order, err := r.order(keys)
		if err != nil {
			return nil, err
		}
		out := make(yamlv2.MapSlice, len(keys))
		for i, o := range order {
			k := keys[o]
			cv, err := r.convert(x[k])
			if err != nil {
				return nil, err
			}
			delete(x, k)
			out[i] = yamlv2.MapItem{Key: k, Value: cv}
		}
		return out, nil
	case []any:
		for i, e := range x {
			ce, err := r.convert(e)
			if err != nil {
				return nil, err
			}
			x[i] = ce
		}
		return x, nil
	case json.Number:
		return r.number(x)
	case string, bool, nil:
		return x, nil
	}
	return nil, fmt.Errorf("reading JSON: unexpected %T", v)
}

// order sorts keys (distinct) and returns the indexes of the sorted keys
// in the order yaml.v2 writes the map of them.
func (r *jsonReader) order(keys []string) ([]int, error) {
	slices.Sort(keys)
	r.keys = r.keys[:0]
	for _, k := range keys {
		r.keys = binary.AppendUvarint(r.keys, uint64(len(k)))
		r.keys = append(r.keys, k...)
	}
	if order, ok := r.orders[string(r.keys)]; ok {
		return order, nil
	}
	order, err := v2Order(keys)
	if err != nil {
		return nil, err
	}
	r.orders[string(r.keys)] = order
	return order, nil
}

// v2Order returns the indexes of keys (distinct) in the order yaml.v2
// writes a map of them: what it writes for the keys, numbered, read back
// in order.
func v2Order(keys []string) ([]int, error) {
	numbered := make(map[any]any, len(keys))
	for i, k := range keys {
		numbered[k] = i
	}
	listed, err := yamlv2.Marshal(numbered)
	if err != nil {
		return nil, err
	}
	var read yamlv2.MapSlice
	if err := yamlv2.Unmarshal(listed, &read); err != nil {
		return nil, err
	}
	if len(read) != len(keys) {
		return nil, fmt.Errorf("writing YAML: %d keys read back for %d", len(read), len(keys))
	}
	order := make([]int, len(read))
	for i, it := range read {
		o, ok := it.Value.(int)
		if !ok || o < 0 || o >= len(keys) || keys[o] != it.Key {
			return nil, fmt.Errorf("writing YAML: key %v read back as %v", it.Key, it.Value)
		}
		order[i] = o
	}
	return order, nil
}

// number is n as yaml.v2 reads it as a plain scalar: an integer of up to
// 18 digits is the int smallInt reads (Traefik's priorities are
// thousands of distinct ones); yaml.v2 resolves any other once.
func (r *jsonReader) number(n json.Number) (any, error) {
	if v, ok := smallInt(string(n)); ok {
		return v, nil
	}
	if v, ok := r.numbers[n]; ok {
		return v, nil
	}
	var v any
	if err := yamlv2.Unmarshal([]byte(n), &v); err != nil {
		return nil, fmt.Errorf("reading JSON number %s: %w", n, err)
	}
	r.numbers[n] = v
	return v, nil
}

// Marshal is sigs.k8s.io/yaml's Marshal(v) (encoding/json, then
// JSONToYAML) written as JSONToYAML writes it.
func Marshal(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("error marshaling into JSON: %w", err)
	}
	return JSONToYAML(j)
}

// Step is one step of a path from the document's root: a mapping's key
// (Key), or an element of a list (Item).
type Step struct{ key any }

// Key is the step to the value of the mapping key k.
func Key(k string) Step { return Step{key: k} }

// Item is the step to an element of a list.
func Item() Step { return Step{} }

type chunkWriter struct{ n int }

// wrap returns v inside its ancestors along path, each with only the key
// or the one element that leads to v.
func wrap(path []Step, v any) any {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].key == nil {
			v = []any{v}
		} else {
			v = yamlv2.MapSlice{{Key: path[i].key, Value: v}}
		}
	}
	return v
}

// render returns the YAML of wrap(path, v), writing the large lists and
// mappings in v one element or key at a time. Mappings are MapSlices in
// yaml.v2's order of keys (readJSON's).
func (w *chunkWriter) render(path []Step, v any) ([]byte, error) {
	type chunk struct {
		token string
		path  []Step
		list  []any
		mp    yamlv2.MapSlice
	}
	var chunks []chunk
	// Replace every large list or mapping that is a mapping's value, in
	// mappings reached through mappings only, by a placeholder scalar.
	// The tree is the caller's, written once: it is changed in place.
	var find func(sub []Step, m yamlv2.MapSlice)
	find = func(sub []Step, m yamlv2.MapSlice) {
		for i := range m {
			k := m[i].Key
			switch x := m[i].Value.(type) {
			case yamlv2.MapSlice:
				if len(x) > 1 && nodes(x) > chunkNodes {
					w.n++
					tok := chunkToken + strconv.Itoa(w.n)
					chunks = append(chunks, chunk{token: tok, path: append(sub[:len(sub):len(sub)], Step{key: k}), mp: x})
					m[i].Value = tok
					continue
				}
				find(append(sub[:len(sub):len(sub)], Step{key: k}), x)
			case []any:
				if nodes(x) > chunkNodes {
					w.n++
					tok := chunkToken + strconv.Itoa(w.n)
					chunks = append(chunks, chunk{token: tok, path: append(sub[:len(sub):len(sub)], Step{key: k}), list: x})
					m[i].Value = tok
				}
			}
		}
	}
	if m, ok := v.(yamlv2.MapSlice); ok {
		find(path[:len(path):len(path)], m)
	}
	doc, err := yamlv2.Marshal(wrap(path, v))
	if err != nil {
		return nil, err
	}
	for _, c := range chunks {
		if c.mp != nil {
			body, err := w.renderMap(c.path, c.mp)
			if err != nil {
				return nil, err
			}
			if doc, err = splice(doc, c.token, body); err != nil {
				return nil, err
			}
			continue
		}
		elem := append(c.path[:len(c.path):len(c.path)], Step{})
		prefix, lead, err := placeholder(elem, chunkToken)
		if err != nil {
			return nil, err
		}
		var body bytes.Buffer
		body.WriteString(":\n")
		for i, e := range c.list {
			t, err := w.render(elem, e)
			if err != nil {
				return nil, err
			}
			c.list[i] = nil // written: let it go
			if !bytes.HasPrefix(t, prefix) {
				return nil, fmt.Errorf("writing YAML: an element does not start as its placeholder %q", prefix)
			}
			body.Write(lead)
			body.Write(t[len(prefix):])
		}
		if doc, err = splice(doc, c.token, body.Bytes()); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// placeholder returns what yaml.v2 writes before v (chunkToken, or a
// mapping of it to itself) at path (prefix), and the last line of it
// (lead: the indentation, and "- " for a list element).
func placeholder(path []Step, v any) (prefix, lead []byte, err error) {
	marker, err := yamlv2.Marshal(wrap(path, v))
	if err != nil {
		return nil, nil, err
	}
	at := bytes.Index(marker, []byte(chunkToken))
	if at < 0 {
		return nil, nil, fmt.Errorf("writing YAML: no placeholder in %q", marker)
	}
	prefix = marker[:at]
	return prefix, prefix[bytes.LastIndexByte(prefix, '\n')+1:], nil
}

// splice puts body (":\n" and the lines of a list or mapping) where the
// placeholder token is a mapping's value in doc.
func splice(doc []byte, token string, body []byte) ([]byte, error) {
	old := []byte(": " + token + "\n")
	if bytes.Count(doc, old) != 1 {
		return nil, fmt.Errorf("writing YAML: placeholder %s not found once", token)
	}
	return bytes.Replace(doc, old, body, 1), nil
}

// renderMap returns ":\n" and the lines of the mapping m at path, written
// a few keys at a time (m is in yaml.v2's order of keys): the lines of
// consecutive keys of a block mapping are those of each key alone.
func (w *chunkWriter) renderMap(path []Step, m yamlv2.MapSlice) ([]byte, error) {
	prefix, lead, err := placeholder(path, yamlv2.MapSlice{{Key: chunkToken, Value: chunkToken}})
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	body.WriteString(":\n")
	for start := 0; start < len(m); {
		// Write the keys from start on together, up to batchNodes nodes
		// (at least one key): each yaml.v2 emitter costs a few KB
		// before its first event, and its queue of events, never
		// emptied, grows by doubling only up to 256 events
		// (a node is one to three events).
		end, n := start+1, nodes(m[start].Value)
		for end < len(m) {
			c := nodes(m[end].Value)
			if n+c > batchNodes {
				break
			}
			n += c
			end++
		}
		t, err := w.render(path, m[start:end:end])
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(t, prefix) {
			return nil, fmt.Errorf("writing YAML: key %v does not start as its placeholder %q", m[start].Key, prefix)
		}
		for i := start; i < end; i++ {
			m[i].Value = nil // written: let it go
		}
		body.Write(lead)
		body.Write(t[len(prefix):])
		start = end
	}
	return body.Bytes(), nil
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
		case yamlv2.MapSlice:
			for _, e := range x {
				count(e.Value)
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

// smallInt returns the int of s, a JSON integer of at most 18 digits,
// which is what yaml.v2 resolves it to (strconv.ParseInt with base 0 reads
// such an integer in base 10, and it fits an int), and false for any other
// number.
func smallInt(s string) (int, bool) {
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || int64(int(v)) != v {
		return 0, false
	}
	return int(v), true
}
