package nginx

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// serverBlocks returns the text of the server blocks that listen on addr.
func serverBlocks(cfg, addr string) []string {
	var out []string
	for _, b := range strings.Split(cfg, "server {")[1:] {
		if strings.Contains(b, "listen "+addr) {
			out = append(out, b)
		}
	}
	return out
}

// TestConnectionTimeouts: clientTimeout goes into every server block of
// the Gateway's listener, serverTimeout into the named location of each
// rule without timeouts of its own, every field has one finding, the
// judge reads back what is claimed, and nginx -t accepts the file.
func TestConnectionTimeouts(t *testing.T) {
	m := testmodel.ConnectionTimeouts(t)
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "1.22"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(res.Files[0].Data)
	for _, c := range []struct {
		addr string
		want []string
	}{
		{"0.0.0.0:8080", []string{"client_body_timeout 45000ms;", "send_timeout 45000ms;"}},
		{"0.0.0.0:8081", []string{"client_body_timeout 2147483647ms;", "send_timeout 2147483647ms;"}},
	} {
		blocks := serverBlocks(cfg, c.addr)
		if len(blocks) == 0 {
			t.Fatalf("no server listens on %s:\n%s", c.addr, cfg)
		}
		for _, b := range blocks {
			for _, w := range c.want {
				if !strings.Contains(b, w) {
					t.Errorf("server on %s: no %q in\n%s", c.addr, w, b)
				}
			}
		}
	}
	loc := func(name string) string {
		_, after, _ := strings.Cut(cfg, "location @r_"+name+" {")
		body, _, _ := strings.Cut(after, "}")
		return body
	}
	for _, c := range []struct {
		rule, want string
		present    bool
	}{
		{"shop_cart_r0", "proxy_read_timeout 60000ms;", true},
		{"shop_cart_r0", "proxy_send_timeout 60000ms;", true},
		{"shop_cart_r1", "proxy_read_timeout 10000ms;", true}, // its own timeout wins
		{"shop_cart_r1", "60000ms", false},
		{"shop_ws_r0", "proxy_read_timeout 86400000ms;", true},
	} {
		if strings.Contains(loc(c.rule), c.want) != c.present {
			t.Errorf("location @r_%s: %q present %v, want %v:\n%s", c.rule, c.want, !c.present, c.present, loc(c.rule))
		}
	}
	// Each field's reason and caveats.
	stalled := report.Reason(report.CaveatStalledBodyClosesConnection)
	want := map[string][]report.Reason{
		"shop/gw connection.clientTimeout":    {report.ReasonConfigured, stalled},
		"shop/gw connection.serverTimeout":    {report.ReasonConfigured},
		"shop/gw connection.clientFinTimeout": {report.ReasonNotExpressible}, "shop/gw connection.serverFinTimeout": {report.ReasonNotExpressible},
		"shop/gw connection.tunnelTimeout": {report.ReasonNotExpressible}, "shop/gw connection.tlsInspectDelay": {report.ReasonNotExpressible},
		"shop/gw2 connection.clientTimeout": {report.ReasonConfigured, stalled, report.CaveatTimeoutClamped},
		"shop/gw2 connection.serverTimeout": {report.ReasonConfigured},
		"shop/gw2 connection.tunnelTimeout": {report.ReasonNotExpressible},
	}
	got := map[string][]report.Reason{}
	for _, f := range res.Report.Findings {
		if f.Gateway != "" {
			k := f.Gateway + " " + string(f.Feature)
			if _, dup := got[k]; dup {
				t.Errorf("two findings for %s", k)
			}
			got[k] = []report.Reason{f.Reason}
			for _, c := range f.Caveats {
				got[k] = append(got[k], c.Reason)
			}
		}
	}
	for k, s := range want {
		if !slices.Equal(got[k], s) {
			t.Errorf("%s: %v, want %v", k, got[k], s)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d connection findings, want %d: %v", len(got), len(want), got)
	}
	proxytest.NginxCheck(t, res.Files[0].Data)
}

// TestConnectionJudge: the judge reads each value where it applies and
// catches a file that says something else.
func TestConnectionJudge(t *testing.T) {
	m := testmodel.ConnectionTimeouts(t)
	b := New()
	opts := translate.Options{Version: "1.22"}
	out, err := b.Generate(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := b.ObserveConnections(m, opts, out.Files)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gw   string
		f    translate.Feature
		want time.Duration
	}{
		{"shop/gw", translate.FeatureConnClientTimeout, 45 * time.Second},
		{"shop/gw", translate.FeatureConnServerTimeout, 60 * time.Second},
		{"shop/gw2", translate.FeatureConnServerTimeout, 24 * time.Hour},
		{"shop/gw2", translate.FeatureConnClientTimeout, translate.MaxHAProxyTimeout},
	} {
		got := seen[c.gw][c.f]
		if len(got) == 0 || slices.ContainsFunc(got, func(d time.Duration) bool { return d != c.want }) {
			t.Errorf("%s %s: read %v, want all %v", c.gw, c.f, got, c.want)
		}
	}
	for _, tamper := range []struct{ from, to string }{
		{"send_timeout 45000ms;", "send_timeout 44s;"},
		{"proxy_read_timeout 60000ms;", "proxy_read_timeout 61s;"},
		{"client_body_timeout 45000ms;", ""},
	} {
		data := strings.Replace(string(out.Files[0].Data), tamper.from, tamper.to, 1)
		if data == string(out.Files[0].Data) {
			t.Fatalf("%q is not in the file", tamper.from)
		}
		files := []translate.File{{Path: out.Files[0].Path, Data: []byte(data)}}
		seen, err := b.ObserveConnections(m, opts, files)
		if err != nil {
			t.Fatal(err)
		}
		caught := false
		for _, f := range []translate.Feature{translate.FeatureConnClientTimeout, translate.FeatureConnServerTimeout} {
			want := map[translate.Feature]time.Duration{translate.FeatureConnClientTimeout: 45 * time.Second, translate.FeatureConnServerTimeout: time.Minute}[f]
			caught = caught || slices.ContainsFunc(seen["shop/gw"][f], func(d time.Duration) bool { return d != want })
		}
		if !caught {
			t.Errorf("%q -> %q: the judge reads the claimed values still", tamper.from, tamper.to)
		}
	}
}
