//go:build unix

package dataplane

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Bounds of starting and stopping a proxy.
const (
	ReadyTimeout = 10 * time.Second
	stopTimeout  = 3 * time.Second
	outputLimit  = 64 << 10
)

// ReservePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a proxy to bind, and that no other caller of ReservePort holds until
// release is called (in this process or another one running at the same
// time): each port handed out is reserved by an exclusive flock(2) on a
// file named after it in a shared directory. flock locks belong to the
// open file, so a second reservation of the same port fails in the same
// process too.
//
// The port is drawn at random below Linux's ephemeral range (32768 and up):
// a port the kernel hands out for ":0" (a backend, a client connection)
// could otherwise take it between the check and the proxy's bind.
func ReservePort() (port int, release func(), err error) {
	// One directory for every process, whatever its TMPDIR: /tmp where
	// it can be written.
	dir := "/tmp/gwretry-test-ports"
	if err := os.MkdirAll(dir, 0o777); err != nil {
		dir = filepath.Join(os.TempDir(), "gwretry-test-ports")
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return 0, nil, fmt.Errorf("reserve a port: %w", err)
		}
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
		return p, func() { _ = lock.Close() }, nil
	}
	return 0, nil, fmt.Errorf("reserve a port: none of 500 random ports in %d-%d is free", freePortLow, freePortHigh)
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

// The range ReservePort draws from: above the registered ports most
// services use, below the ephemeral range.
const (
	freePortLow  = 20000
	freePortHigh = 32000
)

// Ports hands out reserved loopback ports and releases them all at once.
type Ports struct {
	mu       sync.Mutex
	releases []func()
}

// Addr reserves a port and returns "127.0.0.1:PORT".
func (p *Ports) Addr() (string, error) {
	port, release, err := ReservePort()
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.releases = append(p.releases, release)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// Release releases every port handed out.
func (p *Ports) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.releases {
		r()
	}
	p.releases = nil
}

// Proxy is a data plane process. It runs in the foreground in its own
// process group; Stop ends it.
type Proxy struct {
	// Name is the data plane ("nginx"); Addr the address it listens on.
	Name, Addr string
	// Pid is the process id (and process group id).
	Pid int

	cmd    *exec.Cmd
	out    *tailBuffer
	exited chan struct{}
	err    error // set before exited is closed
	stop   sync.Once
	// cleanup, when set, runs after the process has stopped.
	cleanup func()
}

// StartNginx runs nginx bin with the configuration file confPath (which
// has no pid or error_log directive) and waits until addr accepts
// connections. nginx's prefix, pid file, logs and (in a build from
// source) request body buffers live in a fresh directory of the system's
// temporary directory, readable by the workers (which run as nobody when
// nginx is started as root), removed by Stop.
func StartNginx(bin, confPath, addr string) (*Proxy, error) {
	conf, err := absolute(confPath)
	if err != nil {
		return nil, err
	}
	prefix, err := os.MkdirTemp("", "gwretry-nginx-")
	if err != nil {
		return nil, fmt.Errorf("nginx prefix: %w", err)
	}
	if err := os.Chmod(prefix, 0o755); err != nil {
		_ = os.RemoveAll(prefix)
		return nil, fmt.Errorf("nginx prefix: %w", err)
	}
	if err := os.Mkdir(filepath.Join(prefix, "logs"), 0o755); err != nil {
		_ = os.RemoveAll(prefix)
		return nil, fmt.Errorf("nginx prefix: %w", err)
	}
	global := fmt.Sprintf("daemon off; pid %s; error_log stderr notice;", filepath.Join(prefix, "nginx.pid"))
	p, err := Start("nginx", bin, "", addr, "-p", prefix+"/", "-e", "stderr", "-c", conf, "-g", global)
	if err != nil {
		_ = os.RemoveAll(prefix)
		return nil, err
	}
	p.cleanup = func() { _ = os.RemoveAll(prefix) }
	return p, nil
}

// StartHAProxy runs haproxy bin in the foreground (-db) with the
// configuration file cfgPath and waits until addr accepts connections.
func StartHAProxy(bin, cfgPath, addr string) (*Proxy, error) {
	cfg, err := absolute(cfgPath)
	if err != nil {
		return nil, err
	}
	return Start("haproxy", bin, "", addr, "-db", "-f", cfg)
}

// StartTraefik runs traefik bin with the static configuration staticPath
// and waits until addr accepts connections. It runs in the directory of the
// static configuration, so a relative path to the dynamic file resolves
// there. The entry point accepts connections before the file provider has
// loaded the routers: see TraefikConfig.WaitLoaded.
func StartTraefik(bin, staticPath, addr string) (*Proxy, error) {
	abs, err := absolute(staticPath)
	if err != nil {
		return nil, err
	}
	return Start("traefik", bin, filepath.Dir(abs), addr, "--configFile="+abs)
}

// StartEnvoy runs envoy bin with the bootstrap confPath and waits until
// addr accepts connections.
func StartEnvoy(bin, confPath, addr string) (*Proxy, error) {
	conf, err := absolute(confPath)
	if err != nil {
		return nil, err
	}
	return Start("envoy", bin, "", addr, "-c", conf,
		"--disable-hot-restart", "--concurrency", "1", "--log-level", "warning")
}

// ValidateEnvoy runs `envoy --mode validate` on the bootstrap confPath.
func ValidateEnvoy(ctx context.Context, bin, confPath string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--mode", "validate", "-c", confPath, "--log-level", "warning").CombinedOutput()
	if err != nil {
		return fmt.Errorf("envoy --mode validate -c %s: %w\n%s", confPath, err, out)
	}
	return nil
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
		if p.cleanup != nil {
			p.cleanup()
		}
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

// Start runs bin with args in dir (the current directory when ""), in its
// own process group, and waits until addr accepts TCP connections. On
// failure the process is stopped and the error holds its output.
func Start(name, bin, dir, addr string, args ...string) (*Proxy, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out := &tailBuffer{limit: outputLimit}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proxy{Name: name, Addr: addr, Pid: cmd.Process.Pid, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ReadyTimeout); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s (%s) did not start: %w\n%s output:\n%s", name, cmd.String(), err, name, p.Output())
	}
	return p, nil
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

func absolute(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("config path: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("config file: %w", err)
	}
	return abs, nil
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

// The Kinds' ways of running their binary on a generated configuration
// (Kind.StartOutput).

func startNginxOutput(_ context.Context, bin string, files []string, listen, _ string, _ *Ports) (*Proxy, string, error) {
	p, err := StartNginx(bin, files[0], listen)
	return p, listen, err
}

func startHAProxyOutput(_ context.Context, bin string, files []string, listen, _ string, _ *Ports) (*Proxy, string, error) {
	cfg, err := absolute(files[0])
	if err != nil {
		return nil, "", err
	}
	// HTTPS listeners name their crt-list relative to the output
	// directory (haproxy/haproxy.cfg's parent's parent): HAProxy runs
	// there (-C), as the generated notes say.
	p, err := Start("haproxy", bin, "", listen, "-C", filepath.Dir(filepath.Dir(cfg)), "-db", "-f", cfg)
	return p, listen, err
}

// startEnvoyOutput checks the bootstrap with `envoy --mode validate`
// first.
func startEnvoyOutput(ctx context.Context, bin string, files []string, listen, _ string, _ *Ports) (*Proxy, string, error) {
	if err := ValidateEnvoy(ctx, bin, files[0]); err != nil {
		return nil, "", err
	}
	p, err := StartEnvoy(bin, files[0], listen)
	return p, listen, err
}

// startTraefikOutput runs a copy of the static and dynamic files, written
// to work, whose one entry point listens on a port from ports, and waits
// until Traefik's API shows the dynamic configuration loaded.
func startTraefikOutput(_ context.Context, bin string, files []string, _, work string, ports *Ports) (*Proxy, string, error) {
	static, err := os.ReadFile(files[0])
	if err != nil {
		return nil, "", err
	}
	dynamic, err := os.ReadFile(files[1])
	if err != nil {
		return nil, "", err
	}
	tdir := filepath.Join(work, "traefik-run")
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return nil, "", err
	}
	cfg, err := WriteTraefikConfig(tdir, static, dynamic, nil, ports)
	if err != nil {
		return nil, "", err
	}
	if len(cfg.EntryPoints) != 1 {
		return nil, "", fmt.Errorf("traefik.yaml has entry points %v, want one", cfg.EntryPoints)
	}
	var addr string
	for _, a := range cfg.EntryPoints {
		addr = a
	}
	p, err := StartTraefik(bin, cfg.StaticPath, cfg.API)
	if err != nil {
		return nil, "", err
	}
	if err := cfg.WaitLoaded(p, ReadyTimeout); err != nil {
		p.Stop()
		return nil, "", fmt.Errorf("Traefik did not load the configuration: %w\n%s", err, p.Output())
	}
	return p, addr, nil
}
