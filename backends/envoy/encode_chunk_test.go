package envoy

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/translate"
)

// TestJSONToYAMLChunked checks that the chunked writer gives JSONToYAML's
// bytes on the bootstrap of a generated corpus, large enough to be written
// in chunks several levels deep.
func TestJSONToYAMLChunked(t *testing.T) {
	bs := corpusBootstrap(t, 150)
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

// TestEncodeInPieces checks that encode, which writes a bootstrap of
// static clusters and listeners one at a time, gives the bytes of
// sigs.k8s.io/yaml's JSONToYAML of the whole bootstrap's JSON: on a
// generated corpus, with only clusters or only listeners, with a value
// long enough for yaml.v2 to fold at its column, and with a value holding
// the chunked writer's placeholder.
func TestEncodeInPieces(t *testing.T) {
	full := corpusBootstrap(t, 120)
	sr := full.GetStaticResources()
	odd := proto.Clone(full).(*bootstrapv3.Bootstrap)
	odd.StaticResources.Clusters = odd.StaticResources.Clusters[:2]
	odd.StaticResources.Listeners = odd.StaticResources.Listeners[:1]
	odd.StaticResources.Clusters[0].Name = strings.Repeat("folded words ", 30) + "gwretrychunk1 x"
	odd.StaticResources.Clusters[1].Name = "yes"
	// Two filter chains whose connection managers both have virtual
	// hosts, and a listener whose name has the sentinel in it (written
	// whole).
	two := proto.Clone(sr.Listeners[0]).(*listenerv3.Listener)
	second := proto.Clone(two.FilterChains[0]).(*listenerv3.FilterChain)
	second.Name = "second"
	two.FilterChains = append(two.FilterChains, second)
	named := proto.Clone(sr.Listeners[0]).(*listenerv3.Listener)
	named.Name = vhostSentinel + "0"
	odd.StaticResources.Listeners = append(odd.StaticResources.Listeners, two, named)
	cases := map[string]*bootstrapv3.Bootstrap{
		"corpus":         full,
		"clusters only":  {StaticResources: &bootstrapv3.Bootstrap_StaticResources{Clusters: sr.Clusters}},
		"listeners only": {StaticResources: &bootstrapv3.Bootstrap_StaticResources{Listeners: sr.Listeners}},
		"odd values":     odd,
		"empty":          {StaticResources: &bootstrapv3.Bootstrap_StaticResources{}},
		"nothing":        {},
	}
	for name, bs := range cases {
		t.Run(name, func(t *testing.T) {
			j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(bs)
			if err != nil {
				t.Fatal(err)
			}
			want, err := yaml.JSONToYAML(j)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encode(bs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encode differs from JSONToYAML of the whole (%d and %d bytes)\n%s", len(got), len(want), testmodel.FirstLineDiff(got, want))
			}
			if _, err := verify(bs, got); err != nil {
				t.Error(err)
			}
		})
	}
}

// decodeWhole is decode through the JSON of the whole bootstrap, as it
// was before it read clusters and listeners one at a time.
func decodeWhole(data []byte) (*bootstrapv3.Bootstrap, error) {
	j, err := yamlchunk.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	bs := &bootstrapv3.Bootstrap{}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, bs); err != nil {
		return nil, err
	}
	return bs, nil
}

// TestDecodeInPieces: decode, which reads clusters and listeners one at a
// time, reads what reading the whole bootstrap reads and refuses what it
// refuses.
func TestDecodeInPieces(t *testing.T) {
	bs := corpusBootstrap(t, 40)
	corpusYAML, err := encode(bs)
	if err != nil {
		t.Fatal(err)
	}
	const cluster = "  - connect_timeout: 10s\n    name: a\n    type: STATIC\n"
	// A listener whose connection manager has virtual hosts, read one at
	// a time: vhost is the text of one, typ the filter's type.
	hcmListener := func(typ, vhost string) string {
		return "static_resources:\n  listeners:\n  - filter_chains:\n    - filters:\n      - name: f\n        typed_config:\n" +
			"          '@type': type.googleapis.com/" + typ + "\n          route_config:\n            virtual_hosts:\n" +
			"            - domains:\n              - a\n              name: v\n" + vhost + "          stat_prefix: s\n    name: l\n"
	}
	const hcmType = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
	const listener = "  - address:\n      socket_address:\n        address: 0.0.0.0\n        port_value: 80\n    name: l\n"
	cases := map[string]struct {
		yaml string
		ok   bool
	}{
		"corpus":                          {string(corpusYAML), true},
		"small":                           {"static_resources:\n  clusters:\n" + cluster + cluster + "  listeners:\n" + listener, true},
		"listeners first":                 {"static_resources:\n  listeners:\n" + listener + "  clusters:\n" + cluster, true},
		"empty lists":                     {"static_resources:\n  clusters: []\n  listeners: []\n", true},
		"nothing":                         {"{}\n", true},
		"empty document":                  {"", false},
		"unknown field in cluster":        {"static_resources:\n  clusters:\n  - name: a\n    nonsense: 1\n", false},
		"unknown field at the top":        {"static_resources:\n  clusters:\n" + cluster + "nonsense: 1\n", false},
		"duplicate key in cluster":        {"static_resources:\n  clusters:\n  - name: a\n    name: b\n", false},
		"clusters twice":                  {"static_resources:\n  clusters:\n" + cluster + "  clusters:\n" + cluster, false},
		"scalar element":                  {"static_resources:\n  clusters:\n  - 5\n", false},
		"null element":                    {"static_resources:\n  clusters:\n  - null\n", false},
		"alias in listener":               {"static_resources:\n  listeners:\n  - name: &x l\n    stat_prefix: *x\n", false},
		"clusters not a list":             {"static_resources:\n  clusters: {}\n", false},
		"YAML 1.1 boolean in piece":       {"static_resources:\n  clusters:\n  - name: yes\n", false},
		"second document":                 {"static_resources:\n  clusters:\n" + cluster + "---\n{}\n", false},
		"virtual hosts":                   {hcmListener(hcmType, "            - domains:\n              - b\n              name: w\n"), true},
		"unknown field in vhost":          {hcmListener(hcmType, "            - name: w\n              nonsense: 1\n"), false},
		"duplicate key in vhost":          {hcmListener(hcmType, "            - name: w\n              name: x\n"), false},
		"vhosts not a connection manager": {hcmListener("envoy.extensions.filters.http.router.v3.Router", ""), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decode([]byte(tc.yaml))
			want, werr := decodeWhole([]byte(tc.yaml))
			if (err == nil) != tc.ok || (werr == nil) != tc.ok {
				t.Fatalf("in pieces: %v; whole: %v; want ok %v", err, werr, tc.ok)
			}
			if tc.ok && !proto.Equal(got, want) {
				t.Errorf("in pieces and whole read different bootstraps")
			}
		})
	}
}

// corpusBootstrap is the bootstrap Generate builds for the benchmark
// corpus of n routes.
func corpusBootstrap(t *testing.T, n int) *bootstrapv3.Bootstrap {
	t.Helper()
	c, err := lookup("")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := (&generator{cap: c}).bootstrap(testmodel.Corpus(t, n))
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// TestGenerateSpooled: with translate.Options.Spool, Generate writes
// envoy.yaml into the spool as it makes it, the same bytes as in memory,
// and hands its judges the bootstrap it read back from there.
func TestGenerateSpooled(t *testing.T) {
	m := testmodel.Corpus(t, 60)
	inMemory, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spool := t.TempDir()
	spooled, err := New().Generate(m, translate.Options{Spool: spool})
	if err != nil {
		t.Fatal(err)
	}
	f := spooled.Files[0]
	if f.Data != nil || filepath.Dir(f.Spooled) != spool {
		t.Fatalf("not spooled: %d bytes held, spooled at %q", len(f.Data), f.Spooled)
	}
	got, err := f.Bytes()
	if err != nil || !bytes.Equal(got, inMemory.Files[0].Data) {
		t.Fatalf("spooled envoy.yaml differs from the one in memory (%v)", err)
	}
	bs, err := translate.FileParsed(spooled.Files, OutputPath, func([]byte) (*bootstrapv3.Bootstrap, error) {
		t.Fatal("the spooled file was parsed again")
		return nil, nil
	})
	want, werr := decode(inMemory.Files[0].Data)
	if err != nil || werr != nil || !proto.Equal(bs, want) {
		t.Errorf("the judges' bootstrap is not the one read back (%v, %v)", err, werr)
	}
}
