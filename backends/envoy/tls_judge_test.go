package envoy

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// tlsSingleManifests: one HTTPS Gateway listener (any host, cert-any) on
// 443 serving an exact, a wildcard and a catch-all route, and a second
// HTTPS listener on 8443 (a.example.com, cert-a): each port serves the
// routes of one Gateway listener, so listener.https is honoured.
const tlsSingleManifests = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: any, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert-any}]}}
  - {name: a, port: 8443, protocol: HTTPS, hostname: a.example.com, tls: {certificateRefs: [{name: cert-a}]}}
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
  parentRefs: [{name: gw, sectionName: any}]
  hostnames: [b.example.com]
  rules:
  - backendRefs: [{name: svc, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wild, namespace: ns}
spec:
  parentRefs: [{name: gw, sectionName: any}]
  hostnames: ["*.example.com"]
  rules:
  - matches: [{path: {type: PathPrefix, value: /w}}]
    backendRefs: [{name: svc, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: any, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /any}}]
    backendRefs: [{name: svc, port: 8080}]
`

func tlsSingleModel(t *testing.T, ca *testCA) *translate.Model {
	t.Helper()
	m := testmodel.LoadText(t, tlsSingleManifests, translate.ResolveOptions{TLSDir: ca.dir})
	return m
}

// tamperedBackend is Envoy with its output edited before Run judges it.
type tamperedBackend struct {
	*Backend
	edit func([]byte) []byte
}

func (b tamperedBackend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	out, err := b.Backend.Generate(m, opts)
	if err != nil {
		return nil, err
	}
	for i := range out.Files {
		out.Files[i].Data = b.edit(out.Files[i].Data)
	}
	return out, nil
}

// TestTLSHonouredJudged: where each port serves one Gateway listener's
// routes, listener.https is honoured, translate's judge accepts it (the
// Envoy judge fills Behaviour.TLS per port and hostname with the files of
// the chain Envoy picks by SNI), and a certificate path edited in the
// file makes Run fail with an internal error.
func TestTLSHonouredJudged(t *testing.T) {
	ca := tlsCA(t)
	m := tlsSingleModel(t, ca)
	res, err := translate.Run(m, []translate.Target{{Backend: New()}}, false)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	n := 0
	for _, f := range res.Report.Findings {
		if f.Feature != translate.FeatureListenerHTTPS {
			continue
		}
		n++
		if f.Status != translate.Honoured {
			t.Errorf("%s rule %d: %s %s", f.Route, f.Rule, f.Status, f.Text())
		}
	}
	if n != len(m.Rules) {
		t.Errorf("%d listener.https findings for %d rules", n, len(m.Rules))
	}

	// What the judge reads back: the model's certificate for every HTTPS
	// virtual host that serves the rule.
	out, _ := generate(t, m, translate.Options{})
	obs, err := observe(t, m, translate.Options{}, out.Files[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Rules {
		want := map[string]translate.Certificate{}
		for _, l := range m.Listeners {
			for _, vh := range l.VirtualHosts {
				for _, rm := range vh.Routes {
					if rm.Rule == r {
						want[translate.TLSKey(l.Port, vh.Hostname)] = translate.Certificate{CertFile: vh.Certificate.CertFile, KeyFile: vh.Certificate.KeyFile}
					}
				}
			}
		}
		if len(obs[r.Name]) == 0 {
			t.Fatalf("rule %s: no behaviour", r.Name)
		}
		for c, b := range obs[r.Name] {
			if len(b.TLS) != len(want) {
				t.Errorf("rule %s %s: TLS %v, want %v", r.Name, c, b.TLS, want)
			}
			for k, w := range want {
				if b.TLS[k] != w {
					t.Errorf("rule %s %s: TLS[%q] %+v, want %+v", r.Name, c, k, b.TLS[k], w)
				}
			}
		}
	}
	// The catch-all route is on both ports: 443 "" (default_filter_chain)
	// and 8443 a.example.com.
	anyRule := ""
	for _, r := range m.Rules {
		if r.Route == "ns/any" {
			anyRule = r.Name
		}
	}
	for _, b := range obs[anyRule] {
		if !strings.HasSuffix(b.TLS[translate.TLSKey(443, "")].CertFile, "/ns/cert-any/tls.crt") ||
			!strings.HasSuffix(b.TLS[translate.TLSKey(8443, "a.example.com")].CertFile, "/ns/cert-a/tls.crt") {
			t.Errorf("catch-all rule TLS %v", b.TLS)
		}
	}

	// A tampered certificate path: Run fails with an internal error.
	edit := func(d []byte) []byte {
		return bytes.ReplaceAll(d, []byte("/ns/cert-a/tls.crt"), []byte("/ns/cert-any/tls.crt"))
	}
	if bytes.Equal(edit(out.Files[0].Data), out.Files[0].Data) {
		t.Fatal("the edit changed nothing")
	}
	_, err = translate.Run(m, []translate.Target{{Backend: tamperedBackend{Backend: New(), edit: edit}}}, false)
	var ie *translate.InternalError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "cert-any/tls.crt") {
		t.Errorf("tampered certificate: %v", err)
	}
	// checkTLS fails Observe first; what observeTLS reads from the edited
	// file alone is what translate's judge then rejects.
	bs, err := decode(edit(out.Files[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	j := &judge{rules: map[string]*translate.Rule{}, out: map[string]map[translate.MethodClass]translate.Behaviour{}}
	for _, r := range m.Rules {
		j.rules[r.Name] = r
		j.out[r.Name] = map[translate.MethodClass]translate.Behaviour{translate.Idempotent: {}}
	}
	if err := j.observeTLS(bs); err != nil {
		t.Fatal(err)
	}
	got := j.out[anyRule][translate.Idempotent].TLS[translate.TLSKey(8443, "a.example.com")]
	if !strings.HasSuffix(got.CertFile, "/ns/cert-any/tls.crt") {
		t.Errorf("edited file read back as %+v", got)
	}
}
