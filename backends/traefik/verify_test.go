package traefik

import (
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
