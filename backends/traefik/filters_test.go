package traefik

import (
	"slices"
	"testing"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

func TestLocationPortAndMirrorPercent(t *testing.T) {
	for _, tc := range []struct {
		rd     translate.Redirect
		scheme string
		port   int
		want   string
	}{
		{translate.Redirect{}, "http", 80, ""},
		{translate.Redirect{}, "http", 8080, ":8080"},
		{translate.Redirect{Scheme: "https"}, "http", 8080, ""},
		{translate.Redirect{Scheme: "http"}, "http", 8080, ""},
		{translate.Redirect{Scheme: "https", Port: 8443}, "http", 80, ":8443"},
		{translate.Redirect{Scheme: "https", Port: 80}, "http", 80, ":80"},
		{translate.Redirect{Port: 80}, "http", 8080, ""},
		{translate.Redirect{Port: 443}, "http", 8080, ":443"},
		{translate.Redirect{}, "https", 443, ""},
		{translate.Redirect{}, "https", 8443, ":8443"},
		{translate.Redirect{Port: 443}, "https", 8443, ""},
		{translate.Redirect{Port: 80}, "https", 8443, ":80"},
		{translate.Redirect{Scheme: "http"}, "https", 8443, ""},
	} {
		if got := locationPort(&tc.rd, tc.scheme, tc.port); got != tc.want {
			t.Errorf("locationPort(%+v, %s, %d) = %q, want %q", tc.rd, tc.scheme, tc.port, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n, d, pct int
		exact     bool
	}{
		{1, 2, 50, true}, {100, 100, 100, true}, {0, 100, 0, true}, {1, 3, 33, false},
		{2, 3, 67, false}, {1, 1000, 1, false}, {10, 100, 10, true}, {3, 4, 75, true},
	} {
		if pct, exact := mirrorPercent(tc.n, tc.d); pct != tc.pct || exact != tc.exact {
			t.Errorf("mirrorPercent(%d, %d) = %d %t, want %d %t", tc.n, tc.d, pct, exact, tc.pct, tc.exact)
		}
	}
}

// TestFilterFindingStatuses: the caveats of each filter finding in the
// cases where Traefik differs from the Gateway API (none: honoured).
func TestFilterFindingStatuses(t *testing.T) {
	redirect := func(code int, methods ...string) *translate.Rule {
		r := &translate.Rule{Name: "default_x_r0", Route: "default/x", NoBackendRefs: true, Methods: methods,
			Filters: translate.Filters{Redirect: &translate.Redirect{StatusCode: code}}}
		return r
	}
	mirror := func(n, d int, rt *translate.Retry) *translate.Rule {
		r := rule("x", 0, rt, translate.Timeouts{})
		r.Filters.Mirrors = []*translate.Mirror{{Backend: backend("default_m_80", 1, "127.0.0.2"), Numerator: n, Denominator: d}}
		return r
	}
	headers := func(hm *translate.HeaderModifier, resp bool) *translate.Rule {
		r := rule("x", 0, nil, translate.Timeouts{})
		if resp {
			r.Filters.ResponseHeaders = hm
		} else {
			r.Filters.RequestHeaders = hm
		}
		return r
	}
	set := func(n string) *translate.HeaderModifier {
		return &translate.HeaderModifier{Set: []translate.Header{{Name: n, Value: "v"}}}
	}
	for _, tc := range []struct {
		name string
		r    *translate.Rule
		f    translate.Feature
		want []report.Reason
	}{
		{"302 GET only", redirect(302, "GET"), translate.FeatureRequestRedirect, nil},
		{"301 GET only", redirect(301, "GET"), translate.FeatureRequestRedirect, nil},
		{"307 POST only", redirect(307, "POST"), translate.FeatureRequestRedirect, nil},
		{"308 PUT and POST", redirect(308, "POST", "PUT"), translate.FeatureRequestRedirect, nil},
		{"302 any method", redirect(302), translate.FeatureRequestRedirect, []report.Reason{report.CaveatRedirectStatusByMethod}},
		{"307 GET", redirect(307, "GET"), translate.FeatureRequestRedirect, []report.Reason{report.CaveatRedirectStatusByMethod}},
		{"303 never", redirect(303, "GET"), translate.FeatureRequestRedirect, []report.Reason{report.CaveatRedirectStatusByMethod}},
		{"302 GET and HEAD", redirect(302, "GET", "HEAD"), translate.FeatureRequestRedirect, []report.Reason{report.CaveatRedirectStatusByMethod}},
		{"mirror 1/4", mirror(1, 4, nil), translate.FeatureRequestMirror, nil},
		{"mirror 1/3", mirror(1, 3, nil), translate.FeatureRequestMirror, []report.Reason{report.CaveatMirrorShareRounded}},
		{"mirror with retries", mirror(1, 1, &translate.Retry{Attempts: 1}), translate.FeatureRequestMirror, []report.Reason{report.CaveatRetriesMirroredAgain}},
		{"mirror with attempts 0", mirror(1, 1, &translate.Retry{Attempts: 0}), translate.FeatureRequestMirror, nil},
		{"set X-Forwarded-For", headers(set("X-Forwarded-For"), false), translate.FeatureRequestHeaderModifier, []report.Reason{report.CaveatForwardedForAppended}},
		{"remove X-Forwarded-For", headers(&translate.HeaderModifier{Remove: []string{"X-Forwarded-For"}}, false), translate.FeatureRequestHeaderModifier, nil},
		{"set Connection", headers(set("Connection"), false), translate.FeatureRequestHeaderModifier, []report.Reason{report.CaveatHeadersHandledByProxy}},
		{"set Host", headers(set("Host"), false), translate.FeatureRequestHeaderModifier, []report.Reason{report.CaveatHostHeaderIsRequestHost}},
		{"set and remove one name", headers(&translate.HeaderModifier{Set: []translate.Header{{Name: "X-A", Value: "v"}},
			Remove: []string{"x-a"}}, false), translate.FeatureRequestHeaderModifier, []report.Reason{report.CaveatHeaderInSeveralLists}},
		{"response Content-Length", headers(set("Content-Length"), true), translate.FeatureResponseHeaderModifier, []report.Reason{report.CaveatHeadersHandledByProxy}},
		{"response set", headers(set("X-A"), true), translate.FeatureResponseHeaderModifier, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := single(tc.r)
			if len(tc.r.Methods) == 1 {
				m.Listeners[0].VirtualHosts[0].Routes[0].Match.Method = tc.r.Methods[0]
			}
			if len(tc.r.Methods) > 1 {
				rm := m.Listeners[0].VirtualHosts[0].Routes[0]
				m.Listeners[0].VirtualHosts[0].Routes = nil
				for _, meth := range tc.r.Methods {
					x := *rm
					x.Match.Method = meth
					m.Listeners[0].VirtualHosts[0].Routes = append(m.Listeners[0].VirtualHosts[0].Routes, &x)
				}
			}
			for _, v := range []string{v36, v37} {
				out := generate(t, m, translate.Options{Version: v})
				found := false
				for _, f := range out.Findings {
					if f.Feature == tc.f {
						found = true
						if f.Reason != report.ReasonConfigured || !slices.Equal(caveatReasons(f.Decision), tc.want) {
							t.Errorf("%s: %s %v, want Configured %v", v, f.Reason, caveatReasons(f.Decision), tc.want)
						}
					}
				}
				if !found {
					t.Errorf("%s: no %s finding", v, tc.f)
				}
			}
		})
	}
}
