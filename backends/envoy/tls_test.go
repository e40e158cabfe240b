package envoy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/internal/tlstest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// testCA is a self-signed CA made at test time, and the leaf certificates
// it signs, written as DIR/ns/NAME/tls.crt and tls.key.
type testCA struct {
	cert *x509.Certificate
	pool *x509.CertPool
	dir  string
	ca   *tlstest.CA
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca := tlstest.New(t, "")
	return &testCA{cert: ca.Cert, pool: ca.Pool, dir: ca.Dir, ca: ca}
}

// leaf writes a certificate for dnsNames as Secret ns/name.
func (ca *testCA) leaf(t *testing.T, name string, serial int64, dnsNames ...string) {
	t.Helper()
	ca.ca.Sign(t, tlstest.Leaf{Namespace: "ns", Name: name, DNSNames: dnsNames, Serial: serial})
}

// tlsManifests: an HTTP listener, and HTTPS listeners for a.example.com
// (cert-a), *.example.com (cert-wild) and any host (cert-any); routes for
// a.example.com, b.example.com (under the wildcard listener), the
// wildcard itself, and any host, one of them retrying, one redirecting
// with no scheme.
const tlsManifests = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: a, port: 443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
  - {name: wild, port: 443, protocol: HTTPS, hostname: "*.example.com", tls: {certificateRefs: [{name: cert-wild}]}}
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any}]}}
---
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: ns}
spec: {ports: [{port: 8080}], clusterIP: 10.0.0.1}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: exact, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [a.example.com, b.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /retry}}]
    retry: {attempts: 2, codes: [503], backoff: 0s}
    timeouts: {request: 5s, backendRequest: 1s}
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /moved}}]
    filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /new}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wild, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: ["*.example.com"]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: any, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
`

// tlsModel builds the model of tlsManifests with certificates of ca.
func tlsModel(t *testing.T, ca *testCA, listenTLS *translate.Bind) *translate.Model {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, []byte(tlsManifests), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := input.Load([]string{p}, nil, translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	opts := translate.ResolveOptions{TLSDir: ca.dir, ListenTLS: listenTLS}
	if listenTLS != nil {
		opts.Listen = &translate.Bind{Address: "127.0.0.1", Port: 18080}
	}
	m, err := resolve.Build(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tlsCA(t *testing.T) *testCA {
	ca := newTestCA(t)
	ca.leaf(t, "cert-a", 2, "a.example.com")
	ca.leaf(t, "cert-wild", 3, "*.example.com", "*.y.example.com")
	ca.leaf(t, "cert-any", 4, "any.example.org")
	return ca
}

func tlsListenerOf(t *testing.T, bs *bootstrapv3.Bootstrap) *listenerv3.Listener {
	t.Helper()
	for _, l := range bs.GetStaticResources().GetListeners() {
		if strings.HasPrefix(l.GetName(), "https-") {
			return l
		}
	}
	t.Fatal("no https listener")
	return nil
}

// TestTLSListenerFields: the HTTPS listener terminates TLS with a filter
// chain per certificate, the plain one does not, and Run (ValidateAll, the
// parse-back and the judge) accepts it.
func TestTLSListenerFields(t *testing.T) {
	ca := tlsCA(t)
	m := tlsModel(t, ca, nil)
	res, err := translate.Run(m, []translate.Target{{Backend: New()}}, false)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	_, bs := generate(t, m, translate.Options{})
	ls := bs.GetStaticResources().GetListeners()
	if len(ls) != 2 || ls[0].GetName() != "http-80" || ls[1].GetName() != "https-443" {
		t.Fatalf("listeners %v", ls)
	}
	for _, fc := range chainsOf(ls[0]) {
		if fc.GetTransportSocket() != nil {
			t.Error("the HTTP listener terminates TLS")
		}
	}
	l := ls[1]
	if !hasTLSInspector(l) {
		t.Error("no tls_inspector")
	}
	servers := map[string]string{}
	for _, fc := range l.GetFilterChains() {
		c, err := chainCertificate(fc)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range fc.GetFilterChainMatch().GetServerNames() {
			servers[n] = filepath.Base(filepath.Dir(c.cert))
		}
	}
	want := map[string]string{"a.example.com": "cert-a", "b.example.com": "cert-wild", "*.example.com": "cert-wild"}
	if fmt.Sprint(servers) != fmt.Sprint(want) {
		t.Errorf("server_names → certificate %v, want %v", servers, want)
	}
	d, err := chainCertificate(l.GetDefaultFilterChain())
	if err != nil || !strings.HasSuffix(d.cert, "/ns/cert-any/tls.crt") || !strings.HasSuffix(d.key, "/ns/cert-any/tls.key") {
		t.Errorf("default_filter_chain certificate %+v %v", d, err)
	}

	// Every rule on the HTTPS listener has an honoured listener.https
	// finding that names the certificates.
	n := 0
	for _, f := range res.Report.Findings {
		if f.Feature != translate.FeatureListenerHTTPS {
			continue
		}
		n++
		// Several Gateway listeners share the port: certificates follow
		// the routes' hostnames. The HTTP/2 without ALPN is the
		// configuration's (codec_type AUTO, checked below).
		if f.Status != translate.Approximated || !strings.HasPrefix(f.Configured, "TLS filter chains with Secret ns/cert-a, ns/cert-wild") ||
			len(f.Caveats) != 1 || f.Caveats[0].Reason != report.CaveatCertificateByRouteHostname {
			t.Errorf("%s rule %d: %s %s", f.Route, f.Rule, f.Status, recordText(f))
		}
	}
	for _, fc := range chainsOf(l) {
		for _, nf := range fc.GetFilters() {
			hcm := &hcmv3.HttpConnectionManager{}
			if err := nf.GetTypedConfig().UnmarshalTo(hcm); err != nil {
				t.Fatal(err)
			}
			if hcm.GetCodecType() != hcmv3.HttpConnectionManager_AUTO {
				t.Errorf("filter chain %s: codec_type %s, but the finding says AUTO", fc.GetName(), hcm.GetCodecType())
			}
		}
	}
	if n != len(m.Rules) {
		t.Errorf("%d listener.https findings for %d rules", n, len(m.Rules))
	}
}

// TestTLSRedirectKeepsHTTPS: a redirect with no scheme on an HTTPS
// listener sends https, and names the port only when it is not 443.
func TestTLSRedirectKeepsHTTPS(t *testing.T) {
	ca := tlsCA(t)
	for _, tc := range []struct {
		bind *translate.Bind
		port uint32
	}{{nil, 0}, {&translate.Bind{Address: "127.0.0.1", Port: 8443}, 8443}} {
		m := tlsModel(t, ca, tc.bind)
		res, err := translate.Run(m, []translate.Target{{Backend: New()}}, false)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		_, bs := generate(t, m, translate.Options{})
		l := tlsListenerOf(t, bs)
		rc, err := chainRoutes(l.GetFilterChains()[0])
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, vh := range rc.GetVirtualHosts() {
			for _, rt := range vh.GetRoutes() {
				if rd := rt.GetRedirect(); rd != nil {
					found = true
					if rd.GetSchemeRedirect() != "" || rd.GetPortRedirect() != tc.port {
						t.Errorf("port %d: redirect %v", tc.port, rd)
					}
				}
			}
		}
		if !found {
			t.Fatal("no redirect on the HTTPS listener")
		}
		for _, f := range res.Report.Findings {
			// The Location is the configuration's, checked above.
			if f.Feature == translate.FeatureRequestRedirect && (f.Status != translate.Honoured || f.Configured != "redirect response_code FOUND") {
				t.Errorf("port %d: redirect finding %s %s", tc.port, f.Status, recordText(f))
			}
		}
	}
}

// TestTLSJudgeCatchesTampering: the judge reads which certificate each
// SNI gets and how each chain routes the Hosts, and fails on a change.
func TestTLSJudgeCatchesTampering(t *testing.T) {
	ca := tlsCA(t)
	m := tlsModel(t, ca, nil)
	out, _ := generate(t, m, translate.Options{})
	data := out.Files[0].Data
	if _, err := observe(t, m, translate.Options{}, data); err != nil {
		t.Fatalf("untampered: %v", err)
	}
	swapped := bytes.ReplaceAll(data, []byte("cert-a/tls.crt"), []byte("cert-any/tls.crt"))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"wrong certificate for an SNI", swapped, "SNI \"a.example.com\""},
		{"no tls_inspector", bytes.Replace(data, []byte(tlsInspectorName), []byte("envoy.filters.listener.other"), 1), "SNI"},
		{"a Host of another certificate served", bytes.Replace(data, []byte("status: 421"), []byte("status: 200"), 1), "421"},
		{"a wildcard server name dropped", bytes.Replace(data, []byte("        - b.example.com\n        - '*.example.com'\n"), []byte("        - b.example.com\n"), 1), "SNI \"gwretry-probe.example.com\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if bytes.Equal(tt.data, data) {
				t.Fatal("the edit changed nothing")
			}
			_, err := observe(t, m, translate.Options{}, tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
	// A TLS listener written as plain HTTP is caught.
	_, bs := generate(t, m, translate.Options{})
	tlsListenerOf(t, bs).GetFilterChains()[0].TransportSocket = nil
	plain, err := encode(bs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := observe(t, m, translate.Options{}, plain); err == nil || !strings.Contains(err.Error(), "terminates TLS false, but the listener is HTTPS true") {
		t.Errorf("plain chain on a TLS listener: %v", err)
	}
}

// TestTLSField serves the generated TLS settings with Go's TLS stack as
// Envoy would pick them (envoyChainFor by SNI, the chain's certificate
// files, envoyVirtualHost by Host) and connects with a Go TLS client that
// trusts only the test CA: each SNI gets a certificate that verifies for
// it, its Host reaches its virtual host, a Host of another certificate is
// answered 421 and an unknown Host reaches the catch-all. This is
// config-level: no envoy binary runs here.
func TestTLSField(t *testing.T) {
	ca := tlsCA(t)
	m := tlsModel(t, ca, &translate.Bind{Address: "127.0.0.1", Port: 8443})
	_, bs := generate(t, m, translate.Options{})
	l := tlsListenerOf(t, bs)
	cfg := &tls.Config{
		GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
			fc, err := envoyChainFor(l, hi.ServerName)
			if err != nil || fc == nil {
				return nil, fmt.Errorf("no filter chain for %q: %v", hi.ServerName, err)
			}
			c, err := chainCertificate(fc)
			if err != nil {
				return nil, err
			}
			kp, err := tls.LoadX509KeyPair(c.cert, c.key)
			return &kp, err
		},
		NextProtos: []string{"http/1.1"},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fc, err := envoyChainFor(l, r.TLS.ServerName)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		rc, err := chainRoutes(fc)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		vh, err := envoyVirtualHost(rc, host)
		switch {
		case err != nil:
			http.Error(w, err.Error(), 500)
		case vh == nil:
			w.WriteHeader(404)
		case isMisdirected(vh):
			w.WriteHeader(misdirectedStatus)
		default:
			_, _ = io.WriteString(w, vh.GetName())
		}
	}), TLSConfig: cfg, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	get := func(sni, host string) (int, string, *x509.Certificate, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{ServerName: sni, RootCAs: ca.pool}}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequest("GET", "https://"+ln.Addr().String()+"/", nil)
		if err != nil {
			return 0, "", nil, err
		}
		req.Host = host
		resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.TLS.PeerCertificates[0], nil
	}
	tests := []struct {
		sni, host string
		cn        string
		status    int
		vh        string
	}{
		{"a.example.com", "a.example.com", "cert-a", 200, "https-8443_a.example.com"},
		{"b.example.com", "b.example.com", "cert-wild", 200, "https-8443_b.example.com"},
		{"x.example.com", "x.example.com", "cert-wild", 200, "_wildcard"},
		{"x.y.example.com", "x.y.example.com", "cert-wild", 200, "_wildcard"},
		{"any.example.org", "any.example.org", "cert-any", 200, "_any"},
		// SNI and Host of different certificates: 421.
		{"a.example.com", "b.example.com", "cert-a", 421, ""},
		{"x.example.com", "a.example.com", "cert-wild", 421, ""},
		{"any.example.org", "a.example.com", "cert-any", 421, ""},
		// Same certificate (one Gateway listener): served.
		{"b.example.com", "x.example.com", "cert-wild", 200, "_wildcard"},
	}
	for _, tt := range tests {
		t.Run(tt.sni+"/"+tt.host, func(t *testing.T) {
			status, body, cert, err := get(tt.sni, tt.host)
			if err != nil {
				t.Fatal(err)
			}
			if cert.Subject.CommonName != tt.cn {
				t.Errorf("certificate %s, want %s", cert.Subject.CommonName, tt.cn)
			}
			if status != tt.status || (tt.vh != "" && !strings.Contains(body, tt.vh)) {
				t.Errorf("status %d body %q, want %d %q", status, body, tt.status, tt.vh)
			}
		})
	}
}

// TestTLSRetryOnHTTPS: the retrying rule's route on a TLS filter chain
// keeps its retry policy and timeouts, and the judge reads the same
// behaviour from every chain it is on.
func TestTLSRetryOnHTTPS(t *testing.T) {
	ca := tlsCA(t)
	m := tlsModel(t, ca, nil)
	out, bs := generate(t, m, translate.Options{})
	l := tlsListenerOf(t, bs)
	fc, err := envoyChainFor(l, "a.example.com")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := chainRoutes(fc)
	if err != nil {
		t.Fatal(err)
	}
	vh, err := envoyVirtualHost(rc, "a.example.com")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, rt := range vh.GetRoutes() {
		if rt.GetName() != "ns_exact_r0" {
			continue
		}
		found = true
		p := rt.GetRoute().GetRetryPolicy()
		if p.GetNumRetries().GetValue() != 2 || p.GetPerTryTimeout().AsDuration() != time.Second || rt.GetRoute().GetTimeout().AsDuration() != 5*time.Second {
			t.Errorf("retry policy on the TLS chain %v, timeout %v", p, rt.GetRoute().GetTimeout())
		}
	}
	if !found {
		t.Fatal("the retrying rule is not on the a.example.com filter chain")
	}
	obs, err := observe(t, m, translate.Options{}, out.Files[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	b := obs["ns_exact_r0"][translate.Idempotent]
	if b.Retries != 2 || fmt.Sprint(b.Codes) != "[503]" || b.TryTimeout.Value != time.Second || b.RequestTimeout.Value != 5*time.Second {
		t.Errorf("behaviour on HTTPS %+v", b)
	}
}

// TestTLSUngeneratedStaysUnsupported: without --tls-dir the HTTPS
// listeners are not generated, nothing terminates TLS and the rules keep
// the unsupported listener.https finding.
func TestTLSUngeneratedStaysUnsupported(t *testing.T) {
	m := testmodel.LoadText(t, tlsManifests, translate.ResolveOptions{})
	res, err := translate.Run(m, []translate.Target{{Backend: New()}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range m.Listeners {
		if l.TLS {
			t.Fatalf("listener %s is TLS without --tls-dir", l.Name)
		}
	}
	n := 0
	for _, f := range res.Report.Findings {
		if f.Feature == translate.FeatureListenerHTTPS {
			n++
			if f.Reason != report.ReasonListenerNotGenerated {
				t.Errorf("%s rule %d: %s %s", f.Route, f.Rule, f.Status, recordText(f))
			}
		}
	}
	if n == 0 {
		t.Error("no listener.https finding")
	}
}

// TestTLSWithoutCatchAll: without a listener for any hostname there is no
// default_filter_chain (an unknown SNI gets no handshake) and a Host no
// hostname covers is answered 404; the judge checks both.
func TestTLSWithoutCatchAll(t *testing.T) {
	ca := tlsCA(t)
	manifests := strings.Replace(tlsManifests, "  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any}]}}\n", "", 1)
	manifests = manifests[:strings.LastIndex(manifests, "---\n")]
	m := testmodel.LoadText(t, manifests, translate.ResolveOptions{TLSDir: ca.dir})
	if _, err := translate.Run(m, []translate.Target{{Backend: New()}}, false); err != nil {
		t.Fatalf("Run: %v", err)
	}
	_, bs := generate(t, m, translate.Options{})
	l := tlsListenerOf(t, bs)
	if l.GetDefaultFilterChain() != nil {
		t.Error("a default_filter_chain without a catch-all hostname")
	}
	if fc, err := envoyChainFor(l, "other.example.org"); err != nil || fc != nil {
		t.Errorf("unknown SNI gets chain %v (%v)", fc.GetName(), err)
	}
	fc, err := envoyChainFor(l, "a.example.com")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := chainRoutes(fc)
	if err != nil {
		t.Fatal(err)
	}
	if vh, err := envoyVirtualHost(rc, "other.example.org"); err != nil || vh != nil {
		t.Errorf("unknown Host reaches %v (%v), want 404", vh.GetName(), err)
	}
	if vh, err := envoyVirtualHost(rc, "x.example.com"); err != nil || !isMisdirected(vh) {
		t.Errorf("Host of the wildcard certificate on the a.example.com chain: %v (%v), want 421", vh.GetName(), err)
	}
}
