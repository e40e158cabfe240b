package openshift

import (
	"slices"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// record is what TestDecisions checks of a finding: never its message.
type record struct {
	reason     report.Reason
	params     report.Params
	caveats    []report.Reason
	configured string
}

func recordOf(f translate.Finding) record {
	r := record{reason: f.Reason, params: f.Params, configured: f.Configured}
	for _, c := range f.Caveats {
		r.caveats = append(r.caveats, c.Reason)
	}
	return r
}

func (r record) equal(o record) bool {
	return r.reason == o.reason && r.configured == o.configured && slices.Equal(r.caveats, o.caveats) &&
		len(r.params) == len(o.params) && func() bool {
		for k, v := range r.params {
			if o.params[k] != v {
				return false
			}
		}
		return true
	}()
}

// runTarget runs the target on m through translate.Run, which checks every
// record against the catalogue.
func runTarget(t *testing.T, m *translate.Model, nonIdempotent bool) []translate.Finding {
	t.Helper()
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "4.20"}}, nonIdempotent)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if err := report.Check(f); err != nil {
			t.Errorf("%s rule %d: %v", f.Route, f.Rule, err)
		}
	}
	return res.Report.Findings
}

// TestDecisionsRules: the router serves no HTTPRoute, so every feature of
// every rule, whatever it sets, is outside its scope: not applicable,
// RoutesNotServed, with or without --retry-non-idempotent.
func TestDecisionsRules(t *testing.T) {
	m := testmodel.LoadText(t, testmodel.Route(`
  - matches: [{path: {type: PathPrefix, value: /codes}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 2, codes: [500, 503], backoff: 100ms}
  - matches: [{path: {type: PathPrefix, value: /zero}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 0}
  - matches: [{path: {type: PathPrefix, value: /clamp}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 100}
  - matches: [{path: {type: PathPrefix, value: /post}, method: POST}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 1}
  - matches: [{path: {type: PathPrefix, value: /timeouts}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 1}
    timeouts: {request: 3s, backendRequest: 1s}
  - matches: [{path: {type: PathPrefix, value: /notimeout}}]
    backendRefs: [{name: svc, port: 8080}]
    timeouts: {request: 0s}
  - matches: [{path: {type: PathPrefix, value: /dead}}]
    retry: {attempts: 1}
  - matches: [{path: {type: PathPrefix, value: /filters}}]
    backendRefs: [{name: svc, port: 8080}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {add: [{name: x-a, value: v1}]}
`), translate.ResolveOptions{}, "svc:8080=127.0.0.1:9100")
	want := record{reason: report.ReasonRoutesNotServed}
	for _, nonIdempotent := range []bool{false, true} {
		features := map[translate.Feature]bool{}
		for _, f := range runTarget(t, m, nonIdempotent) {
			features[f.Feature] = true
			if f.Status != translate.NotApplicable {
				t.Errorf("rule %d %s: %s, want notApplicable", f.Rule, f.Feature, f.Status)
			}
			if got := recordOf(f); !got.equal(want) {
				t.Errorf("retry-non-idempotent %v: rule %d %s: %+v, want %+v", nonIdempotent, f.Rule, f.Feature, got, want)
			}
		}
		for _, f := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryCodes, translate.FeatureRetryBackoff,
			translate.FeatureRetryBackendTimeout, translate.FeatureBackendRequestTimeout, translate.FeatureRequestTimeout,
			translate.FeatureBackendRefs, translate.FeatureRequestHeaderModifier} {
			if !features[f] {
				t.Errorf("no %s finding", f)
			}
		}
	}
}

// TestDecisionsConnections: each connection field the router writes is
// configured with the caveats that it times the router's own traffic and
// rests on the source (and, for the fin timeouts, that no live test sees
// it time anything); a Gateway whose value another policy's wins gets
// OneValueForAllGateways; a clamped value TimeoutClamped.
func TestDecisionsConnections(t *testing.T) {
	common := []report.Reason{report.CaveatGatewayListenersNotServed, report.CaveatSourceOnly}
	fin := []report.Reason{report.CaveatGatewayListenersNotServed, report.CaveatHalfCloseTimerUnobserved, report.CaveatSourceOnly}
	type key struct {
		gateway string
		feature translate.Feature
	}
	check := func(t *testing.T, fs []translate.Finding, want map[key]record) {
		t.Helper()
		got := map[key]record{}
		for _, f := range fs {
			if f.Gateway != "" {
				got[key{f.Gateway, f.Feature}] = recordOf(f)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d connection findings, want %d", len(got), len(want))
		}
		for k, w := range want {
			if g := got[k]; !g.equal(w) {
				t.Errorf("%s %s: %+v, want %+v", k.gateway, k.feature, g, w)
			}
		}
	}
	t.Run("conntimeout", func(t *testing.T) {
		// gw's older policy wins the router's one value of each field
		// gw2 sets too.
		wins := func(v string) record {
			return record{reason: report.ReasonOneValueForAllGateways, params: report.Params{"policy": "shop/router-tuning", "value": v}}
		}
		check(t, runTarget(t, testmodel.ConnectionTimeouts(t), false), map[key]record{
			{"shop/gw", translate.FeatureConnClientTimeout}:    {report.ReasonConfigured, nil, common, "spec.tuningOptions.clientTimeout 45s"},
			{"shop/gw", translate.FeatureConnClientFinTimeout}: {report.ReasonConfigured, nil, fin, "spec.tuningOptions.clientFinTimeout 3s"},
			{"shop/gw", translate.FeatureConnServerTimeout}:    {report.ReasonConfigured, nil, common, "spec.tuningOptions.serverTimeout 60s"},
			{"shop/gw", translate.FeatureConnServerFinTimeout}: {report.ReasonConfigured, nil, fin, "spec.tuningOptions.serverFinTimeout 4s"},
			{"shop/gw", translate.FeatureConnTunnelTimeout}:    {report.ReasonConfigured, nil, common, "spec.tuningOptions.tunnelTimeout 30m"},
			{"shop/gw", translate.FeatureConnTLSInspectDelay}:  {report.ReasonConfigured, nil, common, "spec.tuningOptions.tlsInspectDelay 5s"},
			{"shop/gw2", translate.FeatureConnClientTimeout}:   wins("45s"),
			{"shop/gw2", translate.FeatureConnServerTimeout}:   wins("60s"),
			{"shop/gw2", translate.FeatureConnTunnelTimeout}:   wins("30m"),
		})
	})
	t.Run("clamped", func(t *testing.T) {
		m := testmodel.LoadText(t, testmodel.ConnectionPolicy("clientTimeout: 30d", `tunnelTimeout: "3000"`), translate.ResolveOptions{}, "svc:8080=127.0.0.1:9100")
		check(t, runTarget(t, m, false), map[key]record{
			{"ns/gw", translate.FeatureConnClientTimeout}: {report.ReasonConfigured, nil,
				[]report.Reason{report.CaveatGatewayListenersNotServed, report.CaveatSourceOnly, report.CaveatTimeoutClamped}, "spec.tuningOptions.clientTimeout 2147483647ms"},
			{"ns/gw", translate.FeatureConnTunnelTimeout}: {report.ReasonConfigured, nil, common, "spec.tuningOptions.tunnelTimeout 3000ms"},
		})
	})
}
