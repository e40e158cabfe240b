package input

import (
	"errors"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// routeWithRule returns an HTTPRoute whose single rule has the given YAML
// (indented for the rule's mapping) plus a backendRef.
func routeWithRule(rule string) string {
	return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: r
  namespace: ns
spec:
  rules:
  - backendRefs:
    - name: svc
      port: 8080
` + rule
}

// validationRejects are inputs gwretry refuses, with the field and the
// message it names; TestAPIServerAgrees also sends them to the API server
// (some are refused by gwretry's own checks only, not by the API).
var validationRejects = []struct {
	name, input string
	field, msg  string
}{
	{"duration syntax", routeWithRule("    timeouts:\n      request: 1.5s\n"), "spec.rules[0].timeouts.request", "should match '^([0-9]{1,5}(h|m|s|ms)){1,4}$'"},
	{"duration unit", routeWithRule("    timeouts:\n      backendRequest: 1d\n"), "spec.rules[0].timeouts.backendRequest", "should match"},
	{"backoff syntax", routeWithRule("    retry:\n      backoff: -1s\n"), "spec.rules[0].retry.backoff", "should match"},
	{"backendRequest above request", routeWithRule("    timeouts:\n      request: 1s\n      backendRequest: 2s\n"), "spec.rules[0].timeouts", "cannot be longer than request timeout"},
	{"negative attempts", routeWithRule("    retry:\n      attempts: -1\n"), "spec.rules[0].retry.attempts", "greater than or equal to 0"},
	{"code below 400", routeWithRule("    retry:\n      codes: [399]\n"), "spec.rules[0].retry.codes[0]", "greater than or equal to 400"},
	{"code above 599", routeWithRule("    retry:\n      codes: [500, 600]\n"), "spec.rules[0].retry.codes[1]", "less than or equal to 599"},
	{"duplicate codes", routeWithRule("    retry:\n      codes: [500, 500]\n"), "spec.rules[0].retry.codes[1]", "Duplicate value: 500"},
	{"route name", strings.Replace(routeWithRule(""), "name: r\n", "name: R_1\n", 1), "metadata.name", "RFC 1123 subdomain"},
	{"namespace", strings.Replace(routeWithRule(""), "namespace: ns", "namespace: a.b", 1), "metadata.namespace", "must not contain dots"},
	{"hostname", strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  hostnames: [Foo.example.com]\n", 1), "spec.hostnames[0]", "should match"},
	{"path without slash", routeWithRule("    matches:\n    - path: {type: PathPrefix, value: api}\n"), "spec.rules[0].matches[0].path", "start with '/'"},
	{"path with //", routeWithRule("    matches:\n    - path: {type: Exact, value: /a//b}\n"), "spec.rules[0].matches[0].path", "'//'"},
	{"path with %2f", routeWithRule("    matches:\n    - path: {value: /a%2Fb}\n"), "spec.rules[0].matches[0].path", "%2F"},
	{"path with injection", routeWithRule("    matches:\n    - path: {value: \"/a;b{\"}\n"), "spec.rules[0].matches[0].path", "must only contain valid characters"},
	{"header name", routeWithRule("    matches:\n    - headers: [{name: \"a b\", value: x}]\n"), "spec.rules[0].matches[0].headers[0].name", "should match"},
	{"query name", routeWithRule("    matches:\n    - queryParams: [{name: \"a;b\", value: x}]\n"), "spec.rules[0].matches[0].queryParams[0].name", "should match"},
	{"method", routeWithRule("    matches:\n    - method: get\n"), "spec.rules[0].matches[0].method", "supported values"},
	{"duplicate rule names", strings.Replace(routeWithRule("  - name: a\n    backendRefs: [{name: svc, port: 8080}]\n"), "  - backendRefs:", "  - name: a\n    backendRefs:", 1), "spec.rules", "Rule name must be unique within the route"},
	{"backend port", routeWithRule("  - backendRefs: [{name: svc}]\n"), "spec.rules[1].backendRefs[0]", "Must have port for Service reference"},
	{"backend weight", routeWithRule("  - backendRefs: [{name: svc, port: 1, weight: -1}]\n"), "spec.rules[1].backendRefs[0].weight", "greater than or equal to 0"},
	{"parent port", strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  parentRefs: [{name: gw, port: 70000}]\n", 1), "spec.parentRefs[0].port", "less than or equal to 65535"},
	{"gateway listener port", routeWithRule("") + "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: ns}\nspec:\n  gatewayClassName: x\n  listeners: [{name: http, port: 0, protocol: HTTP}]\n", "spec.listeners[0].port", "greater than or equal to 1"},
}

func TestValidationRejects(t *testing.T) {
	for _, tt := range validationRejects {
		t.Run(tt.name, func(t *testing.T) {
			p := writeInput(t, "bad.yaml", tt.input)
			in, err := Load([]string{p}, nil, DefaultLimits())
			if err == nil {
				err = checked(in)
			}
			if err == nil {
				t.Fatal("no error, want one")
			}
			if !IsInputError(err) {
				t.Errorf("%v is not an input error", err)
			}
			for _, w := range []string{p + ": document ", tt.field + ": ", tt.msg} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// validationQuoted are values the API server accepts that some target
// cannot quote (TestAPIServerAgrees sends them to the API server too).
var validationQuoted = []struct{ name, input string }{
	{"hostname IP", strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  hostnames: [10.0.0.1]\n", 1)},
	{"regex that does not compile", routeWithRule("    matches:\n    - path: {type: RegularExpression, value: \"/a(\"}\n")},
	{"regex with backslash", routeWithRule("    matches:\n    - path: {type: RegularExpression, value: '/a\\d'}\n")},
	{"header regex with backslash", routeWithRule("    matches:\n    - headers: [{type: RegularExpression, name: x, value: '\\d+'}]\n")},
	{"header value with backtick", routeWithRule("    matches:\n    - headers: [{name: x, value: \"a`b\"}]\n")},
	{"header matched twice", routeWithRule("    matches:\n    - headers: [{name: x, value: a}, {name: X, value: b}]\n")},
	{"query name the API allows", routeWithRule("    matches:\n    - queryParams: [{name: \"a!b\", value: x}]\n")},
	{"path with quote and escape", routeWithRule("    matches:\n    - path: {type: Exact, value: \"/abc/123'/a-b-c/d@gmail/%0A\"}\n")},
	{"rewrite path without slash", routeWithRule("    filters:\n    - type: URLRewrite\n      urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: foo}}\n")},
}

// TestValidationAcceptsWhatTargetsCannotQuote: values the API server accepts (kubectl apply
// --dry-run=server with the v1.7.0 CRDs) that gwretry once refused because
// some target's format could not quote them. They are valid; a target
// that cannot write one says so in its findings (translate.ForTarget).
func TestValidationAcceptsWhatTargetsCannotQuote(t *testing.T) {
	tests := validationQuoted
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeInput(t, "ok.yaml", tt.input)
			in, err := Load([]string{p}, nil, DefaultLimits())
			if err == nil {
				err = checked(in)
			}
			if err != nil {
				t.Fatalf("refused, the API server accepts it: %v", err)
			}
		})
	}
}

func TestValidationReportsAllErrors(t *testing.T) {
	p := writeInput(t, "bad.yaml", routeWithRule("    retry:\n      attempts: -1\n      codes: [1]\n    timeouts:\n      request: 1x\n"))
	in, err := Load([]string{p}, nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	err = checked(in)
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 3 {
		t.Fatalf("got %v, want 3 errors", err)
	}
}

// validationAccepts are rules gwretry accepts (each in routeWithRule).
var validationAccepts = []string{
	"    timeouts:\n      request: 0s\n      backendRequest: 10s\n",
	"    timeouts:\n      request: 10s\n      backendRequest: 10s\n",
	"    retry:\n      attempts: 0\n      codes: [400, 599]\n      backoff: 1ms\n",
	"    matches:\n    - path: {type: RegularExpression, value: \"^/api/v[0-9]+/.*$\"}\n      headers: [{type: RegularExpression, name: x-env, value: \"^(a|b)$\"}]\n      queryParams: [{name: q, value: \"1\"}]\n      method: POST\n",
}

func TestValidationAccepts(t *testing.T) {
	for _, rule := range validationAccepts {
		p := writeInput(t, "ok.yaml", routeWithRule(rule))
		in, err := Load([]string{p}, nil, DefaultLimits())
		if err == nil {
			err = checked(in)
		}
		if err != nil {
			t.Errorf("rule %q: %v", rule, err)
		}
	}
}

func TestValidationChannel(t *testing.T) {
	// spec.useDefaultGateways exists only in the experimental CRDs.
	route := strings.Replace(routeWithRule(""), "spec:\n", "spec:\n  useDefaultGateways: All\n", 1)
	tests := []struct {
		channel translate.Channel
		wantErr string
	}{
		{"", "spec.useDefaultGateways: invalid per the Gateway API: Forbidden: an experimental-channel field"},
		{translate.ChannelStandard, "use --channel experimental"},
		{translate.ChannelExperimental, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.channel), func(t *testing.T) {
			p := writeInput(t, "r.yaml", route)
			in, err := Load([]string{p}, nil, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			err = nil
			if errs := Validate(in, tt.channel); len(errs) > 0 {
				err = errs
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := translate.ParseChannel("beta"); err == nil {
		t.Error("ParseChannel(beta): no error")
	}
}

// checked is Check as Build runs it, with the standard channel, as an error.
func checked(in *Input) error {
	if errs := Check(in, ""); len(errs) > 0 {
		return errs
	}
	return nil
}
