//go:build unix

package kubeapitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
)

// process is a started binary whose output goes to a log file.
type process struct {
	name, log string
	cmd       *exec.Cmd
	exited    chan struct{}
	err       error
	once      sync.Once
}

func startProcess(log, bin string, args ...string) (*process, error) {
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{name: filepath.Base(bin), log: log, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop ends the process with SIGTERM, SIGKILL after 5 s.
func (p *process) stop() {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	})
}

// reserveAddrs reserves n loopback addresses ("127.0.0.1:PORT") that no
// other test takes until release is called (dataplane.Ports).
func reserveAddrs(n int) ([]string, func(), error) {
	ports := &dataplane.Ports{}
	var addrs []string
	for range n {
		a, err := ports.Addr()
		if err != nil {
			ports.Release()
			return nil, nil, err
		}
		addrs = append(addrs, a)
	}
	return addrs, ports.Release, nil
}
