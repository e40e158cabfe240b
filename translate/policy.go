package translate

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/config/crd"
)

// RetryPolicy is gwretry.io/v1alpha1 RetryPolicy: a GEP-713 inherited
// policy whose default and override hold an HTTPRoute rule's retry and
// timeouts. Its CRD is config/crd/gwretry.io_retrypolicies.yaml.
type RetryPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RetryPolicySpec    `json:"spec"`
	Status            *gwv1.PolicyStatus `json:"status,omitempty"`
}

// RetryPolicySpec is GEP-713's inherited form: targetRefs, default and
// override (singular, as GEP-713's example policy).
type RetryPolicySpec struct {
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	Default    *PolicyValues                                    `json:"default,omitempty"`
	Override   *PolicyValues                                    `json:"override,omitempty"`
}

// PolicyValues are the fields of an HTTPRoute rule a RetryPolicy sets,
// with exactly the rule's types.
type PolicyValues struct {
	Retry    *gwv1.HTTPRouteRetry    `json:"retry,omitempty"`
	Timeouts *gwv1.HTTPRouteTimeouts `json:"timeouts,omitempty"`
}

// Policies are the policy objects of the input, one list per known kind
// (see policyKinds).
type Policies struct {
	Retry          []Object[RetryPolicy]
	BackendTraffic []Object[BackendTrafficPolicy]
}

// policyKind is one policy kind gwretry reads. Adding a kind is one entry
// in policyKinds, a list in Policies and its validation and merge.
type policyKind struct {
	apiVersion, kind, plural string
	// add decodes one object strictly into the Input.
	add func(l *loader, pos Position, j []byte, tm typeMeta)
	// count is how many the Input holds.
	count func(in *Input) int
}

// policyKinds is the table of policy kinds Load reads.
func policyKinds() []policyKind {
	return []policyKind{
		{apiVersion: "gwretry.io/v1alpha1", kind: "RetryPolicy", plural: "RetryPolicies",
			add: func(l *loader, pos Position, j []byte, tm typeMeta) {
				decodeInto(l, pos, j, tm, &l.in.Policies.Retry)
			},
			count: func(in *Input) int { return len(in.Policies.Retry) }},
		{apiVersion: "gateway.envoyproxy.io/v1alpha1", kind: "BackendTrafficPolicy", plural: "BackendTrafficPolicies",
			add: func(l *loader, pos Position, j []byte, tm typeMeta) {
				decodeInto(l, pos, j, tm, &l.in.Policies.BackendTraffic)
			},
			count: func(in *Input) int { return len(in.Policies.BackendTraffic) }},
	}
}

// decodePolicy decodes tm when it is a known policy kind and reports
// whether it was one.
func (l *loader) decodePolicy(pos Position, j []byte, tm typeMeta) bool {
	for _, k := range policyKinds() {
		if k.apiVersion == tm.APIVersion && k.kind == tm.Kind {
			k.add(l, pos, j, tm)
			return true
		}
	}
	return false
}

// isPolicyList reports whether kind is the list of a known policy kind.
func isPolicyList(kind string) bool {
	for _, k := range policyKinds() {
		if kind == k.kind+"List" {
			return true
		}
	}
	return false
}

// policyCounts says how many policies of each kind the input holds, for
// Input.Found.
func (in *Input) policyCounts(count func(n int, one, many string)) {
	for _, k := range policyKinds() {
		count(k.count(in), k.kind, k.plural)
	}
}

// policyValidators are the validators of gwretry's own CRDs (config/crd),
// by kind, compiled once and read-only afterwards.
var policyValidators = sync.OnceValues(func() (map[string]*crdValidator, error) {
	out := map[string]*crdValidator{}
	names, err := fs.Glob(crd.Files, "*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		raw, err := crd.Files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		var c apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(raw, &c); err != nil {
			return nil, fmt.Errorf("config/crd/%s: %w", name, err)
		}
		for _, v := range c.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				return nil, fmt.Errorf("config/crd/%s: version %s has no schema", name, v.Name)
			}
			cv, err := compileSchema("config/crd/"+name, v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, err
			}
			out[c.Spec.Group+"/"+v.Name+"/"+c.Spec.Names.Kind] = cv
		}
	}
	return out, nil
})

// validatePolicies checks every policy object: gwretry's own kinds with
// their CRD as the API server would, then the retry and timeouts parts
// with the HTTPRoute rule's own checks; BackendTrafficPolicies with Envoy
// Gateway's rules for the fields gwretry reads.
func validatePolicies(in *Input, ch Channel) ErrorList {
	var errs ErrorList
	for _, o := range in.Policies.Retry {
		p := o.Obj
		vs, err := policyValidators()
		if err != nil {
			errs = append(errs, &InputError{Pos: o.Pos, Object: objectName("RetryPolicy", p.Namespace, p.Name), Msg: "internal error: validation: " + err.Error()})
			continue
		}
		v := vs["gwretry.io/v1alpha1/RetryPolicy"]
		if e := validateWith(v, o.Pos, "RetryPolicy", p.Namespace, p.Name, p, ch, "invalid per the RetryPolicy CRD: "); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		f := &fieldErrs{pos: o.Pos, object: objectName("RetryPolicy", p.Namespace, p.Name)}
		f.checkName("metadata.name", p.Name)
		f.checkNamespace("metadata.namespace", p.Namespace)
		for _, part := range []struct {
			field string
			v     *PolicyValues
		}{{"spec.default", p.Spec.Default}, {"spec.override", p.Spec.Override}} {
			if part.v != nil {
				validateRetryAndTimeouts(f, part.field, gwv1.HTTPRouteRule{Retry: part.v.Retry, Timeouts: part.v.Timeouts})
			}
		}
		errs = append(errs, f.errs...)
	}
	for _, o := range in.Policies.BackendTraffic {
		errs = append(errs, validateBTP(o)...)
	}
	return errs
}

// policyTarget names a targetRef in messages: "Gateway infra/gw listener
// http", "HTTPRoute shop/cart rule checkout", "Service shop/cart".
func policyTarget(ns string, t gwv1.LocalPolicyTargetReferenceWithSectionName) string {
	s := string(t.Kind) + " " + nsOrDefault(ns) + "/" + string(t.Name)
	if t.SectionName != nil {
		switch t.Kind {
		case "Gateway":
			s += " listener " + string(*t.SectionName)
		case "HTTPRoute":
			s += " rule " + string(*t.SectionName)
		default:
			s += " section " + string(*t.SectionName)
		}
	}
	return s
}

// targetGroupOK reports whether a targetRef's group fits its kind.
func targetGroupOK(t gwv1.LocalPolicyTargetReferenceWithSectionName) bool {
	switch t.Kind {
	case "Gateway", "HTTPRoute", "GRPCRoute", "TCPRoute", "UDPRoute", "TLSRoute":
		return t.Group == gwv1.GroupName
	case "Service":
		return t.Group == ""
	}
	return strings.Contains(string(t.Group), ".")
}
