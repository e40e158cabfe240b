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
	// route's hostnames restrict it (HostnamesRestrictRoute): nothing of
	// it is honoured.
	for i, input := range []string{gammaRoute("a", rule("/x", timeouts)), route("a", rule("/x", timeouts))} {
		wantRequest := []translate.Status{translate.Honoured, translate.Approximated}[i]
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
			if got[translate.FeatureRequestTimeout] != wantRequest || got[translate.FeatureBackendRequestTimeout] != translate.Approximated {
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
	// Linkerd's try timers start once the request body is sent, and a try
	// cut after its headers is not retried.
	tryTimer := "NoAnswerAfterHeaders TimerStartsAfterRequestBody"
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
			"shop/a#0 retry.backendTimeout":    `Configured "timeout.linkerd.io/response 1s, retry.linkerd.io/timeout 1s" [` + clamped + " " + body + " " + tryTimer + "]",
			"shop/a#0 retry.backoff":           `FixedBackoff{max=250ms,min=25ms} "" []`,
			"shop/a#0 timeouts.backendRequest": `Configured "timeout.linkerd.io/response 1s, retry.linkerd.io/timeout 1s" [` + tryTimer + "]",
		}},
		{"backendRequest without retry, request (2.20)", base + gammaRoute("a", rule("/x", "    timeouts: {request: 10s, backendRequest: 1s}\n")), "2.20", false, map[string]string{
			"shop/a#0 timeouts.backendRequest": `Configured "timeout.linkerd.io/response 1s" [` + tryTimer + "]",
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

// TestTryTimers: the judge reads Linkerd's try timers as the proxy runs
// them (linkerd2-proxy route/extensions.rs, route/retry.rs,
// stream-timeouts): retry.linkerd.io/timeout is a response-headers timer,
// retried and removed on the last try; timeout.linkerd.io/response an
// end-of-response timer on every try. What gwretry writes for a retried
// backendRequest (both, equal) cuts every try, the last included; the
// retry timeout alone leaves the last try uncut, which explain's timeline
// shows, as it shows the backoff (25 ms doubling to 250 ms, plus up to as
// much again, each pause at most 250 ms).
func TestTryTimers(t *testing.T) {
	ms := time.Millisecond
	_, m := build(t, base+gammaRoute("a", rule("/x", "    retry: {attempts: 5, codes: [503]}\n    timeouts: {backendRequest: 1s}\n")))
	out, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := string(out.Files[0].Data)
	if !strings.Contains(data, "timeout.linkerd.io/response: 1s\n") || !strings.Contains(data, "retry.linkerd.io/timeout: 1s\n") {
		t.Fatalf("both timers are not written:\n%s", data)
	}
	total := translate.Timer{Kind: translate.TimerTotal, Value: time.Second}
	tests := []struct {
		name, from, to string
		try, last      translate.Timer
		lastTimeout    string
		worst          translate.Span
	}{
		{"as written", "", "", total, translate.Timer{}, "total 1s", translate.Span{D: 6*time.Second + 850*ms}},
		{"retry timeout alone", "    timeout.linkerd.io/response: 1s\n", "",
			translate.Timer{Kind: translate.TimerHeaders, Value: time.Second}, translate.Timer{Kind: translate.TimerNone}, "none", translate.Span{Unbounded: true}},
		{"longer response timer", "timeout.linkerd.io/response: 1s", "timeout.linkerd.io/response: 3s",
			translate.Timer{Kind: translate.TimerHeaders, Value: time.Second}, translate.Timer{Kind: translate.TimerTotal, Value: 3 * time.Second}, "total 3s", translate.Span{D: 8*time.Second + 850*ms}},
	}
	r := m.MeshRules[0]
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := strings.Replace(data, tt.from, tt.to, 1)
			if tt.from != "" && changed == data {
				t.Fatalf("no %q in\n%s", tt.from, data)
			}
			observed, err := New().Observe(m, translate.Options{}, []translate.File{{Path: routesPath, Data: []byte(changed)}})
			if err != nil {
				t.Fatal(err)
			}
			b := observed[r.Name][r.MethodClasses()[0]]
			if b.TryTimeout != tt.try || b.LastTryTimeout != tt.last || !b.TimeoutRetried || b.Retries != 5 || b.MinGap != 25*ms {
				t.Errorf("try %v, last try %v, retried %v, retries %d, min gap %v", b.TryTimeout, b.LastTryTimeout, b.TimeoutRetried, b.Retries, b.MinGap)
			}
			want := []translate.Window{{Min: 25 * ms, Max: 50 * ms}, {Min: 50 * ms, Max: 100 * ms}, {Min: 100 * ms, Max: 200 * ms}, {Min: 200 * ms, Max: 250 * ms}, {Min: 250 * ms, Max: 250 * ms}}
			if got := b.Backoff.Waits(5); !slices.Equal(got, want) {
				t.Errorf("pauses %v, want %v", got, want)
			}
			tl := translate.RuleTimeline(r, b)
			if len(tl.Tries) != 6 || tl.Tries[1].Note == "at once" || tl.Tries[5].Timeout != tt.lastTimeout || tl.WorstCase != tt.worst {
				t.Errorf("timeline: %d tries, second %q, last try's timer %q, worst case %v", len(tl.Tries), tl.Tries[1].Note, tl.Tries[5].Timeout, tl.WorstCase)
			}
			// The claim of backendRequest is read against the judge:
			// only the timers as written cut every try at 1s.
			honoured := out.Findings[slices.IndexFunc(out.Findings, func(f translate.Finding) bool {
				return f.Feature == translate.FeatureBackendRequestTimeout
			})]
			honoured.Status, honoured.Caveats = translate.Honoured, nil
			errs := translate.CheckClaims(r, []translate.Finding{honoured}, observed[r.Name])
			if (len(errs) == 0) != (tt.from == "") {
				t.Errorf("backendRequest read as honoured: %v", errs)
			}
		})
	}
}

// TestHostnamesRestrict: Linkerd's proxy applies a route with hostnames
// only to requests whose host matches one, also on a Service parent:
// every claim of its rules says so (HostnamesRestrictRoute), none stays
// honoured.
func TestHostnamesRestrict(t *testing.T) {
	in := base + strings.Replace(gammaRoute("a", rule("/x", "    retry: {attempts: 2, codes: [503]}\n    timeouts: {request: 10s}\n")), "  rules:", "  hostnames: [cart.shop.svc.cluster.local, cart]\n  rules:", 1)
	_, m := build(t, in)
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "2.20"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range res.Report.Findings {
		if f.Status == translate.Honoured {
			t.Errorf("%s is honoured", f.Feature)
		}
		if f.Status == translate.Approximated {
			n++
			if !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool {
				return c.Reason == report.CaveatHostnamesRestrictRoute && c.Params["hostnames"] == "cart.shop.svc.cluster.local, cart"
			}) {
				t.Errorf("%s: caveats %v", f.Feature, f.Caveats)
			}
		}
	}
	if n < 3 {
		t.Errorf("%d findings approximated", n)
	}
}
