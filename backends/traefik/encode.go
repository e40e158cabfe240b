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
	var out [][]byte
	if err := encodeDynamicTo(dyn, func(b []byte) error { out = append(out, b); return nil }); err != nil {
		return nil, err
	}
	return bytes.Join(out, nil), nil
}

// encodeDynamicTo is encodeDynamic giving the file to emit a piece at a
// time, in order (Generate writes them to disk under
// translate.Options.Spool).
func encodeDynamicTo(dyn *dynamicConfig, emit func([]byte) error) error {
	h := &dyn.HTTP
	if len(h.Routers)+len(h.Middlewares)+len(h.Services)+len(h.ServersTransports) == 0 {
		y, err := yamlchunk.Marshal(dyn)
		if err != nil {
			return err
		}
		return emit(y)
	}
	w := yamlchunk.NewWriter()
	if err := emit([]byte("http:\n")); err != nil {
		return err
	}
	// httpConfig's JSON names, in yaml.v2's order of keys.
	if err := entries(emit, w, "middlewares", h.Middlewares); err != nil {
		return err
	}
	if err := entries(emit, w, "routers", h.Routers); err != nil {
		return err
	}
	if err := entries(emit, w, "serversTransports", h.ServersTransports); err != nil {
		return err
	}
	if err := entries(emit, w, "services", h.Services); err != nil {
		return err
	}
	if dyn.TLS != nil {
		tls, err := yamlchunk.Marshal(struct {
			TLS *tlsConfig `json:"tls"`
		}{dyn.TLS})
		if err != nil {
			return err
		}
		return emit(tls)
	}
	return nil
}

// entries emits the lines of http's mapping key and its value m (none
// when m is empty: the fields are omitempty).
func entries[V any](emit func([]byte) error, w *yamlchunk.Writer, key string, m map[string]V) error {
	if len(m) == 0 {
		return nil
	}
	if err := emit([]byte("  " + key + ":\n")); err != nil {
		return err
	}
	return w.EntriesTo(emit, []string{"http", key}, slices.Collect(maps.Keys(m)), func(k string) ([]byte, error) {
		return json.Marshal(m[k])
	})
}
