// Package proxytest finds the real data plane binaries (nginx, haproxy,
// traefik) that tests run generated configurations through.
//
// Outside CI a missing binary skips the test; with CI=true it fails it, so a
// CI run can never pass without having checked a configuration for real.
package proxytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TraefikVersion is the Traefik release built from the Go module proxy as a
// test oracle (see tools/traefik and the Makefile).
const TraefikVersion = "v3.6.12"

// envOverrides maps a binary name to the environment variable that can
// point at it.
var envOverrides = map[string]string{
	"nginx":   "GWRETRY_NGINX",
	"haproxy": "GWRETRY_HAPROXY",
	"traefik": "GWRETRY_TRAEFIK",
	"envoy":   "GWRETRY_ENVOY",
}

// Find returns the path of a data plane binary, or "" when it is not
// installed. It looks at the GWRETRY_<NAME> environment variable, then (for
// traefik) the cached test build, then PATH and /usr/sbin.
func Find(name string) string {
	if v := os.Getenv(envOverrides[name]); v != "" {
		return v
	}
	var candidates []string
	if name == "traefik" {
		if dir, err := os.UserCacheDir(); err == nil {
			candidates = append(candidates, filepath.Join(dir, "gwretry", "traefik-"+TraefikVersion))
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, filepath.Join("/usr/sbin", name))
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return c
		}
	}
	return ""
}

// Require returns the path of a data plane binary. When it is missing the
// test is skipped, or failed when CI=true.
func Require(t testing.TB, name string) string {
	t.Helper()
	if p := Find(name); p != "" {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI but was not found (run `make test`, which installs it, or set %s)", name, envOverrides[name])
	}
	t.Skipf("%s not found; `make test` installs it (or set %s)", name, envOverrides[name])
	return ""
}
