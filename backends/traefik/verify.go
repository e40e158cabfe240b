//gwretry:format
package traefik

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"

	yamlv2 "go.yaml.in/yaml/v2"
	sigsjson "sigs.k8s.io/json"

	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/translate"
)

// encodeChecked marshals v and decodes the result strictly into fresh (a
// pointer to a zero value of v's type), failing unless the decoded value
// equals v. A value that changed the document's structure cannot pass.
// For a dynamicConfig it consumes v's http maps: each entry read back is
// compared with the one built as it is read, and that one is removed from
// v; the caller must not use v's http maps after.
func encodeChecked[T any](v *T, fresh *T) ([]byte, error) {
	// yamlchunk writes yaml.Marshal's bytes without yaml.v2's emitter
	// holding the whole document's events (dynamic.yaml is megabytes);
	// dynamic.yaml is written a router, middleware or service at a time.
	var data []byte
	var err error
	if d, ok := any(v).(*dynamicConfig); ok {
		data, err = encodeDynamic(d)
	} else {
		data, err = yamlchunk.Marshal(v)
	}
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	// The file provider runs dynamic.yaml through Go's text/template before
	// decoding it: no action may start anywhere.
	if bytes.Contains(data, []byte("{{")) {
		return nil, errors.New("output contains a template action {{")
	}
	if d, ok := any(fresh).(*dynamicConfig); ok {
		err := dynamicBack(any(v).(*dynamicConfig), d, func(check func(field, key string, got any) error) (*dynamicConfig, error) {
			return decodeDynamicWith(data, check)
		})
		if err != nil {
			return nil, err
		}
		return data, nil
	} else if err := decodeStrict(data, fresh); err != nil {
		return nil, fmt.Errorf("decoding the output back: %w", err)
	}
	if !reflect.DeepEqual(v, fresh) {
		return nil, errors.New("the output does not decode to what was meant")
	}
	return data, nil
}

// dynamicBack decodes the dynamic configuration written for want into
// fresh with decode, comparing each entry read back with the one built as
// it is read and letting the built one go (issue 22: the dynamic
// configuration built and the one read back were 68 and 66 MB at 10,000
// routes, held together): want's http maps are emptied.
func dynamicBack(want, fresh *dynamicConfig, decode func(check func(field, key string, got any) error) (*dynamicConfig, error)) error {
	shape := mapShapes(&want.HTTP)
	back, err := decode(want.HTTP.take)
	if err != nil {
		return fmt.Errorf("decoding the output back: %w", err)
	}
	*fresh = *back
	return want.sameRest(shape, back)
}

// encodeDynamicSpooled is encodeChecked of dyn into a new file of spool
// (translate.Options.Spool), written as it is made and read back from
// there a few KB at a time; it returns the file's path.
func encodeDynamicSpooled(dyn, fresh *dynamicConfig, spool string) (string, error) {
	path, err := translate.WriteSpooled(spool, "dynamic.yaml", func(w io.Writer) error {
		var last byte
		return encodeDynamicTo(dyn, func(b []byte) error {
			// The file provider runs dynamic.yaml through Go's
			// text/template before decoding it: no action may start
			// anywhere, across two pieces either.
			if bytes.Contains(b, []byte("{{")) || last == '{' && len(b) > 0 && b[0] == '{' {
				return errors.New("output contains a template action {{")
			}
			if len(b) > 0 {
				last = b[len(b)-1]
			}
			_, err := w.Write(b)
			return err
		})
	})
	if err != nil {
		return "", fmt.Errorf("encoding: %w", err)
	}
	err = dynamicBack(dyn, fresh, func(check func(field, key string, got any) error) (*dynamicConfig, error) {
		in, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer in.Close()
		r := bufio.NewReaderSize(in, 1<<16)
		return decodeDynamicRead(func(split func([]string) bool, piece func([]string, []int, string, int, []byte) error) ([]byte, error) {
			return yamlchunk.ReaderToJSONNested(r, split, piece)
		}, check)
	})
	if err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// decodeStrict decodes traefik.yaml or dynamic.yaml into v (a pointer to
// staticConfig or dynamicConfig) with yaml.v2's strict decoding: a
// duplicate key, a field that v's type lacks, and a field name in another
// case are errors. Every field of those structs carries a yaml tag equal
// to its json tag (TestYAMLTagsMatchJSON), the names encodeChecked writes
// them under. sigs.k8s.io/yaml's UnmarshalStrict, which it replaces, read
// the same bytes with the same yaml.v2 parser into a generic tree, then
// went through JSON (field names matched in any case): twice the CPU and
// three times the allocations of decoding straight into the structs.
func decodeStrict(data []byte, v any) error {
	return yamlv2.UnmarshalStrict(data, v)
}

// parseStatic and parseDynamic decode traefik.yaml and dynamic.yaml
// strictly, for the judges (translate.FileParsed).
func parseStatic(data []byte) (*staticConfig, error) {
	var st staticConfig
	if err := decodeStrict(data, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func parseDynamic(data []byte) (*dynamicConfig, error) { return decodeDynamic(data) }

// decodeDynamic decodes dynamic.yaml strictly, a router, middleware,
// service or servers transport at a time (issue 22: yaml.v2's node tree
// of the whole file was 90 MB at 10,000 routes): yamlchunk's event reader
// (duplicate keys, aliases, tags and YAML 1.1 booleans refused) gives the
// JSON of each entry of http's maps and of the rest, which
// sigs.k8s.io/json decodes strictly (unknown fields, and field names in
// another case, are errors; the JSON names are the YAML names,
// TestYAMLTagsMatchJSON). TestDecodeDynamicAsWhole compares it with
// decodeStrict.
func decodeDynamic(data []byte) (*dynamicConfig, error) { return decodeDynamicWith(data, nil) }

// decodeDynamicWith is decodeDynamic that also gives each entry of http's
// maps, as it is decoded, to check (unless nil) with its map's name and
// key.
func decodeDynamicWith(data []byte, check func(field, key string, got any) error) (*dynamicConfig, error) {
	return decodeDynamicRead(func(split func([]string) bool, piece func([]string, []int, string, int, []byte) error) ([]byte, error) {
		return yamlchunk.YAMLToJSONNested(data, split, piece)
	}, check)
}

// decodeDynamicRead is decodeDynamicWith, with read reading the YAML as
// JSON in pieces (from memory, or from a file a few KB at a time).
func decodeDynamicRead(read func(split func([]string) bool, piece func([]string, []int, string, int, []byte) error) ([]byte, error), check func(field, key string, got any) error) (*dynamicConfig, error) {
	// Each entry is decoded as it comes, into maps put in place once the
	// rest of the document is decoded.
	var h httpConfig
	split := func(path []string) bool { return len(path) == 2 && path[0] == "http" }
	piece := func(path []string, _ []int, key string, _ int, j []byte) error {
		checkEntry := func(got any) error {
			if check == nil {
				return nil
			}
			return check(path[1], key, got)
		}
		var err error
		switch path[1] {
		case "routers":
			h.Routers, err = decodeEntry(h.Routers, key, j, checkEntry)
		case "middlewares":
			h.Middlewares, err = decodeEntry(h.Middlewares, key, j, checkEntry)
		case "services":
			h.Services, err = decodeEntry(h.Services, key, j, checkEntry)
		case "serversTransports":
			h.ServersTransports, err = decodeEntry(h.ServersTransports, key, j, checkEntry)
		default:
			err = errors.New("unknown field")
		}
		if err != nil {
			return fmt.Errorf("http.%s: %s: %w", path[1], key, err)
		}
		return nil
	}
	j, err := read(split, piece)
	if err != nil {
		return nil, err
	}
	var d dynamicConfig
	if err := unmarshalStrict(j, &d); err != nil {
		return nil, err
	}
	// The document decoded each map that was there, as {}: an entry is
	// in a map the document has.
	for _, m := range []struct {
		name    string
		doc, in int
	}{{"routers", lenIfSet(d.HTTP.Routers), len(h.Routers)}, {"middlewares", lenIfSet(d.HTTP.Middlewares), len(h.Middlewares)},
		{"services", lenIfSet(d.HTTP.Services), len(h.Services)}, {"serversTransports", lenIfSet(d.HTTP.ServersTransports), len(h.ServersTransports)}} {
		if m.in > 0 && m.doc != 0 {
			return nil, fmt.Errorf("http.%s: not a mapping", m.name)
		}
	}
	if h.Routers != nil {
		d.HTTP.Routers = h.Routers
	}
	if h.Middlewares != nil {
		d.HTTP.Middlewares = h.Middlewares
	}
	if h.Services != nil {
		d.HTTP.Services = h.Services
	}
	if h.ServersTransports != nil {
		d.HTTP.ServersTransports = h.ServersTransports
	}
	return &d, nil
}

// lenIfSet is 0 for an empty map the document set, -1 for none, and the
// map's length otherwise.
func lenIfSet[V any](m map[string]V) int {
	if m == nil {
		return -1
	}
	return len(m)
}

// decodeEntry decodes j strictly as the value of key in m, made if nil,
// once check accepts it.
func decodeEntry[V any](m map[string]*V, key string, j []byte, check func(got any) error) (map[string]*V, error) {
	var v *V
	if err := unmarshalStrict(j, &v); err != nil {
		return m, err
	}
	if err := check(v); err != nil {
		return m, err
	}
	if m == nil {
		m = map[string]*V{}
	}
	m[key] = v
	return m, nil
}

// unmarshalStrict is sigs.k8s.io/json's strict decoding, its strict
// errors (unknown or duplicate fields, field names in another case)
// errors too.
func unmarshalStrict(j []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return errors.Join(strict...)
	}
	return nil
}

// checkRules parses every router rule in the encoded dynamic configuration
// and compares it with the intended matcher tree.
func checkRules(dynamicYAML []byte, want map[string]expr) error {
	var d dynamicConfig
	if err := decodeStrict(dynamicYAML, &d); err != nil {
		return fmt.Errorf("decoding the output back: %w", err)
	}
	return checkDecodedRules(&d, want)
}

// checkDecodedRules is checkRules over the configuration encodeChecked
// already decoded back from the output, which it need not decode again.
func checkDecodedRules(d *dynamicConfig, want map[string]expr) error {
	if len(d.HTTP.Routers) != len(want) {
		return fmt.Errorf("%d routers written, %d meant", len(d.HTTP.Routers), len(want))
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		r, ok := d.HTTP.Routers[n]
		if !ok {
			return fmt.Errorf("router %s is missing", n)
		}
		got, err := parseRule(r.Rule)
		if err != nil {
			return fmt.Errorf("router %s: %w", n, err)
		}
		if !reflect.DeepEqual(got, want[n]) {
			return fmt.Errorf("router %s: rule %q does not parse to what was meant", n, r.Rule)
		}
	}
	return nil
}

// take checks that got, the entry key of the map field read back, is the
// entry of h (as built) under the same key, and removes that entry from
// h.
func (h *httpConfig) take(field, key string, got any) error {
	var want any
	var ok bool
	switch field {
	case "routers":
		want, ok = takeEntry(h.Routers, key)
	case "middlewares":
		want, ok = takeEntry(h.Middlewares, key)
	case "services":
		want, ok = takeEntry(h.Services, key)
	case "serversTransports":
		want, ok = takeEntry(h.ServersTransports, key)
	}
	if !ok || !reflect.DeepEqual(got, want) {
		return errors.New("the output does not decode to what was meant")
	}
	return nil
}

// takeEntry removes key from m and returns its value, and whether it was
// there.
func takeEntry[V any](m map[string]*V, key string) (any, bool) {
	v, ok := m[key]
	delete(m, key)
	return v, ok
}

// mapShape is whether each of http's maps is set (nil or not), in the
// order routers, middlewares, services, serversTransports.
type mapShape [4]bool

func mapShapes(h *httpConfig) mapShape {
	return mapShape{h.Routers != nil, h.Middlewares != nil, h.Services != nil, h.ServersTransports != nil}
}

// sameRest reports whether back is d as built, d's http maps having been
// emptied by take as back's entries were read (shape: which of them were
// set before): no entry of d is left unread, the same maps are set, and
// the rest is equal.
func (d *dynamicConfig) sameRest(shape mapShape, back *dynamicConfig) error {
	h := &d.HTTP
	if n := len(h.Routers) + len(h.Middlewares) + len(h.Services) + len(h.ServersTransports); n > 0 {
		return fmt.Errorf("the output does not decode to what was meant: %d entries built are not read back", n)
	}
	if mapShapes(&back.HTTP) != shape {
		return errors.New("the output does not decode to what was meant: another set of http's maps")
	}
	want, got := *d, *back
	want.HTTP, got.HTTP = httpConfig{}, httpConfig{}
	if !reflect.DeepEqual(want, got) {
		return errors.New("the output does not decode to what was meant")
	}
	return nil
}
