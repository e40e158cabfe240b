//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/translate"
)

// ingressPaths are the path prefixes of testdata/ingress-nginx-diff's
// Ingresses, in the order of the rules the import makes of them (checked
// against the import's locations).
var ingressPaths = []string{"/retry", "/codes", "/post", "/unbounded", "/off", "/plain"}

// ingressTimed are the rules whose timers (proxy-read-timeout 1) are
// within diffLiveBudget on every side.
var ingressTimed = []int{0, 1, 2, 4}

// ingressTargets are the data planes the ingress-nginx side is diffed
// with live.
// (HAProxy 2.6 reads these rules as 3.0 does: one HAProxy is enough
// here, and TestDiffLive tells the two apart).
var ingressTargets = []string{"haproxy@3.0", "traefik@3.6"}

// TestDiffIngressLive proves gwretry diff --from ingress-nginx: the
// configuration ingress-nginx's template writes for the Ingresses of
// testdata/ingress-nginx-diff (as nginxconf generates it, with its Lua
// balancer's tries as upstream entries) runs on each installed nginx, the
// imported HTTPRoutes run on HAProxy and Traefik, the same scripted
// failures go to every Ingress path and method class on both, and every
// aspect the diff calls different must be observed different, every one it
// leaves out observed the same (checkPair, as TestDiffLive). The
// ingress-nginx side's timelines are the diff's own (ingressNginxSide).
func TestDiffIngressLive(t *testing.T) {
	if testing.Short() {
		t.Skip("live diff: not in the fast tier (-short)")
	}
	planes := installedPlanes(t)
	app := flaky.New(t, "app")
	endpointFlags := []string{"--endpoint", "app.shop:8080=" + app.Addr()}
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	if code, _, stderr := gwretry(t, "", "import", "ingress-nginx", ingressExample, "--output-file", routes, "--report", "none"); code != exitOK {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}
	sc := liveScene{file: routes, ready: "/plain/ready", backend: "app",
		timed: func(k ruleKey) bool { return slices.Contains(ingressTimed, k.rule) },
		request: func(rule int, methods translate.MethodClass, id string) (string, string) {
			method := "GET"
			if methods == translate.NonIdempotent {
				method = "POST"
			}
			return method, ingressPaths[rule] + "/" + id
		}}
	ports := &dataplane.Ports{}
	t.Cleanup(ports.Release)
	servers := []*flaky.Server{app}

	var sources []string
	runs := map[string]*planeRun{}
	for _, p := range planes {
		if p.name != "nginx" {
			continue
		}
		name := "ingress-nginx on nginx@" + p.version
		t.Run("observe "+name, func(t *testing.T) {
			listen, err := ports.Addr()
			if err != nil {
				t.Fatal(err)
			}
			o := &options{limits: input.DefaultLimits(), endpoints: []string{"app.shop:8080=" + app.Addr()}}
			ro, err := o.resolveOptions()
			if err != nil {
				t.Fatal(err)
			}
			di, err := loadIngressDiff([]string{ingressExample}, nil, o.limits, ro, ingressFlags{class: defaultIngressClass, controller: ingressnginx.DefaultController}, listen)
			if err != nil {
				t.Fatal(err)
			}
			for i, loc := range di.conf.Locations {
				if loc.Rule != i || loc.Path != "PathPrefix "+ingressPaths[i] {
					t.Fatalf("location %d is %s rule %d %s, want rule %d PathPrefix %s", i, loc.Route, loc.Rule, loc.Path, i, ingressPaths[i])
				}
			}
			side, err := ingressNginxSide(di)
			if err != nil {
				t.Fatal(err)
			}
			tls := map[ruleKey]translate.Timeline{}
			for _, tl := range side.timelines {
				tls[ruleKey{tl.Rule, tl.Methods}] = tl
			}
			conf := filepath.Join(t.TempDir(), "ingress-nginx.conf")
			if err := os.WriteFile(conf, di.conf.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			proxy, err := dataplane.StartNginx(p.bin, conf, listen)
			if err != nil {
				t.Fatalf("%v\n%s", err, di.conf.Data)
			}
			defer proxy.Stop()
			r := &planeRun{plane: livePlane{name: "ingress-nginx", version: "1.15 on nginx " + p.version}, timelines: tls, timed: sc.timed}
			r.results = observeRules(t, "ingress-nginx-"+p.version, listen, sc, tls, servers)
			if t.Failed() {
				t.Logf("nginx output:\n%s\nconfiguration:\n%s", proxy.Output(), di.conf.Data)
			}
			runs[name] = r
			sources = append(sources, name)
			t.Logf("observed on %s:\n%s", name, observedText(r))
		})
	}
	for _, p := range planes {
		if !slices.Contains(ingressTargets, p.target()) {
			continue
		}
		t.Run("observe "+p.target(), func(t *testing.T) {
			listen, err := ports.Addr()
			if err != nil {
				t.Fatal(err)
			}
			flags := append([]string{"--listen", listen}, endpointFlags...)
			r := &planeRun{plane: p, timelines: explainFile(t, p, routes, flags), timed: sc.timed}
			r.results = observeScene(t, p, sc, listen, flags, r.timelines, servers)
			runs[p.target()] = r
			t.Logf("observed on %s:\n%s", p.target(), observedText(r))
		})
	}
	if len(sources) == 0 && os.Getenv("CI") != "true" {
		t.Skip("no nginx installed")
	}

	var matrix []string
	for _, a := range sources {
		for _, b := range ingressTargets {
			ra, rb := runs[a], runs[b]
			pair := a + " -> " + b
			if ra == nil || rb == nil {
				matrix = append(matrix, pair+": not run ("+missingOf(runs, a, b)+")")
				continue
			}
			t.Run(pair, func(t *testing.T) {
				d := ingressLiveDiff(t, b, endpointFlags)
				matrix = append(matrix, checkPair(t, d, ra, rb)...)
			})
		}
	}
	t.Run("a lying diff is caught", func(t *testing.T) {
		ra, rb := runs["ingress-nginx on nginx@1.26"], runs["haproxy@3.0"]
		if ra == nil || rb == nil {
			t.Skip("needs nginx 1.26 and HAProxy 3.0")
		}
		// A diff that says nothing differs: unbounded tries and 429 are
		// observed otherwise.
		rec := &errorRecorder{}
		checkPair(rec, &diffReport{Rules: []ruleDiff{}}, ra, rb)
		for _, want := range []string{"rule 3 other: the diff says retries is the same", "rule 1 other: the diff says retried on is the same"} {
			if !slices.ContainsFunc(rec.errs, func(e string) bool { return strings.Contains(e, want) }) {
				t.Errorf("a diff that says ingress-nginx and HAProxy do the same passed (%q):\n%s", want, strings.Join(rec.errs, "\n"))
			}
		}
	})
	t.Logf("diff --from ingress-nginx claims against live observations (same: the diff lists nothing; "+
		"OK: observed as claimed; -: not observed, and why):\n%s", strings.Join(matrix, "\n"))
}

// ingressLiveDiff runs gwretry diff --from ingress-nginx on the Ingresses
// for target, with the endpoints of the live runs, and checks that it is
// the diff users get without them.
func ingressLiveDiff(t *testing.T, target string, endpointFlags []string) *diffReport {
	t.Helper()
	get := func(flags ...string) (*diffReport, string) {
		code, stdout, stderr := gwretry(t, "", append([]string{"diff", ingressExample, "--from", "ingress-nginx", "--to", target, "-o", "json"}, flags...)...)
		if code != exitOK {
			t.Fatalf("diff: exit %d\n%s", code, stderr)
		}
		var d diffReport
		if err := json.Unmarshal([]byte(stdout), &d); err != nil {
			t.Fatal(err)
		}
		return &d, stdout
	}
	d, live := get(endpointFlags...)
	if _, plain := get(); plain != live {
		t.Errorf("the diff with the live endpoints is not the Ingresses' diff:\n%s\nwant\n%s", live, plain)
	}
	if len(d.Rules) == 0 {
		t.Errorf("the diff to %s lists nothing: %s", target, fmt.Sprint(d))
	}
	return d
}
