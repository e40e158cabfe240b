package resolve

import (
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// filters turns the filters of a rule (or of a backendRef) into the model.
// Every value that can reach a configuration is checked against the
// allowlists; what gwretry cannot write safely is an input error naming the
// field. The checks here are those the model needs to be unambiguous (one
// field per filter type, no repeated single filters, no redirect beside a
// rewrite); they are the API's own, with its messages.
func (r *resolver) filters(f *input.FieldErrors, field string, rt *gwv1.HTTPRoute, in []gwv1.HTTPRouteFilter) translate.Filters {
	var out translate.Filters
	seen := map[gwv1.HTTPRouteFilterType]bool{}
	for i, fl := range in {
		ff := fmt.Sprintf("%s[%d]", field, i)
		once := func() bool {
			if seen[fl.Type] {
				f.Add(field, "%s filter cannot be repeated", fl.Type)
				return false
			}
			seen[fl.Type] = true
			return true
		}
		missing := func(name string) {
			f.Add(ff+"."+name, "filter.%s must be specified for %s filter.type", name, fl.Type)
		}
		switch fl.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			if fl.RequestHeaderModifier == nil {
				missing("requestHeaderModifier")
			} else if once() {
				out.RequestHeaders = headerModifier(f, ff+".requestHeaderModifier", fl.RequestHeaderModifier)
			}
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			if fl.ResponseHeaderModifier == nil {
				missing("responseHeaderModifier")
			} else if once() {
				out.ResponseHeaders = headerModifier(f, ff+".responseHeaderModifier", fl.ResponseHeaderModifier)
			}
		case gwv1.HTTPRouteFilterRequestRedirect:
			if fl.RequestRedirect == nil {
				missing("requestRedirect")
			} else if once() {
				out.Redirect = redirect(f, ff+".requestRedirect", fl.RequestRedirect)
			}
		case gwv1.HTTPRouteFilterURLRewrite:
			if fl.URLRewrite == nil {
				missing("urlRewrite")
			} else if once() {
				rw := fl.URLRewrite
				out.Rewrite = &translate.Rewrite{Path: pathModifier(f, ff+".urlRewrite.path", rw.Path)}
				if rw.Hostname != nil {
					out.Rewrite.Hostname = checked(f, ff+".urlRewrite.hostname", translate.KindPreciseHostname, string(*rw.Hostname))
				}
			}
		case gwv1.HTTPRouteFilterRequestMirror:
			if fl.RequestMirror == nil {
				missing("requestMirror")
			} else {
				out.Mirrors = append(out.Mirrors, r.mirror(f, ff+".requestMirror", rt, fl.RequestMirror))
			}
		case gwv1.HTTPRouteFilterExtensionRef:
			if fl.ExtensionRef == nil {
				missing("extensionRef")
				continue
			}
			e := fl.ExtensionRef
			out.Other = append(out.Other, translate.OtherFilter{Type: string(fl.Type), Feature: translate.FeatureExtensionRef,
				Detail: fmt.Sprintf("ExtensionRef to %s %s", groupKind(string(e.Group), string(e.Kind)), e.Name)})
		case gwv1.HTTPRouteFilterCORS:
			if once() {
				out.Other = append(out.Other, translate.OtherFilter{Type: string(fl.Type), Feature: translate.FeatureCORS, Detail: "CORS"})
			}
		case gwv1.HTTPRouteFilterExternalAuth:
			out.Other = append(out.Other, translate.OtherFilter{Type: string(fl.Type), Feature: translate.FeatureExternalAuth, Detail: "ExternalAuth"})
		default:
			f.Add(ff+".type", "%s is not a filter type of the Gateway API (RequestHeaderModifier, ResponseHeaderModifier, RequestMirror, RequestRedirect, URLRewrite, ExtensionRef, CORS)", translate.QuoteShort(string(fl.Type)))
		}
	}
	if out.Redirect != nil && out.Rewrite != nil {
		f.Add(field, "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both")
	}
	return out
}

func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return group + "/" + kind
}

// checked returns s when it passes the allowlist of kind, else reports it.
func checked(f *input.FieldErrors, field, kind, s string) string {
	if err := translate.CheckValue(kind, s); err != nil {
		f.Add(field, "%v", err)
	}
	return s
}

func headerModifier(f *input.FieldErrors, field string, in *gwv1.HTTPHeaderFilter) *translate.HeaderModifier {
	out := &translate.HeaderModifier{}
	conv := func(list string, hs []gwv1.HTTPHeader) []translate.Header {
		var res []translate.Header
		for i, h := range hs {
			hf := fmt.Sprintf("%s.%s[%d]", field, list, i)
			res = append(res, translate.Header{Name: checked(f, hf+".name", translate.KindFilterHeaderName, string(h.Name)),
				Value: checked(f, hf+".value", translate.KindFilterHeaderValue, h.Value)})
		}
		return res
	}
	out.Set = conv("set", in.Set)
	out.Add = conv("add", in.Add)
	for i, n := range in.Remove {
		out.Remove = append(out.Remove, checked(f, fmt.Sprintf("%s.remove[%d]", field, i), translate.KindFilterHeaderName, n))
	}
	return out
}

func redirect(f *input.FieldErrors, field string, in *gwv1.HTTPRequestRedirectFilter) *translate.Redirect {
	out := &translate.Redirect{StatusCode: 302, Path: pathModifier(f, field+".path", in.Path)}
	if in.Scheme != nil {
		switch s := *in.Scheme; s {
		case "http", "https":
			out.Scheme = s
		default:
			f.Add(field+".scheme", "%s is not http or https", translate.QuoteShort(s))
		}
	}
	if in.Hostname != nil {
		out.Hostname = checked(f, field+".hostname", translate.KindPreciseHostname, string(*in.Hostname))
	}
	if in.Port != nil {
		if *in.Port < 1 || *in.Port > 65535 {
			f.Add(field+".port", "%d is not a port (1-65535)", *in.Port)
		} else {
			out.Port = int(*in.Port)
		}
	}
	if in.StatusCode != nil {
		if !translate.ValidRedirectCode(*in.StatusCode) {
			f.Add(field+".statusCode", "%d is not one of 301, 302, 303, 307, 308", *in.StatusCode)
		} else {
			out.StatusCode = *in.StatusCode
		}
	}
	return out
}

func pathModifier(f *input.FieldErrors, field string, in *gwv1.HTTPPathModifier) *translate.PathModifier {
	if in == nil {
		return nil
	}
	switch in.Type {
	case gwv1.FullPathHTTPPathModifier:
		if in.ReplaceFullPath == nil {
			f.Add(field, "replaceFullPath must be specified when type is set to 'ReplaceFullPath'")
			return nil
		}
		return &translate.PathModifier{Type: translate.ReplaceFullPath, Value: checked(f, field+".replaceFullPath", translate.KindFilterPath, *in.ReplaceFullPath)}
	case gwv1.PrefixMatchHTTPPathModifier:
		if in.ReplacePrefixMatch == nil {
			f.Add(field, "replacePrefixMatch must be specified when type is set to 'ReplacePrefixMatch'")
			return nil
		}
		v := *in.ReplacePrefixMatch
		if v != "" {
			checked(f, field+".replacePrefixMatch", translate.KindFilterPath, v)
		}
		return &translate.PathModifier{Type: translate.ReplacePrefixMatch, Value: v}
	}
	f.Add(field+".type", "%s is not ReplaceFullPath or ReplacePrefixMatch", translate.QuoteShort(string(in.Type)))
	return nil
}

// mirror resolves a RequestMirror's backendRef like the rule's own
// backendRefs, and its share.
func (r *resolver) mirror(f *input.FieldErrors, field string, rt *gwv1.HTTPRoute, in *gwv1.HTTPRequestMirrorFilter) *translate.Mirror {
	out := &translate.Mirror{Numerator: 100, Denominator: 100}
	out.Backend, out.Invalid = r.resolveRef(f, field+".backendRef", rt, in.BackendRef, 1)
	switch {
	case in.Percent != nil && in.Fraction != nil:
		f.Add(field, "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter")
	case in.Percent != nil:
		if p := *in.Percent; p < 0 || p > 100 {
			f.Add(field+".percent", "%d is out of range 0-100", p)
		} else {
			out.Numerator = int(p)
		}
	case in.Fraction != nil:
		out.Numerator = int(in.Fraction.Numerator)
		if in.Fraction.Denominator != nil {
			out.Denominator = int(*in.Fraction.Denominator)
		}
		if out.Numerator < 0 || out.Denominator < 1 || out.Numerator > out.Denominator {
			f.Add(field+".fraction", "numerator %d and denominator %d: want 0 <= numerator <= denominator and denominator >= 1", out.Numerator, out.Denominator)
		}
	}
	return out
}

// redirectWithBackends reports the API's rule that a RequestRedirect and
// backendRefs exclude each other.
func redirectWithBackends(f *input.FieldErrors, field string, rule gwv1.HTTPRouteRule) {
	if len(rule.BackendRefs) == 0 {
		return
	}
	for i, fl := range rule.Filters {
		if fl.Type == gwv1.HTTPRouteFilterRequestRedirect || fl.RequestRedirect != nil {
			f.Add(fmt.Sprintf("%s.filters[%d]", field, i), "RequestRedirect filter must not be used together with backendRefs")
		}
	}
}
