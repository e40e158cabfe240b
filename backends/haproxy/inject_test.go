package haproxy

import (
	"strings"
	"testing"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	"github.com/haproxytech/client-native/v5/config-parser/types"

	"github.com/gwretry/gwretry/translate"
)

// hostile are values that would break out of a word, a line or a section
// of haproxy.cfg, or that are just too big.
var hostile = []string{";", "{", "}", "#x", "x\\", "a\\b", "a\nb", "a\x00b", "a`b", strings.Repeat("a", 10*1024),
	"a b", "a\rb", "a\tb", "a\"b", "a'b", "a\nfrontend pwned"}

// hostileFields sets a value in one Model field that reaches haproxy.cfg.
var hostileFields = map[string]func(m *translate.Model, v string){
	"listener name":    func(m *translate.Model, v string) { m.Listeners[0].Name = v },
	"listener address": func(m *translate.Model, v string) { m.Listeners[0].Address = v },
	"hostname":         func(m *translate.Model, v string) { m.Listeners[0].VirtualHosts[0].Hostname = v },
	"wildcard":         func(m *translate.Model, v string) { m.Listeners[0].VirtualHosts[1].Hostname = "*." + v },
	"exact path":       func(m *translate.Model, v string) { match(m, 0).Path = v },
	"exact path /":     func(m *translate.Model, v string) { match(m, 0).Path = "/" + v },
	"prefix path":      func(m *translate.Model, v string) { match(m, 1).Path = "/" + v },
	"regex path":       func(m *translate.Model, v string) { m.Listeners[0].VirtualHosts[1].Routes[0].Match.Path = v },
	"method":           func(m *translate.Model, v string) { match(m, 0).Method = v },
	"header name":      func(m *translate.Model, v string) { match(m, 0).Headers[0].Name = v },
	"header value":     func(m *translate.Model, v string) { match(m, 0).Headers[0].Value = v },
	"header regex":     func(m *translate.Model, v string) { match(m, 0).Headers[3].Value = v },
	"query name":       func(m *translate.Model, v string) { match(m, 0).Query[0].Name = v },
	"query value":      func(m *translate.Model, v string) { match(m, 0).Query[0].Value = v },
	"query regex":      func(m *translate.Model, v string) { match(m, 0).Query[1].Value = v },
	"rule name":        func(m *translate.Model, v string) { m.Rules[0].Name = v },
	"backend name":     func(m *translate.Model, v string) { m.Rules[0].Backends[0].Name = v },
	"endpoint host":    func(m *translate.Model, v string) { m.Rules[0].Backends[0].Endpoints[0].Host = v },
}

// matchKinds are the kinds of the hostile fields that are ACL patterns,
// which HAProxy writes in strong quotes when they are not plain words.
var matchKinds = map[string]string{"exact path": translate.KindPath, "exact path /": translate.KindPath, "prefix path": translate.KindPath,
	"regex path": translate.KindRegex, "header value": translate.KindHeaderValue, "header regex": translate.KindRegex,
	"query value": translate.KindHeaderValue, "query regex": translate.KindRegex}

// fieldValue is the value a hostile field gets for v.
func fieldValue(field, v string) string {
	if field == "exact path /" || field == "prefix path" {
		return "/" + v
	}
	return v
}

// TestACLPatternsQuoted: ACL patterns the Gateway API accepts that are not
// plain words (a quote, ';', '#', a space, a backslash) are written in
// HAProxy's strong quotes, and read back (readWord, as HAProxy's tokenizer
// reads a word) as they were. e2e TestQuotedValuesLive proves them on the
// real HAProxy.
func TestACLPatternsQuoted(t *testing.T) {
	m := fullModel()
	match(m, 0).Path = "/a'b;c"
	match(m, 0).Headers[0].Value = `a "b' \c^ {d};#`
	match(m, 0).Headers[3].Value = `\"\d+\\\'`
	match(m, 0).Headers = append(match(m, 0).Headers,
		translate.ValueMatch{Name: "x-spaces", Type: translate.StringExact, Value: "a  b   'c"}, translate.ValueMatch{Name: "x-utf8", Type: translate.StringExact, Value: "café"})
	out, err := New().Generate(m, translate.Options{Version: "3.0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(out.Files[0].Data)
	for _, want := range []string{"/a'b;c", `a "b' \c^ {d};#`, `^(\"\d+\\\')$`, "a  b   'c", "café"} {
		q := quoteWord(want)
		if strings.Contains(q, "  ") {
			t.Errorf("%s has two blanks in a row, which config-parser joins into one", q)
		}
		if !strings.Contains(cfg, " "+q+"\n") {
			t.Errorf("haproxy.cfg has no ACL pattern %s", q)
		}
		if got, ok := readWord(q); !ok || got != want {
			t.Errorf("readWord(%s) = %q, %v", q, got, ok)
		}
	}
}

func match(m *translate.Model, i int) *translate.Match {
	return &m.Listeners[0].VirtualHosts[0].Routes[i].Match
}

// TestHostileValues puts each hostile string, alone and after a valid
// prefix, in every Model field that reaches haproxy.cfg: Generate must fail.
func TestHostileValues(t *testing.T) {
	for field, set := range hostileFields {
		for _, h := range hostile {
			for _, v := range []string{h, "a" + h, h + "a"} {
				m := fullModel()
				set(m, v)
				out, err := New().Generate(m, translate.Options{Version: "3.2"})
				if err == nil && isRegexField(field) && (v == "a{" || v == "{a" || v == "a}" || v == "}a") {
					// Valid RE2 with a literal brace, written as one word
					// ^(a{)$ that haproxy -c accepts: not an injection.
					continue
				}
				if field == "query name" && err == nil && New().Expresses(translate.KindQueryName, v) && translate.CheckValue(translate.KindQueryName, v) == nil {
					continue // a token in a quoted urlp(): TestQueryNamesQuoted
				}
				if kind, ok := matchKinds[field]; ok && err == nil && translate.CheckValue(kind, fieldValue(field, v)) == nil && New().Expresses(kind, fieldValue(field, v)) {
					continue // an ACL pattern in strong quotes: TestACLPatternsQuoted
				}
				if err == nil {
					t.Errorf("%s = %q: Generate succeeded:\n%s", field, shorten(v), out.Files[0].Data)
				}
			}
		}
	}
}

// TestOwnWordCheck bypasses Model.Check: the backend's own word check must
// still stop every hostile value.
func TestOwnWordCheck(t *testing.T) {
	for _, h := range hostile {
		if h == ";" || h == "a`b" || strings.HasPrefix(h, "aaaa") {
			continue // one plain word for HAProxy; Model.Check refuses them
		}
		for field, set := range hostileFields {
			m := fullModel()
			set(m, h)
			var ck tokenChecker
			for _, l := range m.Listeners {
				planFrontend(l, &ck)
			}
			for _, r := range m.Rules {
				planRule(m, r, supportTable()[0], translate.Options{}, &ck)
			}
			if (h == "{" || h == "}") && (field == "wildcard" || field == "exact path /" || field == "prefix path") {
				continue // ".{" or "/{" is one plain word; Model.Check refuses it
			}
			if field == "query name" && New().Expresses(translate.KindQueryName, h) && translate.CheckValue(translate.KindQueryName, h) == nil {
				continue // a token in a quoted urlp(): TestQueryNamesQuoted
			}
			if _, ok := matchKinds[field]; ok && checkQuotable(fieldValue(field, h)) == nil {
				continue // written in strong quotes: TestACLPatternsQuoted
			}
			if ck.err == nil {
				t.Errorf("%s = %q: own check passed", field, shorten(h))
			}
		}
	}
	for _, ok := range []string{"/a", "a.example.com", "^(v[0-9]{2})$", "$HOME", "a,b", "-v"} {
		if err := checkWord(ok); err != nil {
			t.Errorf("checkWord(%q) = %v", ok, err)
		}
	}
	var ck tokenChecker
	ck.word("x", "-v")
	if ck.err == nil {
		t.Error("word accepted a leading '-'")
	}
}

// TestParseBackCatchesInjection writes values that break out of their word
// or line straight into the document: render must refuse the output.
func TestParseBackCatchesInjection(t *testing.T) {
	tests := map[string]func(d *document, s sectionRef){
		"newline adds a section": func(d *document, s sectionRef) {
			d.set(s, "retry-on", &types.StringC{Value: "none\nfrontend pwned\n  bind 127.0.0.1:18099"})
		},
		"newline adds a line": func(d *document, s sectionRef) {
			d.set(s, "retry-on", &types.StringC{Value: "none\n  http-request deny"})
		},
		"comment cuts a value": func(d *document, s sectionRef) {
			d.set(s, "retry-on", &types.StringC{Value: "none #500"})
		},
		"space splits a word": func(d *document, s sectionRef) {
			d.setLines(s, "acl", []types.ACL{{Name: "a b", Criterion: "path", Value: "/"}}, 1)
		},
		"space adds a server parameter": func(d *document, s sectionRef) {
			d.setLines(s, "server", []types.Server{{Name: "s1", Address: "10.0.0.1:80 backup"}}, 1)
		},
	}
	for name, inject := range tests {
		t.Run(name, func(t *testing.T) {
			d := &document{}
			s := d.addSection(parser.Backends, "be")
			d.set(s, "retries", &types.Int64C{Value: 0})
			inject(d, s)
			if out, err := d.render(); err == nil {
				t.Errorf("render accepted:\n%s", out)
			}
		})
	}
	d := &document{}
	d.set(d.addSection(parser.Backends, "be"), "retries", &types.Int64C{Value: 1})
	if _, err := d.render(); err != nil {
		t.Errorf("render of a clean document: %v", err)
	}
}

func isRegexField(field string) bool {
	return strings.HasSuffix(field, "regex") || field == "regex path"
}
