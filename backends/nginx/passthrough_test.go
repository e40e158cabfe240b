package nginx

import (
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// locationBody is the text of the named location of rule name in cfg.
func locationBody(cfg, name string) string {
	_, after, _ := strings.Cut(cfg, "location @r_"+name+" {")
	body, _, _ := strings.Cut(after, "}")
	return body
}

// TestPassThroughConfig: every server (the catch-all 404 one too) accepts
// header names with '_' and '.'; every proxying location ignores and
// passes the X-Accel-* headers and passes upgrades, with Host from the
// gwretry maps; a rule that sets Connection sends its value alone and is
// caveated; a redirect-only configuration has none of the maps; and nginx
// -t accepts the conf.d file.
func TestPassThroughConfig(t *testing.T) {
	plain := rule(0, nil, translate.Timeouts{})
	conn := rule(1, nil, translate.Timeouts{})
	conn.Filters.RequestHeaders = &translate.HeaderModifier{Set: []translate.Header{{Name: "connection", Value: "x-gw"}}}
	m := model("a.example", []*translate.Rule{plain, conn})
	for layout, b := range layouts(t) {
		out, err := b.Generate(m, translate.Options{Version: "1.24"})
		if err != nil {
			t.Fatal(err)
		}
		cfg := string(out.Files[0].Data)
		servers := serverBlocks(cfg, "127.0.0.1:18080")
		if len(servers) != 2 {
			t.Fatalf("%s: %d servers, want the virtual host's and the 404 default:\n%s", layout, len(servers), cfg)
		}
		for _, s := range servers {
			if !strings.Contains(s, "underscores_in_headers on;") || !strings.Contains(s, "ignore_invalid_headers off;") {
				t.Errorf("%s: a server drops header names with '_' or '.':\n%s", layout, s)
			}
		}
		for _, want := range []string{"map $http_upgrade $gw_connection_upgrade {", "map $http_host $gw_host {", "map $host $gw_host_default {", "map $server_addr $gw_server_authority {"} {
			if strings.Count(cfg, want) != 1 {
				t.Errorf("%s: want one %q in\n%s", layout, want, cfg)
			}
		}
		for _, r := range m.Rules {
			body := locationBody(cfg, r.Name)
			for _, want := range []string{"proxy_set_header Host $gw_host;", "proxy_set_header Upgrade $http_upgrade;",
				"proxy_ignore_headers X-Accel-Redirect X-Accel-Expires X-Accel-Limit-Rate X-Accel-Buffering X-Accel-Charset;"} {
				if !strings.Contains(body, want) {
					t.Errorf("%s %s: no %q in\n%s", layout, r.Name, want, body)
				}
			}
			for _, n := range strippedHeaders {
				if !strings.Contains(body, "proxy_pass_header "+n+";") {
					t.Errorf("%s %s: no proxy_pass_header %s", layout, r.Name, n)
				}
			}
		}
		if body := locationBody(cfg, plain.Name); !strings.Contains(body, "proxy_set_header Connection $gw_connection_upgrade;") {
			t.Errorf("%s: the plain rule does not pass upgrades:\n%s", layout, body)
		}
		if body := locationBody(cfg, conn.Name); strings.Count(strings.ToLower(body), "proxy_set_header connection") != 1 || !strings.Contains(body, "proxy_set_header connection x-gw;") {
			t.Errorf("%s: the rule that sets Connection:\n%s", layout, body)
		}
		if layout == LayoutConfD {
			nginxCheckConfD(t, out.Files[0].Data)
		}
	}
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "1.24"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range res.Report.Findings {
		if f.Rule == 1 && f.Feature == translate.FeatureRequestHeaderModifier {
			found = slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool {
				return c.Reason == report.CaveatHeadersHandledByProxy && c.Params["headers"] == "connection"
			})
		}
	}
	if !found {
		t.Errorf("the Connection filter's finding lacks %s connection", report.CaveatHeadersHandledByProxy)
	}

	rd := rule(0, nil, translate.Timeouts{})
	rd.Backends = nil
	rd.Filters.Redirect = &translate.Redirect{StatusCode: 302, Scheme: "https"}
	out, err := New().Generate(model("", []*translate.Rule{rd}), translate.Options{Version: "1.24"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := string(out.Files[0].Data); strings.Contains(cfg, "$gw_connection_upgrade") || strings.Contains(cfg, "$gw_host") ||
		!strings.Contains(cfg, "underscores_in_headers on;") {
		t.Errorf("redirect only:\n%s", cfg)
	}
}
