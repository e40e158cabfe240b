package nginx

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestHostHeaderFindingNamesHost: a RequestHeaderModifier that sets or
// removes Host records it as configured (the message once named nothing:
// "nginx  on every request ...") and writes proxy_set_header Host.
func TestHostHeaderFindingNamesHost(t *testing.T) {
	for _, tc := range []struct {
		name string
		hm   *translate.HeaderModifier
		want string
	}{
		{"set", &translate.HeaderModifier{Set: []translate.Header{{Name: "host", Value: "h.example"}}}, "proxy_set_header Host h.example;"},
		{"remove", &translate.HeaderModifier{Remove: []string{"Host"}}, `proxy_set_header Host "";`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &translate.Rule{Name: "default_h_r0", Route: "default/h", Filters: translate.Filters{RequestHeaders: tc.hm},
				Backends: []*translate.BackendRef{{Name: "default_main_80", Service: "default/main", Port: 80, Weight: 1,
					Endpoints: []translate.Endpoint{{Host: "127.0.0.1", Port: 9}}}}}
			vh := &translate.VirtualHost{Name: "any", Routes: []*translate.RouteMatch{{Match: translate.Match{PathType: translate.PathPrefix, Path: "/"}, Rule: r}}}
			m := &translate.Model{Listeners: []*translate.Listener{{Name: "http", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{vh}}},
				Rules: []*translate.Rule{r}, RouteCount: 1, RuleCount: 1}
			b, err := NewWithConfig(Config{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := b.Generate(m, translate.Options{Version: "1.22"})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range out.Findings {
				if f.Feature == translate.FeatureRequestHeaderModifier {
					found = true
					if f.Reason != report.ReasonConfigured || f.Configured != "proxy_set_header host" || len(f.Caveats) != 1 ||
						f.Caveats[0].Reason != report.CaveatHeadersHandledByProxy || f.Caveats[0].Params["headers"] != "host" {
						t.Errorf("finding %+v, want Configured \"proxy_set_header host\" with HeadersHandledByProxy{headers=host}", f.Decision)
					}
				}
			}
			if !found {
				t.Fatal("no requestHeaderModifier finding")
			}
			if conf := string(out.Files[0].Data); !strings.Contains(conf, tc.want) {
				t.Errorf("nginx.conf lacks %q:\n%s", tc.want, conf)
			}
		})
	}
}
