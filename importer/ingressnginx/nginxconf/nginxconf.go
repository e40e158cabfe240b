// Package nginxconf writes, for the Ingresses gwretry import ingress-nginx
// read, the nginx configuration ingress-nginx's template would write for
// their paths (the retry and timeout directives only), and reads it back:
// what ingress-nginx does with the requests of each Ingress path, as
// gwretry diff --from ingress-nginx compares it with another data plane.
//
// The directives are those of ingress-nginx's nginx.tmpl (v1.15,
// rootfs/etc/nginx/template/nginx.tmpl) for a location:
// proxy_connect_timeout, proxy_send_timeout and proxy_read_timeout in
// seconds, proxy_next_upstream as buildNextUpstream writes it (non_idempotent
// last, added when the ConfigMap's retry-non-idempotent is true),
// proxy_next_upstream_timeout, proxy_next_upstream_tries, proxy_request_buffering
// on, client_max_body_size 1m, HTTP/1.1 with the upstream's keepalive.
//
// ingress-nginx balances in Lua: its one upstream, upstream_balancer, has a
// placeholder server and a balancer_by_lua that picks an endpoint for each
// try (round_robin by default) and calls set_more_tries(1), so that
// proxy_next_upstream_tries alone bounds the tries, a retry may go to an
// endpoint already tried, and tries 0 is no bound at all. Plain nginx,
// which runs this file, has no Lua: each location gets an upstream of its
// own that lists the endpoints in the balancer's round-robin order once per
// try (max_fails=0, as the Lua balancer keeps no passive health checks), so
// that plain nginx, which tries each entry at most once, makes the same
// tries. For tries 0 it lists CappedTries entries: the file then makes that
// many tries, where ingress-nginx makes as many as the failures last (the
// reading says unbounded, from the proxy_next_upstream_tries it reads).
//
// The values of the settings are those the import found in effect for the
// Ingress that owns each location (its annotations, else the ConfigMap's,
// else ingress-nginx's defaults, an annotation ingress-nginx refuses
// replaced as it replaces it): the import report's findings, which say
// which Ingress and value each HTTPRoute rule was made from. Nothing is
// taken from the HTTPRoute's retry or timeouts.
package nginxconf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/importer/ingressnginx"
)

// Version is the ingress-nginx release whose template the file follows.
const Version = "1.15"

// CappedTries is how many entries the upstream of a location with
// proxy_next_upstream_tries 0 lists: plain nginx cannot try without end.
const CappedTries = 10

// MaxEntries bounds the entries of an upstream: a location with more
// tries lists this many (plain nginx then stops there), so that the file
// does not grow with the value of an annotation.
const MaxEntries = 100

// keepalive is the template's upstream keepalive (upstream-keepalive-connections,
// 320 by default).
const keepalive = 320

// Location is one Ingress path as ingress-nginx serves it: the Ingress
// whose location it is, its host and path, the settings in effect, and the
// HTTPRoute rule the import made of it.
type Location struct {
	// Ingress is "namespace/name" of the Ingress whose settings the
	// location has.
	Ingress string `json:"ingress"`
	// Host is the server's name, "" for the catch-all server.
	Host string `json:"host"`
	// Path is the path type and path, as the HTTPRoute rule matches it
	// ("PathPrefix /catalogue").
	Path string `json:"path"`
	// Route and Rule are the HTTPRoute rule the import made of it.
	Route string `json:"route"`
	Rule  int    `json:"rule"`
	// Settings are the values in effect, by ConfigMap key
	// (proxy-next-upstream, ...; retry-non-idempotent).
	Settings map[string]string `json:"settings"`
	// Findings are the import's findings of the owner's settings for the
	// rule, by key as Settings.
	Findings map[string]ingressnginx.Finding `json:"-"`
	// Blocks are the arguments of the nginx locations written for it.
	Blocks [][]string `json:"blocks"`
	// Upstream is the name of its upstream block, "" when it is not
	// written: its backend has no endpoint (not a Service), or another
	// path has its locations.
	Upstream string `json:"upstream"`
}

// Config is the generated file and what it holds.
type Config struct {
	Data      []byte
	Locations []Location
}

// settingKeys are the settings a location's directives come from.
var settingKeys = []string{
	ingressnginx.NextUpstream, ingressnginx.NextUpstreamTries, ingressnginx.NextUpstreamTimeout,
	ingressnginx.ConnectTimeout, ingressnginx.ReadTimeout, ingressnginx.SendTimeout, ingressnginx.RetryNonIdempotent,
}

// Endpoints gives the addresses (host:port) of the backends of an
// HTTPRoute rule.
type Endpoints func(route string, rule int) []string

// Generate writes the file for the import's result: one server per host,
// one location per HTTPRoute rule the import made of an Ingress path (or
// of a defaultBackend), listening on listen. Rules the import added
// itself (redirects) have no settings and no location here.
func Generate(res *ingressnginx.Result, listen string, endpoints Endpoints) (*Config, error) {
	type ruleKey struct {
		route string
		rule  int
	}
	// The owner's findings of each rule: a finding of another Ingress
	// whose value differs says so (OtherIngressSettings, or
	// OtherIngressServes for its backend); among the others
	// any has the owner's value.
	found := map[ruleKey]map[string]ingressnginx.Finding{}
	for _, f := range res.Report.Findings {
		if f.Rule < 0 {
			continue
		}
		key := strings.TrimPrefix(strings.TrimPrefix(f.Annotation, ingressnginx.Prefix), "configmap:")
		if !slices.Contains(settingKeys, key) ||
			f.Reason == ingressnginx.ReasonOtherIngressServes || f.Reason == ingressnginx.ReasonOtherIngressSettings {
			continue
		}
		k := ruleKey{f.Route, f.Rule}
		if found[k] == nil {
			found[k] = map[string]ingressnginx.Finding{}
		}
		if _, ok := found[k][key]; !ok {
			found[k][key] = f
		}
	}
	cfg := &Config{}
	var servers []string
	byServer := map[string][]int{}
	for _, r := range res.Routes {
		route := r.Namespace + "/" + r.Name
		host := ""
		if len(r.Spec.Hostnames) > 0 {
			host = string(r.Spec.Hostnames[0])
		}
		for i, rule := range r.Spec.Rules {
			fs := found[ruleKey{route, i}]
			if fs == nil {
				continue
			}
			loc := Location{Ingress: fs[ingressnginx.NextUpstream].Ingress, Host: host, Route: route, Rule: i,
				Settings: map[string]string{}, Findings: fs}
			for _, k := range settingKeys {
				if f, ok := fs[k]; ok {
					loc.Settings[k] = f.Value
				}
			}
			if _, ok := loc.Settings[ingressnginx.RetryNonIdempotent]; !ok {
				loc.Settings[ingressnginx.RetryNonIdempotent] = ingressnginx.Defaults()[ingressnginx.RetryNonIdempotent]
			}
			for _, k := range settingKeys {
				if _, ok := loc.Settings[k]; !ok {
					return nil, fmt.Errorf("HTTPRoute %s rule %d: the import reports no value of %s", route, i, k)
				}
			}
			loc.Path, loc.Blocks = blocks(rule)
			loc.Upstream = "ingress_" + strconv.Itoa(len(cfg.Locations))
			if _, ok := byServer[host]; !ok {
				servers = append(servers, host)
			}
			byServer[host] = append(byServer[host], len(cfg.Locations))
			cfg.Locations = append(cfg.Locations, loc)
		}
	}
	// One server per host has each location once: a Prefix path's "= P"
	// gives way to an Exact path P (as ingress-nginx adds it only when no
	// Exact path has it), and otherwise the first rule has it. A location
	// left with no block is not written.
	exact := map[string]bool{}
	for _, loc := range cfg.Locations {
		if len(loc.Blocks) == 1 && loc.Blocks[0][0] == "=" {
			exact[loc.Host+"\x00"+strings.Join(loc.Blocks[0], " ")] = true
		}
	}
	taken := map[string]bool{}
	for i := range cfg.Locations {
		loc := &cfg.Locations[i]
		var kept [][]string
		for j, args := range loc.Blocks {
			k := loc.Host + "\x00" + strings.Join(args, " ")
			if taken[k] || len(loc.Blocks) == 2 && j == 0 && exact[k] {
				continue
			}
			taken[k] = true
			kept = append(kept, args)
		}
		loc.Blocks = kept
	}
	var b strings.Builder
	b.WriteString("# The locations ingress-nginx " + Version + " writes for the Ingress paths below (its nginx.tmpl: the\n")
	b.WriteString("# retry and timeout directives), written by gwretry diff --from ingress-nginx. Each upstream\n")
	b.WriteString("# lists, once per try, the endpoint ingress-nginx's Lua balancer picks for it (round_robin).\n")
	b.WriteString("events {}\nhttp {\n    access_log off;\n")
	b.WriteString("    map $http_upgrade $connection_upgrade {\n        default upgrade;\n        '' '';\n    }\n")
	for i := range cfg.Locations {
		loc := &cfg.Locations[i]
		eps := endpoints(loc.Route, loc.Rule)
		if len(loc.Blocks) == 0 {
			// Every location of its path is another rule's.
			loc.Upstream = ""
			continue
		}
		if len(eps) == 0 {
			// No endpoint (a backend that is not a Service): what
			// ingress-nginx does then is not modelled, and the location
			// is not written.
			loc.Upstream = ""
			continue
		}
		tries, _ := strconv.Atoi(loc.Settings[ingressnginx.NextUpstreamTries])
		if tries == 0 {
			tries = CappedTries
		}
		tries = min(tries, MaxEntries)
		fmt.Fprintf(&b, "    upstream %s {\n", loc.Upstream)
		for i := range max(tries, min(len(eps), MaxEntries)) {
			fmt.Fprintf(&b, "        server %s max_fails=0;\n", eps[i%len(eps)])
		}
		fmt.Fprintf(&b, "        keepalive %d;\n    }\n", keepalive)
	}
	for _, host := range servers {
		name := host
		if name == "" {
			name = "_"
		}
		fmt.Fprintf(&b, "    server {\n        listen %s;\n        server_name %s;\n", listen, name)
		for _, i := range byServer[host] {
			loc := cfg.Locations[i]
			if loc.Upstream == "" {
				fmt.Fprintf(&b, "        # Ingress %s, %s: not written (no endpoint, or its locations are another path's)\n", loc.Ingress, loc.Path)
				continue
			}
			for _, args := range loc.Blocks {
				fmt.Fprintf(&b, "        location %s {\n", strings.Join(args, " "))
				fmt.Fprintf(&b, "            # Ingress %s, %s -> HTTPRoute %s rule %d\n", loc.Ingress, loc.Path, loc.Route, loc.Rule)
				writeDirectives(&b, loc)
				b.WriteString("        }\n")
			}
		}
		b.WriteString("    }\n")
	}
	b.WriteString("}\n")
	cfg.Data = []byte(b.String())
	return cfg, nil
}

// blocks are the locations ingress-nginx writes for the rule's path: a
// Prefix path P as "= P" and "P/" (P itself when it ends in /), an Exact
// one as "= P", a regular expression as "~* ^RE".
func blocks(rule gwv1.HTTPRouteRule) (string, [][]string) {
	if len(rule.Matches) == 0 || rule.Matches[0].Path == nil {
		return "PathPrefix /", [][]string{{"/"}}
	}
	p := rule.Matches[0].Path
	t, v := string(*p.Type), *p.Value
	switch *p.Type {
	case gwv1.PathMatchExact:
		return t + " " + v, [][]string{{"=", v}}
	case gwv1.PathMatchRegularExpression:
		return t + " " + v, [][]string{{"~*", strconv.Quote("^" + strings.TrimPrefix(v, "(?i)"))}}
	}
	if strings.HasSuffix(v, "/") {
		return t + " " + v, [][]string{{v}}
	}
	return t + " " + v, [][]string{{"=", v}, {v + "/"}}
}

// writeDirectives writes the template's directives for loc's settings.
func writeDirectives(b *strings.Builder, loc Location) {
	s := loc.Settings
	w := func(name, value string) { fmt.Fprintf(b, "            %-31s %s;\n", name, value) }
	w("client_max_body_size", "1m")
	w("proxy_set_header", "Connection $connection_upgrade")
	w("proxy_connect_timeout", s[ingressnginx.ConnectTimeout]+"s")
	w("proxy_send_timeout", s[ingressnginx.SendTimeout]+"s")
	w("proxy_read_timeout", s[ingressnginx.ReadTimeout]+"s")
	w("proxy_request_buffering", "on")
	w("proxy_http_version", "1.1")
	nonIdempotent, _ := strconv.ParseBool(s[ingressnginx.RetryNonIdempotent])
	w("proxy_next_upstream", buildNextUpstream(s[ingressnginx.NextUpstream], nonIdempotent))
	w("proxy_next_upstream_timeout", s[ingressnginx.NextUpstreamTimeout])
	w("proxy_next_upstream_tries", s[ingressnginx.NextUpstreamTries])
	w("proxy_pass", "http://"+loc.Upstream)
}

// buildNextUpstream is the template function of the same name
// (internal/ingress/controller/template/template.go): the tokens but
// non_idempotent, which comes last when asked for by a token or by the
// ConfigMap's retry-non-idempotent.
func buildNextUpstream(value string, retryNonIdempotent bool) string {
	var out []string
	for _, v := range strings.Split(value, " ") {
		if v != "" && v != "non_idempotent" {
			out = append(out, v)
		}
		if v == "non_idempotent" {
			retryNonIdempotent = true
		}
	}
	if retryNonIdempotent {
		out = append(out, "non_idempotent")
	}
	return strings.Join(out, " ")
}
