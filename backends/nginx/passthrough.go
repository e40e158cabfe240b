package nginx

import (
	"fmt"
	"slices"

	crossplane "github.com/nginxinc/nginx-go-crossplane"
)

// What a Gateway passes through unchanged, where nginx's defaults would
// act on the traffic (each proven live by TestLivePassThrough):
//
//   - request header names with '_' or '.': dropped by nginx's defaults
//     (underscores_in_headers off, ignore_invalid_headers on); every
//     server sets them the other way. nginx reads them from the default
//     server of the listening socket, so the catch-all 404 servers too.
//   - Host: an HTTP/1.0 request may have none, and $http_host is then
//     empty, so nginx would send none (a backend answers 400 to an HTTP/1.1
//     request without Host); hostVar is the client's Host as sent, or
//     else the host of an absolute request line ($host, which is the
//     server_name otherwise, "" in a catch-all), or else the address and
//     port the client connected to.

// acceptedHeaderNames are the server directives that pass request header
// names with '_' and '.'.
func acceptedHeaderNames() crossplane.Directives {
	return crossplane.Directives{directive("underscores_in_headers", "on"), directive("ignore_invalid_headers", "off")}
}

// Variables of the pass-through maps. ruleVar names always end in
// "_" + a suffix gwretry uses (add0, rd, rw, mirror0_skip), and a rule
// name has no '_' after escaping except as "__", "_h" or "_d", so none of
// them is one of these.
const (
	hostVar     = "$gw_host"
	hostNameVar = "$gw_host_default"
	hostAddrVar = "$gw_server_authority"
)

// hostMaps are the http-level maps behind hostVar.
func hostMaps() crossplane.Directives {
	return crossplane.Directives{
		block("map", []string{"$http_host", hostVar}, crossplane.Directives{
			directive("", hostNameVar),
			directive("default", "$http_host"),
		}),
		block("map", []string{"$host", hostNameVar}, crossplane.Directives{
			directive("", hostAddrVar),
			directive("default", "$host"),
		}),
		block("map", []string{"$server_addr", hostAddrVar}, crossplane.Directives{
			directive("~:", "[$server_addr]:$server_port"),
			directive("default", "$server_addr:$server_port"),
		}),
	}
}

// passMaps returns the pass-through maps the directives of servers use.
func passMaps(servers crossplane.Directives) crossplane.Directives {
	var out crossplane.Directives
	if usesArg(servers, hostVar) {
		out = append(out, hostMaps()...)
	}
	return out
}

// usesArg reports whether some directive in ds has the argument s.
func usesArg(ds crossplane.Directives, s string) bool {
	for _, d := range ds {
		if slices.Contains(d.Args, s) || usesArg(d.Block, s) {
			return true
		}
	}
	return false
}

// The judge's side.

// checkServerHeaderNames refuses a server block (its leaves, then http's)
// that drops request header names with '_' or '.'.
func checkServerHeaderNames(scopes []crossplane.Directives) error {
	for _, want := range acceptedHeaderNames() {
		if args, ok := lookup(scopes, want.Directive); !ok || !slices.Equal(args, want.Args) {
			return fmt.Errorf("%s %q: nginx drops client headers with '_' or '.' in the name (%s %s wanted)", want.Directive, args, want.Directive, want.Args[0])
		}
	}
	return nil
}

// isHostVar reports whether hostVar is defined by hostMaps.
func (fs filterScope) isHostVar() bool {
	for _, m := range hostMaps() {
		if !fs.isBlock(m.Args[1], m) {
			return false
		}
	}
	return true
}

// isBlock reports whether the http-level block that defines variable is
// want.
func (fs filterScope) isBlock(variable string, want *crossplane.Directive) bool {
	b, ok := fs.blocks[variable]
	return ok && equalDirective(b, want)
}
