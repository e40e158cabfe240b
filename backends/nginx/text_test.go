package nginx

import (
	"bytes"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
	"io"
	"strings"
	"testing"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/internal/hostile"
)

// TestTextArg: every printable text, written by textArg and built by
// crossplane, parses back into an argument the judge reads as the text;
// live proof in e2e's TestFilterHeaderValuesLive.
func TestTextArg(t *testing.T) {
	consts := map[string]string{dollarVar: "$", emptyVar: ""}
	for _, v := range hostile.HeaderValues() {
		arg := textArg(v)
		if err := checkArg(arg); err != nil {
			t.Errorf("%q: %v", v, err)
			continue
		}
		var buf bytes.Buffer
		d := directive("add_header", "X", arg, "always")
		if err := crossplane.Build(&buf, crossplane.Config{Parsed: crossplane.Directives{d}}, &crossplane.BuildOptions{}); err != nil {
			t.Fatal(err)
		}
		text := "http { " + buf.String() + " }\n"
		p, err := crossplane.Parse("t.conf", &crossplane.ParseOptions{SingleFile: true, StopParsingOnError: true,
			SkipDirectiveContextCheck: true, SkipDirectiveArgsCheck: true,
			Open: func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader([]byte(text))), nil }})
		if err != nil {
			t.Errorf("%q: written %s: %v", v, buf.String(), err)
			continue
		}
		args := p.Config[0].Parsed[0].Block[0].Args
		if len(args) != 3 {
			t.Errorf("%q: written %s, parsed into %q", v, buf.String(), args)
			continue
		}
		if got, ok := readTextArg(args[1], consts); !ok || got != v {
			t.Errorf("%q: written %s, read back %q (%v)", v, buf.String(), got, ok)
		}
	}
	for _, bad := range []string{`$host`, `${host}`, `a\nb`, `\r`, `${gwretry_other}`} {
		if got, ok := readTextArg(bad, consts); ok {
			t.Errorf("%s read as the text %q", bad, got)
		}
	}
}

// TestLongRuleNamesStart: the variables of a rule whose name is as long as
// gwretry allows (253 characters, '-' and '.' in it) are legal nginx names
// that fit its variable hash, so the real nginx accepts the file.
func TestLongRuleNamesStart(t *testing.T) {
	ns, route := strings.Repeat("a-", 31)+"b", strings.Repeat("c.d-", 46)+"e"
	r := rule(0, nil, translate.Timeouts{})
	r.Name, r.Route = ns+"_"+route+"_r0", ns+"/"+route
	r.Filters.RequestHeaders = &translate.HeaderModifier{Add: []translate.Header{{Name: "X-Add", Value: "$v"}}}
	r.Filters.Mirrors = []*translate.Mirror{{Backend: backend("default_m_80", 1, "127.0.0.2"), Numerator: 1, Denominator: 2}}
	out, err := New().Generate(model("", []*translate.Rule{r}), translate.Options{Version: "1.22"})
	if err != nil {
		t.Fatal(err)
	}
	proxytest.NginxCheck(t, out.Files[0].Data)
}
