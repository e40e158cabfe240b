package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// celCase is one case of testdata/cel/*.yaml (input/cel_test.go reads the
// same files): an object and whether the API server with the v1.7.0 CRDs
// of each listed channel accepts it.
type celCase struct {
	Name       string         `json:"name"`
	Source     string         `json:"source"`
	Channels   []string       `json:"channels"`
	Valid      bool           `json:"valid"`
	WantErrors []string       `json:"wantErrors"`
	WantFields []string       `json:"wantFields"`
	Object     map[string]any `json:"object"`
}

func validCELCases(t *testing.T) []celCase {
	t.Helper()
	var out []celCase
	for _, file := range []string{"../../testdata/cel/upstream.yaml", "../../testdata/cel/schema.yaml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Cases []celCase `json:"cases"`
		}
		if err := yaml.UnmarshalStrict(raw, &doc); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, c := range doc.Cases {
			if c.Valid {
				out = append(out, c)
			}
		}
	}
	return out
}

// celWorld is the object of a valid case with what it needs to be
// translated: the Gateways its parentRefs name (listeners for their
// sectionNames and ports, routes from every namespace), the Services its
// backendRefs name, and for a Gateway a route attached to it.
func celWorld(t *testing.T, obj map[string]any) string {
	t.Helper()
	var docs []any
	ns := func(m map[string]any, def string) string {
		if s, _ := m["namespace"].(string); s != "" {
			return s
		}
		return def
	}
	meta, _ := obj["metadata"].(map[string]any)
	objNS := "default"
	if meta != nil {
		objNS = ns(meta, "default")
	}
	spec, _ := obj["spec"].(map[string]any)
	docs = append(docs, obj)
	services := map[[2]string][]int64{}
	addService := func(ref map[string]any, routeNS string) {
		if g, _ := ref["group"].(string); g != "" {
			return
		}
		if k, _ := ref["kind"].(string); k != "" && k != "Service" {
			return
		}
		port, ok := ref["port"].(float64)
		if !ok {
			return
		}
		key := [2]string{ns(ref, routeNS), ref["name"].(string)}
		if !slices.Contains(services[key], int64(port)) {
			services[key] = append(services[key], int64(port))
		}
	}
	switch obj["kind"] {
	case "HTTPRoute":
		if spec == nil {
			spec = map[string]any{}
			obj["spec"] = spec
		}
		refs, _ := spec["parentRefs"].([]any)
		if len(refs) == 0 {
			refs = []any{map[string]any{"name": "gw"}}
			spec["parentRefs"] = refs
		}
		type listener struct {
			name string
			port int64
		}
		gateways := map[[2]string][]listener{}
		var order [][2]string
		for _, r := range refs {
			ref := r.(map[string]any)
			key := [2]string{ns(ref, objNS), ref["name"].(string)}
			if _, ok := gateways[key]; !ok {
				order = append(order, key)
				gateways[key] = nil
			}
			l := listener{name: "http", port: 80}
			if s, _ := ref["sectionName"].(string); s != "" {
				l.name = s
			}
			if p, ok := ref["port"].(float64); ok {
				l.port = int64(p)
				if l.name == "http" {
					l.name = fmt.Sprintf("http-%d", l.port)
				}
			}
			if !slices.Contains(gateways[key], l) {
				gateways[key] = append(gateways[key], l)
			}
		}
		for _, key := range order {
			var ls []any
			perPort := map[int64]int{}
			for _, l := range gateways[key] {
				perPort[l.port]++
			}
			for _, l := range gateways[key] {
				m := map[string]any{"name": l.name, "port": l.port, "protocol": "HTTP",
					"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
				if perPort[l.port] > 1 {
					m["hostname"] = l.name + ".example.com"
				}
				ls = append(ls, m)
			}
			docs = append(docs, map[string]any{
				"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
				"metadata": map[string]any{"name": key[1], "namespace": key[0]},
				"spec":     map[string]any{"gatewayClassName": "gwretry", "listeners": ls},
			})
		}
		rules, _ := spec["rules"].([]any)
		for _, r := range rules {
			rule := r.(map[string]any)
			var filters []any
			if fs, ok := rule["filters"].([]any); ok {
				filters = append(filters, fs...)
			}
			brs, _ := rule["backendRefs"].([]any)
			for _, b := range brs {
				br := b.(map[string]any)
				addService(br, objNS)
				if fs, ok := br["filters"].([]any); ok {
					filters = append(filters, fs...)
				}
			}
			for _, f := range filters {
				if m, ok := f.(map[string]any)["requestMirror"].(map[string]any); ok {
					if br, ok := m["backendRef"].(map[string]any); ok {
						addService(br, objNS)
					}
				}
			}
		}
	case "Gateway":
		docs = append(docs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "route", "namespace": objNS},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": meta["name"]}},
				"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": "svc", "port": 8080}}}},
			},
		})
		services[[2]string{objNS, "svc"}] = []int64{8080}
	default:
		docs = append(docs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "route", "namespace": "default"},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": "gw"}},
				"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": "svc", "port": 8080}}}},
			},
		}, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": "gw", "namespace": "default"},
			"spec":     map[string]any{"gatewayClassName": "gwretry", "listeners": []any{map[string]any{"name": "http", "port": 80, "protocol": "HTTP"}}},
		})
		services[[2]string{"default", "svc"}] = []int64{8080}
	}
	keys := make([][2]string, 0, len(services))
	for k := range services {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	for _, k := range keys {
		var ports []any
		for _, p := range services[k] {
			ports = append(ports, map[string]any{"name": fmt.Sprintf("p%d", p), "port": p})
		}
		docs = append(docs, map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": k[1], "namespace": k[0]},
			"spec":     map[string]any{"ports": ports},
		})
	}
	var buf bytes.Buffer
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.String()
}

// TestValidRoutesTranslate translates every case of testdata/cel that the
// API server accepts (valid: true), in each channel it runs in, for every
// target: each must exit 0, its outputs pass the targets' parse-back and
// judges (translate.Run), and a value one target's format cannot express
// makes that rule unsupported there, never the whole translation.
func TestValidRoutesTranslate(t *testing.T) {
	for _, c := range validCELCases(t) {
		for _, ch := range c.Channels {
			t.Run(ch+"/"+c.Name, func(t *testing.T) {
				in := filepath.Join(t.TempDir(), "in.yaml")
				if err := os.WriteFile(in, []byte(celWorld(t, c.Object)), 0o644); err != nil {
					t.Fatal(err)
				}
				out := t.TempDir()
				args := []string{"translate", in, "--target", "all", "--channel", ch, "--output-dir", out, "--report", "none", "-q", "--assume-reference-grants"}
				var stderr bytes.Buffer
				if code := run(args, nil, &bytes.Buffer{}, &stderr); code != exitOK {
					data, _ := os.ReadFile(in)
					t.Fatalf("exit %d\n%s\ninput:\n%s", code, stderr.String(), data)
				}
			})
		}
	}
}
