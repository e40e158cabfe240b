//go:build unix

package proxytest

import (
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
)

// traefikLoadTimeout bounds how long a check waits for Traefik to load the
// dynamic configuration.
const traefikLoadTimeout = 10 * time.Second

// TraefikConfig is a test copy of a generated Traefik configuration,
// written by WriteTraefikConfig.
type TraefikConfig = dataplane.TraefikConfig

// TraefikCheck starts the real Traefik on a generated static and dynamic
// configuration and fails the test unless Traefik loaded every router,
// middleware and service of the dynamic configuration enabled and without
// error, with the rules as written, and logged no error. Traefik is stopped
// by its pid before TraefikCheck returns; the check takes about a second.
func TraefikCheck(t testing.TB, static, dynamic []byte) {
	t.Helper()
	cfg := WriteTraefikConfig(t, static, dynamic, nil)
	p := StartTraefik(t, cfg.StaticPath, cfg.API)
	defer p.Stop()
	if err := cfg.WaitLoaded(p, traefikLoadTimeout); err != nil {
		t.Fatalf("Traefik did not load the configuration: %v\n--- dynamic.yaml\n%s--- Traefik log\n%s", err, dynamic, p.Output())
	}
	if errs := dataplane.TraefikErrorLines(p.Output()); len(errs) > 0 {
		t.Fatalf("Traefik logged errors:\n%s\n--- dynamic.yaml\n%s--- Traefik log\n%s", strings.Join(errs, "\n"), dynamic, p.Output())
	}
}

// WriteTraefikConfig writes a test copy of a generated configuration to a
// temporary directory: every entry point listens on addrs[name] when given,
// else on a free 127.0.0.1 port; the file provider reads the copy of
// dynamic by its absolute path; Traefik's API is enabled on another free
// loopback port. Start it with StartTraefik(t, cfg.StaticPath, cfg.API).
func WriteTraefikConfig(t testing.TB, static, dynamic []byte, addrs map[string]string) *TraefikConfig {
	t.Helper()
	cfg, err := dataplane.WriteTraefikConfig(t.TempDir(), static, dynamic, addrs, testPorts(t))
	if err != nil {
		t.Fatalf("WriteTraefikConfig: %v", err)
	}
	return cfg
}
