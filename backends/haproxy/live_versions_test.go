package haproxy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// installedHAProxy is one HAProxy binary the version-sensitive live tests
// run: the one on PATH (or GWRETRY_HAPROXY) and every version built into
// the cache (dataplane.Installed), each with the row of the version table
// it is.
type installedHAProxy struct {
	bin     string
	version string // MAJOR.MINOR, a row of supportTable
	full    string // "3.0.11"
}

// installedHAProxies returns the installed HAProxy binaries whose version
// gwretry has a row for (others are logged and left out).
func installedHAProxies(t *testing.T) []installedHAProxy {
	t.Helper()
	proxytest.Require(t, "haproxy")
	var out []installedHAProxy
	for _, bin := range dataplane.Installed("haproxy") {
		short, full, err := dataplane.Version(context.Background(), "haproxy", bin)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lookupVersion(short); err != nil {
			t.Logf("%s (HAProxy %s): no version table row, not run: %v", bin, full, err)
			continue
		}
		out = append(out, installedHAProxy{bin: bin, version: short, full: full})
	}
	return out
}

// forEachHAProxy runs f as a subtest per installed HAProxy binary.
func forEachHAProxy(t *testing.T, f func(t *testing.T, h installedHAProxy)) {
	t.Helper()
	for _, h := range installedHAProxies(t) {
		t.Run("haproxy-"+h.full, func(t *testing.T) { f(t, h) })
	}
}

// startLiveOn generates haproxy.cfg for m with opts (opts.Version is the
// target version, which may differ from the binary's) and runs it on h;
// it returns the proxy's base URL.
func startLiveOn(t *testing.T, h installedHAProxy, m *translate.Model, opts translate.Options) string {
	t.Helper()
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: opts.Version}}, opts.RetryNonIdempotent)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(file, res.Files[0].Data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", m.Listeners[0].Port)
	p, err := dataplane.StartHAProxy(h.bin, file, addr)
	if err != nil {
		t.Fatalf("HAProxy %s: %v", h.full, err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("haproxy %s output:\n%s", h.full, p.Output())
		}
	})
	return "http://" + addr
}

// atLeast reports whether release ("3.0.11") is release min ("3.0.4") or
// later.
func atLeast(release, min string) bool {
	a, b := strings.Split(release, "."), strings.Split(min, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		x, _ := strconv.Atoi(a[i])
		y, _ := strconv.Atoi(b[i])
		if x != y {
			return x > y
		}
	}
	return len(a) >= len(b)
}

// acceptsRetryOn reports whether HAProxy h loads `retry-on code`.
func acceptsRetryOn(t *testing.T, h installedHAProxy, code int) bool {
	t.Helper()
	cfg := fmt.Sprintf("defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\nbackend b\n  retry-on conn-failure %d\n  server s 127.0.0.1:9\nfrontend f\n  bind 127.0.0.1:%d\n  default_backend b\n", code, proxytest.FreePort(t))
	file := filepath.Join(t.TempDir(), "retry-on.cfg")
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, h.bin, "-c", "-f", file).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "unknown keyword") {
		t.Fatalf("haproxy %s -c: %v\n%s", h.full, err, out)
	}
	return err == nil
}

// TestLiveRetryCodesByVersion checks the version table against each
// installed HAProxy: every code of its row's RetryCodes loads, and a code
// the row leaves out loads only where the row names it Backported to a
// release no later than the binary's; then that code's finding must say
// so, and the newer target's output (which writes it) must retry it on
// the binary. HAProxy 3.0.11 loads and retries 429, which 3.0's row once
// called impossible before 3.1.
func TestLiveRetryCodesByVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("live")
	}
	forEachHAProxy(t, func(t *testing.T, h installedHAProxy) {
		vs, _ := lookupVersion(h.version)
		for _, c := range vs.RetryCodes {
			if !acceptsRetryOn(t, h, c) {
				t.Errorf("HAProxy %s refuses retry-on %d, which the %s row lists", h.full, c, vs.Version)
			}
		}
		for _, c := range []int{421, 429} {
			if slices.Contains(vs.RetryCodes, c) {
				continue
			}
			accepted := acceptsRetryOn(t, h, c)
			p, backported := vs.Backported[c]
			switch {
			case accepted && !(backported && atLeast(h.full, p)):
				t.Errorf("HAProxy %s loads retry-on %d, but the %s row neither lists it nor names a backport by %s", h.full, c, vs.Version, h.full)
			case !accepted && backported && atLeast(h.full, p):
				t.Errorf("HAProxy %s refuses retry-on %d, which the %s row says was backported to %s", h.full, c, vs.Version, p)
			}
			if !accepted {
				continue
			}
			be := flaky.New(t, "a")
			r := rule(0, &translate.Retry{Attempts: 2, Codes: []int{c}}, translate.Timeouts{})
			m := liveModel(t, be.Addr(), r)
			_, findings := generate(t, m, translate.Options{Version: vs.Version})
			newer := firstVersionWithCode(c)
			want := report.Params{"codes": strconv.Itoa(c), "versions": fmt.Sprintf("%d from %s or %s", c, newer, p)}
			if f := findings[0][translate.FeatureRetryCodes]; f.Reason != report.ReasonCodesNeedLaterVersion || !maps.Equal(f.Params, want) {
				t.Errorf("HAProxy %s retries %d, but the %s finding does not say from which release and with which target: %s %v, want %v", h.full, c, vs.Version, f.Reason, f.Params, want)
			}
			url := startLiveOn(t, h, m, translate.Options{Version: newer})
			path := fmt.Sprintf("/r00/%d", c)
			be.Handle(path, flaky.AlwaysFail(c))
			if got := status(t, oneShotClient(), "GET", url+path, nil); got != c {
				t.Errorf("answer %d, want the backend's %d", got, c)
			}
			be.WaitIdle(5 * time.Second)
			if n := len(be.Hits(path)); n != 3 {
				t.Errorf("haproxy@%s output on HAProxy %s: %d tries of a %d, want 3", newer, h.full, n, c)
			}
		}
	})
}
