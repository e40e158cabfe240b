package resolve

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

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
