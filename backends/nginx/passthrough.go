package nginx

import (
	"slices"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"
)

// What a Gateway passes through unchanged, where nginx's defaults would
// act on the traffic (each proven live by TestLivePassThrough):
//
//   - response headers: nginx follows a backend's X-Accel-Redirect (an
//     internal redirect, which the routing's error_page 418 turns into a
//     bare 418), obeys X-Accel-Limit-Rate, -Buffering, -Charset and
//     -Expires, and strips them and X-Pad (ngx_http_proxy_hide_headers).
//     Every proxying location gets proxy_ignore_headers for the five and
//     proxy_pass_header for the six (less those the rule's
//     ResponseHeaderModifier hides: proxy_pass_header would undo its
//     proxy_hide_header); a mirror location only proxy_ignore_headers, as
//     its responses are discarded.
//   - request header names with '_' or '.': dropped by nginx's defaults
//     (underscores_in_headers off, ignore_invalid_headers on); every
//     server sets them the other way. nginx reads them from the default
//     server of the listening socket, so the catch-all 404 servers too.
//   - upgrades (WebSocket): nginx sends Upgrade "" and Connection close;
//     every proxying location passes the client's Upgrade and sends
//     Connection upgrade (or close without one) through upgradeVar.
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

// ignoredHeaders are the X-Accel-* response headers nginx acts on
// (ngx_http_upstream_ignore_headers_masks, less Expires, Cache-Control,
// Set-Cookie and Vary, which act only with a cache, and gwretry writes
// none).
var ignoredHeaders = []string{"X-Accel-Redirect", "X-Accel-Expires", "X-Accel-Limit-Rate", "X-Accel-Buffering", "X-Accel-Charset"}

// strippedHeaders are the backend response headers nginx's proxy module
// hides by default (ngx_http_proxy_hide_headers) less Date and Server,
// which nginx writes itself.
var strippedHeaders = []string{"X-Pad", "X-Accel-Expires", "X-Accel-Redirect", "X-Accel-Limit-Rate", "X-Accel-Buffering", "X-Accel-Charset"}

// ignoreDirective is proxy_ignore_headers with every ignoredHeaders name.
func ignoreDirective() *crossplane.Directive {
	return directive("proxy_ignore_headers", ignoredHeaders...)
}

// passDirectives are the response header directives of a proxying
// location whose rule hides the lower-case names in hidden: nginx acts on
// no X-Accel-* header and passes each stripped header it does not hide.
func passDirectives(hidden map[string]bool) crossplane.Directives {
	ds := crossplane.Directives{ignoreDirective()}
	for _, n := range strippedHeaders {
		if !hidden[strings.ToLower(n)] {
			ds = append(ds, directive("proxy_pass_header", n))
		}
	}
	return ds
}

// Variables of the pass-through maps. ruleVar names always end in
// "_" + a suffix gwretry uses (add0, rd, rw, mirror0_skip), and a rule
// name has no '_' after escaping except as "__", "_h" or "_d", so none of
// them is one of these.
const (
	upgradeVar       = "$gw_connection_upgrade"
	hostVar          = "$gw_host"
	hostNameVar      = "$gw_host_default"
	hostAddrVar      = "$gw_server_authority"
	clientUpgradeVar = "$http_upgrade"
)

// upgradeHeaders are the proxy_set_header directives that pass an
// upgrade, before a RequestHeaderModifier's (which win).
func upgradeHeaders() crossplane.Directives {
	return crossplane.Directives{directive("proxy_set_header", "Connection", upgradeVar), directive("proxy_set_header", "Upgrade", clientUpgradeVar)}
}

// isUpgradeHeader reports whether d is one of upgradeHeaders.
func isUpgradeHeader(d *crossplane.Directive) bool {
	return slices.ContainsFunc(upgradeHeaders(), func(u *crossplane.Directive) bool { return equalDirective(d, u) })
}

// upgradeMap is the http-level map behind upgradeVar.
func upgradeMap() *crossplane.Directive {
	return block("map", []string{clientUpgradeVar, upgradeVar}, crossplane.Directives{
		directive("default", "upgrade"),
		directive("", "close"),
	})
}

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
	return passMapsFor(usesArg(servers, upgradeVar), usesArg(servers, hostVar))
}

// passMapsFor is passMaps of servers that use upgradeVar and hostVar as
// said.
func passMapsFor(upgrade, host bool) crossplane.Directives {
	var out crossplane.Directives
	if upgrade {
		out = append(out, upgradeMap())
	}
	if host {
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
