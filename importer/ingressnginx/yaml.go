package ingressnginx

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// YAML writes the Gateways, then the HTTPRoutes, as one multi-document
// YAML stream, without status or empty metadata fields.
func (r *Result) YAML() ([]byte, error) {
	var buf bytes.Buffer
	var objs []any
	for _, g := range r.Gateways {
		objs = append(objs, g)
	}
	for _, rt := range r.Routes {
		objs = append(objs, rt)
	}
	for i, o := range objs {
		doc, err := document(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(doc)
	}
	return buf.Bytes(), nil
}

// document marshals one object through its JSON form, dropping status and
// metadata.creationTimestamp, which the typed structs always write.
func document(o any) ([]byte, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("ingressnginx: %w", err)
	}
	return out, nil
}
