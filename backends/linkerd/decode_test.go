package linkerd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/internal/hostile"
	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/translate"
)

// TestYAMLToJSONAsSigsYAML: for every document Generate writes (the
// benchmark corpus, and header values that YAML or another format would
// read as something else), decode's yamlchunk.YAMLToJSONStrict gives the
// same JSON value as sigs.k8s.io/yaml's YAMLToJSONStrict, which it
// replaced; and each document is what sigs.k8s.io/yaml writes for it.
func TestYAMLToJSONAsSigsYAML(t *testing.T) {
	var rules []string
	for i, v := range hostile.HeaderValues() {
		q := strconv.Quote(v)
		rules = append(rules, rule(fmt.Sprintf("/h%d", i), fmt.Sprintf(
			"    filters:\n    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-s, value: %s}], add: [{name: x-a, value: %s}]}}\n"+
				"    - {type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: x-r, value: %s}]}}\n", q, q, q)))
	}
	c, err := corpus.Generate(corpus.Defaults(60))
	if err != nil {
		t.Fatal(err)
	}
	hostileInput := base
	for i := 0; i < len(rules); i += 16 {
		hostileInput += gammaRoute(fmt.Sprintf("h%d", i), rules[i:min(i+16, len(rules))]...)
	}
	inputs := map[string]string{
		"hostile header values": hostileInput,
		"corpus":                string(c),
	}
	for name, input := range inputs {
		t.Run(name, func(t *testing.T) {
			_, m := build(t, input)
			out, err := New().Generate(m, translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			data := out.Files[0].Data
			docs := bytes.Split(data, []byte("\n---\n"))
			if len(docs) < 2 && name == "corpus" {
				t.Fatalf("%d documents", len(docs))
			}
			for i, doc := range docs {
				got, err := yamlchunk.YAMLToJSONStrict(doc)
				if err != nil {
					t.Fatalf("document %d: %v", i+1, err)
				}
				want, err := yaml.YAMLToJSONStrict(doc)
				if err != nil {
					t.Fatalf("document %d: sigs.k8s.io/yaml: %v", i+1, err)
				}
				var g, w any
				if err := json.Unmarshal(got, &g); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(want, &w); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("document %d:\n%s\nreads as\n%s\nsigs.k8s.io/yaml reads\n%s", i+1, doc, got, want)
				}
				// The writer's bytes are sigs.k8s.io/yaml's.
				again, err := yaml.JSONToYAML(want)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(bytes.TrimSuffix(again, []byte("\n")), bytes.TrimSuffix(doc, []byte("\n"))) {
					t.Fatalf("document %d:\n%s\nsigs.k8s.io/yaml writes\n%s", i+1, doc, again)
				}
			}
			if name != "hostile header values" {
				return
			}
			// The values reached the output, and read back as written.
			routes, err := decode(data)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, rt := range routes {
				for _, r := range rt.Spec.Rules {
					for _, f := range r.Filters {
						for _, hf := range []*gwv1.HTTPHeaderFilter{f.RequestHeaderModifier, f.ResponseHeaderModifier} {
							if hf == nil {
								continue
							}
							for _, h := range append(hf.Set, hf.Add...) {
								seen[h.Value]++
							}
						}
					}
				}
			}
			for _, v := range hostile.HeaderValues() {
				if seen[v] != 3 {
					t.Errorf("header value %q read back %d times, want 3", v, seen[v])
				}
			}
		})
	}
}
