package input

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/config/crd"
	"github.com/gwretry/gwretry/translate"
)

// TestConnectionTimeoutPolicyCRD: the CRD that a cluster stores the
// policies with refuses a Gateway named twice, as gwretry does.
func TestConnectionTimeoutPolicyCRD(t *testing.T) {
	vs, err := policyValidators()
	if err != nil {
		t.Fatal(err)
	}
	v := vs["gwretry.io/v1alpha1/ConnectionTimeoutPolicy"]
	if v == nil {
		t.Fatal("no validator for ConnectionTimeoutPolicy")
	}
	ref := translate.PolicyTargetRef{Group: "gateway.networking.k8s.io", Kind: "Gateway", Name: "gw"}
	five := "5s"
	for _, c := range []struct {
		name string
		refs []translate.PolicyTargetRef
		want string
	}{
		{"one Gateway", []translate.PolicyTargetRef{ref}, ""},
		{"a Gateway twice", []translate.PolicyTargetRef{ref, ref}, "each targetRef must be unique"},
	} {
		p := &translate.ConnectionTimeoutPolicy{Spec: translate.ConnectionTimeoutPolicySpec{TargetRefs: c.refs, ServerTimeout: &five}}
		p.APIVersion, p.Kind, p.Name, p.Namespace = translate.ConnectionTimeoutPolicyAPIVersion, translate.ConnectionTimeoutPolicyKind, "p", "ns"
		errs := validateWith(v, Position{}, translate.ConnectionTimeoutPolicyKind, "ns", "p", p, translate.ChannelStandard, "")
		got := fmt.Sprint(errs)
		if c.want == "" && len(errs) > 0 || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: errors %s, want %q", c.name, got, c.want)
		}
	}
}

// TestRetryPolicyCRDSchema checks that the RetryPolicy CRD's retry and
// timeouts are the HTTPRoute rule's, so that both validate alike.
func TestRetryPolicyCRDSchema(t *testing.T) {
	raw, err := crd.Files.ReadFile("gwretry.io_retrypolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		t.Fatal(err)
	}
	hr, err := crdFiles.ReadFile("crds/standard-httproutes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var route apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict(hr, &route); err != nil {
		t.Fatal(err)
	}
	rule := route.Properties["spec"].Properties["rules"].Items.Schema.Properties
	spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, side := range []string{"default", "override"} {
		for _, part := range []string{"retry", "timeouts"} {
			if got, want := spec.Properties[side].Properties[part], rule[part]; !reflect.DeepEqual(got, want) {
				t.Errorf("spec.%s.%s differs from the HTTPRoute rule's %s:\n%+v\n%+v", side, part, part, got, want)
			}
		}
	}
	if c.Spec.Group != "gwretry.io" || c.Spec.Names.Kind != "RetryPolicy" || c.Spec.Versions[0].Name != "v1alpha1" {
		t.Errorf("CRD names %s %s %s", c.Spec.Group, c.Spec.Names.Kind, c.Spec.Versions[0].Name)
	}
}
