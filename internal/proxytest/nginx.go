package proxytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NginxCheck runs `nginx -t` on conf, a complete nginx.conf without pid and
// error_log lines, and fails the test with nginx's output when nginx rejects
// it. The configuration is written to a fresh temporary directory that is
// also nginx's prefix (-p), so relative paths in it (logs/access.log, temp
// directories) stay inside that directory; pid and error_log are set with -g.
// It works as root and as an ordinary user, as long as the configuration
// does not name paths outside the prefix.
func NginxCheck(t testing.TB, conf []byte) {
	t.Helper()
	bin := Require(t, "nginx")
	dir := t.TempDir()
	// nginx opens the default access log, logs/access.log under the prefix,
	// but does not create its directory.
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatalf("NginxCheck: %v", err)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf, 0o644); err != nil {
		t.Fatalf("NginxCheck: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-t", "-q", "-c", confPath, "-p", dir+"/",
		"-g", "pid "+filepath.Join(dir, "nginx.pid")+"; error_log stderr;")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t rejected the configuration: %v\n%s\nconfiguration:\n%s", err, out, conf)
	}
	// A warning such as "conflicting server name ..., ignored" means part
	// of the configuration is silently not used: treat it as a failure.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "[warn]") && !strings.Contains(line, `the "user" directive makes sense only`) {
			t.Fatalf("nginx -t warned: %s\nconfiguration:\n%s", line, conf)
		}
	}
}
