package nginx

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"
)

// The judge's side of the pass-through (passthrough.go): it reads what
// the file does from the directives and the maps as nginx evaluates them,
// without asking the planner what it writes.

// checkServerHeaderNames refuses a server block (its leaves, then http's)
// that drops request header names with '_' or '.': nginx's defaults
// (underscores_in_headers off, ignore_invalid_headers on) drop them.
func checkServerHeaderNames(scopes []crossplane.Directives) error {
	for _, want := range [][2]string{{"underscores_in_headers", "on"}, {"ignore_invalid_headers", "off"}} {
		if args, ok := Lookup(scopes, want[0]); !ok || !slices.Equal(args, []string{want[1]}) {
			return fmt.Errorf("%s %q: nginx drops client headers with '_' or '.' in the name (%s %s wanted)", want[0], args, want[0], want[1])
		}
	}
	return nil
}

// checkIgnored refuses a proxying location where nginx acts on a
// backend's X-Accel-* header.
func checkIgnored(scopes []crossplane.Directives) error {
	args, _ := Lookup(scopes, "proxy_ignore_headers")
	for _, n := range ignoredHeaders {
		if !slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, n) }) {
			return fmt.Errorf("proxy_ignore_headers %q: nginx acts on a backend's %s response header", args, n)
		}
	}
	return nil
}

// passedHeaders reads proxy_pass_header (the innermost level that has
// one, as nginx inherits it): the lower-case names nginx passes.
func passedHeaders(scopes []crossplane.Directives) map[string]bool {
	out := map[string]bool{}
	for _, d := range innermost(scopes, "proxy_pass_header") {
		if len(d.Args) == 1 {
			out[strings.ToLower(d.Args[0])] = true
		}
	}
	return out
}

// checkStripped refuses a proxying location where nginx strips one of
// strippedHeaders by its default alone: a proxy_hide_header of the name
// is a rule's Remove or Set, which responseHeaders reads.
func checkStripped(scopes []crossplane.Directives) error {
	passed := passedHeaders(scopes)
	hidden := map[string]bool{}
	for _, d := range innermost(scopes, "proxy_hide_header") {
		if len(d.Args) == 1 {
			hidden[strings.ToLower(d.Args[0])] = true
		}
	}
	for _, n := range strippedHeaders {
		if l := strings.ToLower(n); !passed[l] && !hidden[l] {
			return fmt.Errorf("no proxy_pass_header %s: nginx strips the backend's %s response header", n, n)
		}
	}
	return nil
}

// judgedUpgradeHeader reports whether proxy_set_header name val passes
// the client's upgrade: Upgrade as the client sent it, or Connection from
// a map that checkUpgrade evaluates.
func judgedUpgradeHeader(name, val string) bool {
	return strings.EqualFold(name, "upgrade") && val == "$http_upgrade" ||
		strings.EqualFold(name, "connection") && val == upgradeVar
}

// checkUpgrade refuses a proxying location that does not pass an
// upgrade: without proxy_set_header Upgrade nginx sends none, and
// without proxy_set_header Connection it sends Connection: close. A value
// other than the pass-through is a rule's header filter, which
// requestHeaders reads; the Connection variable must evaluate to
// "upgrade" when the client asks for one and "close" otherwise.
func (fs filterScope) checkUpgrade() error {
	set := map[string]string{}
	for _, d := range innermost(fs.scopes, "proxy_set_header") {
		if len(d.Args) == 2 {
			set[strings.ToLower(d.Args[0])] = d.Args[1]
		}
	}
	for _, name := range []string{"Upgrade", "Connection"} {
		if _, ok := set[strings.ToLower(name)]; !ok {
			return fmt.Errorf("no proxy_set_header %s: nginx does not pass an upgrade (WebSocket) to the backend", name)
		}
	}
	if v := set["connection"]; v == upgradeVar {
		for client, want := range map[string]string{"websocket": "upgrade", "": "close"} {
			if got, ok := fs.evalVar(v, map[string]string{"$http_upgrade": client}, 0); !ok || got != want {
				return fmt.Errorf("%s is %q for a client Upgrade %q, want %q", v, got, client, want)
			}
		}
	}
	return nil
}

// isHostVar reports whether hostVar evaluates, through the http-level
// maps, to the client's Host as sent, or else the host of the request
// ($host), or else the address and port the client connected to (an IPv6
// address in brackets).
func (fs filterScope) isHostVar() bool {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"$http_host": "h.example:8080", "$host": "h.example", "$server_addr": "127.0.0.1", "$server_port": "8080"}, "h.example:8080"},
		{map[string]string{"$http_host": "", "$host": "h.example", "$server_addr": "127.0.0.1", "$server_port": "8080"}, "h.example"},
		{map[string]string{"$http_host": "", "$host": "", "$server_addr": "127.0.0.1", "$server_port": "8080"}, "127.0.0.1:8080"},
		{map[string]string{"$http_host": "", "$host": "", "$server_addr": "::1", "$server_port": "8080"}, "[::1]:8080"},
	} {
		if got, ok := fs.evalVar(hostVar, tc.env, 0); !ok || got != tc.want {
			return false
		}
	}
	return true
}

// variableRef is a variable in a complex value: $name or ${name}.
var variableRef = regexp.MustCompile(`\$(\{[A-Za-z0-9_]+\}|[A-Za-z0-9_]+)`)

// evalVar evaluates variable name ("$gw_host") as nginx would for a
// request whose other variables are env: a variable of env, or an
// http-level map (exact keys first, then regexes in order, then default;
// "" without one). ok is false for any other variable, a regex nginx would
// refuse, or maps nested too deep.
func (fs filterScope) evalVar(name string, env map[string]string, depth int) (string, bool) {
	if v, ok := env[name]; ok {
		return v, true
	}
	b, ok := fs.blocks[name]
	if !ok || b.Directive != "map" || len(b.Args) != 2 || depth > 8 {
		return "", false
	}
	src, ok := fs.interpolate(b.Args[0], env, depth+1)
	if !ok {
		return "", false
	}
	var def *crossplane.Directive
	var regexes []*crossplane.Directive
	for _, e := range b.Block {
		if len(e.Args) != 1 {
			return "", false
		}
		switch {
		case e.Directive == "default":
			def = e
		case strings.HasPrefix(e.Directive, "~"):
			regexes = append(regexes, e)
		case e.Directive == src:
			return fs.interpolate(e.Args[0], env, depth+1)
		}
	}
	for _, e := range regexes {
		pat := strings.TrimPrefix(e.Directive, "~")
		if strings.HasPrefix(pat, "*") {
			pat = "(?i)" + pat[1:]
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return "", false
		}
		if re.MatchString(src) {
			return fs.interpolate(e.Args[0], env, depth+1)
		}
	}
	if def == nil {
		return "", true
	}
	return fs.interpolate(def.Args[0], env, depth+1)
}

// interpolate replaces each variable of the complex value s by its value.
func (fs filterScope) interpolate(s string, env map[string]string, depth int) (string, bool) {
	ok := true
	out := variableRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := "$" + strings.Trim(ref[1:], "{}")
		v, found := fs.evalVar(name, env, depth)
		ok = ok && found
		return v
	})
	return out, ok
}
