//go:build unix

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/report"
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

// btpManifest has a BackendTrafficPolicy whose retry retries only failed
// connections before the request was sent and 503
// ([connect-failure, retriable-status-codes], as Envoy Gateway writes it:
// no reset), twice.
const btpManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: e2e}
spec:
  gatewayClassName: gwretry
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: e2e}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /shop}}]
    backendRefs: [{name: shop, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ready, namespace: e2e}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /ready}}]
    backendRefs: [{name: ready, port: 8080}]
---
apiVersion: gateway.envoyproxy.io/v1alpha1
kind: BackendTrafficPolicy
metadata: {name: narrow, namespace: e2e}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: shop}]
  retry:
    numRetries: 2
    retryOn: {triggers: [connect-failure, retriable-status-codes], httpStatusCodes: [503]}
`

// TestBTPRetryOnLive: a BackendTrafficPolicy's triggers without reset
// retry no connection the backend closed after it got the request.
// HAProxy writes the policy's condition (retry-on conn-failure 503: one
// try, ConnErrorsAsPolicy), Traefik retries only requests never sent
// anyway (one try), and nginx, whose proxy_next_upstream error cannot
// tell before from after sending, retries it (three tries) and says so
// (RetriesMoreThanPolicy). 503 is retried twice where the version can.
func TestBTPRetryOnLive(t *testing.T) {
	for _, tg := range liveTargets() {
		want := map[string]struct {
			closed, status int
			reason         report.Reason
			caveat         report.Reason
		}{
			"haproxy": {1, 3, report.ReasonConnErrorsAsPolicy, ""},
			"traefik": {1, 1, report.ReasonConfigured, ""}, // 3.6: no status retry (CodesNeedLaterVersion)
			"nginx":   {3, 3, report.ReasonConfigured, report.CaveatRetriesMoreThanPolicy},
		}[tg.name]
		if want.closed == 0 {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			bin := proxytest.Require(t, tg.name)
			version, _ := tg.version(t, bin)
			dir := t.TempDir()
			shop, ready := flaky.New(t, "shop"), flaky.New(t, "ready")
			shop.Handle("/shop/closed", flaky.CloseAlways())
			shop.Handle("/shop/503", flaky.AlwaysFail(503))
			listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
			rep := generateManifest(t, dir, btpManifest, tg.name+"@"+version, listen, []string{
				fmt.Sprintf("shop.%s:8080=%s", prove.Namespace, shop.Addr()),
				fmt.Sprintf("ready.%s:8080=%s", prove.Namespace, ready.Addr())})
			var found bool
			for _, f := range rep.Findings {
				if f.Target != tg.name || f.Route != prove.Namespace+"/shop" || f.Feature != translate.FeatureRetryConnectionErrors {
					continue
				}
				found = true
				if f.Reason != want.reason {
					t.Errorf("retry.connectionErrors: reason %s, want %s (%+v)", f.Reason, want.reason, f.Decision)
				}
				has := slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatRetriesMoreThanPolicy })
				if has != (want.caveat != "") {
					t.Errorf("retry.connectionErrors: RetriesMoreThanPolicy %v, want %v (%+v)", has, want.caveat != "", f.Caveats)
				}
			}
			if !found {
				t.Fatal("no retry.connectionErrors finding for e2e/shop")
			}
			addr := tg.start(t, filepath.Join(dir, "out"), listen)
			waitReadyT(t, addr)
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for _, c := range []struct {
				path  string
				tries int
			}{{"/shop/closed", want.closed}, {"/shop/503", want.status}} {
				resp, err := client.Get("http://" + addr + c.path)
				if err != nil {
					t.Fatalf("%s: %v", c.path, err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				shop.WaitIdle(5 * time.Second)
				if got := len(shop.Hits(c.path)); got != c.tries {
					t.Errorf("%s: the backend saw %d tries, want %d (status %s)", c.path, got, c.tries, resp.Status)
				}
			}
		})
	}
}
