package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/backends/haproxy"
	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/backends/traefik"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestNotExpressedWhy: a value one target's format truly cannot carry is
// MatchNotExpressible or ValueNotExpressible there only, with the field,
// the value and the target's why (ExpressWhy) in its params; the other
// targets write the rule. Rule 0: a header regex that is not ASCII
// (nginx's and HAProxy's PCRE read bytes); rule 1: a query name with '+'
// (Traefik's form decoding); rule 2: a
// filter header value with a template action (Traefik's file provider);
// rule 3: a path whose %0D Traefik would decode to a carriage return,
// which its rule string drops; rule 4: a query name with '&' (nginx's raw
// $args, HAProxy's urlp).
func TestNotExpressedWhy(t *testing.T) {
	route := fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /r0}, headers: [{type: RegularExpression, name: x-a, value: "café+"}]}]
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /r1}, queryParams: [{name: "a+b", value: "1"}]}]
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /r2}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-s, value: "{{x}}"}]}}]
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: Exact, value: "/r3%%0D"}}]
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /r4}, queryParams: [{name: "a&b", value: "1"}]}]
    backendRefs: [{name: svc, port: 8080}]
` + testmodel.GatewayAndService)
	out := t.TempDir()
	code, _, stderr := gwretry(t, route, "translate", "-", "--target", "all", "--output-dir", out, "--report", "none", "-q",
		"--endpoint", "svc.default:8080=127.0.0.1:9")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep translate.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	type key struct {
		target string
		rule   int
	}
	got := map[key]report.Decision{}
	for _, f := range rep.Findings {
		if f.Reason == report.ReasonMatchNotExpressible || f.Reason == report.ReasonValueNotExpressible {
			got[key{f.Target, f.Rule}] = report.Decide(f.Reason, "field", f.Params["field"], "value", f.Params["value"], "why", f.Params["why"])
		}
	}
	match := func(field, kind, value, why string) report.Decision {
		return report.Decide(report.ReasonMatchNotExpressible, "field", field, "value", value, "why", why)
	}
	ng, hp, tr := nginx.New(), haproxy.New(), traefik.New()
	want := map[key]report.Decision{
		{"nginx", 0}:   match("header x-a", translate.KindRegex, "café+", ng.NotExpressed(translate.KindRegex, "café+")),
		{"haproxy", 0}: match("header x-a", translate.KindRegex, "café+", hp.NotExpressed(translate.KindRegex, "café+")),
		{"traefik", 1}: match("query name", translate.KindQueryName, "a+b", tr.NotExpressed(translate.KindQueryName, "a+b")),
		{"traefik", 2}: report.Decide(report.ReasonValueNotExpressible, "field", "requestHeaderModifier x-s", "value", "{{x}}",
			"why", tr.NotExpressed(translate.KindFilterHeaderValue, "{{x}}")),
		{"traefik", 3}: match("path", translate.KindPath, "/r3%0D", tr.NotExpressed(translate.KindPath, "/r3%0D")),
		{"nginx", 4}:   match("query name", translate.KindQueryName, "a&b", ng.NotExpressed(translate.KindQueryName, "a&b")),
		{"haproxy", 4}: match("query name", translate.KindQueryName, "a&b", hp.NotExpressed(translate.KindQueryName, "a&b")),
	}
	for k, d := range want {
		if d.Params["why"] == "" {
			t.Errorf("%v: no why", k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules not written (-want +got):\n%s", diff)
	}
}
