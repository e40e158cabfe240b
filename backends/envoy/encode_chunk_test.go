package envoy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// TestJSONToYAMLChunked checks that the chunked writer gives JSONToYAML's
// bytes on the bootstrap of a generated corpus, large enough to be written
// in chunks several levels deep.
func TestJSONToYAMLChunked(t *testing.T) {
	data, err := corpus.Generate(corpus.Defaults(150))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "corpus.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := input.Load([]string{p}, nil, translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := resolve.Build(in, translate.ResolveOptions{})
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
	tests := []struct {
		name string
		json string
	}{
		{"corpus bootstrap", string(big)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := yaml.JSONToYAML([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			got, err := yamlchunk.JSONToYAML([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("chunked YAML differs from JSONToYAML (%d and %d bytes)", len(got), len(want))
			}
			// The parse-back reads it as sigs.k8s.io/yaml does.
			back, err := decode(got)
			if err != nil {
				t.Fatal(err)
			}
			j, err := yaml.YAMLToJSONStrict(got)
			if err != nil {
				t.Fatal(err)
			}
			sigs := &bootstrapv3.Bootstrap{}
			if err := protojson.Unmarshal(j, sigs); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(back, bs) || !proto.Equal(sigs, bs) {
				t.Errorf("the bootstrap read back differs (as built: %v, as sigs.k8s.io/yaml reads it: %v)", proto.Equal(back, bs), proto.Equal(back, sigs))
			}
		})
	}
}
