package dataplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind is one data plane binary that gwretry runs: what differs from one
// binary to the next. Find, Installed, Version and StartOutput are the same
// for every Kind; the backends registry points each target that has a
// binary at its Kind. Adding a binary is adding a row to kinds.
type Kind struct {
	// Name is the binary's name on PATH and in /usr/sbin, and its
	// target's name.
	Name string
	// EnvVar is the environment variable that can point at the binary.
	EnvVar string
	// CachedBuild is the file in CacheDir() of the build `make test`
	// caches, looked for before PATH; "" when there is none.
	CachedBuild string
	// SourceBuilds says that `make test` builds more versions from
	// Debian's source packages into CacheDir()/NAME-VERSION/sbin/NAME
	// (tools/build-debian-source.sh), which Installed runs too.
	SourceBuilds bool
	// VersionArg makes the binary print its version.
	VersionArg string
	// versionRE finds MAJOR.MINOR (group 1) and the patch (group 2, with
	// its dot) in what VersionArg prints.
	versionRE *regexp.Regexp
	// DevVersion is the version of a build that prints "Version:" without
	// a number (the Traefik test build says "dev"); "" when every build
	// states its version.
	DevVersion string
	// VersionPrefix goes before the version in a description of the
	// binary ("v" in "traefik v3.6.12").
	VersionPrefix string
	// Optional binaries are installed by no package of this project's
	// machines: tests skip where one is absent, even in CI, and check its
	// configuration without it.
	Optional bool
	// Files are the files of a generated output directory (translate -o
	// DIR, default settings) that the binary runs, slash-separated and
	// relative to DIR; StartOutput reads them.
	Files []string
	// ProvesHTTPS says that gwretry prove can exercise this binary's
	// HTTPS listeners (it serves each Secret's certificate from the
	// output directory as written).
	ProvesHTTPS bool
	// start runs bin on files (absolute paths, in the order of Files)
	// with every proxy listening on listen, keeping what it writes in
	// work; it returns the address to send requests to.
	start startFunc
}

// startFunc is a Kind's way of running its binary on a generated
// configuration.
type startFunc func(ctx context.Context, bin string, files []string, listen, work string, ports *Ports) (*Proxy, string, error)

// TraefikVersion is the Traefik release built from the Go module proxy as a
// test oracle (see tools/traefik and the Makefile).
const TraefikVersion = "v3.6.12"

// kinds are the binaries gwretry runs, in the order gwretry prove names
// and runs them.
var kinds = []*Kind{
	{
		Name: "nginx", EnvVar: "GWRETRY_NGINX", SourceBuilds: true,
		VersionArg: "-v", versionRE: regexp.MustCompile(`nginx/(\d+\.\d+)(\.\d+)?`),
		Files: []string{"nginx/nginx.conf"}, ProvesHTTPS: true, start: startNginxOutput,
	},
	{
		Name: "haproxy", EnvVar: "GWRETRY_HAPROXY", SourceBuilds: true,
		VersionArg: "-v", versionRE: regexp.MustCompile(`HAProxy version (\d+\.\d+)(\.\d+)?`),
		Files: []string{"haproxy/haproxy.cfg"}, ProvesHTTPS: true, start: startHAProxyOutput,
	},
	{
		Name: "traefik", EnvVar: "GWRETRY_TRAEFIK", CachedBuild: "traefik-" + TraefikVersion,
		VersionArg: "version", versionRE: regexp.MustCompile(`Version:\s+v?(\d+\.\d+)(\.\d+)?`),
		DevVersion: strings.TrimPrefix(TraefikVersion, "v"), VersionPrefix: "v",
		Files: []string{"traefik/traefik.yaml", "traefik/dynamic.yaml"}, start: startTraefikOutput,
	},
	{
		Name: "envoy", EnvVar: "GWRETRY_ENVOY", Optional: true,
		VersionArg: "--version", versionRE: regexp.MustCompile(`version: [0-9a-f]+/(\d+\.\d+)(\.\d+)?`),
		Files: []string{"envoy/envoy.yaml"}, start: startEnvoyOutput,
	},
}

// Kinds returns every binary gwretry runs, in the order prove names them.
func Kinds() []*Kind { return append([]*Kind(nil), kinds...) }

// KindOf returns the Kind of a binary name, or nil.
func KindOf(name string) *Kind {
	for _, k := range kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// Find returns the path of the binary, or "" when it is not installed. It
// looks at EnvVar, then the cached build, then PATH and /usr/sbin.
func (k *Kind) Find() string {
	if k.EnvVar != "" && os.Getenv(k.EnvVar) != "" {
		return os.Getenv(k.EnvVar)
	}
	var candidates []string
	if k.CachedBuild != "" {
		if dir := CacheDir(); dir != "" {
			candidates = append(candidates, filepath.Join(dir, k.CachedBuild))
		}
	}
	return firstExecutable(k.Name, candidates)
}

// Installed returns every binary of the Kind that the tests run: Find's,
// then the versions built into the cache (SourceBuilds), in version order,
// each once.
func (k *Kind) Installed() []string {
	return installed(k.Find(), k.Name, k.SourceBuilds)
}

// Version runs bin and returns its version: MAJOR.MINOR, and the whole
// version as the binary states it ("1.22.1").
func (k *Kind) Version(ctx context.Context, bin string) (short, full string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, runErr := exec.CommandContext(ctx, bin, k.VersionArg).CombinedOutput()
	if m := k.versionRE.FindStringSubmatch(string(out)); m != nil {
		return m[1], m[1] + m[2], nil
	}
	if k.DevVersion != "" && runErr == nil && strings.Contains(string(out), "Version:") {
		v := k.DevVersion
		return v[:strings.LastIndex(v, ".")], v, nil
	}
	if runErr != nil {
		return "", "", fmt.Errorf("%s %s: %w\n%s", bin, k.VersionArg, runErr, out)
	}
	return "", "", errors.New(bin + " " + k.VersionArg + ": no version in " + strconv.Quote(string(out)))
}

// Describe names a binary of the Kind at the full version Version
// returned: "traefik v3.6.12".
func (k *Kind) Describe(full string) string {
	return k.Name + " " + k.VersionPrefix + full
}

// StartOutput runs bin on the configuration that translate wrote into the
// output directory out, listening on listen, and waits until it serves it.
// What the run writes goes in work, a directory the caller removes; ports
// hands out any other loopback port it needs. It returns the proxy and
// the address to send requests to.
func (k *Kind) StartOutput(ctx context.Context, bin, out, listen, work string, ports *Ports) (*Proxy, string, error) {
	files := make([]string, len(k.Files))
	for i, f := range k.Files {
		files[i] = filepath.Join(out, filepath.FromSlash(f))
	}
	return k.start(ctx, bin, files, listen, work, ports)
}
