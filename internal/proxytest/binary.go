// Package proxytest finds the real data plane binaries (nginx, haproxy,
// traefik) that tests run generated configurations through. It is a thin
// testing.TB layer over internal/dataplane, which `gwretry prove` uses too.
//
// Outside CI a missing binary skips the test; with CI=true it fails it, so a
// CI run can never pass without having checked a configuration for real.
// The fast tier (go test -short, make fast) runs no data plane: every live
// test skips there, in CI too, and the full tier (make test) runs them.
package proxytest

import (
	"os"
	"testing"

	"github.com/gwretry/gwretry/internal/dataplane"
)

// TraefikVersion is the Traefik release built from the Go module proxy as a
// test oracle (see tools/traefik and the Makefile).
const TraefikVersion = dataplane.TraefikVersion

// Find returns the path of a data plane binary, or "" when it is not
// installed. It looks at the GWRETRY_<NAME> environment variable, then (for
// traefik) the cached test build, then PATH and /usr/sbin.
func Find(name string) string { return dataplane.Find(name) }

// Require returns the path of a data plane binary. When it is missing the
// test is skipped, or failed when CI=true. In the fast tier (-short) it
// skips the test whatever is installed: live tests belong to the full tier.
func Require(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("live %s test: not in the fast tier (-short)", name)
	}
	if p := Find(name); p != "" {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI but was not found (run `make test`, which installs it, or set %s)", name, dataplane.EnvVar(name))
	}
	t.Skipf("%s not found; `make test` installs it (or set %s)", name, dataplane.EnvVar(name))
	return ""
}
