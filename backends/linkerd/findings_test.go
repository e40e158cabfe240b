package linkerd

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestServiceRouteBothTimeouts: a rule of a route attached to a Service
// that sets both timeouts.request and a shorter timeouts.backendRequest,
// without retries, translates on every Linkerd version (it was an
// internal error: the shared judge took the request timer to be
// backendRequest whenever a single try is cut sooner, although Linkerd's
// try timer, timeout.linkerd.io/response, waits for the headers only and
// the request timer is the total the Gateway API defines). The judge
// still refuses a request timer of another value.
func TestServiceRouteBothTimeouts(t *testing.T) {
	const timeouts = "    timeouts: {request: 10s, backendRequest: 1s}\n"
	for _, input := range []string{gammaRoute("a", rule("/x", timeouts)), route("a", rule("/x", timeouts))} {
		_, m := build(t, base+input)
		for _, v := range New().Versions() {
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: v}}, false)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			got := map[translate.Feature]translate.Status{}
			for _, f := range res.Report.Findings {
				got[f.Feature] = f.Status
			}
			if got[translate.FeatureRequestTimeout] != translate.Honoured || got[translate.FeatureBackendRequestTimeout] != translate.Approximated {
				t.Errorf("%s: findings %v", v, got)
			}
		}
	}
	_, m := build(t, base+gammaRoute("a", rule("/x", timeouts)))
	out, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	observed, err := New().Observe(m, translate.Options{}, out.Files)
	if err != nil {
		t.Fatal(err)
	}
	r := m.MeshRules[0]
	for _, tt := range []struct {
		request time.Duration
		ok      bool
	}{{10 * time.Second, true}, {5 * time.Second, false}} {
		obs := map[translate.MethodClass]translate.Behaviour{}
		for c, b := range observed[r.Name] {
			b.RequestTimeout.Value = tt.request
			obs[c] = b
		}
		errs := translate.CheckClaims(r, out.Findings, obs)
		if (len(errs) == 0) != tt.ok {
			t.Errorf("request timer %s: %v", tt.request, errs)
		}
		for _, e := range errs {
			if !strings.Contains(e.Error(), "timeouts.request") {
				t.Errorf("request timer %s: %v", tt.request, e)
			}
		}
	}
}

// TestDecisions: the decision each finding records, for representative
// rules: its reason (with parameters), what is configured, and the
// caveats (with theirs). Messages are for people and not looked at.
func TestDecisions(t *testing.T) {
	const (
		body    = "BodyBufferLimit{limit=64 KiB}"
		noConn  = "ConnectionFailuresNotRetried"
		clamped = "AttemptsClamped{configured=65535,max=65535}"
	)
	https := strings.Replace(base, "  - {name: http, protocol: HTTP, port: 8080}\n",
		"  - {name: http, protocol: HTTP, port: 8080}\n  - {name: https, protocol: HTTPS, port: 8443, tls: {certificateRefs: [{name: cert}]}}\n", 1)
	annotated := strings.Replace(base, "metadata: {name: cart, namespace: shop}",
		`metadata: {name: cart, namespace: shop, annotations: {retry.linkerd.io/limit: "2", timeout.linkerd.io/request: 2s}}`, 1)
	const policy = `---
apiVersion: gwretry.io/v1alpha1
kind: ConnectionTimeoutPolicy
metadata: {name: tuning, namespace: shop}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  clientTimeout: 45s
`
	post := "  - matches: [{method: POST}]\n    backendRefs: [{name: cart, port: 80}]\n" + retry2
	retryCodes := map[string]string{
		"shop/a#0 retry.attempts":         `Configured "retry.linkerd.io/limit 2" [` + body + " " + noConn + "]",
		"shop/a#0 retry.codes":            `Configured "retry.linkerd.io/http 502-503" [` + body + "]",
		"shop/a#0 retry.connectionErrors": `ConnectionFailuresNotRetryable "" []`,
	}
	tests := []struct {
		name    string
		input   string
		version string
		rni     bool // --retry-non-idempotent
		want    map[string]string
	}{
		{"retry with codes", base + gammaRoute("a", rule("/x", retry2)), "", false, retryCodes},
		{"POST rule: Linkerd retries every method", base + gammaRoute("a", post), "", false, retryCodes},
		{"POST rule with --retry-non-idempotent", base + gammaRoute("a", post), "", true, retryCodes},
		{"attempts 0", base + gammaRoute("a", rule("/x", "    retry: {attempts: 0}\n")), "", false, map[string]string{
			"shop/a#0 retry.attempts":         `RetriesDisabled "" []`,
			"shop/a#0 retry.connectionErrors": `RetriesDisabled "" []`,
		}},
		{"connection failures only", base + gammaRoute("a", rule("/x", "    retry: {attempts: 2}\n")), "", false, map[string]string{
			"shop/a#0 retry.attempts":         `ConnectionFailuresNotRetryable "" []`,
			"shop/a#0 retry.connectionErrors": `ConnectionFailuresNotRetryable "" []`,
		}},
		{"attempts clamped, backoff, backendRequest", base + gammaRoute("a", rule("/x", "    retry: {attempts: 70000, codes: [503], backoff: 1s}\n    timeouts: {backendRequest: 1s}\n")), "", false, map[string]string{
			"shop/a#0 retry.attempts":          `Configured "retry.linkerd.io/limit 65535" [` + clamped + " " + body + " " + noConn + "]",
			"shop/a#0 retry.codes":             `Configured "retry.linkerd.io/http 503" [` + clamped + " " + body + "]",
			"shop/a#0 retry.backendTimeout":    `Configured "retry.linkerd.io/timeout 1s" [` + clamped + " " + body + "]",
			"shop/a#0 retry.backoff":           `FixedBackoff{max=250ms,min=25ms} "" []`,
			"shop/a#0 timeouts.backendRequest": `Configured "retry.linkerd.io/timeout 1s" [TryTimerSkipsLargeBodies{limit=64 KiB}]`,
		}},
		{"backendRequest without retry, request (2.20)", base + gammaRoute("a", rule("/x", "    timeouts: {request: 10s, backendRequest: 1s}\n")), "2.20", false, map[string]string{
			"shop/a#0 timeouts.backendRequest": `Configured "timeout.linkerd.io/response 1s" [TimerEndsAtResponseHeaders]`,
			"shop/a#0 timeouts.request":        `Configured "timeouts.request 10s" []`,
		}},
		{"request before 2.20", base + gammaRoute("a", rule("/x", "    timeouts: {request: 10s}\n")), "2.19", false, map[string]string{
			"shop/a#0 timeouts.request": `Configured "timeout.linkerd.io/request 10s" []`,
		}},
		{"request 0s, backendRequest 0s", base + gammaRoute("a", rule("/x", retry2+"    timeouts: {request: 0s, backendRequest: 0s}\n")), "", false, map[string]string{
			"shop/a#0 timeouts.request":        `TimeoutDisabled "" []`,
			"shop/a#0 timeouts.backendRequest": `TimeoutDisabled "" []`,
			"shop/a#0 retry.backendTimeout":    `TimeoutDisabled "" []`,
		}},
		{"dead rules", base + gammaRoute("a", strings.Replace(rule("/x", retry2), "name: cart,", "name: gone,", 1), "  - matches: [{path: {type: PathPrefix, value: /y}}]\n"+retry2), "", false, map[string]string{
			"shop/a#0 backendRefs":    `Answers500 "backendRefs written back" [FailedShareStatusUnknown]`,
			"shop/a#0 retry.attempts": `RuleForwardsNothing "" []`,
			"shop/a#1 backendRefs":    `NoBackendRefsGoToParent "" []`,
			"shop/a#1 retry.codes":    `RuleForwardsNothing "" []`,
		}},
		{"filters", base + gammaRoute("a",
			rule("/x", "    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-a, value: \"1\"}]}}]\n"),
			strings.Replace(rule("/y", ""), "{name: cart, port: 80}", "{name: cart, port: 80, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {remove: [x-b]}}]}", 1),
			strings.Replace(rule("/z", ""), "{name: cart, port: 80}", "{name: cart, port: 80, filters: [{type: RequestMirror, requestMirror: {backendRef: {name: cart, port: 80}}}]}", 1),
			rule("/w", retry2+"    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v}}}]\n")), "", false, map[string]string{
			"shop/a#0 filters.requestHeaderModifier":              `Configured "RequestHeaderModifier filter" []`,
			"shop/a#1 backendRefs.filters.responseHeaderModifier": `Configured "backendRef ResponseHeaderModifier filter" [NotCheckedByJudge]`,
			"shop/a#2 backendRefs.filters.requestMirror":          `BackendFilterInvalidatesBackend{filter=RequestMirror} "" []`,
			"shop/a#3 filters.urlRewrite":                         `RouteRefusedForFilter{filter=URLRewrite} "" []`,
			"shop/a#3 retry.attempts":                             `RouteRefusedForFilter{filter=URLRewrite} "" []`,
		}},
		{"Gateway parents only", base + strings.Replace(route("a", rule("/x", retry2)), `, {name: cart, kind: Service, group: "", port: 80}`, "", 1), "", false, map[string]string{
			"shop/a#0 retry.attempts": `GatewayAttachmentOnly "" []`,
		}},
		{"Service parent that does not attach", base + strings.Replace(route("a", rule("/x", retry2)), "port: 80}]", "port: 81}]", 1), "", false, map[string]string{
			"shop/a#0 retry.attempts": `NoServiceParentAttaches "" []`,
		}},
		{"HTTPS listener", https + route("a", rule("/x", "")), "", false, map[string]string{
			"shop/a#0 listener.https": `MeshServesNoListener "" []`,
		}},
		{"Service annotations", annotated + gammaRoute("a", rule("/x", "    retry: {attempts: 0}\n    timeouts: {request: 0s}\n")), "", false, map[string]string{
			"shop/a#0 retry.attempts":   `RetriesDisabled "" [ServiceAnnotationsApply{annotations=retry.linkerd.io/limit,services=Service shop/cart port 80}]`,
			"shop/a#0 timeouts.request": `TimeoutDisabled "" [ServiceAnnotationsApply{annotations=timeout.linkerd.io/request,services=Service shop/cart port 80}]`,
		}},
		{"connection timeouts", base + policy + route("a", rule("/x", "")), "", false, map[string]string{
			"shop/gw connection.clientTimeout": `NoProxyConnections "" []`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m := build(t, tt.input)
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: tt.version}}, tt.rni)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range res.Report.Findings {
				if f.Reason == "" {
					t.Errorf("%s %s: no reason", f.Route, f.Feature)
				}
				key := fmt.Sprintf("%s#%d %s", f.Route, f.Rule, f.Feature)
				if f.Gateway != "" {
					key = fmt.Sprintf("%s %s", f.Gateway, f.Feature)
				}
				var cs []string
				for _, c := range f.Caveats {
					cs = append(cs, withParams(c.Reason, c.Params))
				}
				got[key] = fmt.Sprintf("%s %q [%s]", withParams(f.Reason, f.Params), f.Configured, strings.Join(cs, " "))
			}
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s:\n got %s\nwant %s", k, got[k], want)
				}
			}
		})
	}
}

// withParams writes a reason and its parameters, sorted by name.
func withParams(r report.Reason, p report.Params) string {
	if len(p) == 0 {
		return string(r)
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		kv = append(kv, k+"="+p[k])
	}
	return string(r) + "{" + strings.Join(kv, ",") + "}"
}
