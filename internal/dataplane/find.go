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
