//go:build unix

package dataplane

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Every Kind is complete, and named once.
func TestKinds(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds() {
		if k.Name == "" || seen[k.Name] {
			t.Errorf("kind %q: empty or repeated name", k.Name)
		}
		seen[k.Name] = true
		if KindOf(k.Name) != k || EnvVar(k.Name) != k.EnvVar || k.EnvVar == "" {
			t.Errorf("%s: KindOf or EnvVar disagree with the row", k.Name)
		}
		if k.VersionArg == "" || k.versionRE == nil || k.versionRE.NumSubexp() != 2 {
			t.Errorf("%s: the version is read with a regexp of two groups", k.Name)
		}
		if len(k.Files) == 0 || k.start == nil {
			t.Errorf("%s: no files or no way to start them", k.Name)
		}
	}
	if KindOf("no-such-proxy") != nil || EnvVar("no-such-proxy") != "" {
		t.Error("an unknown name has a Kind")
	}
}

// Version reads what each binary prints, and a Traefik build that says
// "dev" is the pinned release.
func TestKindVersion(t *testing.T) {
	for _, c := range []struct{ kind, says, short, full string }{
		{"nginx", "nginx version: nginx/1.22.1", "1.22", "1.22.1"},
		{"haproxy", "HAProxy version 3.0.11-1 2025/06/04 - https://haproxy.org/", "3.0", "3.0.11"},
		{"traefik", "Version:      3.6.12\nCodename:     ramequin", "3.6", "3.6.12"},
		{"traefik", "Version:      dev\nCodename:     cheddar", "3.6", TraefikVersion[1:]},
		{"envoy", "envoy  version: 0123abcd/1.34.2/Clean/RELEASE/BoringSSL", "1.34", "1.34.2"},
	} {
		bin := filepath.Join(t.TempDir(), c.kind)
		if err := os.WriteFile(bin, []byte("#!/bin/sh\ncat <<'END'\n"+c.says+"\nEND\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		short, full, err := Version(context.Background(), c.kind, bin)
		if err != nil || short != c.short || full != c.full {
			t.Errorf("%s saying %q: got %q %q %v, want %q %q", c.kind, c.says, short, full, err, c.short, c.full)
		}
	}
	if _, _, err := Version(context.Background(), "no-such-proxy", "/bin/true"); err == nil {
		t.Error("Version of an unknown kind did not fail")
	}
	if got := KindOf("traefik").Describe("3.6.12"); got != "traefik v3.6.12" {
		t.Errorf("Describe: %q", got)
	}
}
