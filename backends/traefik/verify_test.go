package traefik

import (
	"reflect"
	"strings"
	"testing"
)

func TestEncodeCheckedRejectsTemplateActions(t *testing.T) {
	d := &dynamicConfig{HTTP: httpConfig{Routers: map[string]*router{
		"r": {EntryPoints: []string{"web"}, Rule: "Path(`/{{.}}`)", Priority: 1, Service: "s"}}}}
	if _, err := encodeChecked(d, &dynamicConfig{}); err == nil || !strings.Contains(err.Error(), "template") {
		t.Errorf("encodeChecked = %v, want a template error", err)
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
