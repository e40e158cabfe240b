package haproxy

import (
	parser "github.com/haproxytech/client-native/v5/config-parser"
	"github.com/haproxytech/client-native/v5/config-parser/params"
	"github.com/haproxytech/client-native/v5/config-parser/parsers/http/actions"
	"github.com/haproxytech/client-native/v5/config-parser/types"
)

// defaultsName names the defaults section; frontends and backends use the
// last defaults section, so no "from" is needed.
const defaultsName = "gwretry"

// buildDocument lays out global, defaults, the frontends and the backends.
func buildDocument(frontends []frontendPlan, backends []backendPlan) *document {
	d := &document{}
	g := d.addSection(parser.Global, parser.GlobalSectionName)
	d.setLines(g, "log", []types.Log{{Address: "stdout", Format: "raw", Facility: "local0"}}, 1)
	for _, f := range frontends {
		if f.tls != nil {
			// Keys next to their certificates: tls.key for tls.crt.
			d.set(g, "ssl-load-extra-files", &types.StringC{Value: "key"})
			d.set(g, "ssl-load-extra-del-ext", &types.Enabled{})
			break
		}
	}

	def := d.addSection(parser.Defaults, defaultsName)
	d.set(def, "mode", &types.StringC{Value: "http"})
	d.setLines(def, "log", []types.Log{{Global: true}}, 1)
	d.set(def, "option httplog", &types.OptionHTTPLog{})
	d.set(def, "balance", &types.Balance{Algorithm: "roundrobin"})
	// Never reuse a server connection: a kept-alive one that the server
	// closes as it is reused would otherwise fail the request without a
	// retry, and HAProxy then closes the client connection without an
	// answer (reference trap 16).
	d.set(def, "option http-server-close", &types.SimpleOption{})
	d.set(def, "timeout connect", &types.SimpleTimeout{Value: ms(defaultConnectMs)})
	d.set(def, "timeout client", &types.SimpleTimeout{Value: ms(defaultClientMs)})
	d.set(def, "timeout server", &types.SimpleTimeout{Value: ms(defaultServerMs)})
	d.set(def, "timeout http-request", &types.SimpleTimeout{Value: ms(defaultHTTPRequestMs)})
	d.set(def, "retries", &types.Int64C{Value: 0})

	for _, f := range frontends {
		s := d.addSection(parser.Frontends, f.name)
		d.setLines(s, "bind", []types.Bind{bindLine(f)}, 1)
		d.setFrontendConn(s, f.conn)
		d.setLines(s, "acl", f.acls, len(f.acls))
		d.setLines(s, "use_backend", f.useBackends, len(f.useBackends))
		d.set(s, "default_backend", &types.StringC{Value: noRouteBackend})
	}

	for _, b := range backends {
		s := d.addSection(parser.Backends, b.name)
		if b.answer500 == "always" {
			d.setLines(s, "http-request", []types.Action{returnAction("always")}, 1)
			continue
		}
		if b.redirects {
			d.setLines(s, "http-request", b.filters.redirect, len(b.filters.redirect))
			d.setLines(s, "http-after-response", b.filters.response, len(b.filters.response))
			continue
		}
		if b.bufferRequest {
			d.set(s, "option http-buffer-request", &types.SimpleOption{})
		}
		if b.redispatch {
			every := int64(1)
			d.set(s, "option redispatch", &types.OptionRedispatch{Interval: &every})
		}
		if b.timeouts.set {
			d.set(s, "timeout server", &types.SimpleTimeout{Value: ms(b.timeouts.serverMs)})
			d.set(s, "timeout connect", &types.SimpleTimeout{Value: ms(b.timeouts.connectMs)})
		}
		d.setBackendConn(s, b.conn)
		d.setLines(s, "default-server", []types.DefaultServer{{Params: []params.ServerOption{
			&params.ServerOptionValue{Name: "init-addr", Value: "last,libc,none"},
		}}}, 1)
		var rules []types.Action
		if b.answer500 != "" {
			rules = append(rules, returnAction(b.answer500))
		}
		if b.disableUnsafe {
			rules = append(rules, disableL7RetryAction())
		}
		rules = append(rules, b.filters.request...)
		d.setLines(s, "http-request", rules, len(rules))
		d.setLines(s, "http-after-response", b.filters.response, len(b.filters.response))
		d.setLines(s, "server", b.servers, len(b.servers))
		d.set(s, "retries", &types.Int64C{Value: b.retries})
		d.set(s, "retry-on", &types.StringC{Value: b.retryOn})
	}

	nr := d.addSection(parser.Backends, noRouteBackend)
	status := int64(404)
	d.setLines(nr, "http-request", []types.Action{&actions.Deny{Status: &status, Hdrs: []*actions.Hdr{}}}, 1)
	return d
}

// bindLine is the frontend's bind: plain HTTP, or TLS terminated with the
// listener's crt-list. The ALPN list is written (tlsALPN): without it
// HAProxy 2.6 offers no ALPN (HTTP/1.1), but HAProxy 2.8 and later offer
// h2,http/1.1 by default on an ssl bind in HTTP mode, which the
// listener.https finding ("requests inside are HTTP/1.1") would not say.
func bindLine(f frontendPlan) types.Bind {
	b := types.Bind{Path: f.bind}
	if f.tls != nil {
		b.Params = []params.BindOption{&params.BindOptionWord{Name: "ssl"}, &params.BindOptionValue{Name: "crt-list", Value: f.tls.crtList},
			&params.BindOptionValue{Name: "alpn", Value: tlsALPN}}
	}
	return b
}
