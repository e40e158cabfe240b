package traefik

import (
	"bytes"
	"maps"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestEncodeDynamicInPieces: encodeDynamic, which writes dynamic.yaml a
// router, middleware, service or servers transport at a time, gives
// sigs.k8s.io/yaml's Marshal bytes of the whole configuration: on a
// generated corpus, and on one with every map and the tls section, keys
// that yaml.v2 orders by their numbers, a value long enough to fold, and
// the chunked writer's placeholder in a key and a value.
func TestEncodeDynamicInPieces(t *testing.T) {
	m := testmodel.Corpus(t, 150)
	sup, err := lookupVersion("")
	if err != nil {
		t.Fatal(err)
	}
	built, _, err := buildDynamic(m, sup, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	odd := &dynamicConfig{
		HTTP: httpConfig{
			Routers: map[string]*router{
				"r-10": {EntryPoints: []string{"web"}, Rule: "Path(`/" + strings.Repeat("folded words ", 20) + "`)", Service: "s"},
				"r-9":  {EntryPoints: []string{"web"}, Rule: "Path(`/gwretrychunk1`)", Service: "s", Priority: 3},
				"r-9a": {EntryPoints: []string{"web"}, Rule: "Path(`/`)", Service: "s", TLS: &routerTLS{}},
			},
			Middlewares: map[string]*middleware{
				"gwretrychunk2": {Retry: &retry{Attempts: 2, Status: []string{"500-599"}}},
				"yes":           {Retry: &retry{Attempts: 1}},
			},
			Services: map[string]*service{
				"s": {LoadBalancer: &loadBalancer{Servers: []server{{URL: "http://a:80"}, {URL: "http://b:80"}}, ServersTransport: "t"}},
			},
			ServersTransports: map[string]*serversTransport{
				"t": {MaxIdleConnsPerHost: -1, ForwardingTimeouts: &forwardingTimeouts{DialTimeout: "5s"}},
			},
		},
		TLS: &tlsConfig{Certificates: []*certAndStores{{CertFile: "/c.pem", KeyFile: "/k.pem"}},
			Stores: map[string]*tlsStore{defaultStore: {DefaultCertificate: &certAndStores{CertFile: "/c.pem", KeyFile: "/k.pem"}}}},
	}
	cases := map[string]*dynamicConfig{
		"corpus":       built,
		"odd values":   odd,
		"routers only": {HTTP: httpConfig{Routers: odd.HTTP.Routers}},
		"empty":        {},
	}
	for name, dyn := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := yaml.Marshal(dyn)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeDynamic(dyn)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encodeDynamic differs from sigs.k8s.io/yaml's Marshal (%d and %d bytes)\n%s", len(got), len(want), testmodel.FirstLineDiff(got, want))
			}
			if _, err := encodeChecked(withOwnMaps(dyn), &dynamicConfig{}); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestDecodeDynamicAsWhole: decodeDynamic, which decodes dynamic.yaml an
// entry of http's maps at a time, reads what yaml.v2's strict decoding of
// the whole file reads, and refuses what it refuses.
func TestDecodeDynamicAsWhole(t *testing.T) {
	const router = "    r:\n      entryPoints:\n      - web\n      priority: 1\n      rule: Path(`/`)\n      service: s\n"
	const service = "    s:\n      loadBalancer:\n        servers:\n        - url: http://a:80\n"
	cases := map[string]struct {
		yaml string
		ok   bool
	}{
		"routers and services":     {"http:\n  routers:\n" + router + "  services:\n" + service, true},
		"tls":                      {"http:\n  routers:\n" + router + "tls:\n  options:\n    default:\n      sniStrict: true\n", true},
		"empty maps":               {"http:\n  routers: {}\n", true},
		"nothing under http":       {"http: {}\n", true},
		"unknown field in router":  {"http:\n  routers:\n    r:\n      nonsense: 1\n", false},
		"field in another case":    {"http:\n  routers:\n    r:\n      Service: s\n", false},
		"unknown map under http":   {"http:\n  tcp:\n    r: {}\n", false},
		"unknown field at the top": {"http: {}\nnonsense: 1\n", false},
		"router twice":             {"http:\n  routers:\n" + router + router, false},
		"routers twice":            {"http:\n  routers:\n" + router + "  routers:\n" + router, false},
		"routers a list":           {"http:\n  routers:\n  - a\n", false},
		"routers a scalar":         {"http:\n  routers: a\n", false},
		"priority a string":        {"http:\n  routers:\n    r:\n      priority: x\n", false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decodeDynamic([]byte(tc.yaml))
			var want dynamicConfig
			werr := decodeStrict([]byte(tc.yaml), &want)
			if (err == nil) != tc.ok || (werr == nil) != tc.ok {
				t.Fatalf("in pieces: %v; whole: %v; want ok %v", err, werr, tc.ok)
			}
			if tc.ok && !reflect.DeepEqual(got, &want) {
				t.Errorf("in pieces %+v, whole %+v", got.HTTP, want.HTTP)
			}
		})
	}
}

// withOwnMaps returns a copy of d whose http maps are its own:
// encodeChecked empties them.
func withOwnMaps(d *dynamicConfig) *dynamicConfig {
	c := *d
	c.HTTP = httpConfig{Routers: maps.Clone(d.HTTP.Routers), Middlewares: maps.Clone(d.HTTP.Middlewares),
		Services: maps.Clone(d.HTTP.Services), ServersTransports: maps.Clone(d.HTTP.ServersTransports)}
	return &c
}

// TestGenerateSpooled: with translate.Options.Spool, Generate writes
// dynamic.yaml into the spool as it makes it, the same bytes as in
// memory, and its judges read the configuration it read back from there.
func TestGenerateSpooled(t *testing.T) {
	m := testmodel.Corpus(t, 60)
	inMemory, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spooled, err := New().Generate(m, translate.Options{Spool: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range spooled.Files {
		got, err := f.Bytes()
		if err != nil || !bytes.Equal(got, inMemory.Files[i].Data) {
			t.Errorf("%s differs from the one in memory (%v)", f.Path, err)
		}
	}
	if f := spooled.Files[1]; f.Path != dynamicPath || f.Spooled == "" || f.Data != nil {
		t.Fatalf("dynamic.yaml not spooled: %+v", f.Path)
	}
	d, err := translate.FileParsed(spooled.Files, dynamicPath, func([]byte) (*dynamicConfig, error) {
		t.Fatal("the spooled file was parsed again")
		return nil, nil
	})
	want, werr := parseDynamic(inMemory.Files[1].Data)
	if err != nil || werr != nil || !reflect.DeepEqual(d, want) {
		t.Errorf("the judges' configuration is not the one read back (%v, %v)", err, werr)
	}
	obsMemory, err1 := New().Observe(m, translate.Options{}, inMemory.Files)
	obsSpooled, err2 := New().Observe(m, translate.Options{}, spooled.Files)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(obsMemory, obsSpooled) {
		t.Errorf("the judge reads the spooled files otherwise (%v, %v)", err1, err2)
	}
}
