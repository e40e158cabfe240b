package nginx

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// tlsModel has a plain listener and a TLS listener with an exact, a
// wildcard and (with catchAll) a catch-all virtual host, each routing to
// rule r; certificates live under dir.
func tlsModel(dir string, catchAll bool, r *translate.Rule) *translate.Model {
	cert := func(name string) *translate.Certificate {
		return &translate.Certificate{Secret: "ns/" + name, CertFile: dir + "/ns/" + name + "/tls.crt", KeyFile: dir + "/ns/" + name + "/tls.key"}
	}
	route := func() []*translate.RouteMatch {
		return []*translate.RouteMatch{{Match: prefix("/"), Rule: r}}
	}
	hosts := []*translate.VirtualHost{
		{Name: "https-8443_a", Hostname: "a.example.com", Certificate: cert("cert-a"), Routes: route()},
		{Name: "https-8443_w", Hostname: "*.example.com", Certificate: cert("cert-wild"), Routes: route()},
	}
	if catchAll {
		hosts = append(hosts, &translate.VirtualHost{Name: "https-8443_any", Hostname: "", Certificate: cert("cert-any"), Routes: route()})
	}
	r.TLSListeners = []string{"Gateway ns/gw listener a"}
	return &translate.Model{
		Listeners: []*translate.Listener{
			{Name: "http-8080", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{{Name: "http-8080_any", Routes: route()}}},
			{Name: "https-8443", TLS: true, Address: "127.0.0.1", Port: 8443, VirtualHosts: hosts},
		},
		Rules: []*translate.Rule{r}, RouteCount: 1, RuleCount: 1,
	}
}

func TestGenerateTLS(t *testing.T) {
	for _, tc := range []struct {
		name     string
		layout   string
		catchAll bool
		contains []string
		lacks    []string
	}{
		{"full with catch-all", LayoutFull, true, []string{
			"listen 127.0.0.1:8443 ssl;", "listen 127.0.0.1:8443 default_server ssl;",
			"ssl_certificate /certs/ns/cert-a/tls.crt;", "ssl_certificate_key /certs/ns/cert-a/tls.key;",
			"ssl_certificate /certs/ns/cert-wild/tls.crt;", "ssl_certificate /certs/ns/cert-any/tls.crt;",
			"listen 127.0.0.1:8080 default_server;",
		}, []string{"ssl_reject_handshake", "http2"}},
		{"conf.d without catch-all", LayoutConfD, false, []string{
			"listen 127.0.0.1:8443 ssl;", "listen 127.0.0.1:8443 default_server ssl;", "ssl_reject_handshake on;",
		}, []string{"cert-any", "http2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := NewWithConfig(Config{Layout: tc.layout})
			if err != nil {
				t.Fatal(err)
			}
			m := tlsModel("/certs", tc.catchAll, rule(0, nil, translate.Timeouts{}))
			res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.22"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range res.Report.Findings {
				if f.Feature != translate.FeatureListenerHTTPS {
					continue
				}
				found = true
				// Which Secret each SNI name gets, and the refused
				// handshake without a catch-all, are in the file (contains).
				if f.Reason != report.ReasonConfigured || f.Configured != "listen ssl, ssl_certificate per server_name" ||
					len(f.Caveats) != 1 || f.Caveats[0].Reason != report.CaveatHostNotCheckedAgainstSNI {
					t.Errorf("listener.https: %s %+v", f.Status, f.Decision)
				}
			}
			if !found {
				t.Error("no listener.https finding")
			}
			conf := string(res.Files[0].Data)
			for _, s := range tc.contains {
				if !strings.Contains(conf, s) {
					t.Errorf("lacks %q:\n%s", s, conf)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(conf, s) {
					t.Errorf("has %q:\n%s", s, conf)
				}
			}
		})
	}
}

// TestTLSReadBack: the judge reads back which listener terminates TLS
// with which certificate per server_name, and refuses a file that differs
// from the model.
func TestTLSReadBack(t *testing.T) {
	b := New()
	m := tlsModel("/certs", false, rule(0, nil, translate.Timeouts{}))
	out, err := b.Generate(m, translate.Options{Version: "1.22"})
	if err != nil {
		t.Fatal(err)
	}
	data := out.Files[0].Data
	if _, err := b.Observe(m, translate.Options{Version: "1.22"}, out.Files); err != nil {
		t.Fatalf("generated file: %v", err)
	}
	for _, tc := range []struct {
		name, old, new string
		want           string
	}{
		{"plain instead of TLS", "listen 127.0.0.1:8443 ssl;", "listen 127.0.0.1:8443;", "listens without ssl"},
		{"certificates swapped", "ssl_certificate /certs/ns/cert-a/tls.crt;", "ssl_certificate /certs/ns/cert-wild/tls.crt;", `SNI "a.example.com"`},
		{"default accepts handshakes", "ssl_reject_handshake on;", "ssl_reject_handshake off;", "default server"},
		{"TLS on the plain listener", "listen 127.0.0.1:8080 default_server;", "listen 127.0.0.1:8080 default_server ssl;", "plain listener http-8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Contains(data, []byte(tc.old)) {
				t.Fatalf("file lacks %q", tc.old)
			}
			bad := bytes.Replace(data, []byte(tc.old), []byte(tc.new), 1)
			_, err := b.Observe(m, translate.Options{Version: "1.22"}, []translate.File{{Path: ConfigPath, Data: bad}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Observe = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestTLSUngeneratedStaysUnsupported: a rule attached to an HTTPS
// listener gwretry does not generate keeps the unsupported finding.
func TestTLSUngeneratedStaysUnsupported(t *testing.T) {
	r := rule(0, nil, translate.Timeouts{})
	r.Ungenerated = []translate.UngeneratedListener{{Gateway: "ns/gw", Listener: "https", Protocol: "HTTPS"}}
	out, err := New().Generate(model("", []*translate.Rule{r}), translate.Options{Version: "1.22"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range out.Findings {
		if f.Feature == translate.FeatureListenerHTTPS && f.Reason != report.ReasonListenerNotGenerated {
			t.Errorf("listener.https: %+v", f.Decision)
		}
	}
}

// TestTLSRedirectPorts: a redirect without scheme keeps the request's
// (https on a TLS listener) and leaves out the scheme's well-known port.
func TestTLSRedirectPorts(t *testing.T) {
	redirect := func(port int) *translate.Rule {
		r := rule(0, nil, translate.Timeouts{})
		r.Backends = nil
		r.Filters.Redirect = &translate.Redirect{StatusCode: 302, Port: port}
		return r
	}
	tlsOnly := func(r *translate.Rule) *translate.Model {
		m := tlsModel("/certs", true, r)
		m.Listeners = m.Listeners[1:]
		return m
	}
	for _, tc := range []struct {
		name     string
		model    *translate.Model
		location string
		map_     string
	}{
		{"TLS only, port 443", tlsOnly(redirect(443)), "return 302 $scheme://$host$request_uri;", ""},
		{"TLS only, port 80", tlsOnly(redirect(80)), "return 302 $scheme://$host:80$request_uri;", ""},
		{"HTTP and TLS, port 443", tlsModel("/certs", true, redirect(443)), "return 302 $scheme://$host:443$request_uri;", ""},
		{"HTTP and TLS, listener's port", tlsModel("/certs", true, redirect(0)), "return 302 $scheme://$host$gw_redirect_port$request_uri;",
			"map $scheme:$server_port $gw_redirect_port {"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := translate.Run(tc.model, []translate.Target{{Backend: New(), Version: "1.22"}}, false)
			if err != nil {
				t.Fatal(err)
			}
			conf := string(res.Files[0].Data)
			if !strings.Contains(conf, tc.location) || !strings.Contains(conf, tc.map_) {
				t.Errorf("want %q and %q in:\n%s", tc.location, tc.map_, conf)
			}
			for _, f := range res.Report.Findings {
				if f.Feature == translate.FeatureRequestRedirect && (f.Reason != report.ReasonConfigured || len(f.Caveats) > 0) {
					t.Errorf("redirect: %+v", f.Decision)
				}
			}
		})
	}
}
