package nginx

import (
	"github.com/gwretry/gwretry/translate"
)

// filterRule is one rule of filterModel with its prefix.
type filterRule struct {
	prefix  string
	filters translate.Filters
	// redirect: the rule has no backends.
	redirect bool
}

// filterRules are rules with every Standard filter, each on its own prefix.
func filterRules() []filterRule {
	full := func(v string) *translate.PathModifier {
		return &translate.PathModifier{Type: translate.ReplaceFullPath, Value: v}
	}
	pre := func(v string) *translate.PathModifier {
		return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: v}
	}
	return []filterRule{
		{prefix: "/hdr", filters: translate.Filters{
			RequestHeaders: &translate.HeaderModifier{
				Set:    []translate.Header{{Name: "X-Set", Value: "s v"}},
				Add:    []translate.Header{{Name: "X-Add", Value: "added"}},
				Remove: []string{"X-Remove"},
			},
			ResponseHeaders: &translate.HeaderModifier{Remove: []string{"X-Flaky-Endpoint"}, Add: []translate.Header{{Name: "X-Resp-Add", Value: "ra"}}},
		}},
		{prefix: "/resp-set", filters: translate.Filters{
			ResponseHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Flaky-Endpoint", Value: "proxy"}}},
		}},
		{prefix: "/resp-add", filters: translate.Filters{
			ResponseHeaders: &translate.HeaderModifier{Add: []translate.Header{{Name: "X-Flaky-Endpoint", Value: "added"}}},
		}},
		{prefix: "/rd-full", redirect: true, filters: translate.Filters{
			Redirect: &translate.Redirect{Path: full("/new"), StatusCode: 302},
		}},
		{prefix: "/rd-prefix/", redirect: true, filters: translate.Filters{
			Redirect: &translate.Redirect{Scheme: "https", Hostname: "example.com", Port: 8443, Path: pre("/p2/"), StatusCode: 307},
			// A response header on the redirect nginx answers.
			ResponseHeaders: &translate.HeaderModifier{Add: []translate.Header{{Name: "X-Redirected", Value: "yes"}}},
		}},
		{prefix: "/rd-keep", redirect: true, filters: translate.Filters{
			Redirect: &translate.Redirect{Scheme: "http", Hostname: "h.example", Port: 80, StatusCode: 308},
		}},
		{prefix: "/rd-empty", redirect: true, filters: translate.Filters{
			Redirect: &translate.Redirect{Scheme: "https", Path: pre(""), StatusCode: 301},
		}},
		{prefix: "/rd-port", redirect: true, filters: translate.Filters{
			Redirect: &translate.Redirect{Port: 8080, StatusCode: 303},
		}},
		{prefix: "/rw-prefix", filters: translate.Filters{
			Rewrite: &translate.Rewrite{Hostname: "rw.example", Path: pre("/inner")},
		}},
		{prefix: "/rw-full", filters: translate.Filters{
			Rewrite: &translate.Rewrite{Path: full("/full")},
		}},
		{prefix: "/rw-root", filters: translate.Filters{
			Rewrite: &translate.Rewrite{Path: pre("/")},
		}},
		{prefix: "/mirror", filters: translate.Filters{
			RequestHeaders: &translate.HeaderModifier{Set: []translate.Header{{Name: "X-Set", Value: "m"}}},
			Mirrors:        []*translate.Mirror{{Numerator: 100, Denominator: 100}},
		}},
		{prefix: "/half", filters: translate.Filters{
			Mirrors: []*translate.Mirror{{Numerator: 1, Denominator: 2}},
		}},
	}
}

// filterModel builds the rules of filterRules on one listener at port,
// proxying to main and mirroring to mirror (host:port endpoints).
func filterModel(port int, main, mirror translate.Endpoint) *translate.Model {
	vh := &translate.VirtualHost{Name: "any"}
	var rules []*translate.Rule
	for i, fr := range filterRules() {
		r := &translate.Rule{Name: "default_filters_r" + itoa(i), Route: "default/filters", Index: i, Filters: fr.filters}
		if fr.redirect {
			r.NoBackendRefs = true
		} else {
			r.Backends = []*translate.BackendRef{{Name: "default_main_80", Service: "default/main", Port: 80, Weight: 1,
				Endpoints: []translate.Endpoint{main}}}
		}
		for k, mr := range r.Filters.Mirrors {
			cp := *mr
			cp.Backend = &translate.BackendRef{Name: "default_mirror_80", Service: "default/mirror", Port: 80, Weight: 1,
				Endpoints: []translate.Endpoint{mirror}}
			r.Filters.Mirrors[k] = &cp
		}
		rules = append(rules, r)
		vh.Routes = append(vh.Routes, &translate.RouteMatch{Match: translate.Match{PathType: translate.PathPrefix, Path: fr.prefix}, Rule: r})
	}
	return &translate.Model{
		Listeners:  []*translate.Listener{{Name: "http", Address: "127.0.0.1", Port: port, VirtualHosts: []*translate.VirtualHost{vh}}},
		Rules:      rules,
		RouteCount: 1, RuleCount: len(rules),
	}
}
