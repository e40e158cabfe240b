package haproxy

import (
	"crypto/x509"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gwretry/gwretry/internal/tlstest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// testPKI is a self-signed CA and leaf certificates made at test time,
// written as DIR/ns/NAME/tls.crt and tls.key (the --tls-dir layout).
type testPKI struct {
	dir  string
	pool *x509.CertPool
}

// newTestPKI makes the CA and one leaf per name: its common name is the
// Secret's name (so a client can tell which certificate it got) and its
// DNS names are dnsNames[name].
func newTestPKI(t *testing.T, dnsNames map[string][]string) *testPKI {
	t.Helper()
	ca := tlstest.New(t, "")
	for _, name := range slices.Sorted(maps.Keys(dnsNames)) {
		ca.Sign(t, tlstest.Leaf{Namespace: "ns", Name: name, DNSNames: dnsNames[name]})
	}
	return &testPKI{dir: ca.Dir, pool: ca.Pool}
}

// cert is the model's certificate of Secret ns/name.
func (p *testPKI) cert(name string) *translate.Certificate {
	d := filepath.Join(p.dir, "ns", name)
	return &translate.Certificate{Secret: "ns/" + name, CertFile: filepath.Join(d, "tls.crt"), KeyFile: filepath.Join(d, "tls.key")}
}

// tlsModel adds to m (modelOf) an HTTPS listener "https-8443" whose
// virtual hosts are certs' hostnames, each with the certificate of the
// Secret named, all serving every rule of m behind its /rNN prefix.
func tlsModel(m *translate.Model, p *testPKI, port int, hosts []string, certs map[string]string) *translate.Model {
	l := &translate.Listener{Name: "https-8443", TLS: true, Address: "127.0.0.1", Port: port}
	for i, h := range hosts {
		vh := &translate.VirtualHost{Name: "https_" + itoa(i), Hostname: h, Certificate: p.cert(certs[h])}
		for _, r := range m.Rules {
			vh.Routes = append(vh.Routes, &translate.RouteMatch{Match: prefix("/r" + itoa(r.Index)), Rule: r})
		}
		l.VirtualHosts = append(l.VirtualHosts, vh)
	}
	m.Listeners = append(m.Listeners, l)
	for _, r := range m.Rules {
		r.TLSListeners = []string{"Gateway ns/gw listener https"}
	}
	return m
}

func TestTLSListenerConfig(t *testing.T) {
	p := newTestPKI(t, map[string][]string{"def": {"default.example.com"}, "a": {"a.example.com"}, "w": {"*.w.example.com"}})
	hosts := []string{"a.example.com", "*.w.example.com", ""}
	wildcard := report.NewCaveat(report.CaveatWildcardSNIOneLabel, "hostnames", "*.w.example.com")
	misdirected := report.NewCaveat(report.CaveatMisdirectedRequestRouted)
	tests := []struct {
		name        string
		certs       map[string]string
		hosts       []string
		wantList    string
		wantCaveats []report.Caveat
	}{
		{"catch-all default, wildcard with its own certificate", map[string]string{"a.example.com": "a", "*.w.example.com": "w", "": "def"}, hosts,
			p.cert("def").CertFile + " " + defaultSNIFilter + "\n" + p.cert("a").CertFile + " a.example.com\n" + p.cert("w").CertFile + " *.w.example.com\n",
			[]report.Caveat{misdirected, wildcard}},
		{"wildcard certificate is the default", map[string]string{"a.example.com": "a", "*.w.example.com": "w", "": "w"}, hosts,
			p.cert("w").CertFile + " " + defaultSNIFilter + "\n" + p.cert("a").CertFile + " a.example.com\n" + p.cert("w").CertFile + " *.w.example.com\n",
			[]report.Caveat{misdirected}},
		{"one catch-all host", map[string]string{"": "def"}, hosts[2:],
			p.cert("def").CertFile + " " + defaultSNIFilter + "\n",
			[]report.Caveat{report.NewCaveat(report.CaveatNotCheckedByJudge)}},
		{"no catch-all: the first hostname's certificate is the default", map[string]string{"a.example.com": "a", "*.w.example.com": "w"}, hosts[:2],
			p.cert("a").CertFile + " a.example.com\n" + p.cert("w").CertFile + " *.w.example.com\n",
			[]report.Caveat{misdirected, wildcard}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tlsModel(modelOf(rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})), p, 8443, tt.hosts, tt.certs)
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: checkedVersion}}, false)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			for _, f := range res.Files {
				files[f.Path] = string(f.Data)
			}
			if got := files["haproxy/https-8443.crt-list"]; got != tt.wantList {
				t.Errorf("crt-list:\n%s\nwant:\n%s", got, tt.wantList)
			}
			cfg := files[OutputPath]
			for _, want := range []string{"bind 127.0.0.1:8443 ssl crt-list haproxy/https-8443.crt-list alpn http/1.1\n", "bind 127.0.0.1:8080\n",
				"ssl-load-extra-files key\n", "ssl-load-extra-del-ext\n"} {
				if !strings.Contains(cfg, want) {
					t.Errorf("haproxy.cfg lacks %q:\n%s", want, cfg)
				}
			}
			var f translate.Finding
			for _, x := range res.Report.Findings {
				if x.Feature == translate.FeatureListenerHTTPS {
					f = x
				}
			}
			if f.Reason != report.ReasonConfigured || !cmp.Equal(f.Caveats, tt.wantCaveats) {
				t.Errorf("listener.https finding %s %v, want %s %v", f.Reason, f.Caveats, report.ReasonConfigured, tt.wantCaveats)
			}
		})
	}
}

// TestTLSNotGenerated: a rule with an HTTPS listener gwretry does not
// generate gets the shared ListenerNotGenerated record, and an HTTP
// model writes no TLS at all.
func TestTLSNotGenerated(t *testing.T) {
	r := rule(0, nil, translate.Timeouts{})
	r.Ungenerated = []translate.UngeneratedListener{{Gateway: "ns/gw", Listener: "https", Protocol: "HTTPS"}}
	cfg, fs := generate(t, modelOf(r), translate.Options{Version: checkedVersion})
	if f := findingOf(t, fs, 0, translate.FeatureListenerHTTPS); f.Reason != report.ReasonListenerNotGenerated {
		t.Errorf("finding %s %v", f.Reason, f.Caveats)
	}
	if strings.Contains(cfg, "ssl") {
		t.Errorf("an HTTP-only configuration mentions ssl:\n%s", cfg)
	}
}

// TestTLSRejected: values HAProxy would read differently are refused.
func TestTLSRejected(t *testing.T) {
	p := newTestPKI(t, map[string][]string{"a": {"a.example.com"}})
	tests := map[string]func(c *translate.Certificate){
		"key not beside the certificate": func(c *translate.Certificate) { c.KeyFile = filepath.Join(filepath.Dir(c.KeyFile), "other.key") },
		"path with a bracket":            func(c *translate.Certificate) { c.CertFile += "[x]" },
	}
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			m := tlsModel(modelOf(rule(0, nil, translate.Timeouts{})), p, 8443, []string{"a.example.com"}, map[string]string{"a.example.com": "a"})
			edit(m.Listeners[1].VirtualHosts[0].Certificate)
			if _, err := New().Generate(m, translate.Options{Version: checkedVersion}); err == nil {
				t.Error("Generate accepted it")
			}
		})
	}
}

// TestJudgeReadsTLS: the judge reads which listener terminates TLS and
// which certificate serves which SNI name, and rejects a configuration
// that differs from the model.
func TestJudgeReadsTLS(t *testing.T) {
	p := newTestPKI(t, map[string][]string{"def": nil, "a": nil, "w": nil})
	certs := map[string]string{"a.example.com": "a", "*.w.example.com": "w", "": "def"}
	crt := func(n string) string { return p.cert(n).CertFile }
	tests := []struct {
		name string
		edit func(files map[string]string)
		want string // "" when the judge agrees
	}{
		{"as generated", nil, ""},
		{"certificates swapped", func(f map[string]string) {
			f["haproxy/https-8443.crt-list"] = strings.NewReplacer(crt("a"), crt("w"), crt("w"), crt("a")).Replace(f["haproxy/https-8443.crt-list"])
		}, "certificates by SNI name"},
		{"another default", func(f map[string]string) {
			f["haproxy/https-8443.crt-list"] = strings.Replace(f["haproxy/https-8443.crt-list"], crt("def"), crt("a"), 1)
		}, "default certificate"},
		{"TLS listener served as HTTP", func(f map[string]string) {
			f[OutputPath] = strings.Replace(f[OutputPath], " ssl crt-list haproxy/https-8443.crt-list", "", 1)
		}, "has ssl false"},
		{"no alpn: HAProxy 2.8+ would offer h2", func(f map[string]string) {
			f[OutputPath] = strings.Replace(f[OutputPath], " alpn http/1.1", "", 1)
		}, "has no alpn http/1.1"},
		{"alpn h2", func(f map[string]string) {
			f[OutputPath] = strings.Replace(f[OutputPath], " alpn http/1.1", " alpn h2,http/1.1", 1)
		}, "bind option alpn h2,http/1.1"},
		{"key read from tls.crt.key", func(f map[string]string) {
			f[OutputPath] = strings.Replace(f[OutputPath], "ssl-load-extra-del-ext\n", "", 1)
		}, "reads the key"},
		{"hostname without filter", func(f map[string]string) {
			f["haproxy/https-8443.crt-list"] = strings.Replace(f["haproxy/https-8443.crt-list"], " a.example.com", " b.example.com", 1)
		}, "certificates by SNI name"},
		{"ssl options in the crt-list", func(f map[string]string) {
			f["haproxy/https-8443.crt-list"] = strings.Replace(f["haproxy/https-8443.crt-list"], " a.example.com", " [alpn h2] a.example.com", 1)
		}, "not a certificate path and one SNI filter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tlsModel(modelOf(rule(0, nil, translate.Timeouts{})), p, 8443, []string{"a.example.com", "*.w.example.com", ""}, certs)
			opts := translate.Options{Version: checkedVersion}
			out, err := New().Generate(m, opts)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			for _, f := range out.Files {
				files[f.Path] = string(f.Data)
			}
			if tt.edit != nil {
				before := maps.Clone(files)
				tt.edit(files)
				if maps.Equal(before, files) {
					t.Fatal("edit changed nothing")
				}
			}
			var edited []translate.File
			for path, data := range files {
				edited = append(edited, translate.File{Path: path, Data: []byte(data)})
			}
			_, err = New().Observe(m, opts, edited)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("judge: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("judge: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
