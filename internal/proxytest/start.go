//go:build unix

package proxytest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds of starting and stopping a proxy.
const (
	readyTimeout = 10 * time.Second
	stopTimeout  = 3 * time.Second
	outputLimit  = 64 << 10
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a proxy to bind, and that no other caller of FreePort holds until t ends
// (in this test binary or another one running at the same time, as go test
// runs packages in parallel): each port handed out is reserved by an
// exclusive flock(2) on a file named after it in a shared directory, held
// until the test's cleanup. flock locks belong to the open file, so a
// second reservation of the same port fails in the same process too.
//
// The port is drawn at random below Linux's ephemeral range (32768 and up):
// a port the kernel hands out for ":0" (a test backend, a client
// connection) could otherwise take it between the check and the proxy's
// bind.
func FreePort(t testing.TB) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "gwretry-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("FreePort: %v", err)
	}
	for range 500 {
		p := freePortLow + rand.IntN(freePortHigh-freePortLow)
		lock, ok := reservePort(dir, p)
		if !ok {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			_ = lock.Close()
			continue
		}
		_ = ln.Close()
		t.Cleanup(func() { _ = lock.Close() })
		return p
	}
	t.Fatalf("FreePort: none of 500 random ports in %d-%d is free", freePortLow, freePortHigh)
	return 0
}

// reservePort takes the exclusive lock on port's file in dir; closing the
// file releases it. ok is false when another open file holds it.
func reservePort(dir string, port int) (lock *os.File, ok bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return f, true
}

// The range FreePort draws from: above the registered ports most services
// use, below the ephemeral range.
const (
	freePortLow  = 20000
	freePortHigh = 32000
)

// Proxy is a data plane process started by a test. It runs in the
// foreground in its own process group and is stopped when the test ends.
type Proxy struct {
	// Name is the data plane ("nginx"); Addr the address it listens on.
	Name, Addr string

	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{}
	err    error // set before exited is closed
	stop   sync.Once
}

// StartNginx runs nginx with the configuration file confPath (which has no
// pid or error_log directive) and waits until addr accepts connections.
// nginx's prefix, pid file and logs live in a temporary directory.
func StartNginx(t testing.TB, confPath, addr string) *Proxy {
	t.Helper()
	bin := Require(t, "nginx")
	prefix := t.TempDir()
	if err := os.MkdirAll(filepath.Join(prefix, "logs"), 0o755); err != nil {
		t.Fatalf("nginx prefix: %v", err)
	}
	global := fmt.Sprintf("daemon off; pid %s; error_log stderr notice;", filepath.Join(prefix, "nginx.pid"))
	return start(t, "nginx", bin, "", addr,
		"-p", prefix+"/", "-e", "stderr", "-c", absolute(t, confPath), "-g", global)
}

// StartHAProxy runs haproxy in the foreground (-db) with the configuration
// file cfgPath and waits until addr accepts connections.
func StartHAProxy(t testing.TB, cfgPath, addr string) *Proxy {
	t.Helper()
	bin := Require(t, "haproxy")
	return start(t, "haproxy", bin, "", addr, "-db", "-f", absolute(t, cfgPath))
}

// StartTraefik runs traefik with the static configuration staticPath and
// waits until addr accepts connections. It runs in the directory of the
// static configuration, so a relative path to the dynamic file resolves
// there. The entry point accepts connections before the file provider has
// loaded the routers: callers should poll a known route until it answers.
func StartTraefik(t testing.TB, staticPath, addr string) *Proxy {
	t.Helper()
	bin := Require(t, "traefik")
	abs := absolute(t, staticPath)
	return start(t, "traefik", bin, filepath.Dir(abs), addr, "--configFile="+abs)
}

// StartEnvoy runs envoy with the bootstrap confPath and waits until addr
// accepts connections. Unlike the others it skips when envoy is missing,
// even in CI: no envoy binary is installed there.
func StartEnvoy(t testing.TB, confPath, addr string) *Proxy {
	t.Helper()
	bin := Find("envoy")
	if bin == "" {
		t.Skip("envoy not found (set GWRETRY_ENVOY to run the live Envoy scenarios)")
	}
	return start(t, "envoy", bin, "", addr, "-c", absolute(t, confPath),
		"--disable-hot-restart", "--concurrency", "1", "--log-level", "warning")
}

// Output returns what the process wrote to stdout and stderr (the last
// 64 KiB).
func (p *Proxy) Output() string { return p.out.String() }

// Stop stops the process group with SIGTERM, then SIGKILL after 3 s, and
// waits for the process. It is safe to call more than once.
func (p *Proxy) Stop() {
	p.stop.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-p.exited
		}
		// Workers left behind by a master that died first.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
}

// Exited reports whether the process has ended, and how.
func (p *Proxy) Exited() (bool, error) {
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

func start(t testing.TB, name, bin, dir, addr string, args ...string) *Proxy {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out := &tailBuffer{limit: outputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Proxy{Name: name, Addr: addr, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	if err := p.waitReady(readyTimeout); err != nil {
		p.Stop()
		t.Fatalf("%s (%s) did not start: %v\n%s output:\n%s", name, cmd.String(), err, name, p.Output())
	}
	return p
}

// waitReady waits until the proxy accepts TCP connections on its address.
func (p *Proxy) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if done, err := p.Exited(); done {
			return fmt.Errorf("exited early: %v", err)
		}
		conn, err := net.DialTimeout("tcp", p.Addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not accepting connections after %v: %w", p.Addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func absolute(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatalf("config path: %v", err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("config file: %v", err)
	}
	return abs
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	data  []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = append(b.data, p...)
	if over := len(b.data) - b.limit; over > 0 {
		b.data = append([]byte(nil), b.data[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.data)
}
