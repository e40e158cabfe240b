package haproxy

import (
	"fmt"
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
	p, err := translate.FileParsed(files, OutputPath, parseConfig)
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
	out := map[string]map[translate.Feature][]time.Duration{}
	var rerr error
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, ct := range g.Timeouts {
			add := func(typ parser.Section, section string) {
				d, ok, err := read(typ, section, attrs[ct.Feature])
				switch {
				case err != nil && rerr == nil:
					rerr = fmt.Errorf("%s %s: %w", typ, section, err)
				case ok:
					out[g.Gateway][ct.Feature] = append(out[g.Gateway][ct.Feature], d)
				}
			}
			g.ConnectionSites(ct.Feature,
				func(l *translate.Listener) { add(parser.Frontends, "fe_"+l.Name) },
				func(r *translate.Rule) { add(parser.Backends, "be_"+r.Name) })
		}
	}
	return out, rerr
}
