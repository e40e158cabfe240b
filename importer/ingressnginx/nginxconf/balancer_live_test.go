//go:build unix

package nginxconf

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
)

// The Lua module of Debian's nginx 1.22 (libnginx-mod-http-lua, which
// make deps installs) and lua-resty-core's ngx.balancer.
const (
	luaModule   = "/usr/lib/nginx/modules/ngx_http_lua_module.so"
	ndkModule   = "/usr/lib/nginx/modules/ndk_http_module.so"
	restyCore   = "/usr/share/lua/5.1/ngx/balancer.lua"
	debianNginx = "/usr/sbin/nginx"
)

// upstreamRE is an upstream block of the generated file.
var upstreamRE = regexp.MustCompile(`(?s)    upstream (ingress_\d+) \{\n(.*?)\n    \}\n`)

// withLuaBalancer rewrites a generated file as ingress-nginx runs it: each
// upstream becomes a placeholder server with a balancer_by_lua that does
// what ingress-nginx's balancer.balance() does (rootfs/etc/nginx/lua/
// balancer.lua): pick the next endpoint round-robin, set_more_tries(1),
// set_current_peer.
func withLuaBalancer(t *testing.T, data []byte) []byte {
	t.Helper()
	out := upstreamRE.ReplaceAllStringFunc(string(data), func(block string) string {
		m := upstreamRE.FindStringSubmatch(block)
		var eps []string
		for _, line := range strings.Split(m[2], "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "server" && !slices.Contains(eps, f[1]) {
				eps = append(eps, f[1])
			}
		}
		var lua []string
		for _, ep := range eps {
			host, port, err := net.SplitHostPort(ep)
			if err != nil {
				t.Fatal(err)
			}
			lua = append(lua, fmt.Sprintf("{%q, %s}", host, port))
		}
		return fmt.Sprintf(`    upstream %s {
        server 0.0.0.1; # placeholder
        balancer_by_lua_block {
            local balancer = require "ngx.balancer"
            local eps = {%s}
            ngx.ctx.n = (ngx.ctx.n or 0) + 1
            local ep = eps[(ngx.ctx.n - 1) %% #eps + 1]
            balancer.set_more_tries(1)
            assert(balancer.set_current_peer(ep[1], ep[2]))
        }
        keepalive 320;
    }
`, m[1], strings.Join(lua, ", "))
	})
	return []byte("load_module " + ndkModule + ";\nload_module " + luaModule + ";\n" +
		strings.Replace(out, "http {\n", "http {\n    lua_package_path \"/usr/share/lua/5.1/?.lua;;\";\n", 1))
}

// TestLuaBalancerModel checks the file's stand-in for ingress-nginx's Lua
// balancer on the real thing: the same Ingresses run once as Generate
// writes them (an upstream entry per try) and once with a balancer_by_lua
// that balances as ingress-nginx's does, on Debian's nginx 1.22 with the
// Lua module, with one endpoint. Every scripted failure gets the same tries
// and answer on both for every Ingress path and method, except tries 0:
// there the Lua balancer goes on past the CappedTries the file lists
// (unbounded, as Read says), seen with a backend that fails 15 times.
func TestLuaBalancerModel(t *testing.T) {
	if testing.Short() {
		t.Skip("live: not in the fast tier (-short)")
	}
	for _, f := range []string{luaModule, ndkModule, restyCore, debianNginx} {
		if _, err := os.Stat(f); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required in CI (make deps installs libnginx-mod-http-lua): %v", f, err)
			}
			t.Skipf("%s: %v", f, err)
		}
	}
	app := flaky.New(t, "app")
	in, err := ingressnginx.Load([]string{filepath.Join(dir, "ingresses.yaml")}, nil, input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := ingressnginx.Import(in, ingressnginx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)
	start := func(name string, data []byte) string {
		listen, err := ports.Addr()
		if err != nil {
			t.Fatal(err)
		}
		data = []byte(strings.ReplaceAll(string(data), "listen 127.0.0.1:1;", "listen "+listen+";"))
		conf := filepath.Join(t.TempDir(), name+".conf")
		if err := os.WriteFile(conf, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := dataplane.StartNginx(debianNginx, conf, listen)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, data)
		}
		t.Cleanup(p.Stop)
		return listen
	}
	cfg, err := Generate(res, "127.0.0.1:1", func(string, int) []string { return []string{app.Addr()} })
	if err != nil {
		t.Fatal(err)
	}
	sides := map[string]string{"file": start("file", cfg.Data), "lua": start("lua", withLuaBalancer(t, cfg.Data))}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// Tries 0 with a backend that always fails never ends with the Lua
	// balancer: the client gives up after a second.
	endless := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	send := func(client *http.Client, addr, method, path string) (int, int) {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "shop.example.com"
		resp, err := client.Do(req)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		app.WaitIdle(5 * time.Second)
		return status, len(app.Hits(path))
	}
	scripts := map[string]flaky.Script{"503": flaky.AlwaysFail(503), "429": flaky.AlwaysFail(429), "closed": flaky.CloseAlways(), "503 x15": flaky.FailFirst(15, 503)}
	n := 0
	for _, loc := range cfg.Locations {
		prefix := strings.TrimPrefix(loc.Path, "PathPrefix ")
		for _, method := range []string{"GET", "POST"} {
			for name, sc := range scripts {
				got := map[string]string{}
				hits := map[string]int{}
				unbounded := loc.Settings[ingressnginx.NextUpstreamTries] == "0" && method == "GET" && name != "429"
				for side, addr := range sides {
					n++
					path := fmt.Sprintf("%s/%s-%d", prefix, side, n)
					app.Handle(path, sc)
					c := client
					if unbounded && side == "lua" && name != "503 x15" {
						c = endless
					}
					status, h := send(c, addr, method, path)
					got[side], hits[side] = fmt.Sprintf("%d after %d tries", status, h), h
				}
				switch {
				case unbounded && name == "503 x15" && (hits["file"] != CappedTries || got["lua"] != "200 after 16 tries"):
					t.Errorf("Ingress %s, %s %s: file %s, Lua balancer %s; want %d tries on the file, 16 and 200 with Lua", loc.Ingress, method, name, got["file"], got["lua"], CappedTries)
				case unbounded && name != "503 x15" && (hits["file"] != CappedTries || hits["lua"] < 10*CappedTries):
					t.Errorf("Ingress %s, %s %s: file %s, Lua balancer %s; want %d tries on the file, no end with Lua", loc.Ingress, method, name, got["file"], got["lua"], CappedTries)
				case unbounded:
					t.Logf("Ingress %s, %s %s: file %s, Lua balancer %s", loc.Ingress, method, name, got["file"], got["lua"])
				case got["file"] != got["lua"]:
					t.Errorf("Ingress %s, %s %s: file %s, Lua balancer %s", loc.Ingress, method, name, got["file"], got["lua"])
				}
			}
		}
	}
}
