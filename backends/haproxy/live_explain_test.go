//go:build linux

package haproxy

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// fullBacklog listens with a backlog of 0 and fills it with one
// connection it never accepts: every further connection attempt hangs
// until the connecting side's timeout.
func fullBacklog(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c2, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c2.Close()
		t.Skip("the kernel completes connections beyond a full backlog here")
	}
	return addr
}

// TestLiveExplainConnectTimeout: HAProxy waits its turn-around only after
// a connection that failed before timeout connect (a refusal), not after
// one whose timeout connect expired. A POST whose tries all time out
// connecting (300ms) takes 4 x 300ms: explain's least pauses must add up
// to no more than that leaves (it said 300ms before each retry, 900ms in
// all, which would make the request last 2.1s).
func TestLiveExplainConnectTimeout(t *testing.T) {
	proxytest.Require(t, "haproxy")
	backend := fullBacklog(t)
	port := proxytest.FreePort(t)
	policy := testmodel.ConnectionPolicy("clientTimeout: 30s")
	manifest := strings.Replace(policy, "  - backendRefs: [{name: svc, port: 8080}]\n",
		"  - backendRefs: [{name: svc, port: 8080}]\n    retry: {attempts: 3}\n    timeouts: {backendRequest: 300ms}\n", 1)
	if manifest == policy {
		t.Fatal("testmodel.ConnectionPolicy's rule is not where this test adds its retry")
	}
	m := testmodel.LoadText(t, manifest, translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: port}}, "svc.ns:8080="+backend)
	targets := []translate.Target{{Backend: New(), Version: checkedVersion}}
	res, err := translate.Run(m, targets, false)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := translate.Explain(m, targets, false)
	if err != nil {
		t.Fatal(err)
	}
	var tl *translate.Timeline
	for i := range ex.Timelines {
		if ex.Timelines[i].Methods == translate.NonIdempotent {
			tl = &ex.Timelines[i]
		}
	}
	if tl == nil || len(tl.Tries) != 4 {
		t.Fatalf("explain has no POST timeline of 4 tries: %+v", ex.Timelines)
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, res.Files[0].Data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proxytest.StartHAProxy(t, file, addr)

	start := time.Now()
	resp, err := oneShotClient().Post("http://"+addr+"/", "text/plain", strings.NewReader("x"))
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503 after the connection retries", resp.StatusCode)
	}
	// Each try took timeout connect; what is left are the pauses.
	const connect = 300 * time.Millisecond
	if took < 4*connect-20*time.Millisecond {
		t.Fatalf("took %v: fewer than 4 tries of 300ms", took)
	}
	var least time.Duration
	for _, try := range tl.Tries {
		least += try.PauseMin.D
	}
	if left := took - 4*connect; least > left+150*time.Millisecond {
		t.Errorf("the request took %v, 4 x %v connecting and %v of pauses; explain says the pauses last at least %v: %+v", took, connect, left, least, tl.Tries)
	}
}
