//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/proxytest"
)

// roundTrip is one Ingress of TestImportRoundTrip: its annotations, the
// nginx location ingress-nginx writes for them (by hand, from the
// annotations' documented meaning), and a request with the backend's
// script.
type roundTrip struct {
	name        string
	annotations map[string]string
	// tries is the proxy_next_upstream_tries in effect (3 by default).
	tries int
	// location holds the directives ingress-nginx's template writes for
	// these annotations (rootfs/etc/nginx/template/nginx.tmpl: proxy_*_timeout
	// in seconds, proxy_next_upstream from buildNextUpstream,
	// proxy_next_upstream_timeout, proxy_next_upstream_tries).
	location string
	method   string
	script   flaky.Script
	// wantHits and wantStatus are what ingress-nginx does (the original
	// configuration must agree, or the test's own model is wrong).
	wantHits   int
	wantStatus int
}

// TestImportRoundTrip imports Ingresses, translates the HTTPRoutes to
// nginx, and runs the result on the real nginx against the flaky backend;
// the same requests go to an nginx configured by hand as ingress-nginx
// configures itself for the same annotations. The tries on the wire and
// the answers must be the same.
//
// ingress-nginx balances in Lua (balancer_by_lua on one placeholder
// server) and asks nginx for one more try each time (set_more_tries(1)),
// so proxy_next_upstream_tries alone bounds the tries and a retry may reach
// the same endpoint; with one endpoint, as here, every try does. Plain
// nginx never retries an upstream entry it already tried, so the hand-made
// upstream lists the endpoint once per try, with max_fails=0 (the Lua
// balancer ignores passive health checks too).
func TestImportRoundTrip(t *testing.T) {
	proxytest.Require(t, "nginx")
	const defaults = "proxy_connect_timeout 5s; proxy_send_timeout 60s; proxy_read_timeout 60s; proxy_next_upstream_timeout 0;"
	cases := []roundTrip{
		{name: "defaults", tries: 3, location: defaults + " proxy_next_upstream error timeout; proxy_next_upstream_tries 3;",
			method: "GET", script: flaky.CloseAlways(), wantHits: 3, wantStatus: 502},
		{name: "defaults-502", tries: 3, location: defaults + " proxy_next_upstream error timeout; proxy_next_upstream_tries 3;",
			method: "GET", script: flaky.AlwaysFail(502), wantHits: 1, wantStatus: 502},
		{name: "codes", annotations: map[string]string{"proxy-next-upstream": "error timeout http_502 http_503", "proxy-next-upstream-tries": "4"},
			tries: 4, location: defaults + " proxy_next_upstream error timeout http_502 http_503; proxy_next_upstream_tries 4;",
			method: "GET", script: flaky.AlwaysFail(503), wantHits: 4, wantStatus: 503},
		{name: "codes-recover", annotations: map[string]string{"proxy-next-upstream": "error timeout http_502 http_503", "proxy-next-upstream-tries": "4"},
			tries: 4, location: defaults + " proxy_next_upstream error timeout http_502 http_503; proxy_next_upstream_tries 4;",
			method: "GET", script: flaky.FailFirst(2, 502), wantHits: 3, wantStatus: 200},
		{name: "unlisted", annotations: map[string]string{"proxy-next-upstream": "error timeout http_502"},
			tries: 3, location: defaults + " proxy_next_upstream error timeout http_502; proxy_next_upstream_tries 3;",
			method: "GET", script: flaky.AlwaysFail(500), wantHits: 1, wantStatus: 500},
		{name: "off", annotations: map[string]string{"proxy-next-upstream": "off"},
			tries: 3, location: defaults + " proxy_next_upstream off; proxy_next_upstream_tries 3;",
			method: "GET", script: flaky.CloseAlways(), wantHits: 1, wantStatus: 502},
		{name: "one-try", annotations: map[string]string{"proxy-next-upstream": "error timeout http_502", "proxy-next-upstream-tries": "1"},
			tries: 1, location: defaults + " proxy_next_upstream error timeout http_502; proxy_next_upstream_tries 1;",
			method: "GET", script: flaky.AlwaysFail(502), wantHits: 1, wantStatus: 502},
		{name: "post", annotations: map[string]string{"proxy-next-upstream": "error timeout http_502", "proxy-next-upstream-tries": "3"},
			tries: 3, location: defaults + " proxy_next_upstream error timeout http_502; proxy_next_upstream_tries 3;",
			method: "POST", script: flaky.AlwaysFail(502), wantHits: 1, wantStatus: 502},
		{name: "read-timeout", annotations: map[string]string{"proxy-read-timeout": "1", "proxy-next-upstream-tries": "2"},
			tries: 2, location: "proxy_connect_timeout 5s; proxy_send_timeout 60s; proxy_read_timeout 1s; proxy_next_upstream_timeout 0; proxy_next_upstream error timeout; proxy_next_upstream_tries 2;",
			method: "GET", script: flaky.DelayFirst(1, 3*time.Second), wantHits: 2, wantStatus: 200},
	}

	// The Ingresses, one per case, each with its own Service and path.
	var manifest strings.Builder
	for i, c := range cases {
		if i > 0 {
			manifest.WriteString("---\n")
		}
		fmt.Fprintf(&manifest, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: %q\n  namespace: default\n", c.name)
		if len(c.annotations) > 0 {
			manifest.WriteString("  annotations:\n")
			for _, k := range slices.Sorted(maps.Keys(c.annotations)) {
				fmt.Fprintf(&manifest, "    nginx.ingress.kubernetes.io/%s: %q\n", k, c.annotations[k])
			}
		}
		fmt.Fprintf(&manifest, "spec:\n  ingressClassName: nginx\n  rules:\n  - http:\n      paths:\n      - path: /%s\n        pathType: Prefix\n"+
			"        backend:\n          service:\n            name: %q\n            port:\n              number: 80\n", c.name, c.name)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "ingresses.yaml")
	if err := os.WriteFile(in, []byte(manifest.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// gwretry's journey: import, then translate for nginx.
	var routes, stderr bytes.Buffer
	if code := run([]string{"import", "ingress-nginx", in, "--report", "none", "-q"}, nil, &routes, &stderr); code != exitOK {
		t.Fatalf("import: exit %d\n%s", code, stderr.String())
	}
	routesPath := filepath.Join(dir, "routes.yaml")
	if err := os.WriteFile(routesPath, routes.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	imported, original := flaky.New(t, "imported"), flaky.New(t, "original")
	listen := "127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t))
	out := filepath.Join(dir, "out")
	args := []string{"translate", routesPath, "--target", "nginx", "--listen", listen, "--output-dir", out, "--report", "none", "-q"}
	for _, c := range cases {
		imported.Handle("/"+c.name, c.script)
		original.Handle("/"+c.name, c.script)
		args = append(args, "--endpoint", c.name+".default:80="+imported.Addr())
	}
	stderr.Reset()
	if code := run(args, nil, io.Discard, &stderr); code != exitOK {
		t.Fatalf("translate: exit %d\n%s", code, stderr.String())
	}
	proxytest.StartNginx(t, filepath.Join(out, "nginx", "nginx.conf"), listen)

	// ingress-nginx's configuration for the same annotations, by hand.
	origListen := "127.0.0.1:" + strconv.Itoa(proxytest.FreePort(t))
	var conf strings.Builder
	conf.WriteString("events {}\nhttp {\n    access_log off;\n")
	for _, c := range cases {
		fmt.Fprintf(&conf, "    upstream %s {\n", strings.ReplaceAll(c.name, "-", "_"))
		for range c.tries {
			fmt.Fprintf(&conf, "        server %s max_fails=0;\n", original.Addr())
		}
		conf.WriteString("    }\n")
	}
	fmt.Fprintf(&conf, "    server {\n        listen %s;\n", origListen)
	for _, c := range cases {
		fmt.Fprintf(&conf, "        location /%s {\n            proxy_pass http://%s;\n            proxy_http_version 1.1;\n            %s\n        }\n",
			c.name, strings.ReplaceAll(c.name, "-", "_"), c.location)
	}
	conf.WriteString("    }\n}\n")
	origPath := filepath.Join(dir, "ingress-nginx.conf")
	if err := os.WriteFile(origPath, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	proxytest.StartNginx(t, origPath, origListen)

	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	send := func(addr string, c roundTrip) (int, error) {
		req, err := http.NewRequest(c.method, "http://"+addr+"/"+c.name, strings.NewReader("body"))
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, side := range []struct {
				name string
				addr string
				srv  *flaky.Server
			}{{"ingress-nginx by hand", origListen, original}, {"imported and translated", listen, imported}} {
				status, err := send(side.addr, c)
				if err != nil {
					t.Fatalf("%s: %v", side.name, err)
				}
				side.srv.WaitIdle(5 * time.Second)
				hits := side.srv.Hits("/" + c.name)
				if status != c.wantStatus || len(hits) != c.wantHits {
					t.Errorf("%s: %s /%s with %s: status %d after %d tries, want %d after %d\nhits: %v",
						side.name, c.method, c.name, c.script, status, len(hits), c.wantStatus, c.wantHits, hits)
				}
			}
		})
	}
}
