package translate

import (
	"fmt"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// filters turns the filters of a rule (or of a backendRef) into the model.
// Every value that can reach a configuration is checked against the
// allowlists; what gwretry cannot write safely is an input error naming the
// field. The checks here are those the model needs to be unambiguous (one
// field per filter type, no repeated single filters, no redirect beside a
// rewrite); they are the API's own, with its messages.
func (r *resolver) filters(f *fieldErrs, field string, rt *gwv1.HTTPRoute, in []gwv1.HTTPRouteFilter) Filters {
	var out Filters
	seen := map[gwv1.HTTPRouteFilterType]bool{}
	for i, fl := range in {
		ff := fmt.Sprintf("%s[%d]", field, i)
		once := func() bool {
			if seen[fl.Type] {
				f.add(field, "%s filter cannot be repeated", fl.Type)
				return false
			}
			seen[fl.Type] = true
			return true
		}
		missing := func(name string) {
			f.add(ff+"."+name, "filter.%s must be specified for %s filter.type", name, fl.Type)
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
				out.Rewrite = &Rewrite{Path: pathModifier(f, ff+".urlRewrite.path", rw.Path)}
				if rw.Hostname != nil {
					out.Rewrite.Hostname = checked(f, ff+".urlRewrite.hostname", KindPreciseHostname, string(*rw.Hostname))
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
			out.Other = append(out.Other, OtherFilter{Type: string(fl.Type), Feature: FeatureExtensionRef,
				Detail: fmt.Sprintf("ExtensionRef to %s %s", groupKind(string(e.Group), string(e.Kind)), e.Name)})
		case gwv1.HTTPRouteFilterCORS:
			if once() {
				out.Other = append(out.Other, OtherFilter{Type: string(fl.Type), Feature: FeatureCORS, Detail: "CORS"})
			}
		case gwv1.HTTPRouteFilterExternalAuth:
			out.Other = append(out.Other, OtherFilter{Type: string(fl.Type), Feature: FeatureExternalAuth, Detail: "ExternalAuth"})
		default:
			f.add(ff+".type", "%s is not a filter type of the Gateway API (RequestHeaderModifier, ResponseHeaderModifier, RequestMirror, RequestRedirect, URLRewrite, ExtensionRef, CORS)", quoteShort(string(fl.Type)))
		}
	}
	if out.Redirect != nil && out.Rewrite != nil {
		f.add(field, "May specify either httpRouteFilterRequestRedirect or httpRouteFilterRequestRewrite, but not both")
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
func checked(f *fieldErrs, field, kind, s string) string {
	if err := CheckValue(kind, s); err != nil {
		f.add(field, "%v", err)
	}
	return s
}

func headerModifier(f *fieldErrs, field string, in *gwv1.HTTPHeaderFilter) *HeaderModifier {
	out := &HeaderModifier{}
	conv := func(list string, hs []gwv1.HTTPHeader) []Header {
		var res []Header
		for i, h := range hs {
			hf := fmt.Sprintf("%s.%s[%d]", field, list, i)
			res = append(res, Header{Name: checked(f, hf+".name", KindHeaderName, string(h.Name)),
				Value: checked(f, hf+".value", KindFilterHeaderValue, h.Value)})
		}
		return res
	}
	out.Set = conv("set", in.Set)
	out.Add = conv("add", in.Add)
	for i, n := range in.Remove {
		out.Remove = append(out.Remove, checked(f, fmt.Sprintf("%s.remove[%d]", field, i), KindHeaderName, n))
	}
	return out
}

func redirect(f *fieldErrs, field string, in *gwv1.HTTPRequestRedirectFilter) *Redirect {
	out := &Redirect{StatusCode: 302, Path: pathModifier(f, field+".path", in.Path)}
	if in.Scheme != nil {
		switch s := *in.Scheme; s {
		case "http", "https":
			out.Scheme = s
		default:
			f.add(field+".scheme", "%s is not http or https", quoteShort(s))
		}
	}
	if in.Hostname != nil {
		out.Hostname = checked(f, field+".hostname", KindPreciseHostname, string(*in.Hostname))
	}
	if in.Port != nil {
		if *in.Port < 1 || *in.Port > 65535 {
			f.add(field+".port", "%d is not a port (1-65535)", *in.Port)
		} else {
			out.Port = int(*in.Port)
		}
	}
	if in.StatusCode != nil {
		if !validRedirectCode(*in.StatusCode) {
			f.add(field+".statusCode", "%d is not one of 301, 302, 303, 307, 308", *in.StatusCode)
		} else {
			out.StatusCode = *in.StatusCode
		}
	}
	return out
}

func pathModifier(f *fieldErrs, field string, in *gwv1.HTTPPathModifier) *PathModifier {
	if in == nil {
		return nil
	}
	switch in.Type {
	case gwv1.FullPathHTTPPathModifier:
		if in.ReplaceFullPath == nil {
			f.add(field, "replaceFullPath must be specified when type is set to 'ReplaceFullPath'")
			return nil
		}
		return &PathModifier{Type: ReplaceFullPath, Value: checked(f, field+".replaceFullPath", KindFilterPath, *in.ReplaceFullPath)}
	case gwv1.PrefixMatchHTTPPathModifier:
		if in.ReplacePrefixMatch == nil {
			f.add(field, "replacePrefixMatch must be specified when type is set to 'ReplacePrefixMatch'")
			return nil
		}
		v := *in.ReplacePrefixMatch
		if v != "" {
			checked(f, field+".replacePrefixMatch", KindFilterPath, v)
		}
		return &PathModifier{Type: ReplacePrefixMatch, Value: v}
	}
	f.add(field+".type", "%s is not ReplaceFullPath or ReplacePrefixMatch", quoteShort(string(in.Type)))
	return nil
}

// mirror resolves a RequestMirror's backendRef like the rule's own
// backendRefs, and its share.
func (r *resolver) mirror(f *fieldErrs, field string, rt *gwv1.HTTPRoute, in *gwv1.HTTPRequestMirrorFilter) *Mirror {
	out := &Mirror{Numerator: 100, Denominator: 100}
	out.Backend, out.Invalid = r.resolveRef(f, field+".backendRef", rt, in.BackendRef, 1)
	switch {
	case in.Percent != nil && in.Fraction != nil:
		f.add(field, "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter")
	case in.Percent != nil:
		if p := *in.Percent; p < 0 || p > 100 {
			f.add(field+".percent", "%d is out of range 0-100", p)
		} else {
			out.Numerator = int(p)
		}
	case in.Fraction != nil:
		out.Numerator = int(in.Fraction.Numerator)
		if in.Fraction.Denominator != nil {
			out.Denominator = int(*in.Fraction.Denominator)
		}
		if out.Numerator < 0 || out.Denominator < 1 || out.Numerator > out.Denominator {
			f.add(field+".fraction", "numerator %d and denominator %d: want 0 <= numerator <= denominator and denominator >= 1", out.Numerator, out.Denominator)
		}
	}
	return out
}

// redirectWithBackends reports the API's rule that a RequestRedirect and
// backendRefs exclude each other.
func redirectWithBackends(f *fieldErrs, field string, rule gwv1.HTTPRouteRule) {
	if len(rule.BackendRefs) == 0 {
		return
	}
	for i, fl := range rule.Filters {
		if fl.Type == gwv1.HTTPRouteFilterRequestRedirect || fl.RequestRedirect != nil {
			f.add(fmt.Sprintf("%s.filters[%d]", field, i), "RequestRedirect filter must not be used together with backendRefs")
		}
	}
}

// ungeneratedText lists listeners for messages.
func ungeneratedText(us []UngeneratedListener) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.String()
	}
	return strings.Join(s, ", ")
}
