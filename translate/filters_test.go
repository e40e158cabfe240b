package translate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/report"
)

// TestFilterFeatures: each filter kind, on the rule or on a backendRef,
// is one feature of the rule, and its values reach the model.
func TestFilterFeatures(t *testing.T) {
	tests := []struct {
		name, rule string
		want       []Feature
		check      func(t *testing.T, r *Rule)
	}{
		{"request headers", "    filters:\n    - type: RequestHeaderModifier\n      requestHeaderModifier: {set: [{name: X-A, value: one two}], add: [{name: X-B, value: b}], remove: [X-C]}\n",
			[]Feature{FeatureRequestHeaderModifier}, func(t *testing.T, r *Rule) {
				want := &HeaderModifier{Set: []Header{{"X-A", "one two"}}, Add: []Header{{"X-B", "b"}}, Remove: []string{"X-C"}}
				if !reflect.DeepEqual(r.Filters.RequestHeaders, want) {
					t.Errorf("request headers %+v", r.Filters.RequestHeaders)
				}
			}},
		{"response headers", "    filters:\n    - type: ResponseHeaderModifier\n      responseHeaderModifier: {remove: [Server]}\n",
			[]Feature{FeatureResponseHeaderModifier}, nil},
		{"rewrite", "    filters:\n    - type: URLRewrite\n      urlRewrite: {hostname: b.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: \"\"}}\n",
			[]Feature{FeatureURLRewrite}, func(t *testing.T, r *Rule) {
				want := &Rewrite{Hostname: "b.example.com", Path: &PathModifier{Type: ReplacePrefixMatch}}
				if !reflect.DeepEqual(r.Filters.Rewrite, want) {
					t.Errorf("rewrite %+v", r.Filters.Rewrite)
				}
			}},
		{"mirror", "    filters:\n    - {type: RequestMirror, requestMirror: {backendRef: {name: m, port: 80}, percent: 25}}\n    - {type: RequestMirror, requestMirror: {backendRef: {name: m2, port: 80}, fraction: {numerator: 1, denominator: 3}}}\n",
			[]Feature{FeatureRequestMirror}, func(t *testing.T, r *Rule) {
				ms := r.Filters.Mirrors
				if len(ms) != 2 || ms[0].Backend == nil || ms[0].Backend.Service != "ns/m" || ms[0].Numerator != 25 || ms[0].Denominator != 100 ||
					ms[1].Numerator != 1 || ms[1].Denominator != 3 {
					t.Errorf("mirrors %+v", ms)
				}
			}},
		{"mirror to no Service", "    filters:\n    - {type: RequestMirror, requestMirror: {backendRef: {name: b, kind: Bucket, group: x.io, port: 1}}}\n",
			[]Feature{FeatureRequestMirror}, func(t *testing.T, r *Rule) {
				if m := r.Filters.Mirrors[0]; m.Backend != nil || !strings.Contains(m.Invalid, "only core Services") || m.Numerator != 100 {
					t.Errorf("mirror %+v", m)
				}
			}},
		{"extensionRef and CORS", "    filters:\n    - {type: ExtensionRef, extensionRef: {group: example.com, kind: Auth, name: basic}}\n    - {type: CORS, cors: {allowOrigins: [\"*\"]}}\n",
			[]Feature{FeatureExtensionRef, FeatureCORS}, nil},
		{"backendRef filters", "    - name: svc2\n      port: 8080\n      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-B, value: b}]}}]\n",
			[]Feature{BackendRefFeature(FeatureRequestHeaderModifier)}, func(t *testing.T, r *Rule) {
				if len(r.Backends) != 2 || r.Backends[1].Filters.RequestHeaders == nil || r.Backends[0].Filters.RequestHeaders != nil {
					t.Errorf("backend filters %+v %+v", r.Backends[0].Filters, r.Backends[1].Filters)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := build(t, routeWithRule(tt.rule), ResolveOptions{})
			r := m.Rules[0]
			if got := r.Features(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("features %v, want %v", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			if strings.Contains(NotesText(m.Notes), "filters are not translated") {
				t.Errorf("a lost filter is an info line, not a finding:\n%s", NotesText(m.Notes))
			}
			// A target that writes none of them: each is the shared
			// NotTranslated finding of Assess.
			for _, u := range Assess(r, Decisions{}) {
				if u.Feature.IsFilter() && (u.Status != Unsupported || u.Reason != report.ReasonNotTranslated) {
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
	m := build(t, route, ResolveOptions{})
	r := m.Rules[0]
	if r.Forwards() || r.Dead() || r.DeadReason() != "" || !strings.Contains(r.NoForwardReason(), "redirect") {
		t.Fatalf("forwards %v dead %v reason %q", r.Forwards(), r.Dead(), r.NoForwardReason())
	}
	want := &Redirect{Scheme: "https", Port: 8443, StatusCode: 301, Path: &PathModifier{Type: ReplaceFullPath, Value: "/new"}}
	if !reflect.DeepEqual(r.Filters.Redirect, want) {
		t.Errorf("redirect %+v", r.Filters.Redirect)
	}
	if got, want := r.Features(), []Feature{FeatureRetryAttempts, FeatureRetryConnectionErrors, FeatureRequestRedirect}; !reflect.DeepEqual(got, want) {
		t.Errorf("features %v, want %v (no backendRefs: a redirect needs none)", got, want)
	}
	if strings.Contains(NotesText(m.Notes), "500") {
		t.Errorf("notes call a redirect dead:\n%s", NotesText(m.Notes))
	}
	// A target that writes no redirect: the redirect is not translated
	// and the retry forwards nothing; nothing calls the rule dead.
	for _, u := range Assess(r, Decisions{Feature: func(Feature) report.Decision { return report.Decide(report.ReasonAnswers500) }}) {
		want := report.ReasonRuleForwardsNothing
		if u.Feature == FeatureRequestRedirect {
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
		{"header value with a line break", "[{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: \"a\\nb\"}]}}]",
			"spec.rules[1].filters[0].requestHeaderModifier.set[0].value", "filter header value"},
		{"header value with a trailing space", "[{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-A, value: \"a \"}]}}]",
			"spec.rules[1].filters[0].responseHeaderModifier.add[0].value", "filter header value"},
		{"header value not ASCII", "[{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-A, value: \"caf\u00e9\"}]}}]",
			"spec.rules[1].filters[0].responseHeaderModifier.add[0].value", "filter header value"},
		{"header name with quote", "[{type: RequestHeaderModifier, requestHeaderModifier: {remove: [\"X'A\"]}}]",
			"spec.rules[1].filters[0].requestHeaderModifier.remove[0]", "header name"},
		{"rewrite path with $", "[{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /a$1}}}]",
			"spec.rules[1].filters[0].urlRewrite.path.replaceFullPath", "redirect or rewrite path"},
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
			in, err := Load([]string{writeInput(t, "in.yaml", routeWithRule("  - backendRefs: [{name: svc, port: 8080}]\n    filters: "+tt.filters+"\n"))}, nil, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Build(in, ResolveOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %s: %s", err, tt.field, tt.want)
			}
		})
	}
}

// TestAttachmentFindings: a route also attached to an HTTPS listener gets
// listener.https; a route attached to no generated listener gets
// route.attachment on every rule, with or without retry and timeouts.
func TestAttachmentFindings(t *testing.T) {
	route := func(parent string) string {
		return gateway + strings.Replace(routeWithRule("  - backendRefs: [{name: svc, port: 8080}]\n    retry: {}\n"), "spec:\n", "spec:\n  parentRefs: ["+parent+"]\n", 1)
	}
	m := build(t, route("{name: gw}"), ResolveOptions{})
	https := UngeneratedListener{Gateway: "ns/gw", Listener: "https", Protocol: "HTTPS"}
	for _, r := range m.Rules {
		if !reflect.DeepEqual(r.Ungenerated, []UngeneratedListener{https}) || r.Features()[len(r.Features())-1] != FeatureListenerHTTPS {
			t.Errorf("rule %d: ungenerated %v, features %v", r.Index, r.Ungenerated, r.Features())
		}
		fs := Assess(r, Decisions{Written: func(Feature) (report.Decision, bool) { return report.Decide(report.ReasonConfigured), true }})
		if u := fs[len(fs)-1]; u.Feature != FeatureListenerHTTPS || u.Status != Unsupported || u.Reason != report.ReasonListenerNotGenerated {
			t.Errorf("listener.https finding %+v", u)
		}
	}

	for name, parent := range map[string]string{
		"HTTPS only":          "{name: gw, sectionName: https}",
		"not a Gateway":       "{name: x, kind: Service}", // group gateway.networking.k8s.io
		"no such sectionName": "{name: gw, sectionName: nope}",
	} {
		m := build(t, route(parent), ResolveOptions{})
		if len(m.Rules) != 0 || len(m.Skipped) != 2 || len(m.Listeners) != 0 {
			t.Fatalf("%s: rules %d skipped %d listeners %d", name, len(m.Rules), len(m.Skipped), len(m.Listeners))
		}
		for _, s := range m.Skipped {
			if s.Features[0] != FeatureRouteAttachment || !strings.Contains(s.Reason, "parentRefs[0]") {
				t.Errorf("%s: rule %d features %v reason %q", name, s.Index, s.Features, s.Reason)
			}
		}
		// Rule 0 sets neither retry nor timeouts: still a finding.
		if got := m.Skipped[0].Features; name != "HTTPS only" && !reflect.DeepEqual(got, []Feature{FeatureRouteAttachment}) {
			t.Errorf("%s: rule 0 features %v", name, got)
		}
	}
}

// TestRunWithoutListener: with nothing attached, no configuration is
// written (it would have no listener), a warning says so, and every rule
// has an unsupported route.attachment finding on every target.
func TestRunWithoutListener(t *testing.T) {
	m := build(t, gateway+strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw, sectionName: https}]\n", 1), ResolveOptions{})
	called := false
	b := fakeBackend{name: "x", out: func(m *Model) *Output { called = true; return honourAll(m) }}
	res, err := Run(m, []Target{{Backend: b, Version: "1.0"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !called || len(res.Files) != 0 {
		t.Errorf("%v files for a model without listener (backend called %v: its contract is still checked)", len(res.Files), called)
	}
	if !strings.Contains(NotesText(res.Notes), "no configuration is written") {
		t.Errorf("notes %s", NotesText(res.Notes))
	}
	var got []Feature
	for _, f := range res.Report.Findings {
		if f.Status != Unsupported {
			t.Errorf("finding %+v is not unsupported", f)
		}
		got = append(got, f.Feature)
	}
	if want := []Feature{FeatureListenerHTTPS, FeatureRouteAttachment}; !reflect.DeepEqual(got, want) {
		t.Errorf("findings %v, want %v", got, want)
	}
}

// TestJudgeDoesNotTrustUnreadFeatures: an honoured claim on a feature the
// judge does not read back (a filter, a listener) is a contradiction.
func TestJudgeDoesNotTrustUnreadFeatures(t *testing.T) {
	r := &Rule{Route: "ns/r", Backends: []*BackendRef{{Weight: 1}}, Filters: Filters{Rewrite: &Rewrite{Hostname: "a"}}}
	f := statusFinding(r, FeatureURLRewrite, Honoured, "rewritten")
	errs := CheckClaims(r, []Finding{f}, map[MethodClass]Behaviour{Idempotent: {}, NonIdempotent: {}})
	if len(errs) == 0 {
		t.Error("an honoured filters.urlRewrite claim passed a judge that cannot read it")
	}
	f.Status = Unsupported
	if errs := CheckClaims(r, []Finding{f}, map[MethodClass]Behaviour{}); len(errs) != 0 {
		t.Errorf("an unsupported finding claims nothing: %v", errs)
	}
}
