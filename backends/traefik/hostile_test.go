package traefik

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/translate"
)

// hostile are values that break one config language or another: YAML and
// nginx delimiters, a comment start, backslashes, control characters, a
// backtick (Traefik rule strings), a template action (the file provider
// runs dynamic.yaml through text/template) and a 10 KB value.
func hostile() []string {
	return []string{";", "{", "}", "#x", "x\\", "a\\b", "a\nb", "a\x00b", "a`b", "{{.}}", "a}}b",
		"a b", "a\"b", strings.Repeat("a", 10<<10)}
}

// hostileRegex are hostile values for regular-expression fields. A lone
// brace is a valid RE2 literal or quantifier ([0-9]{3}) and harmless inside
// a backtick string, so it is tested inside a template action instead.
func hostileRegex() []string {
	var out []string
	for _, s := range hostile() {
		if s != "{" && s != "}" {
			out = append(out, s)
		}
	}
	return append(out, "a{{b", "x`) || Path(`/")
}

// TestHostileValuesAreRejected puts each hostile value in each Model field
// that reaches a Traefik file; Generate must fail and write nothing.
func TestHostileValuesAreRejected(t *testing.T) {
	fields := []struct {
		name  string
		regex bool
		set   func(m *translate.Model, s string)
		// kind is the value kind of a field of the router rule, whose
		// backtick strings carry more than the other fields hold.
		kind string
	}{
		{"listener name", false, func(m *translate.Model, s string) { m.Listeners[0].Name = s }, ""},
		{"listener address", false, func(m *translate.Model, s string) { m.Listeners[0].Address = s }, ""},
		{"virtual host name", false, func(m *translate.Model, s string) { m.Listeners[0].VirtualHosts[0].Name = s }, ""},
		{"hostname", false, func(m *translate.Model, s string) { m.Listeners[0].VirtualHosts[0].Hostname = s }, ""},
		{"wildcard hostname", false, func(m *translate.Model, s string) { m.Listeners[0].VirtualHosts[1].Hostname = "*." + s }, ""},
		{"exact path", false, func(m *translate.Model, s string) { route(m, 0, 0).Match.Path = "/" + s }, translate.KindPath},
		{"prefix path", false, func(m *translate.Model, s string) { route(m, 0, 1).Match.Path = "/" + s }, translate.KindPath},
		{"regex path", true, func(m *translate.Model, s string) { route(m, 1, 0).Match.Path = s }, translate.KindRegex},
		{"method", false, func(m *translate.Model, s string) { route(m, 0, 0).Match.Method = s }, ""},
		{"header name", false, func(m *translate.Model, s string) { route(m, 0, 1).Match.Headers[0].Name = s }, translate.KindHeaderName},
		{"header value", false, func(m *translate.Model, s string) { route(m, 0, 1).Match.Headers[0].Value = s }, translate.KindHeaderValue},
		{"header regex", true, func(m *translate.Model, s string) { route(m, 0, 1).Match.Headers[1].Value = s }, translate.KindRegex},
		{"query name", false, func(m *translate.Model, s string) { route(m, 1, 0).Match.Query[0].Name = s }, translate.KindQueryName},
		{"query value", false, func(m *translate.Model, s string) { route(m, 1, 0).Match.Query[0].Value = s }, translate.KindHeaderValue},
		{"query regex", true, func(m *translate.Model, s string) { route(m, 1, 0).Match.Query[1].Value = s }, translate.KindRegex},
		{"rule name", false, func(m *translate.Model, s string) { m.Rules[0].Name = s }, ""},
		{"backend name", false, func(m *translate.Model, s string) { m.Rules[0].Backends[0].Name = s }, ""},
		{"endpoint host", false, func(m *translate.Model, s string) { m.Rules[0].Backends[0].Endpoints[0].Host = s }, ""},
	}
	for _, f := range fields {
		values := hostile()
		if f.regex {
			values = hostileRegex()
		}
		for _, s := range values {
			if f.kind != "" && translate.CheckValue(f.kind, valueOf(f.kind, s)) == nil && New().Expresses(f.kind, valueOf(f.kind, s)) {
				continue // carried: TestRuleCarriesQuotes
			}
			for _, row := range versionTable() {
				m := richModel()
				f.set(m, s)
				out, err := New().Generate(m, translate.Options{Version: row.Version})
				if err == nil {
					t.Errorf("%s %q (Traefik %s): Generate succeeded:\n%s", f.name, short(s), row.Version, out.Files[1].Data)
				} else if out != nil {
					t.Errorf("%s %q: output returned with an error", f.name, short(s))
				}
			}
		}
	}
}

// valueOf is the value a field of kind gets for hostile value s (paths
// start with '/').
func valueOf(kind, s string) string {
	if kind == translate.KindPath {
		return "/" + s
	}
	return s
}

// TestRuleCarriesQuotes: quotes, backslashes, spaces, ';' and '#' are
// values the Gateway API accepts that a backtick string of the router rule
// holds as they are; Traefik writes them and reads them back unchanged.
func TestRuleCarriesQuotes(t *testing.T) {
	m := richModel()
	route(m, 0, 0).Match.Path = "/a'b;c"
	route(m, 0, 1).Match.Headers[0].Value = `a b"c'd\e;#{}`
	route(m, 0, 1).Match.Headers[1].Value = `\d+`
	route(m, 1, 0).Match.Path = `/x/\w+'`
	out, err := New().Generate(m, translate.Options{Version: "3.6"})
	if err != nil {
		t.Fatal(err)
	}
	var dyn []byte
	for _, f := range out.Files {
		if strings.HasSuffix(f.Path, "dynamic.yaml") {
			dyn = f.Data
		}
	}
	var cfg dynamicConfig
	if err := yaml.UnmarshalStrict(dyn, &cfg); err != nil {
		t.Fatal(err)
	}
	args := map[string]bool{}
	var walk func(x expr)
	walk = func(x expr) {
		for _, a := range x.Args {
			args[a] = true
		}
		for _, s := range x.Subs {
			walk(s)
		}
	}
	for _, r := range cfg.HTTP.Routers {
		x, err := parseRule(r.Rule)
		if err != nil {
			t.Fatal(err)
		}
		walk(x)
	}
	for _, want := range []string{"/a'b;c", `a b"c'd\e;#{}`, `^(?:\d+)$`, `^(?:/x/\w+')$`} {
		if !args[want] {
			t.Errorf("no router rule holds %q", want)
		}
	}
}

func route(m *translate.Model, vh, i int) *translate.RouteMatch {
	return m.Listeners[0].VirtualHosts[vh].Routes[i]
}

// TestInconsistentModelsAreRejected covers models Check alone accepts but
// that would produce a wrong or ambiguous configuration.
func TestInconsistentModelsAreRejected(t *testing.T) {
	tests := []struct {
		name string
		edit func(m *translate.Model)
	}{
		{"route of a rule not in the model", func(m *translate.Model) {
			route(m, 0, 0).Rule = rule("stray", 0, nil, translate.Timeouts{})
		}},
		{"rule listed twice", func(m *translate.Model) { m.Rules = append(m.Rules, m.Rules[0]) }},
		{"two rules with one name", func(m *translate.Model) { m.Rules[1].Name = m.Rules[0].Name }},
		{"two listeners with one name", func(m *translate.Model) { m.Listeners[1].Name = m.Listeners[0].Name }},
		{"negative attempts", func(m *translate.Model) { m.Rules[0].Retry.Attempts = -1 }},
		{"code out of range", func(m *translate.Model) { m.Rules[0].Retry.Codes = []int{200} }},
		{"negative backoff", func(m *translate.Model) {
			m.Rules[0].Retry.Backoff = &translate.Duration{Text: "-1s", Value: -1}
		}},
		{"negative backendRequest", func(m *translate.Model) {
			m.Rules[0].Timeouts.BackendRequest = &translate.Duration{Text: "-1s", Value: -1}
		}},
		{"unknown path type", func(m *translate.Model) { route(m, 0, 0).Match.PathType = "Glob" }},
	}
	for _, tt := range tests {
		for _, row := range versionTable() {
			m := richModel()
			tt.edit(m)
			if _, err := New().Generate(m, translate.Options{Version: row.Version}); err == nil {
				t.Errorf("%s (Traefik %s): Generate succeeded", tt.name, row.Version)
			}
		}
	}
}
