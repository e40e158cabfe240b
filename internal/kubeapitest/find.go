package kubeapitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gwretry/gwretry/internal/dataplane"
)

// KubeAPIServerVersion is the kube-apiserver release `make deps` builds
// from the Go module proxy into the test cache.
const KubeAPIServerVersion = "v1.34.2"

// GatewayAPIVersion is the release of the Gateway API whose CRDs
// GatewayAPICRDs returns.
const GatewayAPIVersion = "v1.7.0"

// The environment variables that point at the binaries and the CRDs (the
// Makefile exports them), and what each defaults to.
const (
	// EnvKubeAPIServer names the kube-apiserver binary; by default the
	// cached build, CacheDir()/kube-apiserver-VERSION, then PATH.
	EnvKubeAPIServer = "GWRETRY_KUBE_APISERVER"
	// EnvEtcd names the etcd binary; by default etcd on PATH (Debian's
	// etcd-server installs /usr/bin/etcd).
	EnvEtcd = "GWRETRY_ETCD"
	// EnvGatewayAPICRDs names the directory of the Gateway API's
	// config/crd (with standard/ and experimental/ in it); by default
	// CacheDir()/gateway-api-VERSION/crd.
	EnvGatewayAPICRDs = "GWRETRY_GATEWAY_API_CRDS"
)

// Binaries are the programs a Server runs.
type Binaries struct {
	KubeAPIServer, Etcd string
}

// FindBinaries returns the paths of kube-apiserver and etcd; a field is ""
// when that binary is not installed.
func FindBinaries() Binaries {
	var b Binaries
	b.KubeAPIServer = firstExecutable(os.Getenv(EnvKubeAPIServer), cached("kube-apiserver-"+KubeAPIServerVersion), lookPath("kube-apiserver"))
	b.Etcd = firstExecutable(os.Getenv(EnvEtcd), lookPath("etcd"), "/usr/bin/etcd")
	return b
}

// Require returns the binaries a Server runs. When one is missing the test
// is skipped, or failed when CI=true; under -short it is always skipped
// (a live test belongs to the full tier), as internal/proxytest.Require.
func Require(t testing.TB) Binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("live API server test: not in the fast tier (-short)")
	}
	b := FindBinaries()
	missing(t, b.KubeAPIServer == "", "kube-apiserver "+KubeAPIServerVersion, EnvKubeAPIServer, "`make kube-apiserver` builds it")
	missing(t, b.Etcd == "", "etcd", EnvEtcd, "`make deps` installs Debian's etcd-server")
	return b
}

// missing skips the test, or fails it when CI=true, if absent.
func missing(t testing.TB, absent bool, what, env, how string) {
	t.Helper()
	if !absent {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI but was not found (%s; or set %s)", what, how, env)
	}
	t.Skipf("%s not found: %s (or set %s)", what, how, env)
}

// GatewayAPICRDs returns the CRD files of the Gateway API GatewayAPIVersion
// of channel ("standard" or "experimental"), skipping or failing the test
// as Require does when they are not there.
func GatewayAPICRDs(t testing.TB, channel string) []string {
	t.Helper()
	dir := os.Getenv(EnvGatewayAPICRDs)
	if dir == "" {
		dir = cached(filepath.Join("gateway-api-"+GatewayAPIVersion, "crd"))
	}
	var files []string
	if dir != "" {
		files, _ = filepath.Glob(filepath.Join(dir, channel, "*.yaml"))
	}
	missing(t, len(files) == 0, "the Gateway API "+GatewayAPIVersion+" "+channel+" CRDs", EnvGatewayAPICRDs, "`make gateway-api-crds` copies them from the module zip")
	return files
}

// ReleaseCRDs returns the files names (such as
// "gateway.networking.k8s.io_httproutes.yaml") of channel of the Gateway
// API release version, as `make gateway-api-crds` copies them from the
// module zip into the test cache (CacheDir()/gateway-api-VERSION/crd), or
// an error naming what is missing. For the older releases that other
// products bundle (Linkerd bundles v0.7.1 and v1.1.1).
func ReleaseCRDs(version, channel string, names ...string) ([]string, error) {
	dir := cached(filepath.Join("gateway-api-"+version, "crd", channel))
	if dir == "" {
		return nil, fmt.Errorf("no user cache directory for the Gateway API %s CRDs", version)
	}
	var files []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("the Gateway API %s %s CRDs: %w (`make gateway-api-crds` copies them from the module zip)", version, channel, err)
		}
		files = append(files, p)
	}
	return files, nil
}

// RequireReleaseCRDs is ReleaseCRDs for a test: a missing file skips the
// test, or fails it when CI=true, as Require does.
func RequireReleaseCRDs(t testing.TB, version, channel string, names ...string) []string {
	t.Helper()
	files, err := ReleaseCRDs(version, channel, names...)
	if err != nil && os.Getenv("CI") == "true" {
		t.Fatalf("required in CI: %v", err)
	}
	if err != nil {
		t.Skip(err)
	}
	return files
}

// cached is name in the test cache, or "".
func cached(name string) string {
	if dir := dataplane.CacheDir(); dir != "" {
		return filepath.Join(dir, name)
	}
	return ""
}

func lookPath(name string) string {
	p, _ := exec.LookPath(name)
	return p
}

// firstExecutable returns the first of candidates that is an executable
// file, or "".
func firstExecutable(candidates ...string) string {
	for _, c := range candidates {
		if c != "" && dataplane.IsExecutable(c) {
			return c
		}
	}
	return ""
}
