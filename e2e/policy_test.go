//go:build unix

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/translate"
)

// policyManifest has two Gateways, both generated on --listen: an admin's
// whose RetryPolicy overrides every rule's retry with attempts 3, and a
// team's whose RetryPolicy defaults retry to attempts 4. Route "override"
// (on the admin's) asks for attempts 1 itself; route "own" (on the
// team's) asks for attempts 1 too, and keeps it.
const policyManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: admin, namespace: e2e}
spec:
  gatewayClassName: gwretry
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: team, namespace: e2e}
spec:
  gatewayClassName: gwretry
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: gwretry.io/v1alpha1
kind: RetryPolicy
metadata: {name: admin-override, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: admin}]
  override: {retry: {attempts: 3, codes: [503]}}
---
apiVersion: gwretry.io/v1alpha1
kind: RetryPolicy
metadata: {name: team-default, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: team}]
  default: {retry: {attempts: 4, codes: [503]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: override, namespace: e2e}
spec:
  parentRefs: [{name: admin}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /override}}]
    retry: {attempts: 1, codes: [503]}
    backendRefs: [{name: override, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: own, namespace: e2e}
spec:
  parentRefs: [{name: team}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /own}}]
    retry: {attempts: 1, codes: [503]}
    backendRefs: [{name: own, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ready, namespace: e2e}
spec:
  parentRefs: [{name: team}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /ready}}]
    backendRefs: [{name: ready, port: 8080}]
`

// TestPolicyRetriesLive runs policyManifest on real nginx and HAProxy: the
// admin's Gateway override really makes 1+3 tries of a request the route
// alone would try twice, and the route's own attempts 1 beats the team's
// Gateway default of 4 (2 tries). The report names the source of each.
func TestPolicyRetriesLive(t *testing.T) {
	for _, tg := range liveTargets() {
		if tg.name != "nginx" && tg.name != "haproxy" {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			bin := proxytest.Require(t, tg.name)
			version, _ := tg.version(t, bin)
			dir := t.TempDir()
			override, own, ready := flaky.New(t, "override"), flaky.New(t, "own"), flaky.New(t, "ready")
			override.Handle("/override", flaky.AlwaysFail(503))
			own.Handle("/own", flaky.AlwaysFail(503))
			listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
			report := generateManifest(t, dir, policyManifest, tg.name+"@"+version, listen, []string{
				fmt.Sprintf("override.%s:8080=%s", prove.Namespace, override.Addr()),
				fmt.Sprintf("own.%s:8080=%s", prove.Namespace, own.Addr()),
				fmt.Sprintf("ready.%s:8080=%s", prove.Namespace, ready.Addr())})
			for _, c := range []struct{ route, source string }{
				{prove.Namespace + "/override", "RetryPolicy e2e/admin-override override"},
				{prove.Namespace + "/own", "HTTPRoute"},
			} {
				var found bool
				for _, f := range report.Findings {
					if f.Target == tg.name && f.Route == c.route && f.Feature == translate.FeatureRetryAttempts {
						found = true
						if f.Source != c.source {
							t.Errorf("%s retry.attempts: source %q, want %q", c.route, f.Source, c.source)
						}
					}
				}
				if !found {
					t.Errorf("%s: no retry.attempts finding", c.route)
				}
			}
			addr := tg.start(t, filepath.Join(dir, "out"), listen)
			waitReadyT(t, addr)
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for _, c := range []struct {
				path  string
				be    *flaky.Server
				tries int
			}{{"/override", override, 4}, {"/own", own, 2}} {
				resp, err := client.Get("http://" + addr + c.path)
				if err != nil {
					t.Fatalf("%s: %v", c.path, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				c.be.WaitIdle(5 * time.Second)
				if got := len(c.be.Hits(c.path)); got != c.tries {
					t.Errorf("%s: the backend saw %d tries, want %d (status %s)", c.path, got, c.tries, resp.Status)
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("%s: status %s, want 503 after the last try", c.path, resp.Status)
				}
			}
		})
	}
}
