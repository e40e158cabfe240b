package envoy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/translate"
)

// TestJSONToYAMLChunked checks that the chunked writer gives JSONToYAML's
// bytes, on small documents and on the bootstrap of a generated corpus
// large enough to be written in chunks several levels deep.
func TestJSONToYAMLChunked(t *testing.T) {
	data, err := corpus.Generate(corpus.Defaults(150))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "corpus.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := translate.Load([]string{p}, nil, translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := translate.Build(in, translate.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := lookup("")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := (&generator{cap: c}).bootstrap(m)
	if err != nil {
		t.Fatal(err)
	}
	big, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(bs)
	if err != nil {
		t.Fatal(err)
	}
	// The bootstrap is written in chunks, not in one piece.
	var obj any
	if err := yamlv2.Unmarshal(big, &obj); err != nil {
		t.Fatal(err)
	}
	w := &chunkWriter{}
	if _, err := w.render(nil, obj); err != nil || w.n < 10 {
		t.Fatalf("%d chunks, %v; want the bootstrap written in chunks", w.n, err)
	}
	t.Logf("%d chunks", w.n)
	long := bytes.Repeat([]byte("word "), 40)
	tests := []struct {
		name string
		json string
	}{
		{"corpus bootstrap", string(big)},
		{"scalars", `{"a": 1, "b": "x", "c": [1, 2], "d": {}}`},
		{"placeholder in the input", `{"a": ["gwretrychunk1"]}`},
		{"long strings folded", `{"a": {"b": [` + repeatJSON(`{"s": "`+string(long)+`", "l": [[1, 2], {"x": "y"}]}`, 3000) + `]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := yaml.JSONToYAML([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonToYAML([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("chunked YAML differs from JSONToYAML (%d and %d bytes)", len(got), len(want))
			}
		})
	}
}

func repeatJSON(item string, n int) string {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(item)
	}
	return b.String()
}
