package nginx

import (
	"fmt"
	"strings"
	"time"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// The nginx timers that time a connection as HAProxy's timeout client and
// timeout server do (inactivity between two reads or writes), read by the
// judge whatever the planner writes: to the client, client_body_timeout
// and send_timeout; to the backend, proxy_send_timeout and
// proxy_read_timeout.
var (
	judgedClientTimers = []string{"client_body_timeout", "send_timeout"}
	judgedServerTimers = []string{"proxy_send_timeout", "proxy_read_timeout"}
)

// ObserveConnections implements translate.ConnectionJudge: it parses the
// file back and reads, in every server block of the Gateway's listeners,
// client_body_timeout and send_timeout (clientTimeout), and in every copy
// of the named location of each of its rules proxy_send_timeout and
// proxy_read_timeout (serverTimeout), inherited from the enclosing blocks
// and nginx's 60s default when unset. Each directive is one value, so a
// claim fails when either differs.
func (b *Backend) ObserveConnections(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.Feature][]time.Duration, error) {
	_, http, err := b.readBack(opts, files)
	if err != nil {
		return nil, err
	}
	httpLeaves := Leaves(http)
	read := func(scopes []crossplane.Directives, names []string) ([]time.Duration, error) {
		var out []time.Duration
		for _, n := range names {
			d := defaultProxyTimeout // every one of them defaults to 60s
			if args, ok := Lookup(scopes, n); ok {
				if len(args) != 1 {
					return nil, fmt.Errorf("%s has %d arguments", n, len(args))
				}
				if d, err = ParseTime(args[0]); err != nil {
					return nil, fmt.Errorf("%s %q: %w", n, args[0], err)
				}
			}
			out = append(out, d)
		}
		return out, nil
	}
	// Server blocks by listen address, and the named locations of rules.
	type scope struct{ server, location crossplane.Directives }
	servers := map[string][]crossplane.Directives{}
	locations := map[string][]scope{}
	for _, d := range http {
		if d.Directive != "server" {
			continue
		}
		for _, x := range d.Block {
			switch {
			case x.Directive == "listen" && len(x.Args) > 0:
				servers[x.Args[0]] = append(servers[x.Args[0]], d.Block)
			case x.Directive == "location" && len(x.Args) == 1 && strings.HasPrefix(x.Args[0], "@"):
				locations[x.Args[0]] = append(locations[x.Args[0]], scope{d.Block, x.Block})
			}
		}
	}
	out := map[string]map[translate.Feature][]time.Duration{}
	var rerr error
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, c := range g.Timeouts {
			var names []string
			switch c.Feature {
			case translate.FeatureConnClientTimeout:
				names = judgedClientTimers
			case translate.FeatureConnServerTimeout:
				names = judgedServerTimers
			default:
				continue
			}
			add := func(where string, scopes []crossplane.Directives) {
				ds, err := read(scopes, names)
				if err != nil && rerr == nil {
					rerr = fmt.Errorf("%s: %w", where, err)
				}
				out[g.Gateway][c.Feature] = append(out[g.Gateway][c.Feature], ds...)
			}
			g.ConnectionSites(c.Feature,
				func(l *translate.Listener) {
					listen := hostPort(l.Address, l.Port)
					for _, s := range servers[listen] {
						add("server "+listen, []crossplane.Directives{Leaves(s), httpLeaves})
					}
				},
				func(r *translate.Rule) {
					for _, sc := range locations["@"+locationName(r)] {
						add("location @"+locationName(r), []crossplane.Directives{sc.location, Leaves(sc.server), httpLeaves})
					}
				})
		}
	}
	return out, rerr
}
