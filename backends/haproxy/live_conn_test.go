//go:build unix

package haproxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestLiveConnectionTimeouts runs a ConnectionTimeoutPolicy in the real
// HAProxy: a backend that stays silent is cut after serverTimeout (3s:
// 504), long before the defaults (60s). It also pins down what the
// OpenShift router's clientTimeout (HAProxy's timeout client) does not
// do, which the other targets' findings rely on: a client that stops
// sending its body while the backend has not answered is not cut after
// clientTimeout (1s); serverTimeout ends the request (504 after 3s).
func TestLiveConnectionTimeouts(t *testing.T) {
	proxytest.Require(t, "haproxy")
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(6 * time.Second):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(silent.Close)
	port := proxytest.FreePort(t)
	manifests := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: svc, port: 8080}]}]
---
apiVersion: gwretry.io/v1alpha1
kind: ConnectionTimeoutPolicy
metadata: {name: tuning, namespace: ns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  clientTimeout: 1s
  serverTimeout: 3s
`
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	m := testmodel.Load(t, []string{p}, translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: port}},
		"svc:8080="+strings.TrimPrefix(silent.URL, "http://"))
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: checkedVersion}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if (f.Feature == translate.FeatureConnClientTimeout || f.Feature == translate.FeatureConnServerTimeout) && f.Status != translate.Honoured {
			t.Fatalf("%s is %s, the test proves an honoured claim: %s", f.Feature, f.Status, f.Message)
		}
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, res.Files[0].Data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proxytest.StartHAProxy(t, file, addr)

	// serverTimeout: the backend never answers.
	start := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusGatewayTimeout || took < 2500*time.Millisecond || took > 10*time.Second {
		t.Errorf("silent backend: %d after %v, want 504 after about 3s", resp.StatusCode, took)
	}

	// clientTimeout: the client sends 2 of 10 body bytes and stops.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start = time.Now()
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(conn)
	if took := time.Since(start); !strings.HasPrefix(string(rest), "HTTP/1.1 504") || took < 2500*time.Millisecond {
		t.Errorf("stalled body: %q after %v, want HAProxy's 504 after serverTimeout (3s), not a close after clientTimeout (1s)", rest, took)
	}
}
