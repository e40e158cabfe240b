package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const httpsGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec:
  gatewayClassName: example
  listeners:
  - {name: http, protocol: HTTP, port: 8080}
  - name: https
    protocol: HTTPS
    port: 8443
    tls: {certificateRefs: [{name: cert}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: both, namespace: shop}
spec:
  parentRefs: [{name: gw}]
  rules:
  - backendRefs: [{name: cart, port: 8080}]
    retry: {attempts: 2}
  - matches: [{path: {type: PathPrefix, value: /b}}]
    backendRefs: [{name: cart, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: secure, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  rules:
  - backendRefs: [{name: cart, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: typo, namespace: shop}
spec:
  parentRefs: [{name: gw, sectionName: htps}]
  rules:
  - backendRefs: [{name: cart, port: 8080}]
`

// An HTTPS listener whose certificate --tls-dir lacks is not generated:
// every rule it serves gets an unsupported listener.https finding, so that
// neither the report nor --fail-on unsupported passes it in silence.
func TestMissingCertificateIsAFindingOnEveryRule(t *testing.T) {
	in := writeFile(t, httpsGateway)
	tlsDir := t.TempDir()
	code, stdout, stderr := gwretry(t, "", "check", in, "--target", "nginx", "--tls-dir", tlsDir, "--report", "json", "--fail-on", "unsupported")
	if code != exitFailOn {
		t.Errorf("exit %d, want %d (--fail-on unsupported)\n%s", code, exitFailOn, stderr)
	}
	var r struct {
		Findings []struct {
			Route   string `json:"route"`
			Rule    int    `json:"rule"`
			Feature string `json:"feature"`
			Status  string `json:"status"`
			Reason  string `json:"reason"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range r.Findings {
		if f.Feature == "listener.https" {
			got[f.Route+"/"+string(rune('0'+f.Rule))] = f.Status + " " + f.Reason
		}
	}
	want := map[string]string{
		"shop/both/0":   "unsupported ListenerNotGenerated",
		"shop/both/1":   "unsupported ListenerNotGenerated",
		"shop/secure/0": "unsupported RuleNotTranslated",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s listener.https: %q, want %q", k, got[k], w)
		}
	}
	if !strings.Contains(stderr, "Secret shop/cert is not in --tls-dir") || !strings.Contains(stderr, filepath.Join(tlsDir, "shop", "cert", "tls.crt")) {
		t.Errorf("stderr does not name the Secret and the file:\n%s", stderr)
	}
}

// A sectionName that matches no listener names it and lists the
// Gateway's listeners; it said "no listener matches its sectionName and
// port", which hid the typo.
func TestSectionNameOfNoListener(t *testing.T) {
	in := writeFile(t, httpsGateway)
	tlsDir := t.TempDir()
	for _, f := range []string{"tls.crt", "tls.key"} {
		os.MkdirAll(filepath.Join(tlsDir, "shop", "cert"), 0o755)
		os.WriteFile(filepath.Join(tlsDir, "shop", "cert", f), []byte("x"), 0o644)
	}
	_, _, stderr := gwretry(t, "", "check", in, "--target", "nginx", "--tls-dir", tlsDir, "--report", "none", "-q")
	want := `warning: HTTPRoute shop/typo: parentRefs[0]: no usable listener on Gateway shop/gw: its sectionName "htps" matches no listener; the Gateway's listeners are http (HTTP, port 8080), https (HTTPS, port 8443)`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks\n%s\n%s", want, stderr)
	}
}
