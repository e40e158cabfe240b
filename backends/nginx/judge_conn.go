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
	if len(m.ConnectionTimeouts) == 0 {
		return map[string]map[translate.Feature][]time.Duration{}, nil
	}
	_, parts, err := b.readBack(opts, files)
	if err != nil {
		return nil, err
	}
	httpLeaves := Leaves(parts.http)
	read := func(scopes []crossplane.Directives, names []string) timers {
		var out timers
		for _, n := range names {
			d := defaultProxyTimeout // every one of them defaults to 60s
			if args, ok := Lookup(scopes, n); ok {
				if len(args) != 1 {
					return timers{err: fmt.Errorf("%s has %d arguments", n, len(args))}
				}
				if d, err = ParseTime(args[0]); err != nil {
					return timers{err: fmt.Errorf("%s %q: %w", n, args[0], err)}
				}
			}
			out.ds = append(out.ds, d)
		}
		return out
	}
	// What each server block (by listen address) and each copy of a
	// rule's named location holds of both sets of timers, read a batch of
	// server blocks at a time.
	type read2 struct{ client, server timers }
	servers := map[string][]read2{}
	locations := map[string][]read2{}
	err = parts.eachServers(func(batch crossplane.Directives) error {
		for _, d := range batch {
			leaves := Leaves(d.Block)
			for _, x := range d.Block {
				switch {
				case x.Directive == "listen" && len(x.Args) > 0:
					scopes := []crossplane.Directives{leaves, httpLeaves}
					servers[x.Args[0]] = append(servers[x.Args[0]], read2{read(scopes, judgedClientTimers), read(scopes, judgedServerTimers)})
				case x.Directive == "location" && len(x.Args) == 1 && strings.HasPrefix(x.Args[0], "@"):
					scopes := []crossplane.Directives{x.Block, leaves, httpLeaves}
					locations[x.Args[0]] = append(locations[x.Args[0]], read2{read(scopes, judgedClientTimers), read(scopes, judgedServerTimers)})
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]map[translate.Feature][]time.Duration{}
	var rerr error
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, c := range g.Timeouts {
			var pick func(read2) timers
			switch c.Feature {
			case translate.FeatureConnClientTimeout:
				pick = func(r read2) timers { return r.client }
			case translate.FeatureConnServerTimeout:
				pick = func(r read2) timers { return r.server }
			default:
				continue
			}
			add := func(where string, t timers) {
				if t.err != nil && rerr == nil {
					rerr = fmt.Errorf("%s: %w", where, t.err)
				}
				out[g.Gateway][c.Feature] = append(out[g.Gateway][c.Feature], t.ds...)
			}
			g.ConnectionSites(c.Feature,
				func(l *translate.Listener) {
					listen := hostPort(l.Address, l.Port)
					for _, r := range servers[listen] {
						add("server "+listen, pick(r))
					}
				},
				func(r *translate.Rule) {
					for _, l := range locations["@"+locationName(r)] {
						add("location @"+locationName(r), pick(l))
					}
				})
		}
	}
	return out, rerr
}

// timers are the values of a set of timer directives read in one scope,
// or why they could not be read.
type timers struct {
	ds  []time.Duration
	err error
}
