//go:build unix

package proxytest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
)

func writeStartTestFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkStartedProxy sends a request through a started proxy, stops it and checks
// that nothing is left: the process group is gone and the port is closed.
func checkStartedProxy(t *testing.T, p *Proxy, backend *flaky.Server) {
	t.Helper()
	var resp *http.Response
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err = http.Get("http://" + p.Addr + "/hello")
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET through %s: %v %v\n%s", p.Name, resp, err, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "b: 200") || len(backend.Hits("/hello")) == 0 {
		t.Errorf("answer %q did not come from the backend", body)
	}
	pgid := p.Pid
	p.Stop()
	if done, _ := p.Exited(); !done {
		t.Errorf("%s still running after Stop", p.Name)
	}
	if err := syscall.Kill(-pgid, 0); err == nil {
		t.Errorf("process group %d of %s still exists after Stop", pgid, p.Name)
	}
	if conn, err := net.DialTimeout("tcp", p.Addr, 200*time.Millisecond); err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections after Stop", p.Addr)
	}
}

func TestStartNginx(t *testing.T) {
	backend := flaky.New(t, "b")
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	conf := writeStartTestFile(t, t.TempDir(), "nginx.conf", fmt.Sprintf(`events {}
http {
    access_log off;
    server {
        listen %s;
        location / { proxy_pass http://%s; }
    }
}
`, addr, backend.Addr()))
	checkStartedProxy(t, StartNginx(t, conf, addr), backend)
}

func TestStartHAProxy(t *testing.T) {
	backend := flaky.New(t, "b")
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cfg := writeStartTestFile(t, t.TempDir(), "haproxy.cfg", fmt.Sprintf(`defaults
    mode http
    timeout connect 1s
    timeout client 5s
    timeout server 5s
frontend fe
    bind %s
    default_backend be
backend be
    server s1 %s
`, addr, backend.Addr()))
	checkStartedProxy(t, StartHAProxy(t, cfg, addr), backend)
}

func TestStartTraefik(t *testing.T) {
	backend := flaky.New(t, "b")
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	dir := t.TempDir()
	writeStartTestFile(t, dir, "dynamic.yaml", fmt.Sprintf(`http:
  routers:
    r:
      rule: "PathPrefix(`+"`/`"+`)"
      entryPoints: [web]
      service: s
  services:
    s:
      loadBalancer:
        servers:
          - url: "http://%s"
`, backend.Addr()))
	static := writeStartTestFile(t, dir, "traefik.yaml", fmt.Sprintf(`entryPoints:
  web:
    address: "%s"
providers:
  file:
    filename: %s
global:
  checkNewVersion: false
  sendAnonymousUsage: false
`, addr, filepath.Join(dir, "dynamic.yaml")))
	checkStartedProxy(t, StartTraefik(t, static, addr), backend)
}

func TestStartEnvoySkipsWhenAbsent(t *testing.T) {
	if Find("envoy") != "" {
		t.Skip("envoy is installed; the e2e scenarios run it")
	}
	ran := make(chan bool, 1)
	rec := &startRecorder{TB: t}
	go func() {
		defer func() { ran <- true }()
		StartEnvoy(rec, "/nonexistent/envoy.yaml", "127.0.0.1:1")
	}()
	<-ran
	if !rec.skipped || rec.failed {
		t.Errorf("StartEnvoy without envoy: skipped=%v failed=%v, want a skip", rec.skipped, rec.failed)
	}
}

func TestStartFailsWithOutputWhenTheProxyExits(t *testing.T) {
	Require(t, "haproxy")
	cfg := writeStartTestFile(t, t.TempDir(), "haproxy.cfg", "frontend fe\n    bind 127.0.0.1:1\n    no-such-keyword\n")
	rec := &startRecorder{TB: t}
	done := make(chan bool, 1)
	go func() {
		defer func() { done <- true }()
		StartHAProxy(rec, cfg, fmt.Sprintf("127.0.0.1:%d", FreePort(t)))
	}()
	<-done
	if !rec.failed || !strings.Contains(rec.msg, "exited early") || !strings.Contains(rec.msg, "no-such-keyword") {
		t.Errorf("bad config: failed=%v message %q, want the exit and haproxy's complaint", rec.failed, rec.msg)
	}
}

// startRecorder records Fatalf and Skip instead of acting on them; both end
// the calling goroutine, as in testing.
type startRecorder struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *startRecorder) Helper() {}

func (r *startRecorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *startRecorder) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *startRecorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// FreePort never hands out a port twice while the test holds it (the
// flock reservation itself is tested in internal/dataplane).
func TestFreePortReserves(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("FreePort handed out %d twice", p)
		}
		seen[p] = true
	}
}
