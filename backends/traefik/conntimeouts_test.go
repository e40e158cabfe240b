package traefik

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestConnectionTimeouts: clientTimeout becomes each entry point's
// readTimeout, serverTimeout the responseHeaderTimeout of each rule's
// transport unless the rule has timeouts of its own; both approximated,
// the rest unsupported, one finding each; the judge reads the values back
// and catches a changed file; Traefik loads the files.
func TestConnectionTimeouts(t *testing.T) {
	m := testmodel.ConnectionTimeouts(t)
	b := New()
	opts := translate.Options{Version: "3.6"}
	res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "3.6"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range res.Files {
		files[f.Path] = string(f.Data)
	}
	for _, w := range []string{"readTimeout: 45s", "readTimeout: 596h31m23.647s"} {
		if !strings.Contains(files[staticPath], w) {
			t.Errorf("no %q in traefik.yaml:\n%s", w, files[staticPath])
		}
	}
	for _, w := range []string{"responseHeaderTimeout: 1m0s", "responseHeaderTimeout: 24h0m0s"} {
		if strings.Count(files[dynamicPath], w) != 1 {
			t.Errorf("%q not once in dynamic.yaml:\n%s", w, files[dynamicPath])
		}
	}
	got := map[string]translate.Status{}
	for _, f := range res.Report.Findings {
		if f.Gateway != "" {
			got[f.Gateway+" "+string(f.Feature)] = f.Status
		}
	}
	want := map[string]translate.Status{
		"shop/gw connection.clientTimeout": translate.Approximated, "shop/gw connection.serverTimeout": translate.Approximated,
		"shop/gw connection.clientFinTimeout": translate.Unsupported, "shop/gw connection.serverFinTimeout": translate.Unsupported,
		"shop/gw connection.tunnelTimeout": translate.Unsupported, "shop/gw connection.tlsInspectDelay": translate.Unsupported,
		"shop/gw2 connection.clientTimeout": translate.Approximated, "shop/gw2 connection.serverTimeout": translate.Approximated,
		"shop/gw2 connection.tunnelTimeout": translate.Unsupported,
	}
	if len(got) != len(want) {
		t.Errorf("%d connection findings, want %d: %v", len(got), len(want), got)
	}
	for k, s := range want {
		if got[k] != s {
			t.Errorf("%s: %s, want %s", k, got[k], s)
		}
	}

	seen, err := b.ObserveConnections(m, opts, res.Files)
	if err != nil {
		t.Fatal(err)
	}
	check := func(seen map[string]map[translate.Feature][]time.Duration, gw string, f translate.Feature, want time.Duration) bool {
		got := seen[gw][f]
		return len(got) > 0 && !slices.ContainsFunc(got, func(d time.Duration) bool { return d != want })
	}
	for _, c := range []struct {
		gw   string
		f    translate.Feature
		want time.Duration
	}{
		{"shop/gw", translate.FeatureConnClientTimeout, 45 * time.Second},
		{"shop/gw", translate.FeatureConnServerTimeout, time.Minute},
		{"shop/gw2", translate.FeatureConnClientTimeout, translate.MaxHAProxyTimeout},
		{"shop/gw2", translate.FeatureConnServerTimeout, 24 * time.Hour},
	} {
		if !check(seen, c.gw, c.f, c.want) {
			t.Errorf("%s %s: read %v, want all %v", c.gw, c.f, seen[c.gw][c.f], c.want)
		}
	}
	for _, tamper := range []struct {
		path, from, to string
		f              translate.Feature
		want           time.Duration
	}{
		{staticPath, "readTimeout: 45s", "readTimeout: 44s", translate.FeatureConnClientTimeout, 45 * time.Second},
		{dynamicPath, "responseHeaderTimeout: 1m0s", "responseHeaderTimeout: 59s", translate.FeatureConnServerTimeout, time.Minute},
	} {
		var changed []translate.File
		for _, f := range res.Files {
			if f.Path == tamper.path {
				f.Data = []byte(strings.Replace(string(f.Data), tamper.from, tamper.to, 1))
			}
			changed = append(changed, f)
		}
		seen, err := b.ObserveConnections(m, opts, changed)
		if err != nil {
			t.Fatal(err)
		}
		if check(seen, "shop/gw", tamper.f, tamper.want) {
			t.Errorf("%q -> %q: the judge reads the claimed value still", tamper.from, tamper.to)
		}
	}
	proxytest.TraefikCheck(t, []byte(files[staticPath]), []byte(files[dynamicPath]))
}
