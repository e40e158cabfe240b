package traefik

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestEncodeCheckedRejectsTemplateActions(t *testing.T) {
	d := func() *dynamicConfig {
		return &dynamicConfig{HTTP: httpConfig{Routers: map[string]*router{
			"r": {EntryPoints: []string{"web"}, Rule: "Path(`/{{.}}`)", Priority: 1, Service: "s"}}}}
	}
	if _, err := encodeChecked(d(), &dynamicConfig{}); err == nil || !strings.Contains(err.Error(), "template") {
		t.Errorf("encodeChecked = %v, want a template error", err)
	}
	spool := t.TempDir()
	if _, err := encodeDynamicSpooled(d(), &dynamicConfig{}, spool); err == nil || !strings.Contains(err.Error(), "template") {
		t.Errorf("encodeDynamicSpooled = %v, want a template error", err)
	}
	if left, _ := os.ReadDir(spool); len(left) > 0 {
		t.Errorf("%s left in the spool", left[0].Name())
	}
}

// TestEncodeDynamicSpooled: dynamic.yaml written to a spool as it is
// made has encodeChecked's bytes and reads back as the same
// configuration, and an entry that differs is refused.
func TestEncodeDynamicSpooled(t *testing.T) {
	built := twoRouters
	want, err := encodeChecked(built(), &dynamicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	back := &dynamicConfig{}
	path, err := encodeDynamicSpooled(built(), back, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(want) {
		t.Errorf("spooled %q (%v), want %q", got, err, want)
	}
	if !reflect.DeepEqual(back, built()) {
		t.Errorf("read back %+v", back)
	}
}

func TestEncodeCheckedRoundTrips(t *testing.T) {
	d := &dynamicConfig{HTTP: httpConfig{Routers: map[string]*router{
		"r": {EntryPoints: []string{"web"}, Rule: "Path(`/#a: b`)", Priority: 1, Service: "s"}}}}
	data, err := encodeChecked(d, &dynamicConfig{})
	if err != nil {
		t.Fatalf("encodeChecked: %v", err)
	}
	if err := checkRules(data, map[string]expr{"r": call("Path", "/#a: b")}); err != nil {
		t.Errorf("checkRules: %v", err)
	}
}

func TestCheckRulesDetectsDifferences(t *testing.T) {
	d := &dynamicConfig{HTTP: httpConfig{Routers: map[string]*router{
		"r": {EntryPoints: []string{"web"}, Rule: "Path(`/a`) || PathPrefix(`/a/`)", Priority: 1, Service: "s"}}}}
	data, err := encodeChecked(d, &dynamicConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]expr{
		"other value":   {"r": anyOf(call("Path", "/a"), call("PathPrefix", "/a"))},
		"other op":      {"r": allOf(call("Path", "/a"), call("PathPrefix", "/a/"))},
		"missing":       {"x": call("Path", "/a")},
		"extra routers": {"r": anyOf(call("Path", "/a"), call("PathPrefix", "/a/")), "x": call("Path", "/")},
	} {
		if err := checkRules(data, want); err == nil {
			t.Errorf("%s: checkRules = nil, want an error", name)
		}
	}
	if _, err := encodeChecked(&dynamicConfig{}, &dynamicConfig{}); err != nil {
		t.Errorf("empty config: %v", err)
	}
	if err := checkRules([]byte("http:\n  routers:\n    r:\n      rulez: x\n"), nil); err == nil {
		t.Error("checkRules accepted an unknown field")
	}
}

// TestDecodeStrictRejects: the parse-back and the judges read traefik.yaml
// and dynamic.yaml strictly: duplicate keys, unknown fields and field
// names in another case are errors, at any depth.
func TestDecodeStrictRejects(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		static    bool
	}{
		{"duplicate top-level key", "http: {}\nhttp: {}\n", false},
		{"duplicate field", "http:\n  routers:\n    r:\n      rule: a\n      rule: b\n", false},
		{"duplicate map key", "http:\n  routers:\n    r:\n      rule: a\n    r:\n      rule: b\n", false},
		{"duplicate map key, other quoting", "http:\n  middlewares:\n    m:\n      errors:\n        statusRewrites:\n          \"500\": 1\n          '500': 2\n", false},
		{"unknown top-level field", "http: {}\ntcp: {}\n", false},
		{"unknown nested field", "http:\n  services:\n    s:\n      loadBalancer:\n        servers:\n        - url: http://a\n          weight: 1\n", false},
		{"field in another case", "http:\n  routers:\n    r:\n      Rule: a\n", false},
		{"field in another case (static)", "entrypoints:\n  web:\n    address: :80\n", true},
		{"unknown static field", "global:\n  checkNewVersion: false\n  sendAnonymousUsage: false\n  extra: 1\n", true},
		{"wrong type", "http:\n  routers:\n    r:\n      priority: high\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.static {
				_, err = parseStatic([]byte(tc.doc))
			} else {
				_, err = parseDynamic([]byte(tc.doc))
			}
			if err == nil {
				t.Errorf("accepted:\n%s", tc.doc)
			}
		})
	}
}

// TestYAMLTagsMatchJSON: every field of the configuration structs is read
// back (yaml tag) under the name it is written (json tag), and no struct
// is embedded (encoding/json inlines an embedded struct, yaml.v2 does not).
func TestYAMLTagsMatchJSON(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if f.Anonymous {
				t.Errorf("%s.%s is embedded", ty.Name(), f.Name)
			}
			j, y := f.Tag.Get("json"), f.Tag.Get("yaml")
			if j == "" || j != y {
				t.Errorf("%s.%s: json tag %q, yaml tag %q", ty.Name(), f.Name, j, y)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[staticConfig]())
	walk(reflect.TypeFor[dynamicConfig]())
	if len(seen) < 20 {
		t.Errorf("walked %d structs only", len(seen))
	}
}

// TestEncodeCheckedEntryByEntry: the dynamic configuration read back is
// compared with the one built an entry at a time: another value, an
// entry built and not written, one written and not built, another set of
// maps and another TLS section are each refused, and the entries built
// are let go of as they are compared.
func TestEncodeCheckedEntryByEntry(t *testing.T) {
	built := twoRouters
	data, err := encodeDynamic(built())
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*dynamicConfig){
		"another value":   func(w *dynamicConfig) { w.HTTP.Routers["b"].Priority = 3 },
		"not written":     func(w *dynamicConfig) { w.HTTP.Routers["c"] = &router{Rule: "Path(`/c`)", Service: "s"} },
		"not built":       func(w *dynamicConfig) { delete(w.HTTP.Routers, "b") },
		"another map set": func(w *dynamicConfig) { w.HTTP.Middlewares = map[string]*middleware{} },
		"another TLS":     func(w *dynamicConfig) { w.TLS = &tlsConfig{} },
		"another server":  func(w *dynamicConfig) { w.HTTP.Services["s"].LoadBalancer.Servers[0].URL = "http://b:80" },
	} {
		want := built()
		change(want)
		shape := mapShapes(&want.HTTP)
		back, err := decodeDynamicWith(data, want.HTTP.take)
		if err == nil {
			err = want.sameRest(shape, back)
		}
		if err == nil {
			t.Errorf("%s: read back as what was built", name)
		}
	}
	want := built()
	back := &dynamicConfig{}
	if _, err := encodeChecked(want, back); err != nil {
		t.Fatal(err)
	}
	if len(want.HTTP.Routers)+len(want.HTTP.Services) != 0 {
		t.Errorf("entries built still held after the comparison: %v", want.HTTP)
	}
	if !reflect.DeepEqual(back, built()) {
		t.Errorf("read back %+v", back)
	}
}

// twoRouters is a dynamic configuration of two routers and their service.
func twoRouters() *dynamicConfig {
	return &dynamicConfig{HTTP: httpConfig{
		Routers: map[string]*router{
			"a": {EntryPoints: []string{"web"}, Rule: "Path(`/a`)", Priority: 1, Service: "s"},
			"b": {EntryPoints: []string{"web"}, Rule: "Path(`/b`)", Priority: 2, Service: "s"},
		},
		Services: map[string]*service{"s": {LoadBalancer: &loadBalancer{Servers: []server{{URL: "http://a:80"}}}}},
	}}
}
