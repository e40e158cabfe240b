// Package corpus generates a large, varied and valid set of Gateway API
// manifests for benchmarks: a cluster's worth of HTTPRoutes with several
// matches per rule, one to three backends, retries and timeouts, attached
// to several Gateways across namespaces, with exact and wildcard hostnames,
// and the Services (with a clusterIP) and EndpointSlices they point at.
//
// The output depends only on Options: the same seed and sizes give the
// same bytes, so benchmarks and the figures in docs/performance.md can be
// reproduced.
package corpus

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// Options size the corpus.
type Options struct {
	// Routes is the number of HTTPRoutes.
	Routes int
	// Seed picks the variations; the same seed gives the same bytes.
	Seed uint64
	// GatewayClass is the gatewayClassName of every Gateway; a
	// GatewayClass of that name is written too.
	GatewayClass string
	// ControllerName is the GatewayClass's controllerName.
	ControllerName string
	// MaxRules and MaxMatches bound the rules of a route and the matches
	// of a rule (each drawn from 1 to the bound); 0 is the default, 4 and
	// 3. Smaller routes make larger corpora of the same bytes (issue 22's
	// 30 MB file of 68,000 routes: 1 and 1).
	MaxRules, MaxMatches int
}

// Defaults are the options of the shipped benchmarks with n routes.
func Defaults(n int) Options {
	return Options{Routes: n, Seed: 1, GatewayClass: "gwretry",
		ControllerName: "gateway.envoyproxy.io/gatewayclass-controller"}
}

// Namespaces is how many application namespaces a corpus of n routes
// spreads its routes and Services over: one per 100 routes, 2 to 50.
func Namespaces(n int) int { return min(max(n/100, 2), 50) }

// ServicesPerNamespace is how many Services each namespace holds.
const ServicesPerNamespace = 20

// gateways are the Gateways of every corpus, in namespace infra: several
// ports, listeners with and without hostnames, an exact and a wildcard
// hostname on one port.
var gateways = []struct {
	name      string
	listeners []listener
}{
	{"public", []listener{{"http", 8080, ""}}},
	{"shop", []listener{{"shop", 8081, "*.shop.example.com"}, {"admin", 8081, "admin.example.com"}}},
	{"internal", []listener{{"http", 8082, ""}}},
	{"api", []listener{{"api", 8083, "*.api.example.com"}}},
	{"edge", []listener{{"http", 8084, ""}}},
}

type listener struct {
	name     string
	port     int
	hostname string
}

// Write writes the corpus to w as YAML documents.
func Write(w io.Writer, o Options) error {
	if o.Routes < 1 {
		return fmt.Errorf("corpus: %d routes: want at least 1", o.Routes)
	}
	bw := bufio.NewWriter(w)
	g := &gen{w: bw, rnd: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), o: o}
	g.write()
	return bw.Flush()
}

// Generate returns the corpus as bytes.
func Generate(o Options) ([]byte, error) {
	var b strings.Builder
	if err := Write(&b, o); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

type gen struct {
	w   *bufio.Writer
	rnd *rand.Rand
	o   Options
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(g.w, format, args...) }

func (g *gen) write() {
	nns := Namespaces(g.o.Routes)
	g.p("# gwretry benchmark corpus: %d HTTPRoutes, seed %d (internal/corpus)\n", g.o.Routes, g.o.Seed)
	g.p("apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata:\n  name: %s\nspec:\n  controllerName: %s\n",
		g.o.GatewayClass, g.o.ControllerName)
	g.p("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: infra\n")
	for i := range nns {
		g.p("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    team: t%d\n", nsName(i), i%5)
	}
	for _, gw := range gateways {
		g.p("---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: %s\n  namespace: infra\nspec:\n  gatewayClassName: %s\n  listeners:\n",
			gw.name, g.o.GatewayClass)
		for _, l := range gw.listeners {
			g.p("  - name: %s\n    port: %d\n    protocol: HTTP\n", l.name, l.port)
			if l.hostname != "" {
				g.p("    hostname: %q\n", l.hostname)
			}
			g.p("    allowedRoutes:\n      namespaces:\n        from: All\n")
		}
	}
	for n := range nns {
		for s := range ServicesPerNamespace {
			g.service(n, s)
		}
	}
	for i := range g.o.Routes {
		g.route(i, nns)
	}
}

func nsName(i int) string { return fmt.Sprintf("team-%02d", i) }

// service writes Service svc-S in namespace N with a clusterIP and two
// ports; every other Service has an EndpointSlice with ready and
// not-ready endpoints, the rest resolve through cluster DNS.
func (g *gen) service(n, s int) {
	ns := nsName(n)
	g.p("---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%02d\n  namespace: %s\nspec:\n  type: ClusterIP\n  clusterIP: 10.96.%d.%d\n  selector:\n    app: svc-%02d\n  ports:\n  - name: http\n    port: 8080\n    targetPort: 3000\n  - name: alt\n    port: 80\n    targetPort: 3001\n",
		s, ns, n+1, s+1, s)
	if s%2 == 1 {
		return
	}
	g.p("---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: svc-%02d-abc\n  namespace: %s\n  labels:\n    kubernetes.io/service-name: svc-%02d\naddressType: IPv4\nports:\n- name: http\n  port: 3000\n  protocol: TCP\n- name: alt\n  port: 3001\n  protocol: TCP\nendpoints:\n",
		s, ns, s)
	for e := range 3 {
		g.p("- addresses: [\"10.244.%d.%d\"]\n  conditions:\n    ready: %t\n", n+1, s*4+e+1, e != 2)
	}
}

var (
	words      = []string{"cart", "pay", "users", "search", "img", "feed", "auth", "orders", "ship", "stock", "mail", "ads"}
	methods    = []string{"GET", "POST", "PUT", "DELETE", "PATCH"}
	codeSets   = [][]int{{500, 502, 503, 504}, {503}, {502, 503}, {500}, {429, 503}}
	durations  = []string{"100ms", "250ms", "500ms", "1s", "2s", "5s"}
	requestTOs = []string{"10s", "15s", "30s", "1m"}
)

func (g *gen) pick(s []string) string { return s[g.rnd.IntN(len(s))] }

// route writes HTTPRoute r-I: attached to one or two Gateways, with
// hostnames that fit their listeners, one to four rules.
func (g *gen) route(i, nns int) {
	r := g.rnd
	ns := nsName(i % nns)
	g.p("---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: r-%05d\n  namespace: %s\nspec:\n  parentRefs:\n", i, ns)
	var hosts []string
	switch k := r.IntN(10); {
	case k < 4: // public gateway, exact and sometimes wildcard hostnames
		g.p("  - name: public\n    namespace: infra\n")
		hosts = append(hosts, fmt.Sprintf("app-%d.example.com", i))
		if r.IntN(3) == 0 {
			hosts = append(hosts, fmt.Sprintf("*.t%d.example.com", i%97))
		}
	case k < 6: // the shop listener, by section name, under its wildcard
		g.p("  - name: shop\n    namespace: infra\n    sectionName: shop\n")
		hosts = append(hosts, fmt.Sprintf("s%d.shop.example.com", i))
		if r.IntN(4) == 0 {
			hosts = append(hosts, fmt.Sprintf("*.c%d.shop.example.com", i%31))
		}
	case k < 7: // two Gateways at once
		g.p("  - name: public\n    namespace: infra\n  - name: edge\n    namespace: infra\n")
		hosts = append(hosts, fmt.Sprintf("both-%d.example.com", i))
	case k < 9: // the api wildcard listener, the route narrows it
		g.p("  - name: api\n    namespace: infra\n")
		hosts = append(hosts, fmt.Sprintf("v%d.api.example.com", i))
	default:
		// internal, no hostname: shares the catch-all host, on a port
		// where no route has a hostname. (A catch-all route on a port
		// with h hostnames is copied into each of their virtual hosts,
		// as data planes without fall-through between hosts need: that
		// output grows as the product, whatever the tool.)
		g.p("  - name: internal\n    namespace: infra\n    port: 8082\n")
	}
	if len(hosts) > 0 {
		g.p("  hostnames:\n")
		for _, h := range hosts {
			g.p("  - %q\n", h)
		}
	}
	g.p("  rules:\n")
	nrules := 1 + r.IntN(cmp.Or(g.o.MaxRules, 4))
	for j := range nrules {
		g.rule(i, j, hosts == nil)
	}
}

func (g *gen) rule(i, j int, shared bool) {
	r := g.rnd
	g.p("  - name: rule-%d\n    matches:\n", j)
	for m := range 1 + r.IntN(cmp.Or(g.o.MaxMatches, 3)) {
		prefix := fmt.Sprintf("/%s/%d", g.pick(words), j*3+m)
		if shared {
			// Routes without hostnames share one virtual host: their
			// paths carry the route's number so none shadows another.
			prefix = fmt.Sprintf("/r%d%s", i, prefix)
		}
		switch r.IntN(6) {
		case 0:
			g.p("    - path:\n        type: Exact\n        value: %s\n", prefix)
		case 1:
			g.p("    - path:\n        type: RegularExpression\n        value: %q\n", prefix+"/[0-9]+")
		default:
			g.p("    - path:\n        type: PathPrefix\n        value: %s\n", prefix)
		}
		if r.IntN(3) == 0 {
			g.p("      method: %s\n", g.pick(methods))
		}
		if r.IntN(4) == 0 {
			g.p("      headers:\n      - name: x-tenant\n        value: t%d\n", r.IntN(20))
		}
		if r.IntN(8) == 0 {
			g.p("      queryParams:\n      - name: v\n        value: \"%d\"\n", 1+r.IntN(3))
		}
	}
	if r.IntN(10) < 7 {
		codes := codeSets[r.IntN(len(codeSets))]
		g.p("    retry:\n      codes: [")
		for k, c := range codes {
			if k > 0 {
				g.p(", ")
			}
			g.p("%d", c)
		}
		g.p("]\n      attempts: %d\n", r.IntN(5))
		if r.IntN(2) == 0 {
			g.p("      backoff: %s\n", g.pick(durations[:4]))
		}
	}
	if r.IntN(10) < 6 {
		g.p("    timeouts:\n      request: %s\n", g.pick(requestTOs))
		if r.IntN(2) == 0 {
			g.p("      backendRequest: %s\n", g.pick(durations))
		}
	}
	g.p("    backendRefs:\n")
	nb := 1 + r.IntN(3)
	first := r.IntN(ServicesPerNamespace)
	for b := range nb {
		port := 8080
		if r.IntN(5) == 0 {
			port = 80
		}
		g.p("    - name: svc-%02d\n      port: %d\n", (first+b*7)%ServicesPerNamespace, port)
		if nb > 1 {
			g.p("      weight: %d\n", 1+r.IntN(9))
		}
	}
}
