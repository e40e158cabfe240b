// Package dataplane finds and runs the real data plane binaries (nginx,
// HAProxy, Traefik, Envoy) on loopback: the process control that
// `gwretry prove` and the tests share. Every process it starts runs in its
// own process group and is stopped by its pid (Proxy.Stop); on Linux the
// kernel also kills it when the process that started it dies.
package dataplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// TraefikVersion is the Traefik release built from the Go module proxy as a
// test oracle (see tools/traefik and the Makefile).
const TraefikVersion = "v3.6.12"

// EnvVar returns the environment variable that can point at a data plane
// binary ("GWRETRY_NGINX"), or "" for an unknown name.
func EnvVar(name string) string {
	switch name {
	case "nginx":
		return "GWRETRY_NGINX"
	case "haproxy":
		return "GWRETRY_HAPROXY"
	case "traefik":
		return "GWRETRY_TRAEFIK"
	case "envoy":
		return "GWRETRY_ENVOY"
	}
	return ""
}

// CacheDir is where `make test` caches the data plane binaries it builds
// ($XDG_CACHE_HOME/gwretry or ~/.cache/gwretry), or "" when there is no
// cache directory.
func CacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "gwretry")
}

// Find returns the path of a data plane binary, or "" when it is not
// installed. It looks at the GWRETRY_<NAME> environment variable, then (for
// traefik) the cached test build, then PATH and /usr/sbin.
func Find(name string) string {
	if v := EnvVar(name); v != "" && os.Getenv(v) != "" {
		return os.Getenv(v)
	}
	var candidates []string
	if name == "traefik" {
		if dir := CacheDir(); dir != "" {
			candidates = append(candidates, filepath.Join(dir, "traefik-"+TraefikVersion))
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, filepath.Join("/usr/sbin", name))
	for _, c := range candidates {
		if IsExecutable(c) {
			return c
		}
	}
	return ""
}

// IsExecutable reports whether path is an executable regular file.
func IsExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Installed returns every binary of a data plane that the tests run: Find's,
// then the versions built into the cache (CacheDir()/NAME-VERSION/sbin/NAME,
// see tools/build-debian-source.sh), in version order, each once.
func Installed(name string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		if p != "" && IsExecutable(p) && !seen[real] {
			seen[real] = true
			out = append(out, p)
		}
	}
	add(Find(name))
	if dir := CacheDir(); dir != "" && name != "traefik" {
		matches, _ := filepath.Glob(filepath.Join(dir, name+"-*", "sbin", name))
		slices.SortFunc(matches, compareVersionPaths)
		for _, m := range matches {
			add(m)
		}
	}
	return out
}

// compareVersionPaths orders .../NAME-1.9.0/... before .../NAME-1.26.3/...
func compareVersionPaths(a, b string) int {
	va := strings.Split(versionOf(a), ".")
	vb := strings.Split(versionOf(b), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		na, _ := strconv.Atoi(va[i])
		nb, _ := strconv.Atoi(vb[i])
		if na != nb {
			return na - nb
		}
	}
	return len(va) - len(vb)
}

func versionOf(path string) string {
	dir := filepath.Base(filepath.Dir(filepath.Dir(path)))
	_, v, _ := strings.Cut(dir, "-")
	return v
}
