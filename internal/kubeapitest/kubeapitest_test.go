package kubeapitest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

const route = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  rules:
  - backendRefs: [{name: svc, port: 8080}]
    timeouts: {request: %s, backendRequest: 2s}
`

// TestServer starts a server, installs the Gateway API's standard CRDs
// and gwretry's policy CRDs, and checks the dry-run verdicts and that a
// user of KubeconfigFor is held to RBAC while the admin is not.
func TestServer(t *testing.T) {
	s := Start(t)
	s.InstallCRDs(t, GatewayAPICRDs(t, "standard")...)
	s.InstallCRDs(t, PolicyCRDs(t)...)
	// Installing again replaces, and waits as well.
	s.InstallCRDs(t, PolicyCRDs(t)...)

	if err := s.DryRunCreate([]byte(fmt.Sprintf(route, "3s"))); err != nil {
		t.Fatalf("valid route refused: %v", err)
	}
	err := s.DryRunCreate([]byte(fmt.Sprintf(route, "1s")))
	var st *StatusError
	if !errors.As(err, &st) || st.Reason != "Invalid" || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "spec.rules[0].timeouts" {
		t.Fatalf("backendRequest above request: got %#v, want Invalid at spec.rules[0].timeouts", err)
	}
	err = s.DryRunCreate([]byte("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r}\nspec: {bogus: 1}\n"))
	if !errors.As(err, &st) || st.Reason != "BadRequest" {
		t.Fatalf("unknown field: got %v, want BadRequest (strict field validation)", err)
	}
	if err := s.DryRunCreate([]byte("apiVersion: gwretry.io/v1alpha1\nkind: NoSuchPolicy\nmetadata: {name: p}\n")); err == nil || errors.As(err, &st) {
		t.Fatalf("unknown kind: got %v, want a discovery error", err)
	}
	if _, err := s.resource("gwretry.io/v1alpha1", "RetryPolicy"); err != nil {
		t.Fatalf("RetryPolicy not served: %v", err)
	}

	list := "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes"
	if code := get(t, s.HTTPClient(), s.URL+list); code != http.StatusOK {
		t.Errorf("admin: GET %s: %d, want 200", list, code)
	}
	viewer := clientOf(t, s.KubeconfigFor(t, "viewer", "testers"))
	if code := get(t, viewer, s.URL+list); code != http.StatusForbidden {
		t.Errorf("viewer without a role: GET %s: %d, want 403", list, code)
	}
	if code := get(t, viewer, s.URL+"/version"); code != http.StatusOK {
		t.Errorf("viewer: GET /version: %d, want 200", code)
	}
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// clientOf reads a kubeconfig of KubeconfigFor as a client would.
func clientOf(t *testing.T, path string) *http.Client {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Clusters []struct {
			Cluster struct {
				CA string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Cert string `json:"client-certificate-data"`
				Key  string `json:"client-key-data"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		t.Fatal(err)
	}
	if len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		t.Fatalf("kubeconfig %s: want one cluster and one user:\n%s", path, raw)
	}
	decode := func(s string) []byte {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pair, err := tls.X509KeyPair(decode(kc.Users[0].User.Cert), decode(kc.Users[0].User.Key))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(decode(kc.Clusters[0].Cluster.CA)) {
		t.Fatal("no CA in the kubeconfig")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}}}
}
