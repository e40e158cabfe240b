package haproxy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	tcptypes "github.com/haproxytech/client-native/v5/config-parser/parsers/tcp/types"
	"github.com/haproxytech/client-native/v5/config-parser/types"

	"github.com/gwretry/gwretry/translate"
)

// ObserveConnections implements translate.ConnectionJudge: it parses
// haproxy.cfg back and reads, in each frontend and backend where a
// Gateway's field applies, the value HAProxy uses (the section's own, else
// the defaults').
func (*Backend) ObserveConnections(m *translate.Model, _ translate.Options, files []translate.File) (map[string]map[translate.Feature][]time.Duration, error) {
	p, err := translate.FileParsed(files, OutputPath, parseSections)
	if err != nil {
		return nil, err
	}
	c := cfgReader{p: p}
	defs, err := p.SectionsGet(parser.Defaults)
	if err != nil {
		return nil, fmt.Errorf("listing defaults sections: %w", err)
	}
	def := ""
	if len(defs) > 0 {
		def = defs[len(defs)-1]
	}
	read := func(typ parser.Section, section, attr string) (time.Duration, bool, error) {
		var v any
		if attr == "tcp-request inspect-delay" {
			rules, _ := c.get(typ, section, "tcp-request").([]types.TCPType)
			for _, r := range rules {
				if d, ok := r.(*tcptypes.InspectDelay); ok {
					v = &types.SimpleTimeout{Value: d.Timeout}
				}
			}
		} else if v = c.get(typ, section, attr); v == nil {
			v = c.get(parser.Defaults, def, attr)
		}
		t, ok := v.(*types.SimpleTimeout)
		if !ok {
			return 0, false, c.err
		}
		d, err := parseHAProxyTime(t.Value)
		return d, true, err
	}
	attrs := map[translate.Feature]string{translate.FeatureConnClientTimeout: "timeout client",
		translate.FeatureConnClientFinTimeout: "timeout client-fin", translate.FeatureConnTLSInspectDelay: "tcp-request inspect-delay",
		translate.FeatureConnServerTimeout: "timeout server", translate.FeatureConnServerFinTimeout: "timeout server-fin",
		translate.FeatureConnTunnelTimeout: "timeout tunnel"}
	// Every section read, listed first and read in file order, so that
	// each batch of sections is parsed once.
	type site struct {
		gateway string
		feature translate.Feature
		typ     parser.Section
		section string
		d       time.Duration
		ok      bool
		err     error
	}
	var sites []site
	out := map[string]map[translate.Feature][]time.Duration{}
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, ct := range g.Timeouts {
			add := func(typ parser.Section, section string) {
				sites = append(sites, site{gateway: g.Gateway, feature: ct.Feature, typ: typ, section: section})
			}
			g.ConnectionSites(ct.Feature,
				func(l *translate.Listener) { add(parser.Frontends, "fe_"+l.Name) },
				func(r *translate.Rule) { add(parser.Backends, "be_"+r.Name) })
		}
	}
	order := make([]int, len(sites))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(p.position(sites[a].typ, sites[a].section), p.position(sites[b].typ, sites[b].section))
	})
	for _, i := range order {
		s := &sites[i]
		s.d, s.ok, s.err = read(s.typ, s.section, attrs[s.feature])
	}
	var rerr error
	for _, s := range sites {
		switch {
		case s.err != nil && rerr == nil:
			rerr = fmt.Errorf("%s %s: %w", s.typ, s.section, s.err)
		case s.ok:
			out[s.gateway][s.feature] = append(out[s.gateway][s.feature], s.d)
		}
	}
	return out, rerr
}
