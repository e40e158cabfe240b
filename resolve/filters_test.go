package resolve

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestFilterFeatures: each filter kind, on the rule or on a backendRef,
// is one feature of the rule, and its values reach the model.
func TestFilterFeatures(t *testing.T) {
	tests := []struct {
		name, rule string
		want       []translate.Feature
		check      func(t *testing.T, r *translate.Rule)
	}{
		{"request headers", "    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {set: [{name: X-A, value: one two}], add: [{name: X-B, value: b}], remove: [X-C]}\n",
			[]translate.Feature{translate.FeatureRequestHeaderModifier}, func(t *testing.T, r *translate.Rule) {
				want := &translate.HeaderModifier{Set: []translate.Header{{Name: "X-A", Value: "one two"}}, Add: []translate.Header{{Name: "X-B", Value: "b"}}, Remove: []string{"X-C"}}
				if !reflect.DeepEqual(r.Filters.RequestHeaders, want) {
					t.Errorf("request headers %+v", r.Filters.RequestHeaders)
				}
			}},
		{"response headers", "    filters:\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {remove: [Server]}\n",
			[]translate.Feature{translate.FeatureResponseHeaderModifier}, nil},
		{"rewrite", "    filters:\n    - type: URLRewrite\n      urlRewrite: {hostname: b.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: \"\"}}\n",
			[]translate.Feature{translate.FeatureURLRewrite}, func(t *testing.T, r *translate.Rule) {
				want := &translate.Rewrite{Hostname: "b.example.com", Path: &translate.PathModifier{Type: translate.ReplacePrefixMatch}}
				if !reflect.DeepEqual(r.Filters.Rewrite, want) {
					t.Errorf("rewrite %+v", r.Filters.Rewrite)
				}
			}},
		{"mirror", "    filters:\n    - {type: RequestMirror, requestMirror: {backendRef: {name: m, port: 80}, percent: 25}}\n    - {type: RequestMirror, requestMirror: {backendRef: {name: m2, port: 80}, fraction: {numerator: 1, denominator: 3}}}\n",
			[]translate.Feature{translate.FeatureRequestMirror}, func(t *testing.T, r *translate.Rule) {
				ms := r.Filters.Mirrors
				if len(ms) != 2 || ms[0].Backend == nil || ms[0].Backend.Service != "ns/m" || ms[0].Numerator != 25 || ms[0].Denominator != 100 ||
					ms[1].Numerator != 1 || ms[1].Denominator != 3 {
					t.Errorf("mirrors %+v", ms)
				}
			}},
		{"mirror to no Service", "    filters:\n    - {type: RequestMirror, requestMirror: {backendRef: {name: b, kind: Bucket, group: x.io, port: 1}}}\n",
			[]translate.Feature{translate.FeatureRequestMirror}, func(t *testing.T, r *translate.Rule) {
				if m := r.Filters.Mirrors[0]; m.Backend != nil || !strings.Contains(m.Invalid, "only core Services") || m.Numerator != 100 {
					t.Errorf("mirror %+v", m)
				}
			}},
		{"extensionRef and CORS", "    filters:\n    - {type: ExtensionRef, extensionRef: {group: example.com, kind: Auth, name: basic}}\n    - {type: CORS, cors: {allowOrigins: [\"*\"]}}\n",
			[]translate.Feature{translate.FeatureExtensionRef, translate.FeatureCORS}, nil},
		{"backendRef filters", "    - name: svc2\n      port: 8080\n      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-B, value: b}]}}]\n",
			[]translate.Feature{translate.BackendRefFeature(translate.FeatureRequestHeaderModifier)}, func(t *testing.T, r *translate.Rule) {
				if len(r.Backends) != 2 || r.Backends[1].Filters.RequestHeaders == nil || r.Backends[0].Filters.RequestHeaders != nil {
					t.Errorf("backend filters %+v %+v", r.Backends[0].Filters, r.Backends[1].Filters)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := build(t, routeWithRule(tt.rule), translate.ResolveOptions{})
			r := m.Rules[0]
			if got := r.Features(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("features %v, want %v", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			if strings.Contains(translate.NotesText(m.Notes), "filters are not translated") {
				t.Errorf("a lost filter is an info line, not a finding:\n%s", translate.NotesText(m.Notes))
			}
			// A target that writes none of them: each is the shared
			// NotTranslated finding of Assess.
			for _, u := range translate.Assess(r, translate.Decisions{}) {
				if u.Feature.IsFilter() && (u.Status != translate.Unsupported || u.Reason != report.ReasonNotTranslated) {
					t.Errorf("Assess: %s is %s %s", u.Feature, u.Status, u.Reason)
				}
			}
		})
	}
}

// TestRedirectOnlyRule: a rule whose action is a redirect forwards nothing
// and is not dead; its findings say what the data plane does instead of
// redirecting, never that the Gateway API answers 500.
func TestRedirectOnlyRule(t *testing.T) {
	route := strings.Replace(routeWithRule(""), "  - backendRefs:\n    - name: svc\n      port: 8080\n",
		"  - filters:\n    - type: RequestRedirect\n      requestRedirect: {scheme: https, port: 8443, statusCode: 301, path: {type: ReplaceFullPath, replaceFullPath: /new}}\n    retry: {attempts: 2}\n", 1)
	m := build(t, route, translate.ResolveOptions{})
	r := m.Rules[0]
	if r.Forwards() || r.Dead() || r.DeadReason() != "" || !strings.Contains(r.NoForwardReason(), "redirect") {
		t.Fatalf("forwards %v dead %v reason %q", r.Forwards(), r.Dead(), r.NoForwardReason())
	}
	want := &translate.Redirect{Scheme: "https", Port: 8443, StatusCode: 301, Path: &translate.PathModifier{Type: translate.ReplaceFullPath, Value: "/new"}}
	if !reflect.DeepEqual(r.Filters.Redirect, want) {
		t.Errorf("redirect %+v", r.Filters.Redirect)
	}
	if got, want := r.Features(), []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryConnectionErrors, translate.FeatureRequestRedirect}; !reflect.DeepEqual(got, want) {
		t.Errorf("features %v, want %v (no backendRefs: a redirect needs none)", got, want)
	}
	if strings.Contains(translate.NotesText(m.Notes), "500") {
		t.Errorf("notes call a redirect dead:\n%s", translate.NotesText(m.Notes))
	}
	// A target that writes no redirect: the redirect is not translated
	// and the retry forwards nothing; nothing calls the rule dead.
	for _, u := range translate.Assess(r, translate.Decisions{Feature: func(translate.Feature) report.Decision { return report.Decide(report.ReasonAnswers500) }}) {
		want := report.ReasonRuleForwardsNothing
		if u.Feature == translate.FeatureRequestRedirect {
			want = report.ReasonNotTranslated
		}
		if u.Reason != want {
			t.Errorf("%s: %s, want %s", u.Feature, u.Reason, want)
		}
	}
}

// TestFilterInputErrors: what gwretry cannot write safely, and what would
// make the model ambiguous, is an input error naming the field.
func TestFilterInputErrors(t *testing.T) {
	tests := []struct{ name, filters, field, want string }{
		{"rewrite hostname upper-case", "[{type: URLRewrite, urlRewrite: {hostname: A.example.com}}]",
			"spec.rules[1].filters[0].urlRewrite.hostname", "hostname"},
		{"repeated", "[{type: URLRewrite, urlRewrite: {}}, {type: URLRewrite, urlRewrite: {}}]",
			"spec.rules[1].filters", "URLRewrite filter cannot be repeated"},
		{"missing field", "[{type: RequestHeaderModifier}]",
			"spec.rules[1].filters[0]", "filter.requestHeaderModifier must be specified"},
		{"unknown type", "[{type: Bogus}]", "spec.rules[1].filters[0].type", "Unsupported value"},
		{"redirect beside backendRefs", "[{type: RequestRedirect, requestRedirect: {}}]",
			"spec.rules[1]", "must not be used together with backendRefs"},
		{"mirror percent and fraction", "[{type: RequestMirror, requestMirror: {backendRef: {name: m, port: 80}, percent: 1, fraction: {numerator: 1}}}]",
			"spec.rules[1].filters[0].requestMirror", "Only one of percent or fraction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := input.Load([]string{writeInput(t, "in.yaml", routeWithRule("  - backendRefs: [{name: svc, port: 8080}]\n    filters: "+tt.filters+"\n"))}, nil, input.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Build(in, translate.ResolveOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %s: %s", err, tt.field, tt.want)
			}
		})
	}
}

// TestFilterValuesTheAPIAccepts: a value the API server accepts is no
// input error, whether or not a target's format can carry it
// (translate.ForTarget decides that, target by target).
func TestFilterValuesTheAPIAccepts(t *testing.T) {
	for _, filters := range []string{
		"[{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: \"a\\nb\"}]}}]",
		"[{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-A, value: \"a \"}]}}]",
		"[{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-A, value: \"caf\u00e9\"}]}}]",
		"[{type: RequestHeaderModifier, requestHeaderModifier: {remove: [\"X'A\"]}}]",
		"[{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /a$1}}}]",
		"[{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: foo}}}]",
	} {
		in, err := input.Load([]string{writeInput(t, "in.yaml", routeWithRule("  - backendRefs: [{name: svc, port: 8080}]\n    filters: "+filters+"\n"))}, nil, input.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if _, err = Build(in, translate.ResolveOptions{}); err != nil {
			t.Errorf("%s: %v", filters, err)
		}
	}
}

// TestAttachmentFindings: a route also attached to an HTTPS listener gets
// listener.https; a route attached to no generated listener gets
// route.attachment on every rule, with or without retry and timeouts.
func TestAttachmentFindings(t *testing.T) {
	route := func(parent string) string {
		return gateway + strings.Replace(routeWithRule("  - backendRefs: [{name: svc, port: 8080}]\n    retry: {}\n"), "spec:\n", "spec:\n  parentRefs: ["+parent+"]\n", 1)
	}
	m := build(t, route("{name: gw}"), translate.ResolveOptions{})
	https := translate.UngeneratedListener{Gateway: "ns/gw", Listener: "https", Protocol: "HTTPS"}
	for _, r := range m.Rules {
		if !reflect.DeepEqual(r.Ungenerated, []translate.UngeneratedListener{https}) || r.Features()[len(r.Features())-1] != translate.FeatureListenerHTTPS {
			t.Errorf("rule %d: ungenerated %v, features %v", r.Index, r.Ungenerated, r.Features())
		}
		fs := translate.Assess(r, translate.Decisions{Written: func(translate.Feature) (report.Decision, bool) { return report.Decide(report.ReasonConfigured), true }})
		if u := fs[len(fs)-1]; u.Feature != translate.FeatureListenerHTTPS || u.Status != translate.Unsupported || u.Reason != report.ReasonListenerNotGenerated {
			t.Errorf("listener.https finding %+v", u)
		}
	}

	for name, parent := range map[string]string{
		"HTTPS only":          "{name: gw, sectionName: https}",
		"not a Gateway":       "{name: x, kind: Service}", // group gateway.networking.k8s.io
		"no such sectionName": "{name: gw, sectionName: nope}",
	} {
		m := build(t, route(parent), translate.ResolveOptions{})
		if len(m.Rules) != 0 || len(m.Skipped) != 2 || len(m.Listeners) != 0 {
			t.Fatalf("%s: rules %d skipped %d listeners %d", name, len(m.Rules), len(m.Skipped), len(m.Listeners))
		}
		for _, s := range m.Skipped {
			if s.Features[0] != translate.FeatureRouteAttachment || !strings.Contains(s.Reason, "parentRefs[0]") {
				t.Errorf("%s: rule %d features %v reason %q", name, s.Index, s.Features, s.Reason)
			}
		}
		// Rule 0 sets neither retry nor timeouts: still a finding.
		if got := m.Skipped[0].Features; name != "HTTPS only" && !reflect.DeepEqual(got, []translate.Feature{translate.FeatureRouteAttachment}) {
			t.Errorf("%s: rule 0 features %v", name, got)
		}
	}
}

// TestRunWithoutListener: with nothing attached, no configuration is
// written (it would have no listener), a warning says so, and every rule
// has an unsupported route.attachment finding on every target.
func TestRunWithoutListener(t *testing.T) {
	m := build(t, gateway+strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw, sectionName: https}]\n", 1), translate.ResolveOptions{})
	called := false
	b := fakeBackend{name: "x", out: func(m *translate.Model) *translate.Output { called = true; return honourAll(m) }}
	res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.0"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !called || len(res.Files) != 0 {
		t.Errorf("%v files for a model without listener (backend called %v: its contract is still checked)", len(res.Files), called)
	}
	if !strings.Contains(translate.NotesText(res.Notes), "no configuration is written") {
		t.Errorf("notes %s", translate.NotesText(res.Notes))
	}
	var got []translate.Feature
	for _, f := range res.Report.Findings {
		if f.Status != translate.Unsupported {
			t.Errorf("finding %+v is not unsupported", f)
		}
		got = append(got, f.Feature)
	}
	if want := []translate.Feature{translate.FeatureListenerHTTPS, translate.FeatureRouteAttachment}; !reflect.DeepEqual(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}

// TestJudgeDoesNotTrustUnreadFeatures: an honoured claim on a feature the
// judge does not read back (a filter, a listener) is a contradiction.
func TestJudgeDoesNotTrustUnreadFeatures(t *testing.T) {
	r := &translate.Rule{Route: "ns/r", Backends: []*translate.BackendRef{{Weight: 1}}, Filters: translate.Filters{Rewrite: &translate.Rewrite{Hostname: "a"}}}
	f := statusFinding(r, translate.FeatureURLRewrite, translate.Honoured, "rewritten")
	errs := translate.CheckClaims(r, []translate.Finding{f}, map[translate.MethodClass]translate.Behaviour{translate.Idempotent: {}, translate.NonIdempotent: {}})
	if len(errs) == 0 {
		t.Error("an honoured filters.urlRewrite claim passed a judge that cannot read it")
	}
	f.Status = translate.Unsupported
	if errs := translate.CheckClaims(r, []translate.Finding{f}, map[translate.MethodClass]translate.Behaviour{}); len(errs) != 0 {
		t.Errorf("an unsupported finding claims nothing: %v", errs)
	}
}

// TestMatchedTwiceKeepsTheFirst: "If multiple entries specify equivalent
// header names, only the first entry with an equivalent name MUST be
// considered for a match" (v1.7.0); the API server accepts X-A beside x-a
// (its list-map key is case-sensitive). Query parameter names compare
// exactly: q and Q are two.
func TestMatchedTwiceKeepsTheFirst(t *testing.T) {
	m := build(t, routeWithRule("    matches:\n    - headers: [{name: x-a, value: one}, {name: X-A, value: two}, {name: x-b, value: three}]\n      queryParams: [{name: q, value: '1'}, {name: Q, value: '2'}]\n"), translate.ResolveOptions{})
	var got translate.Match
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				if rm.Rule.Index == 0 {
					got = rm.Match
				}
			}
		}
	}
	wantH := []translate.ValueMatch{{Type: translate.StringExact, Name: "x-a", Value: "one"}, {Type: translate.StringExact, Name: "x-b", Value: "three"}}
	wantQ := []translate.ValueMatch{{Type: translate.StringExact, Name: "q", Value: "1"}, {Type: translate.StringExact, Name: "Q", Value: "2"}}
	if !reflect.DeepEqual(got.Headers, wantH) || !reflect.DeepEqual(got.Query, wantQ) {
		t.Errorf("headers %v, query %v; want %v, %v", got.Headers, got.Query, wantH, wantQ)
	}
}
