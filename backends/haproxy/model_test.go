package haproxy

import "github.com/gwretry/gwretry/translate"

// dur returns a Duration for a GEP-2257 text.
func dur(text string) *translate.Duration {
	v, err := translate.ParseDuration(text)
	if err != nil {
		panic(err)
	}
	return &translate.Duration{Text: text, Value: v}
}

func ep(host string, port int) translate.Endpoint { return translate.Endpoint{Host: host, Port: port} }

func ref(name string, weight int, eps ...translate.Endpoint) *translate.BackendRef {
	return &translate.BackendRef{Name: name, Service: "default/" + name, Port: 80, Weight: weight, Endpoints: eps}
}

// rule returns a rule with one backend of one endpoint.
func rule(index int, retry *translate.Retry, t translate.Timeouts) *translate.Rule {
	return &translate.Rule{
		Name: "default_web_r" + itoa(index), Route: "default/web", Index: index,
		Retry: retry, Timeouts: t,
		Backends: []*translate.BackendRef{ref("default_web_80", 1, ep("10.0.0.1", 3000))},
	}
}

func itoa(i int) string {
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}

func prefix(p string) translate.Match {
	return translate.Match{PathType: translate.PathPrefix, Path: p}
}

// modelOf puts each rule behind one prefix match /rNN on a catch-all
// listener.
func modelOf(rules ...*translate.Rule) *translate.Model {
	vh := &translate.VirtualHost{Name: "any", Hostname: ""}
	for _, r := range rules {
		vh.Routes = append(vh.Routes, &translate.RouteMatch{Match: prefix("/r" + itoa(r.Index)), Rule: r})
	}
	return &translate.Model{
		Listeners: []*translate.Listener{{Name: "http-8080", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{vh}}},
		Rules:     rules, RouteCount: 1, RuleCount: len(rules),
	}
}

// fullModel uses every match kind, hostnames, weights, several endpoints
// and DNS names.
func fullModel() *translate.Model {
	retry := &translate.Retry{Attempts: 3, Codes: []int{409, 429, 500, 503}, Backoff: dur("100ms")}
	r0 := &translate.Rule{Name: "default_web_r00", Route: "default/web", Index: 0, Retry: retry,
		Timeouts: translate.Timeouts{Request: dur("10s"), BackendRequest: dur("2s")},
		Backends: []*translate.BackendRef{
			ref("default_a_80", 3, ep("10.0.0.1", 3000), ep("10.0.0.2", 3000)),
			ref("default_b_80", 1, ep("b.default.svc.cluster.local", 8080)),
			ref("default_c_80", 0, ep("fd00::1", 80)),
		}}
	r1 := &translate.Rule{Name: "default_web_r01", Route: "default/web", Index: 1,
		Timeouts: translate.Timeouts{Request: dur("1500ms")},
		Backends: []*translate.BackendRef{ref("default_d_80", 1, ep("10.0.1.1", 80))}}
	exact := &translate.VirtualHost{Name: "a", Hostname: "a.example.com", Routes: []*translate.RouteMatch{
		{Rule: r0, Match: translate.Match{PathType: translate.PathExact, Path: "/exact", Method: "GET",
			Headers: []translate.ValueMatch{
				{Type: translate.StringExact, Name: "x-a", Value: "a,b"},
				{Type: translate.StringExact, Name: "x-dash", Value: "-v"},
				{Type: translate.StringExact, Name: "x-empty", Value: ""},
				{Type: translate.StringRegex, Name: "x-re", Value: "v[0-9]{2}"},
			},
			Query: []translate.ValueMatch{
				{Type: translate.StringExact, Name: "q", Value: "1"},
				{Type: translate.StringRegex, Name: "r", Value: "a|b"},
			}}},
		{Rule: r1, Match: prefix("/pre/")},
	}}
	wild := &translate.VirtualHost{Name: "wild", Hostname: "*.example.com", Routes: []*translate.RouteMatch{
		{Rule: r0, Match: translate.Match{PathType: translate.PathRegex, Path: "/v[0-9]+/.*"}},
	}}
	any := &translate.VirtualHost{Name: "any", Routes: []*translate.RouteMatch{{Rule: r1, Match: prefix("/")}}}
	any6 := &translate.VirtualHost{Name: "any6", Routes: []*translate.RouteMatch{{Rule: r1, Match: prefix("/")}}}
	return &translate.Model{
		Listeners: []*translate.Listener{
			{Name: "http-8080", Address: "127.0.0.1", Port: 8080, VirtualHosts: []*translate.VirtualHost{exact, wild, any}},
			{Name: "http6-8081", Address: "::1", Port: 8081, VirtualHosts: []*translate.VirtualHost{any6}},
		},
		Rules: []*translate.Rule{r0, r1}, RouteCount: 1, RuleCount: 2,
	}
}
