package proxytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// HAProxyCheck writes cfg to a temporary file and runs `haproxy -c -f FILE`
// on it with the real binary (see Require). The test fails, with HAProxy's
// output, when the configuration is invalid or when HAProxy warns about
// anything but a DNS name it cannot resolve (endpoints are often cluster
// names that only resolve where the proxy runs).
func HAProxyCheck(t testing.TB, cfg []byte) {
	t.Helper()
	bin := Require(t, "haproxy")
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, cfg, 0o600); err != nil {
		t.Fatalf("writing %s: %v", file, err)
	}
	out, err := exec.Command(bin, "-c", "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("haproxy -c -f %s failed: %v\n%s\nconfiguration:\n%s", file, err, out, cfg)
	}
	if w := unexpectedWarnings(string(out)); len(w) > 0 {
		t.Fatalf("haproxy -c -f %s warned:\n%s\nconfiguration:\n%s", file, strings.Join(w, "\n"), cfg)
	}
}

// unexpectedWarnings returns HAProxy's warning and alert lines, except
// those about addresses that do not resolve.
func unexpectedWarnings(out string) []string {
	var w []string
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "[WARNING]") && !strings.Contains(line, "[ALERT]") {
			continue
		}
		if strings.Contains(line, "could not resolve address") {
			continue
		}
		w = append(w, line)
	}
	return w
}
