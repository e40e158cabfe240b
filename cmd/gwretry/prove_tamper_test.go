//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

// tamperInput has one rule per kind of claim the tamper suite edits: a
// retry with a backendRequest timeout, header modifiers, a URLRewrite (with
// a retry, whose scenarios play on the rewritten path), a RequestMirror (to
// a Service of its own) and a RequestRedirect.
const tamperInput = `apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: shadow, namespace: shop}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: t, namespace: shop}
spec:
  rules:
  - matches: [{path: {type: PathPrefix, value: /retry}}]
    retry: {attempts: 2, codes: [503]}
    timeouts: {backendRequest: 1s}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /hdr}}]
    filters:
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: a}], remove: [X-B]}}
    - {type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: X-C, value: c}]}}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /rw}}]
    filters:
    - {type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /full}}}
    retry: {attempts: 1, codes: [502]}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /mir}}]
    filters:
    - {type: RequestMirror, requestMirror: {backendRef: {name: shadow, port: 80}}}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: new.example.com, statusCode: 301}}]
`

// tamperEdit replaces Old by New in the generated file the proxy runs
// (a line holding Old is deleted when Delete is set).
type tamperEdit struct {
	Old, New string
	Delete   bool
}

// tamperWrapper writes a shell script that stands in for the data plane
// binary real: it applies edit to the files beside each configuration
// file named by its arguments (nginx -c, haproxy -f and its crt-lists,
// Traefik --configFile and dynamic.yaml), notes each file it changed in
// marker, and execs real with the same arguments. The report is the one gwretry wrote for
// the configuration before the edit.
func tamperWrapper(t *testing.T, dir, real string, edit tamperEdit) (bin, marker string) {
	t.Helper()
	for _, s := range []string{edit.Old, edit.New, real, dir} {
		if strings.ContainsAny(s, "'\n") {
			t.Fatalf("tamper edit or path with a quote or newline: %q", s)
		}
	}
	esc := func(s string) string {
		r := strings.NewReplacer(`\`, `\\`, `|`, `\|`, `.`, `\.`, `*`, `\*`, `[`, `\[`, `]`, `\]`, `^`, `\^`, `$`, `\$`, `&`, `\&`)
		return r.Replace(s)
	}
	expr := fmt.Sprintf(`s|%s|%s|g`, esc(edit.Old), esc(edit.New))
	if edit.Delete {
		expr = fmt.Sprintf(`\|%s|d`, esc(edit.Old))
	}
	marker = filepath.Join(dir, "edited")
	script := fmt.Sprintf(`#!/bin/sh
for a in "$@"; do
  f="${a#--configFile=}"
  [ -f "$f" ] || continue
  for g in "$(dirname "$f")"/*; do
    [ -f "$g" ] || continue
    if grep -qF -e '%s' "$g"; then sed -i -e '%s' "$g" && echo "$g" >> '%s'; fi
  done
done
exec '%s' "$@"
`, edit.Old, expr, marker, real)
	bin = filepath.Join(dir, "proxy")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, marker
}

// TestProveTamperSuite edits one configured fact of the generated
// configuration before the proxy starts, on every installed version of
// each data plane, and wants prove to exit 5 naming the edited claim
// (its rule and feature) and no claim of another rule. Unedited, the same
// input proves with exit 0 and every filter claim held, the mirror's
// included (its Service runs on loopback like the others).
func TestProveTamperSuite(t *testing.T) {
	tmp := privateTemp(t)
	input := filepath.Join(t.TempDir(), "tamper.yaml")
	if err := os.WriteFile(input, []byte(tamperInput), 0o644); err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name string
		edit tamperEdit
		// rule and feature of the claim the edit contradicts; rule < 0 is
		// the unedited run. also is another feature whose record
		// configures the same fact, which may be the one named instead.
		rule    int
		feature translate.Feature
		also    translate.Feature
	}
	none := tc{name: "unedited", rule: -1}
	// On Traefik 3.6, retry.attempts and retry.connectionErrors both
	// configure "retry.attempts 3" (codes need 3.7): with one attempt the
	// refused connection is not retried, which contradicts the
	// connectionErrors claim of that fact.
	cases := map[string][]tc{
		"nginx": {none,
			{"tries 3 to 2", tamperEdit{Old: "proxy_next_upstream_tries 3;", New: "proxy_next_upstream_tries 2;"}, 0, translate.FeatureRetryAttempts, ""},
			{"read timeout 1000ms to 3000ms", tamperEdit{Old: "proxy_read_timeout 1000ms;", New: "proxy_read_timeout 3000ms;"}, 0, translate.FeatureBackendRequestTimeout, ""},
			{"add_header removed", tamperEdit{Old: "add_header X-C c always;", Delete: true}, 1, translate.FeatureResponseHeaderModifier, ""},
			{"return 301 to 302", tamperEdit{Old: "return 301 ", New: "return 302 "}, 4, translate.FeatureRequestRedirect, ""},
			{"mirror removed", tamperEdit{Old: "mirror /_gwretry_mirror_shop_t_r3_0;", Delete: true}, 3, translate.FeatureRequestMirror, ""},
		},
		"haproxy": {none,
			{"retries 2 to 1", tamperEdit{Old: "retries 2", New: "retries 1"}, 0, translate.FeatureRetryAttempts, ""},
			{"http-after-response removed", tamperEdit{Old: "http-after-response ", Delete: true}, 1, translate.FeatureResponseHeaderModifier, ""},
			{"set-path /full edited", tamperEdit{Old: "/full", New: "/fool"}, 2, translate.FeatureURLRewrite, ""},
		},
		"traefik": {none,
			{"attempts 3 to 1", tamperEdit{Old: "attempts: 3", New: "attempts: 1"}, 0, translate.FeatureRetryAttempts, translate.FeatureRetryConnectionErrors},
		},
	}
	for _, name := range []string{"nginx", "haproxy", "traefik"} {
		t.Run(name, func(t *testing.T) {
			proxytest.Require(t, name)
			kind := dataplane.KindOf(name)
			for _, real := range kind.Installed() {
				short, full, err := kind.Version(context.Background(), real)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cases[name] {
					t.Run(full+"/"+c.name, func(t *testing.T) {
						bin, marker := real, ""
						if c.rule >= 0 {
							bin, marker = tamperWrapper(t, t.TempDir(), real, c.edit)
						}
						var stdout, stderr bytes.Buffer
						code := run([]string{"prove", input, "--target", name + "@" + short, "--proxy", bin, "--report", "json", "--timeout", "3m"},
							strings.NewReader(""), &stdout, &stderr)
						var out proveJSON
						if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
							t.Fatalf("exit %d, --report json: %v\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
						}
						if c.rule < 0 {
							if code != exitOK {
								t.Fatalf("unedited: exit %d, want 0\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
							}
							for _, cl := range out.Claims {
								if strings.HasPrefix(string(cl.Feature), "filters.") && cl.Outcome != claimHeld {
									t.Errorf("unedited: rule %d %s %s: %s", cl.Rule, cl.Feature, cl.Outcome, cl.Why)
								}
							}
							return
						}
						if data, _ := os.ReadFile(marker); len(data) == 0 {
							t.Fatalf("the edit %+v changed no configuration", c.edit)
						}
						if code != exitContradicted {
							t.Fatalf("exit %d, want %d\n%s\nstderr:\n%s", code, exitContradicted, stdout.String(), stderr.String())
						}
						named := false
						for _, cl := range out.Claims {
							if cl.Outcome != claimContradicted {
								continue
							}
							if cl.Route != "shop/t" || cl.Rule != c.rule {
								t.Errorf("%s rule %d %s contradicted; only rule %d was edited", cl.Route, cl.Rule, cl.Feature, c.rule)
							}
							named = named || cl.Feature == c.feature || cl.Feature == c.also
						}
						if !named {
							t.Errorf("rule %d %s not contradicted\n%s", c.rule, c.feature, stdout.String())
						}
					})
				}
			}
		})
	}
	if left := leftProxies(t, tmp); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// TestProveProxyDoesNotStart: a data plane that refuses the generated
// configuration is a harness failure: prove exits 70 with one error that
// names the binary and shows its first output lines, once, and
// contradicts no claim.
func TestProveProxyDoesNotStart(t *testing.T) {
	real := proxytest.Require(t, "nginx")
	tmp := privateTemp(t)
	bin, _ := tamperWrapper(t, t.TempDir(), real, tamperEdit{Old: "proxy_next_upstream_tries 3;", New: "proxy_next_upstream_tries three;"})
	short, _, err := dataplane.KindOf("nginx").Version(context.Background(), real)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"prove", example, "--target", "nginx@" + short, "--proxy", bin, "--timeout", "2m"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitInternal {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitInternal, stdout.String(), stderr.String())
	}
	errText := stderr.String()
	if n := strings.Count(errText, "did not start on the generated configuration"); n != 1 {
		t.Errorf("the startup failure is said %d times, want once:\n%s", n, errText)
	}
	if !strings.Contains(errText, `[emerg]`) || !strings.Contains(errText, "proxy_next_upstream_tries") {
		t.Errorf("stderr lacks nginx's own output:\n%s", errText)
	}
	if strings.Contains(stdout.String(), "CONTRADICTED") {
		t.Errorf("a startup failure contradicted claims:\n%s", stdout.String())
	}
	if left := leftProxies(t, tmp); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// httpsInput serves one rule on an HTTP and an HTTPS listener whose
// certificate is Secret shop/cert-a.
const httpsInput = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: shop}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - name: https
    port: 443
    protocol: HTTPS
    hostname: shop.example.com
    tls: {certificateRefs: [{name: cert-a}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: s, namespace: shop}
spec:
  parentRefs: [{name: gw}]
  hostnames: [shop.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /}}]
    retry: {attempts: 1, codes: [503]}
    backendRefs: [{name: web, port: 80}]
`

// writeCert writes a self-signed certificate for host and its key as
// dir/tls.crt and dir/tls.key.
func writeCert(t *testing.T, dir, host string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: host},
		DNSNames: []string{host}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "PRIVATE KEY", Bytes: keyDER}} {
		// The workers of an nginx started as root read the files as nobody.
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProveHTTPS: with --tls-dir, the listener.https claim of a rule is
// proven over TLS on every installed nginx and HAProxy: held when the
// listener serves its Secret's certificate, contradicted (exit 5) when the
// configuration is edited to serve another Secret's. On Traefik the claim
// is listed, not exercised, with why.
func TestProveHTTPS(t *testing.T) {
	tmp := privateTemp(t)
	dir := t.TempDir()
	input := filepath.Join(dir, "https.yaml")
	if err := os.WriteFile(input, []byte(httpsInput), 0o644); err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(dir, "tls")
	writeCert(t, filepath.Join(tlsDir, "shop", "cert-a"), "shop.example.com")
	writeCert(t, filepath.Join(tlsDir, "shop", "cert-b"), "shop.example.com")
	// The workers of an nginx started as root read the files as nobody.
	for _, d := range []string{tmp, dir, tlsDir, filepath.Join(tlsDir, "shop")} {
		_ = os.Chmod(d, 0o755)
	}
	https := func(out proveJSON) proveClaim {
		for _, c := range out.Claims {
			if c.Feature == translate.FeatureListenerHTTPS {
				return c
			}
		}
		return proveClaim{}
	}
	for _, name := range []string{"nginx", "haproxy", "traefik"} {
		t.Run(name, func(t *testing.T) {
			proxytest.Require(t, name)
			kind := dataplane.KindOf(name)
			for _, real := range kind.Installed() {
				short, full, err := kind.Version(context.Background(), real)
				if err != nil {
					t.Fatal(err)
				}
				for _, edited := range []bool{false, true} {
					if edited && name == "traefik" {
						continue
					}
					t.Run(fmt.Sprintf("%s/edited=%v", full, edited), func(t *testing.T) {
						bin := real
						if edited {
							bin, _ = tamperWrapper(t, t.TempDir(), real, tamperEdit{Old: "/cert-a/", New: "/cert-b/"})
						}
						var stdout, stderr bytes.Buffer
						code := run([]string{"prove", input, "--target", name + "@" + short, "--proxy", bin, "--tls-dir", tlsDir, "--report", "json", "--timeout", "2m"},
							strings.NewReader(""), &stdout, &stderr)
						var out proveJSON
						if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
							t.Fatalf("exit %d, --report json: %v\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
						}
						c := https(out)
						want, wantCode := claimHeld, exitOK
						switch {
						case name == "traefik":
							want = claimNotExercised
						case edited:
							want, wantCode = claimContradicted, exitContradicted
						}
						if code != wantCode || c.Outcome != want {
							t.Fatalf("exit %d, listener.https %q (%s); want exit %d, %q\n%s\nstderr:\n%s", code, c.Outcome, c.Why, wantCode, want, stdout.String(), stderr.String())
						}
						if name == "traefik" && !strings.Contains(c.Why, "does not exercise HTTPS listeners on traefik") {
							t.Errorf("traefik: why %q does not say prove does not exercise HTTPS on traefik", c.Why)
						}
					})
				}
			}
		})
	}
	if left := leftProxies(t, tmp); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}
