//gwretry:format
package traefik

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"

	yamlv2 "go.yaml.in/yaml/v2"

	"github.com/gwretry/gwretry/internal/yamlchunk"
)

// encodeChecked marshals v and decodes the result strictly into fresh (a
// pointer to a zero value of v's type), failing unless the decoded value
// equals v. A value that changed the document's structure cannot pass.
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
	if err := decodeStrict(data, fresh); err != nil {
		return nil, fmt.Errorf("decoding the output back: %w", err)
	}
	if !reflect.DeepEqual(v, fresh) {
		return nil, errors.New("the output does not decode to what was meant")
	}
	return data, nil
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

func parseDynamic(data []byte) (*dynamicConfig, error) {
	var d dynamicConfig
	if err := decodeStrict(data, &d); err != nil {
		return nil, err
	}
	return &d, nil
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
