package traefik

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/yamlchunk"
)

// encodeChecked marshals v and decodes the result strictly into fresh (a
// pointer to a zero value of v's type), failing unless the decoded value
// equals v. A value that changed the document's structure cannot pass.
func encodeChecked[T any](v *T, fresh *T) ([]byte, error) {
	// yamlchunk writes yaml.Marshal's bytes without yaml.v2's emitter
	// holding the whole document's events (dynamic.yaml is megabytes).
	data, err := yamlchunk.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding: %w", err)
	}
	// The file provider runs dynamic.yaml through Go's text/template before
	// decoding it: no action may start anywhere.
	if bytes.Contains(data, []byte("{{")) {
		return nil, errors.New("output contains a template action {{")
	}
	if err := yaml.UnmarshalStrict(data, fresh); err != nil {
		return nil, fmt.Errorf("decoding the output back: %w", err)
	}
	if !reflect.DeepEqual(v, fresh) {
		return nil, errors.New("the output does not decode to what was meant")
	}
	return data, nil
}

// parseStatic and parseDynamic decode traefik.yaml and dynamic.yaml
// strictly, for the judges (translate.FileParsed).
func parseStatic(data []byte) (*staticConfig, error) {
	var st staticConfig
	if err := yaml.UnmarshalStrict(data, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

func parseDynamic(data []byte) (*dynamicConfig, error) {
	var d dynamicConfig
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// checkRules parses every router rule in the encoded dynamic configuration
// and compares it with the intended matcher tree.
func checkRules(dynamicYAML []byte, want map[string]expr) error {
	var d dynamicConfig
	if err := yaml.UnmarshalStrict(dynamicYAML, &d); err != nil {
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
