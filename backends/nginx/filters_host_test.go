package nginx

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// TestHostHeaderFindingNamesHost: a RequestHeaderModifier that sets or
// removes Host says so in its finding (the message once named nothing:
// "nginx  on every request ...").
func TestHostHeaderFindingNamesHost(t *testing.T) {
	for _, tc := range []struct {
		name string
		hm   *translate.HeaderModifier
		want string
	}{
		{"set", &translate.HeaderModifier{Set: []translate.Header{{Name: "host", Value: "h.example"}}}, `sets host (proxy_set_header Host "h.example")`},
		{"remove", &translate.HeaderModifier{Remove: []string{"Host"}}, `removes Host (proxy_set_header Host "")`},
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
					if !strings.Contains(f.Message, tc.want) || strings.Contains(f.Message, "nginx  ") {
						t.Errorf("finding %q, want it to say %q", f.Message, tc.want)
					}
				}
			}
			if !found {
				t.Fatal("no requestHeaderModifier finding")
			}
		})
	}
}
