//go:build unix

package proxytest

import (
	"testing"

	"github.com/gwretry/gwretry/internal/dataplane"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a proxy to bind, and that no other caller of FreePort (or of
// dataplane.ReservePort, in this test binary or another one running at the
// same time) holds until t ends.
func FreePort(t testing.TB) int {
	t.Helper()
	p, release, err := dataplane.ReservePort()
	if err != nil {
		t.Fatalf("FreePort: %v", err)
	}
	t.Cleanup(release)
	return p
}

// Proxy is a data plane process started by a test. It runs in the
// foreground in its own process group and is stopped when the test ends.
type Proxy = dataplane.Proxy

// StartNginx runs nginx with the configuration file confPath (which has no
// pid or error_log directive) and waits until addr accepts connections.
// nginx's prefix, pid file and logs live in a temporary directory.
func StartNginx(t testing.TB, confPath, addr string) *Proxy {
	t.Helper()
	bin := Require(t, "nginx")
	return started(t, "nginx")(dataplane.StartNginx(bin, confPath, addr))
}

// StartHAProxy runs haproxy in the foreground (-db) with the configuration
// file cfgPath and waits until addr accepts connections.
func StartHAProxy(t testing.TB, cfgPath, addr string) *Proxy {
	t.Helper()
	bin := Require(t, "haproxy")
	return started(t, "haproxy")(dataplane.StartHAProxy(bin, cfgPath, addr))
}

// StartTraefik runs traefik with the static configuration staticPath and
// waits until addr accepts connections. The entry point accepts
// connections before the file provider has loaded the routers: callers
// should poll a known route until it answers.
func StartTraefik(t testing.TB, staticPath, addr string) *Proxy {
	t.Helper()
	bin := Require(t, "traefik")
	return started(t, "traefik")(dataplane.StartTraefik(bin, staticPath, addr))
}

// StartEnvoy runs envoy with the bootstrap confPath and waits until addr
// accepts connections. Unlike the others it skips when envoy is missing,
// even in CI: no envoy binary is installed there.
func StartEnvoy(t testing.TB, confPath, addr string) *Proxy {
	t.Helper()
	bin := Find("envoy")
	if bin == "" {
		t.Skip("envoy not found (set GWRETRY_ENVOY to run the live Envoy scenarios)")
	}
	return started(t, "envoy")(dataplane.StartEnvoy(bin, confPath, addr))
}

// started fails the test when the proxy did not start, and stops it when
// the test ends (logging its output when the test failed).
func started(t testing.TB, name string) func(*Proxy, error) *Proxy {
	return func(p *Proxy, err error) *Proxy {
		t.Helper()
		if err != nil {
			t.Fatalf("%v", err)
		}
		t.Cleanup(func() {
			p.Stop()
			if t.Failed() {
				t.Logf("%s output:\n%s", name, p.Output())
			}
		})
		return p
	}
}

// testPorts hands out FreePort addresses held until t ends.
func testPorts(t testing.TB) *dataplane.Ports {
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)
	return ports
}
