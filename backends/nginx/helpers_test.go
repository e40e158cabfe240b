package nginx

import (
	"strconv"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

func dur(t testing.TB, s string) *translate.Duration {
	t.Helper()
	v, err := translate.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return &translate.Duration{Text: s, Value: v}
}

func backend(name string, weight int, hosts ...string) *translate.BackendRef {
	b := &translate.BackendRef{Name: name, Service: "default/" + name, Port: 8080, Weight: weight}
	for i, h := range hosts {
		b.Endpoints = append(b.Endpoints, translate.Endpoint{Host: h, Port: 18081 + i})
	}
	return b
}

func rule(index int, rt *translate.Retry, to translate.Timeouts, bs ...*translate.BackendRef) *translate.Rule {
	if len(bs) == 0 {
		bs = []*translate.BackendRef{backend("default_echo_8080", 1, "127.0.0.1")}
	}
	return &translate.Rule{Name: "default_route_r" + itoa(index), Route: "default/route", Index: index,
		Retry: rt, Timeouts: to, Backends: bs}
}

func itoa(i int) string { return strconv.Itoa(i) }

func prefix(p string) translate.Match {
	return translate.Match{PathType: translate.PathPrefix, Path: p}
}

// model puts every rule on one listener and virtual host, each with the
// given match (or its own prefix), in order.
func model(hostname string, rules []*translate.Rule, matches ...translate.Match) *translate.Model {
	vh := &translate.VirtualHost{Name: "vh0", Hostname: hostname}
	for i, r := range rules {
		m := prefix("/r" + itoa(i))
		if i < len(matches) {
			m = matches[i]
		}
		vh.Routes = append(vh.Routes, &translate.RouteMatch{Match: m, Rule: r})
	}
	return &translate.Model{
		Listeners:  []*translate.Listener{{Name: "http-18080", Address: "127.0.0.1", Port: 18080, VirtualHosts: []*translate.VirtualHost{vh}}},
		Rules:      rules,
		RouteCount: 1, RuleCount: len(rules),
	}
}
