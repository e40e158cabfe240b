package nginx

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

func hostileValues() map[string]string {
	return map[string]string{
		"semicolon":          "a; pwned on",
		"open brace":         "a{",
		"close brace":        "}",
		"leading hash":       "#x",
		"trailing backslash": `x\`,
		"inner backslash":    `a\'"b`,
		"newline":            "a\nb",
		"NUL":                "a\x00b",
		"backtick":           "a`b",
		"10 KB":              strings.Repeat("a", 10*1024),
	}
}

// hostileFields sets one Model field that reaches nginx.conf to v.
func hostileFields() map[string]func(m *translate.Model, v string) {
	route := func(m *translate.Model) *translate.RouteMatch { return m.Listeners[0].VirtualHosts[0].Routes[0] }
	return map[string]func(m *translate.Model, v string){
		"listener name":    func(m *translate.Model, v string) { m.Listeners[0].Name = v },
		"listener address": func(m *translate.Model, v string) { m.Listeners[0].Address = v },
		"vhost name":       func(m *translate.Model, v string) { m.Listeners[0].VirtualHosts[0].Name = v },
		"hostname":         func(m *translate.Model, v string) { m.Listeners[0].VirtualHosts[0].Hostname = v },
		"prefix path":      func(m *translate.Model, v string) { route(m).Match.Path = "/" + v },
		"exact path": func(m *translate.Model, v string) {
			route(m).Match = translate.Match{PathType: translate.PathExact, Path: "/" + v}
		},
		"regex path": func(m *translate.Model, v string) {
			route(m).Match = translate.Match{PathType: translate.PathRegex, Path: v}
		},
		"method": func(m *translate.Model, v string) { route(m).Match.Method = v },
		"header name": func(m *translate.Model, v string) {
			route(m).Match.Headers = []translate.ValueMatch{{Type: translate.StringExact, Name: v, Value: "x"}}
		},
		"header exact value": func(m *translate.Model, v string) {
			route(m).Match.Headers = []translate.ValueMatch{{Type: translate.StringExact, Name: "x", Value: v}}
		},
		"header regex value": func(m *translate.Model, v string) {
			route(m).Match.Headers = []translate.ValueMatch{{Type: translate.StringRegex, Name: "x", Value: v}}
		},
		"query name": func(m *translate.Model, v string) {
			route(m).Match.Query = []translate.ValueMatch{{Type: translate.StringExact, Name: v, Value: "x"}}
		},
		"query value": func(m *translate.Model, v string) {
			route(m).Match.Query = []translate.ValueMatch{{Type: translate.StringExact, Name: "x", Value: v}}
		},
		"query regex": func(m *translate.Model, v string) {
			route(m).Match.Query = []translate.ValueMatch{{Type: translate.StringRegex, Name: "x", Value: v}}
		},
		"rule name":     func(m *translate.Model, v string) { m.Rules[0].Name = v },
		"backend name":  func(m *translate.Model, v string) { m.Rules[0].Backends[0].Name = v },
		"endpoint host": func(m *translate.Model, v string) { m.Rules[0].Backends[0].Endpoints[0].Host = v },
	}
}

// matchKinds are the value kinds of the hostile fields that are a match's
// values, which nginx writes quoted (Expresses): a hostile value of
// another format that nginx reads as it is gets written.
var matchKinds = map[string]string{"prefix path": translate.KindPath, "exact path": translate.KindPath,
	"regex path": translate.KindRegex, "header exact value": translate.KindHeaderValue, "header regex value": translate.KindRegex,
	"query value": translate.KindHeaderValue, "query regex": translate.KindRegex, "query name": translate.KindQueryName}

func TestGenerateRejectsHostileValues(t *testing.T) {
	for field, set := range hostileFields() {
		for name, v := range hostileValues() {
			if kind, ok := matchKinds[field]; ok {
				value := v
				if kind == translate.KindPath {
					value = "/" + v
				}
				if translate.CheckValue(kind, value) == nil && New().Expresses(kind, value) {
					continue // carried: TestMatchValuesQuoted
				}
			}
			t.Run(field+"/"+name, func(t *testing.T) {
				m := model("", []*translate.Rule{rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})})
				set(m, v)
				out, err := New().Generate(m, translate.Options{})
				if err == nil {
					t.Fatalf("Generate accepted %q in %s:\n%s", v, field, out.Files[0].Data)
				}
				if out != nil {
					t.Fatalf("Generate returned output with error %v", err)
				}
			})
		}
	}
}

func TestCheckArgs(t *testing.T) {
	for name, v := range hostileValues() {
		if name == "semicolon" || name == "open brace" || name == "close brace" || name == "backtick" {
			continue // crossplane quotes these safely; the allowlist rejects them earlier
		}
		ds := crossplane.Directives{block("http", nil, crossplane.Directives{directive("server_name", v)})}
		if err := checkArgs(ds); err == nil {
			t.Errorf("%s: checkArgs accepted %q", name, v)
		}
	}
	if err := checkArgs(crossplane.Directives{directive("server_name", "", "a.example.com", "$host")}); err != nil {
		t.Errorf("checkArgs rejected safe values: %v", err)
	}
}

// TestRenderDetectsBreakOut bypasses the allowlists: the parse-back must
// still catch what nginx-go-crossplane writes wrongly.
func TestRenderDetectsBreakOut(t *testing.T) {
	v, _ := lookupVersion("")
	for _, args := range [][]string{
		{`x\`, "; pwned_directive on; #"},
		{"#comment"},
		{`a\'"b`},
	} {
		ds := crossplane.Directives{block("events", nil, crossplane.Directives{}), block("http", nil, crossplane.Directives{
			block("server", nil, crossplane.Directives{directive("server_name", args...)}),
		})}
		if conf, err := render(ds, v); err == nil {
			t.Errorf("render(%q) succeeded:\n%s", args, conf)
		}
	}
	ok := crossplane.Directives{block("events", nil, crossplane.Directives{}), block("http", nil, crossplane.Directives{
		block("server", nil, crossplane.Directives{directive("server_name", "", "a;b", "{", "}")}),
	})}
	if _, err := render(ok, v); err != nil {
		t.Errorf("render of safely quoted values failed: %v", err)
	}
}

// TestMatchValuesQuoted: match values the Gateway API accepts that hold
// quotes, spaces, ';', braces, '#', backslashes and tabs are written (crossplane quotes them; valueLiteral and nginxRegex keep
// every backslash one nginx's tokenizer passes on), and each map key reads
// back as a regular expression that matches what the match means. e2e
// TestQuotedValuesLive proves it on the real nginx.
func TestMatchValuesQuoted(t *testing.T) {
	exact := `a "b' \c^ {d};#` + "\t"
	tests := []struct {
		m             translate.Match
		match, reject string
	}{
		{translate.Match{PathType: translate.PathExact, Path: "/a'b;c"}, "/a'b;c", "/a'b"},
		{translate.Match{PathType: translate.PathPrefix, Path: "/", Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "x", Value: exact}}}, exact, exact + "x"},
		{translate.Match{PathType: translate.PathPrefix, Path: "/", Headers: []translate.ValueMatch{{Type: translate.StringRegex, Name: "x", Value: `\"\d+\\\'\t`}}}, "\"42\\'\t", `"42'`},
		{translate.Match{PathType: translate.PathRegex, Path: `/r/\d+`}, "/r/42", "/r/x"},
	}
	for _, tt := range tests {
		m := model("", []*translate.Rule{rule(0, nil, translate.Timeouts{})}, tt.m)
		out, err := New().Generate(m, translate.Options{})
		if err != nil {
			t.Fatalf("%+v: %v", tt.m, err)
		}
		v, _ := lookupVersion("")
		_, http, err := parseConfig(out.Files[0].Data, LayoutFull, v)
		if err != nil {
			t.Fatal(err)
		}
		matched, rejected := false, false
		var walk func(ds crossplane.Directives)
		walk = func(ds crossplane.Directives) {
			for _, d := range ds {
				if re, ok := strings.CutPrefix(d.Directive, "~"); ok && d.Directive != "~" {
					c, err := regexp.Compile(re)
					if err != nil {
						t.Errorf("map key %q: %v", d.Directive, err)
						continue
					}
					matched = matched || c.MatchString(tt.match)
					rejected = rejected || c.MatchString(tt.reject)
				}
				walk(d.Block)
			}
		}
		walk(http)
		if !matched || rejected {
			t.Errorf("%+v: a map key matches %q: %v, %q: %v", tt.m, tt.match, matched, tt.reject, rejected)
		}
	}
}

// TestQueryNamesExpressed: nginx matches a query name on the raw $args
// with valueLiteral, any name but one with '&' (which splits $args) or
// '#' (never in a raw query); live: e2e TestQuotedValuesLive.
func TestQueryNamesExpressed(t *testing.T) {
	for s, want := range map[string]bool{"x!$'*^|~": true, "a`b": true, "a%b": true, "a+b": true, "a&b": false, "a#b": false} {
		if got := New().Expresses(translate.KindQueryName, s); got != want {
			t.Errorf("Expresses(query name %q) = %v, want %v", s, got, want)
		}
	}
}

// TestShapesAsEqualDirective: two directives have the same shape exactly
// when equalDirective finds them equal, so the read-back check that keeps
// only the shapes of what was built (renderLayoutParsed) refuses what the
// directive-by-directive comparison refused.
func TestShapesAsEqualDirective(t *testing.T) {
	d := func(name string, args []string, block crossplane.Directives) *crossplane.Directive {
		return &crossplane.Directive{Directive: name, Args: args, Block: block}
	}
	base := d("server", []string{}, crossplane.Directives{d("listen", []string{"80"}, nil), d("location", []string{"/"}, crossplane.Directives{})})
	variants := map[string]*crossplane.Directive{
		"same":           d("server", nil, crossplane.Directives{d("listen", []string{"80"}, nil), d("location", []string{"/"}, crossplane.Directives{})}),
		"name":           d("servers", []string{}, base.Block),
		"argument":       d("server", []string{}, crossplane.Directives{d("listen", []string{"81"}, nil), base.Block[1]}),
		"split argument": d("server", []string{}, crossplane.Directives{d("listen", []string{"8", "0"}, nil), base.Block[1]}),
		"joined name":    d("server", []string{}, crossplane.Directives{d("listen80", nil, nil), base.Block[1]}),
		"not a block":    d("server", []string{}, crossplane.Directives{base.Block[0], d("location", []string{"/"}, nil)}),
		"one more":       d("server", []string{}, append(slices.Clone(base.Block), d("listen", []string{"80"}, nil))),
		"moved":          d("server", []string{}, crossplane.Directives{base.Block[0], d("location", []string{"/"}, crossplane.Directives{d("listen", []string{"80"}, nil)})}),
		"comment":        d("#", []string{}, nil),
	}
	variants["comment"].Comment = new(string)
	for name, v := range variants {
		equal := equalDirective(base, v)
		same := slices.Equal(sums(shapes(crossplane.Directives{base})), sums(shapes(crossplane.Directives{v})))
		if equal != same || equal != (name == "same") {
			t.Errorf("%s: equalDirective %v, same shapes %v", name, equal, same)
		}
	}
	// Inside http {}, each directive has its own shape, so the first one
	// that differs is named with its line.
	http := func(inner ...*crossplane.Directive) crossplane.Directives {
		return crossplane.Directives{d("events", []string{}, crossplane.Directives{}), d("http", []string{}, inner)}
	}
	meant := shapes(http(base, base))
	read := http(base, variants["argument"])
	read[1].Block[1] = &crossplane.Directive{Directive: "server", Line: 42, Block: variants["argument"].Block}
	got := shapes(read)
	if len(meant) != 4 || slices.Equal(sums(meant), sums(got)) {
		t.Fatalf("shapes: %d, equal %v", len(meant), slices.Equal(sums(meant), sums(got)))
	}
	if msg := firstDifference(meant, got); msg != "server on line 42 differs from the server built" {
		t.Errorf("firstDifference = %q", msg)
	}
	// http's own shape counts its directives.
	if a, b := shapes(http(base)), shapes(http(base, base)); a[1].sum == b[1].sum {
		t.Error("http blocks of one and two directives have the same shape")
	}
}

func sums(s []shaped) [][32]byte {
	out := make([][32]byte, len(s))
	for i, x := range s {
		out[i] = x.sum
	}
	return out
}
