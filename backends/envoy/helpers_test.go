package envoy

import (
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/gwretry/gwretry/translate"
)

// dur builds a translate.Duration from GEP-2257 text.
func dur(t testing.TB, text string) *translate.Duration {
	t.Helper()
	d, err := translate.ParseDuration(text)
	if err != nil {
		t.Fatal(err)
	}
	return &translate.Duration{Text: text, Value: d}
}

// backend returns a backend with one endpoint per host, all on port 8080.
func backend(name string, weight int, hosts ...string) *translate.BackendRef {
	b := &translate.BackendRef{Name: name, Service: "default/" + name, Port: 8080, Weight: weight}
	for _, h := range hosts {
		b.Endpoints = append(b.Endpoints, translate.Endpoint{Host: h, Port: 8080})
	}
	return b
}

// newRule returns a rule of route default/web with one IP backend.
func newRule(index int, retry *translate.Retry, timeouts translate.Timeouts) *translate.Rule {
	return &translate.Rule{
		Name:     "default_web_r" + string(rune('0'+index)),
		Route:    "default/web",
		Index:    index,
		Retry:    retry,
		Timeouts: timeouts,
		Backends: []*translate.BackendRef{backend("default_web_8080", 1, "127.0.0.1")},
	}
}

// prefix returns a PathPrefix match.
func prefix(p string) translate.Match {
	return translate.Match{PathType: translate.PathPrefix, Path: p}
}

// singleModel puts each rule behind its own prefix match on one listener
// with a catch-all virtual host.
func singleModel(rules ...*translate.Rule) *translate.Model {
	vh := &translate.VirtualHost{Name: "any"}
	for _, r := range rules {
		vh.Routes = append(vh.Routes, &translate.RouteMatch{Match: prefix("/" + r.Name), Rule: r})
	}
	return &translate.Model{
		Listeners:  []*translate.Listener{{Name: "http-8080", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{vh}}},
		Rules:      rules,
		RouteCount: 1, RuleCount: len(rules),
	}
}

// generate runs the backend and decodes its only file.
func generate(t testing.TB, m *translate.Model, opts translate.Options) (*translate.Output, *bootstrapv3.Bootstrap) {
	t.Helper()
	out, err := New().Generate(m, opts)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if len(out.Files) != 1 || out.Files[0].Path != OutputPath {
		t.Fatalf("files = %v, want one %s", out.Files, OutputPath)
	}
	bs, err := decode(out.Files[0].Data)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, out.Files[0].Data)
	}
	return out, bs
}

// routeConfig unpacks the inline route configuration of listener i.
func routeConfig(t testing.TB, bs *bootstrapv3.Bootstrap, i int) *routev3.RouteConfiguration {
	t.Helper()
	l := bs.GetStaticResources().GetListeners()[i]
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	return hcm.GetRouteConfig()
}

// routesNamed returns the routes of listener 0 with the given name.
func routesNamed(t testing.TB, bs *bootstrapv3.Bootstrap, name string) []*routev3.Route {
	t.Helper()
	var out []*routev3.Route
	for _, vh := range routeConfig(t, bs, 0).GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			if r.GetName() == name {
				out = append(out, r)
			}
		}
	}
	return out
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
