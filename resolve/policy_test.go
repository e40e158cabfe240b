package resolve

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// policyBase is a Gateway infra/gw (listeners http and alt), a route
// shop/r on listener http with one rule named "main" (own fields
// inserted at %s) to Service shop/cart, and a second Service.
const policyBase = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: x
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - {name: alt, port: 81, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Service
metadata: {name: cart, namespace: shop}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: canary, namespace: shop}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: shop}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: http}]
  rules:
  - name: main
    backendRefs: %s
%s`

// rp writes a RetryPolicy: name "ns/name", target "Gateway gw",
// "Gateway gw/http" (listener), "HTTPRoute r", "HTTPRoute r/main" (rule),
// "Service cart"; side "default" or "override"; extra metadata fields.
func rp(name, target, side, values string, extra ...string) string {
	ns, n, _ := strings.Cut(name, "/")
	kind, obj, _ := strings.Cut(target, " ")
	obj, section, _ := strings.Cut(obj, "/")
	group := "gateway.networking.k8s.io"
	if kind == "Service" {
		group = "''"
	}
	ref := fmt.Sprintf("{group: %s, kind: %s, name: %s", group, kind, obj)
	if section != "" {
		ref += ", sectionName: " + section
	}
	md := fmt.Sprintf("{name: %s, namespace: %s%s}", n, ns, strings.Join(extra, ""))
	return fmt.Sprintf("---\napiVersion: gwretry.io/v1alpha1\nkind: RetryPolicy\nmetadata: %s\nspec:\n  targetRefs: [%s}]\n  %s: %s\n", md, ref, side, values)
}

func created(ts string) string { return ", creationTimestamp: '" + ts + "'" }

// effectiveOf builds the input and returns rule 0's effective values as
// "feature=value <source>" lines, sorted, without retry.connectionErrors.
func effectiveOf(t *testing.T, input string) (string, *translate.Model) {
	t.Helper()
	m := build(t, input, translate.ResolveOptions{})
	if len(m.Effective) == 0 {
		t.Fatal("no effective entry")
	}
	e := m.Effective[0]
	var lines []string
	for _, f := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryCodes, translate.FeatureRetryBackoff, translate.FeatureBackendRequestTimeout, translate.FeatureRequestTimeout} {
		if v, ok := e.Effective[f]; ok {
			lines = append(lines, fmt.Sprintf("%s=%v <%s>", f, v.Value, v.Source))
		}
	}
	return strings.Join(lines, "\n"), m
}

func TestPolicyMerge(t *testing.T) {
	cart := "[{name: cart, port: 80}]"
	split := "[{name: cart, port: 80}, {name: canary, port: 80}]"
	tests := []struct {
		name     string
		backends string
		own      string
		policies string
		want     string
	}{
		// Each step of the hierarchy, on attempts.
		{"Gateway override beats HTTPRoute override", cart, "    retry: {attempts: 1}\n",
			rp("infra/g", "Gateway gw", "override", "{retry: {attempts: 5}}") + rp("shop/p", "HTTPRoute r", "override", "{retry: {attempts: 4}}"),
			"retry.attempts=5 <RetryPolicy infra/g override>"},
		{"HTTPRoute override beats Service override", cart, "    retry: {attempts: 1}\n",
			rp("shop/p", "HTTPRoute r", "override", "{retry: {attempts: 4}}") + rp("shop/s", "Service cart", "override", "{retry: {attempts: 3}}"),
			"retry.attempts=4 <RetryPolicy shop/p override>"},
		{"Service override beats the rule's own", cart, "    retry: {attempts: 1}\n",
			rp("shop/s", "Service cart", "override", "{retry: {attempts: 3}}"),
			"retry.attempts=3 <RetryPolicy shop/s override>"},
		{"the rule's own beats Service default", cart, "    retry: {attempts: 1}\n",
			rp("shop/s", "Service cart", "default", "{retry: {attempts: 3}}"),
			"retry.attempts=1 <HTTPRoute>"},
		{"Service default beats HTTPRoute default", cart, "",
			rp("shop/s", "Service cart", "default", "{retry: {attempts: 3}}") + rp("shop/p", "HTTPRoute r", "default", "{retry: {attempts: 4}}"),
			"retry.attempts=3 <RetryPolicy shop/s default>"},
		{"HTTPRoute default beats Gateway default", cart, "",
			rp("shop/p", "HTTPRoute r", "default", "{retry: {attempts: 4}}") + rp("infra/g", "Gateway gw", "default", "{retry: {attempts: 5}}"),
			"retry.attempts=4 <RetryPolicy shop/p default>"},
		{"Gateway default fills what nothing else sets", cart, "",
			rp("infra/g", "Gateway gw", "default", "{retry: {attempts: 5}}"),
			"retry.attempts=5 <RetryPolicy infra/g default>"},
		{"a listener's default beats its Gateway's", cart, "",
			rp("infra/g", "Gateway gw", "default", "{retry: {attempts: 5}}") + rp("infra/l", "Gateway gw/http", "default", "{retry: {attempts: 6}}"),
			"retry.attempts=6 <RetryPolicy infra/l default>"},
		{"a Gateway's override beats its listener's", cart, "",
			rp("infra/g", "Gateway gw", "override", "{retry: {attempts: 5}}") + rp("infra/l", "Gateway gw/http", "override", "{retry: {attempts: 6}}"),
			"retry.attempts=5 <RetryPolicy infra/g override>"},
		{"another listener's policy does not reach the rule", cart, "",
			rp("infra/l", "Gateway gw/alt", "override", "{retry: {attempts: 6}}"),
			""},
		{"a rule's default beats its route's", cart, "",
			rp("shop/p", "HTTPRoute r", "default", "{retry: {attempts: 4}}") + rp("shop/q", "HTTPRoute r/main", "default", "{retry: {attempts: 2}}"),
			"retry.attempts=2 <RetryPolicy shop/q default>"},
		// GEP-713's rules, on timeouts.
		{"GEP-713: defaults bottom-up, the most specific wins", cart, "",
			rp("infra/g", "Gateway gw", "default", "{timeouts: {request: 30s}}") + rp("shop/p", "HTTPRoute r", "default", "{timeouts: {request: 10s}}"),
			"timeouts.request=10s <RetryPolicy shop/p default>"},
		{"GEP-713: overrides top-down, the admin's wins", cart, "",
			rp("infra/g", "Gateway gw", "override", "{timeouts: {request: 30s}}") + rp("shop/p", "HTTPRoute r", "override", "{timeouts: {request: 10s}}"),
			"timeouts.request=30s <RetryPolicy infra/g override>"},
		{"GEP-713: an override replaces the object's own value", cart, "    timeouts: {request: 5s}\n",
			rp("shop/p", "HTTPRoute r", "override", "{timeouts: {request: 10s}}"),
			"timeouts.request=10s <RetryPolicy shop/p override>"},
		{"GEP-713: a default only fills an unset field", cart, "    timeouts: {request: 5s}\n",
			rp("infra/g", "Gateway gw", "default", "{timeouts: {request: 30s, backendRequest: 2s}}"),
			"timeouts.backendRequest=2s <RetryPolicy infra/g default>\ntimeouts.request=5s <HTTPRoute>"},
		{"GEP-713: merged per scalar field", cart, "",
			rp("infra/g", "Gateway gw", "default", "{retry: {attempts: 2, backoff: 100ms}, timeouts: {request: 30s}}") + rp("shop/p", "HTTPRoute r", "default", "{retry: {attempts: 3}, timeouts: {backendRequest: 1s}}"),
			"retry.attempts=3 <RetryPolicy shop/p default>\nretry.backoff=100ms <RetryPolicy infra/g default>\ntimeouts.backendRequest=1s <RetryPolicy shop/p default>\ntimeouts.request=30s <RetryPolicy infra/g default>"},
		{"GEP-713: a list is replaced whole, never merged", cart, "    retry: {attempts: 1, codes: [503]}\n",
			rp("infra/g", "Gateway gw", "override", "{retry: {attempts: 1, codes: [500, 502]}}"),
			"retry.attempts=1 <RetryPolicy infra/g override>\nretry.codes=[500 502] <RetryPolicy infra/g override>"},
		{"GEP-713: override beats default at one place", cart, "",
			rp("shop/p", "HTTPRoute r", "default", "{retry: {attempts: 2}}", created("2020-01-01T00:00:00Z")) + rp("shop/q", "HTTPRoute r", "override", "{retry: {attempts: 7}}", created("2026-01-01T00:00:00Z")),
			"retry.attempts=7 <RetryPolicy shop/q override>"},
		// CRD defaults are applied before merging.
		{"a rule's retry without attempts holds 1, which a default cannot change", cart, "    retry: {codes: [503]}\n",
			rp("infra/g", "Gateway gw", "default", "{retry: {attempts: 3}}"),
			"retry.attempts=1 <HTTPRoute (API default)>\nretry.codes=[503] <HTTPRoute>"},
		{"an override's retry without attempts holds 1 and replaces the rule's", cart, "    retry: {attempts: 5}\n",
			rp("infra/g", "Gateway gw", "override", "{retry: {codes: [502]}}"),
			"retry.attempts=1 <RetryPolicy infra/g override (API default)>\nretry.codes=[502] <RetryPolicy infra/g override>"},
		// Conflicts at one place.
		{"at one place the oldest wins", cart, "",
			rp("shop/a", "HTTPRoute r", "default", "{retry: {attempts: 2}}", created("2026-01-01T00:00:00Z")) + rp("shop/z", "HTTPRoute r", "default", "{retry: {attempts: 3}}", created("2020-01-01T00:00:00Z")),
			"retry.attempts=3 <RetryPolicy shop/z default>"},
		{"at one place and time, namespace/name decides", cart, "",
			rp("shop/b", "HTTPRoute r", "default", "{retry: {attempts: 2}}") + rp("shop/a", "HTTPRoute r", "default", "{retry: {attempts: 3}}"),
			"retry.attempts=3 <RetryPolicy shop/a default>"},
		{"Services of one rule: merged as one place", split, "",
			rp("shop/c", "Service cart", "default", "{retry: {attempts: 2}}", created("2020-01-01T00:00:00Z")) + rp("shop/d", "Service canary", "default", "{retry: {attempts: 4}}", created("2021-01-01T00:00:00Z")),
			"retry.attempts=2 <RetryPolicy shop/c default>"},
		{"a policy in another namespace reaches nothing", cart, "",
			rp("other/p", "HTTPRoute r", "override", "{retry: {attempts: 4}}"),
			""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := effectiveOf(t, fmt.Sprintf(policyBase, tc.backends, tc.own)+tc.policies)
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestPolicyStatus(t *testing.T) {
	in := fmt.Sprintf(policyBase, "[{name: cart, port: 80}, {name: canary, port: 80}]", "") +
		rp("shop/old", "HTTPRoute r", "default", "{retry: {attempts: 2}}", created("2020-01-01T00:00:00Z")) +
		rp("shop/new", "HTTPRoute r", "default", "{retry: {attempts: 3}, timeouts: {request: 1s}}", created("2021-01-01T00:00:00Z")) +
		rp("shop/c", "Service cart", "default", "{timeouts: {backendRequest: 1s}}") +
		rp("shop/d", "Service canary", "default", "{timeouts: {backendRequest: 2s}}") +
		rp("other/far", "HTTPRoute r", "default", "{retry: {attempts: 9}}")
	_, m := effectiveOf(t, in)
	status := map[string]translate.PolicyStatus{}
	for _, p := range m.Policies {
		status[p.Namespace+"/"+p.Name] = p.Status
	}
	want := map[string]translate.PolicyStatus{"shop/old": translate.PolicyAccepted, "shop/new": translate.PolicyConflicted, "shop/c": translate.PolicyAccepted,
		"shop/d": translate.PolicyConflicted, "other/far": translate.PolicyTargetNotFound}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("statuses %v, want %v", status, want)
	}
	notes := translate.NotesText(m.Notes)
	for _, s := range []string{"RetryPolicy shop/new: Conflicted: retry.attempts of shop/r rule 0: lost to RetryPolicy shop/old default, which is older",
		"RetryPolicy other/far: TargetNotFound"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes lack %q:\n%s", s, notes)
		}
	}
	r := m.Rules[0]
	if len(r.PolicyConflicts) != 2 || !strings.Contains(r.PolicyConflicts[0].Text, "Service shop/canary: 2s from RetryPolicy shop/d default; Service shop/cart: 1s from RetryPolicy shop/c default") {
		t.Errorf("conflicts %+v", r.PolicyConflicts)
	}
}

// TestEmptyPolicySide checks that a side that sets no field, which the
// CRD admits, is said to change nothing rather than pass in silence.
func TestEmptyPolicySide(t *testing.T) {
	base := fmt.Sprintf(policyBase, "[{name: cart, port: 80}]", "")
	for _, tc := range []struct{ name, policy, want string }{
		{"empty default", rp("shop/p", "HTTPRoute r", "default", "{}"), "RetryPolicy shop/p: spec.default sets no field"},
		{"empty override", rp("shop/p", "HTTPRoute r", "override", "{}"), "RetryPolicy shop/p: spec.override sets no field"},
		{"empty timeouts", rp("shop/p", "Gateway gw", "default", "{timeouts: {}}"), "RetryPolicy shop/p: spec.default sets no field"},
		{"an empty retry holds attempts 1", rp("shop/p", "HTTPRoute r", "default", "{retry: {}}"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m := effectiveOf(t, base+tc.policy)
			var got []string
			for _, n := range m.Notes {
				if strings.Contains(n.Text, "sets no field") {
					got = append(got, n.String())
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("notes %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want) || !strings.HasPrefix(got[0], "warning: ")):
				t.Errorf("notes %q, want one warning with %q", got, tc.want)
			}
		})
	}
}

// btp writes a BackendTrafficPolicy shop/name targeting HTTPRoute r (or
// the target given as "Gateway gw" in namespace infra).
func btp(name, target, spec string) string {
	ns, kind, obj := "shop", "HTTPRoute", "r"
	if target != "" {
		kind, obj, _ = strings.Cut(target, " ")
		ns = "infra"
	}
	obj, section, _ := strings.Cut(obj, "/")
	ref := fmt.Sprintf("{group: gateway.networking.k8s.io, kind: %s, name: %s", kind, obj)
	if section != "" {
		ref += ", sectionName: " + section
	}
	return fmt.Sprintf("---\napiVersion: gateway.envoyproxy.io/v1alpha1\nkind: BackendTrafficPolicy\nmetadata: {name: %s, namespace: %s}\nspec:\n  targetRefs: [%s}]\n%s", name, ns, ref, spec)
}

func TestBackendTrafficPolicy(t *testing.T) {
	cart := "[{name: cart, port: 80}]"
	tests := []struct {
		name, own, policies, want, notCarried string
	}{
		{"numRetries", "", btp("p", "", "  retry: {numRetries: 4, retryOn: {triggers: [connect-failure]}}\n"),
			"retry.attempts=4 <BackendTrafficPolicy shop/p>", ""},
		{"numRetries 0", "", btp("p", "", "  retry: {numRetries: 0, retryOn: {triggers: [connect-failure]}}\n"),
			"retry.attempts=0 <BackendTrafficPolicy shop/p>", ""},
		{"defaults: numRetries 2, retryOn 503", "", btp("p", "", "  retry: {}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p (API default)>\nretry.codes=[503] <BackendTrafficPolicy shop/p (API default)>", "gRPC statuses"},
		{"retryOn.triggers", "", btp("p", "", "  retry: {retryOn: {triggers: [gateway-error, retriable-4xx, refused-stream, reset-before-request, reset, cancelled]}}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p (API default)>\nretry.codes=[409 502 503 504] <BackendTrafficPolicy shop/p>", "triggers cancelled"},
		{"retryOn.httpStatusCodes", "", btp("p", "", "  retry: {retryOn: {triggers: [retriable-status-codes], httpStatusCodes: [429, 302]}}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p (API default)>\nretry.codes=[429] <BackendTrafficPolicy shop/p>", "httpStatusCodes 302"},
		{"httpStatusCodes without their trigger", "", btp("p", "", "  retry: {retryOn: {triggers: [connect-failure], httpStatusCodes: [429]}}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p (API default)>", "without the retriable-status-codes trigger"},
		{"perRetry.backOff", "", btp("p", "", "  retry: {numRetries: 1, retryOn: {triggers: [connect-failure]}, perRetry: {backOff: {baseInterval: 100ms, maxInterval: 2s}}}\n"),
			"retry.attempts=1 <BackendTrafficPolicy shop/p>\nretry.backoff=100ms <BackendTrafficPolicy shop/p>", "maxInterval 2s"},
		{"perRetry.timeout", "", btp("p", "", "  retry: {numRetries: 1, retryOn: {triggers: [connect-failure]}, perRetry: {timeout: 250ms}}\n"),
			"retry.attempts=1 <BackendTrafficPolicy shop/p>\ntimeouts.backendRequest=250ms <BackendTrafficPolicy shop/p>", ""},
		{"httpStatusCodes without triggers keep Envoy Gateway's default triggers", "", btp("p", "", "  retry: {retryOn: {httpStatusCodes: [429, 502]}}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p (API default)>\nretry.codes=[429 502] <BackendTrafficPolicy shop/p>", "carried to the Envoy target only: spec.retry.retryOn.triggers unavailable,cancelled: gRPC statuses"},
		{"an empty retryOn is Envoy Gateway's default", "", btp("p", "", "  retry: {retryOn: {}}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p (API default)>\nretry.codes=[503] <BackendTrafficPolicy shop/p (API default)>", "gRPC statuses"},
		{"a rule's backendRequest without a retry is the route timeout beside a policy's retry", "    timeouts: {request: 9s, backendRequest: 4s}\n",
			btp("p", "", "  retry: {numRetries: 1, retryOn: {triggers: [reset]}, perRetry: {timeout: 1s}}\n  timeout: {http: {requestTimeout: 3s}}\n"),
			"retry.attempts=1 <BackendTrafficPolicy shop/p>\ntimeouts.backendRequest=1s <BackendTrafficPolicy shop/p>\ntimeouts.request=4s <HTTPRoute>", "the rule's backendRequest 4s is the route timeout"},
		{"a rule's backendRequest beats a policy's requestTimeout", "    timeouts: {backendRequest: 4s}\n",
			btp("p", "", "  timeout: {http: {requestTimeout: 3s}}\n"),
			"timeouts.request=4s <HTTPRoute>", "requestTimeout 3s not applied, the rule's backendRequest 4s is the route timeout"},
		{"mergeType merges a route's policy into its Gateway's", "",
			btp("p", "", "  mergeType: StrategicMerge\n  retry: {retryOn: {triggers: [reset], httpStatusCodes: [502]}}\n") + btp("g", "Gateway gw", "  retry: {numRetries: 5, retryOn: {triggers: [connect-failure]}, perRetry: {timeout: 2s}}\n  timeout: {http: {requestTimeout: 7s}}\n"),
			"retry.attempts=2 <BackendTrafficPolicy shop/p merged into BackendTrafficPolicy infra/g>\ntimeouts.backendRequest=2s <BackendTrafficPolicy shop/p merged into BackendTrafficPolicy infra/g>\ntimeouts.request=7s <BackendTrafficPolicy shop/p merged into BackendTrafficPolicy infra/g>", "merged with BackendTrafficPolicy shop/p"},
		{"triggers that retry no failed connection", "", btp("p", "", "  retry: {numRetries: 1, retryOn: {triggers: [retriable-4xx]}}\n"),
			"retry.attempts=1 <BackendTrafficPolicy shop/p>\nretry.codes=[409] <BackendTrafficPolicy shop/p>", ""},
		{"timeout.http.requestTimeout", "", btp("p", "", "  timeout: {http: {requestTimeout: 3s}}\n"),
			"timeouts.request=3s <BackendTrafficPolicy shop/p>", ""},
		{"timeout.tcp.connectTimeout is not carried", "", btp("p", "", "  timeout: {tcp: {connectTimeout: 3s}}\n"),
			"", "connectTimeout 3s"},
		{"a route's own retry replaces the policy's whole", "    retry: {attempts: 1}\n",
			btp("p", "", "  retry: {numRetries: 4, retryOn: {triggers: [gateway-error]}, perRetry: {timeout: 1s}}\n  timeout: {http: {requestTimeout: 3s}}\n"),
			"retry.attempts=1 <HTTPRoute>\ntimeouts.request=3s <BackendTrafficPolicy shop/p>", ""},
		{"a route's policy beats the Gateway's, whole", "",
			btp("p", "", "  retry: {numRetries: 4, retryOn: {triggers: [connect-failure]}}\n") + btp("g", "Gateway gw", "  retry: {numRetries: 1}\n  timeout: {http: {requestTimeout: 3s}}\n"),
			"retry.attempts=4 <BackendTrafficPolicy shop/p>", ""},
		{"a rule's policy beats the route's", "",
			btp("p", "", "  retry: {numRetries: 4, retryOn: {triggers: [connect-failure]}}\n") +
				strings.Replace(btp("q", "HTTPRoute r/main", "  retry: {numRetries: 1, retryOn: {triggers: [connect-failure]}}\n"), "namespace: infra", "namespace: shop", 1),
			"retry.attempts=1 <BackendTrafficPolicy shop/q>", ""},
		{"a RetryPolicy's retry replaces a BackendTrafficPolicy's", "",
			btp("p", "", "  retry: {numRetries: 4}\n") + rp("infra/g", "Gateway gw", "default", "{retry: {attempts: 1}}"),
			"retry.attempts=1 <RetryPolicy infra/g default>", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, m := effectiveOf(t, fmt.Sprintf(policyBase, cart, tc.own)+tc.policies)
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			notes := translate.NotesText(m.Notes)
			if tc.notCarried != "" && !strings.Contains(notes, tc.notCarried) {
				t.Errorf("notes lack %q:\n%s", tc.notCarried, notes)
			}
		})
	}
}

// TestBTPRetryOn: the retry condition is Envoy Gateway v1.9's
// (gatewayapi buildRetry, translator buildRetryPolicy): its default for an
// unset or empty retryOn, else the policy's triggers sorted and its codes,
// never widened; and which failures it retries follows Envoy's retry_on.
func TestBTPRetryOn(t *testing.T) {
	for _, tc := range []struct {
		retry, triggers, codes string
		conn                   translate.ConnRetry
		timeouts               bool
	}{
		{"{}", "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes", "503", translate.ConnRetryUnsent, false},
		{"{retryOn: {}}", "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes", "503", translate.ConnRetryUnsent, false},
		{"{retryOn: {httpStatusCodes: [503, 429, 429]}}", "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes", "429,503", translate.ConnRetryUnsent, false},
		{"{retryOn: {triggers: [retriable-status-codes, connect-failure], httpStatusCodes: [503]}}", "connect-failure,retriable-status-codes", "503", translate.ConnRetryUnsent, false},
		{"{retryOn: {triggers: [reset-before-request]}}", "reset-before-request", "", translate.ConnRetryUnsent, false},
		{"{retryOn: {triggers: [reset]}}", "reset", "", translate.ConnRetryAll, true},
		{"{retryOn: {triggers: [retriable-4xx]}}", "retriable-4xx", "", translate.ConnRetryNone, false},
		{"{retryOn: {triggers: [gateway-error, gateway-error]}}", "gateway-error", "", translate.ConnRetryAll, true},
	} {
		var p translate.BackendTrafficPolicy
		if err := yaml.UnmarshalStrict([]byte("spec: {retry: "+tc.retry+"}"), &p); err != nil {
			t.Fatal(err)
		}
		on := btpRetryOn(p.Spec.Retry.RetryOn)
		if got := strings.Join(on.Triggers, ","); got != tc.triggers {
			t.Errorf("retry %s: triggers %s, want %s", tc.retry, got, tc.triggers)
		}
		if got := intsText(on.StatusCodes); got != tc.codes {
			t.Errorf("retry %s: codes %s, want %s", tc.retry, got, tc.codes)
		}
		if on.ConnErrors != tc.conn || on.Timeouts != tc.timeouts {
			t.Errorf("retry %s: connection errors %s, timeouts retried %v; want %s, %v", tc.retry, on.ConnErrors, on.Timeouts, tc.conn, tc.timeouts)
		}
	}
}

func TestPolicyInputErrors(t *testing.T) {
	base := fmt.Sprintf(policyBase, "[{name: cart, port: 80}]", "")
	tests := []struct{ name, policy, want string }{
		{"unknown field", rp("shop/p", "HTTPRoute r", "default", "{retry: {attempts: 1, tries: 2}}"), "spec.default.retry.tries: unknown field"},
		{"negative attempts", rp("shop/p", "HTTPRoute r", "override", "{retry: {attempts: -1}}"), "spec.override.retry.attempts: invalid per the RetryPolicy CRD: Invalid value: -1"},
		{"code out of range", rp("shop/p", "HTTPRoute r", "default", "{retry: {codes: [600]}}"), "spec.default.retry.codes[0]"},
		{"duplicate code", rp("shop/p", "HTTPRoute r", "default", "{retry: {codes: [503, 503]}}"), "spec.default.retry.codes[1]: invalid per the RetryPolicy CRD: Duplicate value"},
		{"bad duration", rp("shop/p", "HTTPRoute r", "default", "{retry: {backoff: 1.5s}}"), "spec.default.retry.backoff"},
		{"backendRequest longer than request", rp("shop/p", "HTTPRoute r", "default", "{timeouts: {request: 1s, backendRequest: 2s}}"), "backendRequest timeout cannot be longer than request timeout"},
		{"target kind", strings.Replace(rp("shop/p", "HTTPRoute r", "default", "{retry: {}}"), "kind: HTTPRoute", "kind: Secret", 1), "a targetRef is a Gateway or an HTTPRoute"},
		{"Service with sectionName", rp("shop/p", "Service cart/http", "default", "{retry: {}}"), "a Service takes none"},
		{"neither default nor override", strings.Replace(rp("shop/p", "HTTPRoute r", "default", "{retry: {}}"), "  default: {retry: {}}\n", "", 1), "needs default or override"},
		{"wrong-case key", strings.Replace(rp("shop/p", "HTTPRoute r", "default", "{retry: {}}"), "targetRefs", "TargetRefs", 1), "unknown field"},
		{"in a List", "---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: gwretry.io/v1alpha1, kind: RetryPolicy, metadata: {name: p, namespace: shop}, spec: {targetRefs: [{group: gateway.networking.k8s.io, kind: HTTPRoute, name: r}], default: {retry: {attempts: x}}}}\n", "items[0]: RetryPolicy shop/p: spec.default.retry.attempts: expected integer"},
		{"BackendTrafficPolicy on a Service", strings.Replace(btp("p", "", "  retry: {}\n"), "{group: gateway.networking.k8s.io, kind: HTTPRoute", "{group: '', kind: Service", 1), "not Services"},
		{"BackendTrafficPolicy unknown field", btp("p", "", "  retry: {numRetries: 1, tries: 2}\n"), "spec.retry.tries: unknown field"},
		{"BackendTrafficPolicy trigger", btp("p", "", "  retry: {retryOn: {triggers: [5xxx]}}\n"), "spec.retry.retryOn.triggers[0]: \"5xxx\" is not one of"},
		{"BackendTrafficPolicy numRetries", btp("p", "", "  retry: {numRetries: -1}\n"), "spec.retry.numRetries: -1 must be 0 or more"},
		{"BackendTrafficPolicy backOff", btp("p", "", "  retry: {perRetry: {backOff: {baseInterval: 2s, maxInterval: 1s}}}\n"), "maxInterval: 1s is less than baseInterval 2s"},
		{"BackendTrafficPolicy zero baseInterval", btp("p", "", "  retry: {perRetry: {backOff: {baseInterval: 0s}}}\n"), "0s is rejected"},
		{"BackendTrafficPolicy status code", btp("p", "", "  retry: {retryOn: {triggers: [retriable-status-codes], httpStatusCodes: [99]}}\n"), "httpStatusCodes[0]: 99 is not an HTTP status code"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := input.Load([]string{writeInput(t, "in.yaml", base+tc.policy)}, nil, input.DefaultLimits())
			if err == nil {
				_, err = Build(in, translate.ResolveOptions{})
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !input.IsInputError(err) {
				t.Errorf("not an input error: %v", err)
			}
			if !strings.Contains(err.Error(), "in.yaml: document") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to name the file, document and %q", err, tc.want)
			}
		})
	}
}

// TestPolicyBakedIntoHTTPRoutes checks that Model.HTTPRoutes holds a
// policy-shaped rule's effective values, and that the input is unchanged.
func TestPolicyBakedIntoHTTPRoutes(t *testing.T) {
	manifest := fmt.Sprintf(policyBase, "[{name: cart, port: 80}]", "    timeouts: {request: 5s}\n") +
		rp("shop/p", "HTTPRoute r", "override", "{timeouts: {request: 10s}, retry: {codes: [503]}}")
	in, err := input.Load([]string{writeInput(t, "in.yaml", manifest)}, nil, input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(in, translate.ResolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rule := m.HTTPRoutes["shop/r"].Spec.Rules[0]
	if rule.Timeouts == nil || rule.Timeouts.Request == nil || *rule.Timeouts.Request != "10s" || rule.Retry == nil || *rule.Retry.Attempts != 1 {
		t.Errorf("model route rule %+v, want the policy's values", rule)
	}
	if got := in.Routes[0].Obj.Spec.Rules[0]; *got.Timeouts.Request != "5s" || got.Retry != nil {
		t.Errorf("the input route changed: %+v", got)
	}
}

// TestPolicyMergedTimeouts: each value is valid where it is written, but
// merged the rule would have a backendRequest longer than its request,
// which the Gateway API refuses on a rule; it went through to the
// backends, whose reports then claimed a backendRequest their
// configuration cut short (an internal error, exit 70).
func TestPolicyMergedTimeouts(t *testing.T) {
	tests := []struct{ name, own, policies, want string }{
		{"override request shorter than the rule's backendRequest", "    timeouts: {backendRequest: 1s}\n",
			rp("shop/p", "HTTPRoute r", "override", "{timeouts: {request: 500ms}}"),
			"spec.rules[0].timeouts.backendRequest: with the policies merged, backendRequest 1s (from HTTPRoute) is longer than request 500ms (from RetryPolicy shop/p override)"},
		{"default backendRequest longer than the rule's request", "    timeouts: {request: 500ms}\n",
			rp("infra/p", "Gateway gw", "default", "{timeouts: {backendRequest: 2s}}"),
			"backendRequest 2s (from RetryPolicy infra/p default) is longer than request 500ms (from HTTPRoute)"},
		{"two policies", "",
			rp("shop/a", "HTTPRoute r", "default", "{timeouts: {request: 1s}}") + rp("infra/b", "Gateway gw", "override", "{timeouts: {backendRequest: 3s}}"),
			"backendRequest 3s (from RetryPolicy infra/b override) is longer than request 1s (from RetryPolicy shop/a default)"},
		{"request 0s disables the limit", "    timeouts: {backendRequest: 1s}\n",
			rp("shop/p", "HTTPRoute r", "override", "{timeouts: {request: 0s}}"), ""},
		{"equal", "    timeouts: {backendRequest: 1s}\n",
			rp("shop/p", "HTTPRoute r", "override", "{timeouts: {request: 1s}}"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			manifest := fmt.Sprintf(policyBase, "[{name: cart, port: 80}]", tc.own) + tc.policies
			in, err := input.Load([]string{writeInput(t, "in.yaml", manifest)}, nil, input.DefaultLimits())
			if err == nil {
				_, err = Build(in, translate.ResolveOptions{})
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !input.IsInputError(err) {
				t.Fatalf("error %v, want an input error", err)
			}
			if !strings.Contains(err.Error(), "in.yaml: document 4: HTTPRoute shop/r") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to name the file, document, route and %q", err, tc.want)
			}
		})
	}
}

// TestPolicyValuesNotApplied: a policy value that a rule never gets, because
// a less specific override or (for a BackendTrafficPolicy) the rule's or a
// RetryPolicy's value beats it, is named in that policy's report with the
// winner; a value that wins, or a default beaten by design, is not.
func TestPolicyValuesNotApplied(t *testing.T) {
	cart := "[{name: cart, port: 80}]"
	tests := []struct {
		name, own, policies string
		policy              string // "Kind ns/name" whose notes are checked
		want                []string
	}{
		{"a route override beaten by the Gateway's", "",
			rp("infra/g", "Gateway gw", "override", "{retry: {attempts: 5}}") + rp("shop/p", "HTTPRoute r", "override", "{retry: {attempts: 4, codes: [502]}}"),
			"RetryPolicy shop/p",
			[]string{"retry.attempts of shop/r rule 0: spec.override 4 not applied, 5 from RetryPolicy infra/g override wins (the override of a less specific target beats it)"}},
		{"the winning override has no note", "",
			rp("infra/g", "Gateway gw", "override", "{retry: {attempts: 5}}") + rp("shop/p", "HTTPRoute r", "override", "{retry: {attempts: 4}}"),
			"RetryPolicy infra/g", nil},
		{"a default beaten by a more specific default has no note", "",
			rp("infra/g", "Gateway gw", "default", "{timeouts: {request: 5s}}") + rp("shop/p", "HTTPRoute r", "default", "{timeouts: {request: 4s}}"),
			"RetryPolicy infra/g", nil},
		{"an override of another field loses nothing", "",
			rp("shop/p", "HTTPRoute r", "override", "{retry: {attempts: 4}}") + rp("shop/p2", "HTTPRoute r/main", "override", "{timeouts: {request: 1s}}"),
			"RetryPolicy shop/p", nil},
		{"a BackendTrafficPolicy perRetry.timeout beaten by a RetryPolicy default", "",
			btp("b", "", "  retry: {numRetries: 4, retryOn: {triggers: [gateway-error]}, perRetry: {timeout: 2s}}\n") + rp("shop/p", "HTTPRoute r", "default", "{timeouts: {backendRequest: 1s}}"),
			"BackendTrafficPolicy shop/b",
			[]string{"timeouts.backendRequest of shop/r rule 0: spec.retry.perRetry.timeout 2s not applied, 1s from RetryPolicy shop/p default wins"}},
		{"a BackendTrafficPolicy requestTimeout beaten by the rule's own", "    timeouts: {request: 9s}\n",
			btp("b", "", "  timeout: {http: {requestTimeout: 3s}}\n"),
			"BackendTrafficPolicy shop/b",
			[]string{"timeouts.request of shop/r rule 0: spec.timeout.http.requestTimeout 3s not applied, 9s from HTTPRoute wins"}},
		{"a BackendTrafficPolicy that fills unset fields has no note", "",
			btp("b", "", "  timeout: {http: {requestTimeout: 3s}}\n"),
			"BackendTrafficPolicy shop/b", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, m := effectiveOf(t, fmt.Sprintf(policyBase, cart, tc.own)+tc.policies)
			var got []string
			found := false
			for _, p := range m.Policies {
				if p.Kind+" "+p.Namespace+"/"+p.Name == tc.policy {
					found, got = true, p.Notes
					if p.Status != translate.PolicyAccepted {
						t.Errorf("status %s, want Accepted: a value beaten across places is no conflict", p.Status)
					}
				}
			}
			if !found {
				t.Fatalf("no report for %s", tc.policy)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("notes\n%q\nwant\n%q", got, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(translate.NotesText(m.Notes), tc.policy+": "+w) {
					t.Errorf("no info line %q", w)
				}
			}
		})
	}
}

// TestBTPResetCarried: reset and 5xx are written into Envoy's retry_on
// and retried (a reset after sending, a timed-out try) by every target:
// no line says they are not carried.
func TestBTPResetCarried(t *testing.T) {
	for _, retry := range []string{"{retryOn: {triggers: [reset]}}", "{retryOn: {triggers: [5xx, connect-failure]}}"} {
		var p translate.BackendTrafficPolicy
		if err := yaml.UnmarshalStrict([]byte("spec: {retry: "+retry+"}"), &p); err != nil {
			t.Fatal(err)
		}
		v := convertBTP(&p)
		if len(v.notCarried) > 0 || len(v.envoyOnly) > 0 {
			t.Errorf("retry %s: notCarried %q, envoyOnly %q; want none", retry, v.notCarried, v.envoyOnly)
		}
		on := v.retry[fieldRetryOn].value.(*translate.RetryOn)
		if on.ConnErrors != translate.ConnRetryAll || !on.Timeouts {
			t.Errorf("retry %s: %+v, want every connection failure and timed-out tries retried", retry, on)
		}
	}
}

// TestOlderOrder: policies at one place are ordered as Envoy Gateway's
// controller sorts them: creationTimestamp, then namespace, then name
// (not "namespace/name" as one string: "a" < "a-b" although "a/" > "a-").
func TestOlderOrder(t *testing.T) {
	a := &policySrc{key: "a/z"}
	b := &policySrc{key: "a-b/a"}
	if older(a, b) >= 0 {
		t.Errorf("older(a/z, a-b/a) = %d, want namespace a first", older(a, b))
	}
}
