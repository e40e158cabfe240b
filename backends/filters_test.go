package backends

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// filtersManifest has a rule with every Standard filter and backendRef
// filters, a redirect-only rule with a retry, a dead rule with a filter,
// and a route attached to an HTTP and an HTTPS listener.
const filtersManifest = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ns}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /all}}]
    filters:
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: a b}], remove: [X-B]}}
    - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-C, value: c}]}}
    - {type: URLRewrite, urlRewrite: {hostname: b.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /x}}}
    - {type: RequestMirror, requestMirror: {backendRef: {name: m, port: 80}, percent: 10}}
    - {type: ExtensionRef, extensionRef: {group: example.com, kind: Auth, name: basic}}
    backendRefs:
    - name: svc
      port: 8080
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-D, value: d}]}}]
    retry: {codes: [503], attempts: 2}
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]
    retry: {attempts: 1}
    timeouts: {request: 5s}
  - matches: [{path: {type: PathPrefix, value: /dead}}]
    filters: [{type: RequestHeaderModifier, requestHeaderModifier: {remove: [X-B]}}]
    backendRefs: [{name: b, group: example.com, kind: Bucket, port: 1}]
`

// TestEveryBackendReportsUntranslatedFeatures: every backend, at every
// version, gives each filter and the HTTPS listener a finding, unsupported
// and naming the data plane unless the backend translates it; a redirect-only rule is never called dead;
// the contract and the judges hold.
func TestEveryBackendReportsUntranslatedFeatures(t *testing.T) {
	_, m := testmodel.FromYAML(t, filtersManifest, translate.ResolveOptions{})
	// Linkerd applies only routes attached to a Service (GAMMA): it gets
	// the route attached to a Service as well.
	_, meshed := testmodel.FromYAML(t, strings.Replace(filtersManifest, "parentRefs: [{name: gw}]",
		`parentRefs: [{name: gw}, {name: svc, kind: Service, group: "", port: 8080}]`, 1)+
		"---\napiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\nspec:\n  ports: [{name: http, port: 8080}]\n",
		translate.ResolveOptions{})
	for _, be := range All() {
		for _, v := range be.Versions() {
			in := m
			if be.Scope().MeshRoutes {
				in = meshed
			}
			res, err := translate.Run(in, []translate.Target{{Backend: be, Version: v}}, false)
			if err != nil {
				t.Fatalf("%s@%s: %v", be.Name(), v, err)
			}
			if len(res.Files) == 0 {
				t.Errorf("%s@%s: no files", be.Name(), v)
			}
			byRule := map[int]map[translate.Feature]translate.Finding{}
			for _, f := range res.Report.Findings {
				if byRule[f.Rule] == nil {
					byRule[f.Rule] = map[translate.Feature]translate.Finding{}
				}
				byRule[f.Rule][f.Feature] = f
				// A backend may translate the rule-level Standard filters of
				// a rule that forwards or redirects (rule 2 is dead; its
				// judge checks the honoured claims); every other filter and
				// HTTPS listener is unsupported everywhere.
				translated := standardRuleFilter(f.Feature) && f.Rule != 2
				// A target that does not serve the rule says so instead.
				if (f.Feature.IsFilter() && !translated || f.Feature == translate.FeatureListenerHTTPS) && f.Status != translate.Unsupported &&
					!(f.Status == translate.NotApplicable && !be.Scope().GatewayRoutes) {
					t.Errorf("%s@%s rule %d: %s is %s", be.Name(), v, f.Rule, f.Feature, f.Status)
				}
			}
			for _, f := range []translate.Feature{translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier,
				translate.FeatureURLRewrite, translate.FeatureRequestMirror, translate.FeatureExtensionRef,
				translate.BackendRefFeature(translate.FeatureRequestHeaderModifier), translate.FeatureListenerHTTPS} {
				if _, ok := byRule[0][f]; !ok {
					t.Errorf("%s@%s rule 0: no %s finding", be.Name(), v, f)
				}
			}
			if s := be.Scope(); !s.GatewayRoutes && !s.MeshRoutes {
				// A target that serves no HTTPRoute at all (the OpenShift
				// router) reports every finding as outside its scope
				// (checked above for the filters).
				continue
			}
			red := byRule[1]
			if _, ok := red[translate.FeatureBackendRefs]; ok {
				t.Errorf("%s@%s: the redirect-only rule has a backendRefs finding", be.Name(), v)
			}
			for feat, f := range red {
				if f.Reason == report.ReasonAnswers500 || f.Reason == report.ReasonNotAnswered500 {
					t.Errorf("%s@%s redirect rule %s: %s calls it dead", be.Name(), v, feat, f.Reason)
				}
			}
			// A redirect the target does not write is not translated or
			// not expressible there; the rule is not dead.
			if f := red[translate.FeatureRequestRedirect]; f.Status == translate.Unsupported && f.Reason != report.ReasonNotTranslated && f.Reason != report.ReasonNotExpressible {
				t.Errorf("%s@%s redirect finding %s", be.Name(), v, report.WithParams(f.Reason, f.Params))
			}
			// A gRPC service config cannot answer a call: the one target
			// that cannot honour a dead rule; Linkerd answers an invalid
			// backendRef with its own error, not known to be 500.
			if f := byRule[2][translate.FeatureBackendRefs]; f.Status != translate.Honoured && (be.Name() != "grpc" || f.Status != translate.Unsupported) &&
				(be.Name() != "linkerd" || f.Status != translate.Approximated) {
				t.Errorf("%s@%s dead rule backendRefs %+v", be.Name(), v, f)
			}
			// A filter of a dead rule never takes effect: the rule
			// forwards nothing, or the filter is not written at all.
			switch f := byRule[2][translate.FeatureRequestHeaderModifier]; f.Reason {
			case report.ReasonRuleForwardsNothing, report.ReasonNotTranslated, report.ReasonNotExpressible:
			default:
				t.Errorf("%s@%s dead rule filter finding %s (%s)", be.Name(), v, f.Reason, f.Status)
			}
		}
	}
}

// standardRuleFilter reports whether f is one of the Standard filters a
// backend may translate at rule level.
func standardRuleFilter(f translate.Feature) bool {
	switch f {
	case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier,
		translate.FeatureRequestRedirect, translate.FeatureURLRewrite, translate.FeatureRequestMirror:
		return true
	}
	return false
}
