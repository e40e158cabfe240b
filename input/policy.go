package input

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/config/crd"
	"github.com/gwretry/gwretry/translate"
)

// policyKind is one policy kind gwretry reads. Adding a kind is one entry
// in policyKinds, a list in translate.Policies, its validation here and
// its merge in package resolve.
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
				decodeRequired(l, pos, j, tm, &l.in.Policies.Retry, policyAbsentRequired(pos, tm, j))
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
func policyCounts(in *Input, count func(n int, one, many string)) {
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

// policyAbsentRequired is absentRequired for one of gwretry's own kinds,
// with its CRD (config/crd).
func policyAbsentRequired(pos Position, tm typeMeta, j []byte) ErrorList {
	object := ObjectName(tm.Kind, tm.Metadata.Namespace, tm.Metadata.Name)
	vs, err := policyValidators()
	if err != nil {
		return ErrorList{{Pos: pos, Object: object, Msg: "internal error: validation: " + err.Error()}}
	}
	v := vs[tm.APIVersion+"/"+tm.Kind]
	if v == nil {
		return nil
	}
	return absentRequired(v.structural, pos, object, j, "invalid per the "+tm.Kind+" CRD: ")
}

// validatePolicies checks every policy object: gwretry's own kinds with
// their CRD as the API server would, then the retry and timeouts parts
// with the HTTPRoute rule's own checks; BackendTrafficPolicies with Envoy
// Gateway's rules for the fields gwretry reads.
func validatePolicies(in *Input, ch translate.Channel) ErrorList {
	var errs ErrorList
	for _, o := range in.Policies.Retry {
		p := o.Obj
		vs, err := policyValidators()
		if err != nil {
			errs = append(errs, &InputError{Pos: o.Pos, Object: ObjectName("RetryPolicy", p.Namespace, p.Name), Msg: "internal error: validation: " + err.Error()})
			continue
		}
		v := vs["gwretry.io/v1alpha1/RetryPolicy"]
		if e := validateWith(v, o.Pos, "RetryPolicy", p.Namespace, p.Name, p, ch, "invalid per the RetryPolicy CRD: "); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		f := &FieldErrors{Pos: o.Pos, Object: ObjectName("RetryPolicy", p.Namespace, p.Name)}
		f.CheckName("metadata.name", p.Name)
		f.CheckNamespace("metadata.namespace", p.Namespace)
		for _, part := range []struct {
			field string
			v     *translate.PolicyValues
		}{{"spec.default", p.Spec.Default}, {"spec.override", p.Spec.Override}} {
			if part.v != nil {
				validateRetryAndTimeouts(f, part.field, gwv1.HTTPRouteRule{Retry: part.v.Retry, Timeouts: part.v.Timeouts})
			}
		}
		errs = append(errs, f.Errs...)
	}
	for _, o := range in.Policies.BackendTraffic {
		errs = append(errs, validateBTP(o)...)
	}
	return errs
}

// btpTriggers are Envoy Gateway's retryOn.triggers.
var btpTriggers = []string{"5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "retriable-4xx",
	"refused-stream", "retriable-status-codes", "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}

// validateBTP checks what Envoy Gateway's CRD checks for the fields gwretry
// reads.
func validateBTP(o Object[translate.BackendTrafficPolicy]) ErrorList {
	p := o.Obj
	f := &FieldErrors{Pos: o.Pos, Object: ObjectName("BackendTrafficPolicy", p.Namespace, p.Name)}
	f.CheckName("metadata.name", p.Name)
	f.CheckNamespace("metadata.namespace", p.Namespace)
	if len(p.Targets()) == 0 && len(p.Spec.TargetSelectors) == 0 {
		f.Add("spec.targetRefs", "required: a BackendTrafficPolicy needs targetRef, targetRefs or targetSelectors")
	}
	check := func(field string, t gwv1.LocalPolicyTargetReferenceWithSectionName) {
		f.CheckName(field+".name", string(t.Name))
		if t.SectionName != nil {
			f.CheckName(field+".sectionName", string(*t.SectionName))
		}
		switch {
		case t.Kind == "":
			f.Add(field+".kind", "required")
		case t.Kind == "Service":
			f.Add(field+".kind", "Envoy Gateway's BackendTrafficPolicy targets Gateways and routes, not Services")
		case !targetGroupOK(t):
			f.Add(field+".group", "%q is not the group of kind %s", t.Group, t.Kind)
		}
	}
	if p.Spec.TargetRef != nil {
		check("spec.targetRef", *p.Spec.TargetRef)
	}
	for i, t := range p.Spec.TargetRefs {
		check(fmt.Sprintf("spec.targetRefs[%d]", i), t)
	}
	if m := p.Spec.MergeType; m != nil && *m != "StrategicMerge" && *m != "JSONMerge" {
		f.Add("spec.mergeType", "%s is not one of StrategicMerge, JSONMerge", translate.QuoteShort(*m))
	}
	if r := p.Spec.Retry; r != nil {
		if r.NumRetries != nil && *r.NumRetries < 0 {
			f.Add("spec.retry.numRetries", "%d must be 0 or more", *r.NumRetries)
		}
		if on := r.RetryOn; on != nil {
			for i, t := range on.Triggers {
				if !slices.Contains(btpTriggers, t) {
					f.Add(fmt.Sprintf("spec.retry.retryOn.triggers[%d]", i), "%s is not one of %s", translate.QuoteShort(t), strings.Join(btpTriggers, ", "))
				}
			}
			for i, c := range on.HTTPStatusCodes {
				if c < 100 || c > 599 {
					f.Add(fmt.Sprintf("spec.retry.retryOn.httpStatusCodes[%d]", i), "%d is not an HTTP status code (100-599)", c)
				}
			}
		}
		if pr := r.PerRetry; pr != nil {
			checkMinimum(f, "spec.retry.perRetry.timeout", f.DurationField("spec.retry.perRetry.timeout", pr.Timeout))
			if b := pr.BackOff; b != nil {
				base := f.DurationField("spec.retry.perRetry.backOff.baseInterval", b.BaseInterval)
				limit := f.DurationField("spec.retry.perRetry.backOff.maxInterval", b.MaxInterval)
				if base != nil && base.Value == 0 {
					f.Add("spec.retry.perRetry.backOff.baseInterval", "0s is rejected: the base interval must be positive")
				}
				checkMinimum(f, "spec.retry.perRetry.backOff.baseInterval", base)
				if limit != nil && limit.Value == 0 {
					f.Add("spec.retry.perRetry.backOff.maxInterval", "0s is rejected: the maximum interval must be positive")
				}
				if base != nil && limit != nil && limit.Value < base.Value {
					f.Add("spec.retry.perRetry.backOff.maxInterval", "%s is less than baseInterval %s", limit.Text, base.Text)
				}
			}
		}
	}
	if t := p.Spec.Timeout; t != nil {
		if t.TCP != nil {
			checkMinimum(f, "spec.timeout.tcp.connectTimeout", f.DurationField("spec.timeout.tcp.connectTimeout", t.TCP.ConnectTimeout))
		}
		if h := t.HTTP; h != nil {
			checkMinimum(f, "spec.timeout.http.requestTimeout", f.DurationField("spec.timeout.http.requestTimeout", h.RequestTimeout))
			f.DurationField("spec.timeout.http.connectionIdleTimeout", h.ConnectionIdleTimeout)
			f.DurationField("spec.timeout.http.maxConnectionDuration", h.MaxConnectionDuration)
			f.DurationField("spec.timeout.http.maxStreamDuration", h.MaxStreamDuration)
		}
	}
	return f.Errs
}

// CheckConnectionPolicies checks every ConnectionTimeoutPolicy: its target
// references and the format of each value.
func CheckConnectionPolicies(in *Input) ErrorList {
	var errs ErrorList
	for _, o := range in.ConnectionTimeoutPolicies {
		p := o.Obj
		obj := ObjectName(translate.ConnectionTimeoutPolicyKind, p.Namespace, p.Name)
		add := func(field, format string, args ...any) {
			errs = append(errs, &InputError{Pos: o.Pos, Object: obj, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		if p.APIVersion != translate.ConnectionTimeoutPolicyAPIVersion {
			add("apiVersion", "%q is not served: use %s", p.APIVersion, translate.ConnectionTimeoutPolicyAPIVersion)
		}
		if p.Name == "" {
			add("metadata.name", "required")
		}
		if len(p.Spec.TargetRefs) == 0 {
			add("spec.targetRefs", "required: name at least one Gateway")
		}
		first := map[translate.PolicyTargetRef]int{}
		for i, t := range p.Spec.TargetRefs {
			f := fmt.Sprintf("spec.targetRefs[%d]", i)
			if j, dup := first[t]; dup {
				add(f, "repeats spec.targetRefs[%d]: each targetRef must be unique", j)
			} else {
				first[t] = i
			}
			if t.Group != gwv1.GroupName || t.Kind != "Gateway" {
				add(f, "targets group %q kind %q: a ConnectionTimeoutPolicy targets a Gateway (group %s, kind Gateway); its timeouts are proxy-wide, never per route", t.Group, t.Kind, gwv1.GroupName)
			}
			if err := translate.CheckValue(translate.KindName, t.Name); err != nil || t.Name == "" {
				add(f+".name", "%q is not a valid Gateway name", t.Name)
			}
		}
		set := false
		for i, v := range p.Spec.Fields() {
			if v == nil {
				continue
			}
			set = true
			if _, _, err := translate.ParseHAProxyTime(*v); err != nil {
				add("spec."+translate.ConnectionFeatures()[i].Field(), "%v", err)
			}
		}
		if !set {
			add("spec", "sets no timeout: give at least one of clientTimeout, clientFinTimeout, serverTimeout, serverFinTimeout, tunnelTimeout, tlsInspectDelay")
		}
	}
	return errs
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
