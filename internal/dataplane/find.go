// Package dataplane finds and runs the real data plane binaries (nginx,
// HAProxy, Traefik, Envoy) on loopback: the process control that
// `gwretry prove` and the tests share. Every process it starts runs in its
// own process group and is stopped by its pid (Proxy.Stop); on Linux the
// kernel also kills it when the process that started it dies. What differs
// from one binary to the next (its environment variable, how it states its
// version, how it runs a generated configuration) is a row of kinds
// (kind.go); nothing else here switches on a binary's name.
package dataplane

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// EnvVar returns the environment variable that can point at a data plane
// binary ("GWRETRY_NGINX"), or "" for a name that is no Kind.
func EnvVar(name string) string {
	if k := KindOf(name); k != nil {
		return k.EnvVar
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
// installed: Kind.Find for a Kind's name, else the binary on PATH or in
// /usr/sbin.
func Find(name string) string {
	if k := KindOf(name); k != nil {
		return k.Find()
	}
	return firstExecutable(name, nil)
}

// firstExecutable returns the first executable of candidates, name on
// PATH and /usr/sbin/name, or "".
func firstExecutable(name string, candidates []string) string {
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

// Installed returns every binary of a data plane that the tests run:
// Kind.Installed for a Kind's name, else Find's.
func Installed(name string) []string {
	if k := KindOf(name); k != nil {
		return k.Installed()
	}
	return installed(Find(name), name, false)
}

// installed returns found, then with sourceBuilds the versions built into
// the cache (CacheDir()/NAME-VERSION/sbin/NAME, see
// tools/build-debian-source.sh), in version order, each once.
func installed(found, name string, sourceBuilds bool) []string {
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
	add(found)
	if dir := CacheDir(); dir != "" && sourceBuilds {
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

// Version runs bin, a binary of the Kind named name, and returns its
// version (Kind.Version).
func Version(ctx context.Context, name, bin string) (short, full string, err error) {
	k := KindOf(name)
	if k == nil {
		return "", "", fmt.Errorf("no live runs of %s", name)
	}
	return k.Version(ctx, bin)
}
