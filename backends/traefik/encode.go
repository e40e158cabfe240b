package traefik

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/gwretry/gwretry/internal/yamlchunk"
)

// encodeDynamic writes dyn as yamlchunk.Marshal does, byte for byte
// (TestEncodeDynamicInPieces), one router, middleware, service or servers
// transport at a time: the JSON of the whole configuration and the YAML
// writer's tree of it were 130 MB at 10,000 routes (issue 22).
// encodeChecked reads the whole file back and compares.
func encodeDynamic(dyn *dynamicConfig) ([]byte, error) {
	h := &dyn.HTTP
	if len(h.Routers)+len(h.Middlewares)+len(h.Services)+len(h.ServersTransports) == 0 {
		return yamlchunk.Marshal(dyn)
	}
	w := yamlchunk.NewWriter()
	out := [][]byte{[]byte("http:\n")}
	var err error
	// httpConfig's JSON names, in yaml.v2's order of keys.
	if out, err = entries(out, w, "middlewares", h.Middlewares); err != nil {
		return nil, err
	}
	if out, err = entries(out, w, "routers", h.Routers); err != nil {
		return nil, err
	}
	if out, err = entries(out, w, "serversTransports", h.ServersTransports); err != nil {
		return nil, err
	}
	if out, err = entries(out, w, "services", h.Services); err != nil {
		return nil, err
	}
	if dyn.TLS != nil {
		tls, err := yamlchunk.Marshal(struct {
			TLS *tlsConfig `json:"tls"`
		}{dyn.TLS})
		if err != nil {
			return nil, err
		}
		out = append(out, tls)
	}
	return bytes.Join(out, nil), nil
}

// entries appends the lines of http's mapping key and its value m (none
// when m is empty: the fields are omitempty).
func entries[V any](out [][]byte, w *yamlchunk.Writer, key string, m map[string]V) ([][]byte, error) {
	if len(m) == 0 {
		return out, nil
	}
	out = append(out, []byte("  "+key+":\n"))
	return w.Entries(out, []string{"http", key}, slices.Collect(maps.Keys(m)), func(k string) ([]byte, error) {
		return json.Marshal(m[k])
	})
}
