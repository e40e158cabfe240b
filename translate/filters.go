package translate

import (
	"fmt"
	"strings"

	"github.com/gwretry/gwretry/report"
)

// Filters are the HTTPRoute filters of a rule, or of one of its
// backendRefs, as the Gateway API v1.7.0 Standard channel defines them.
// Every string has passed the allowlists in allow.go (CheckValue with
// KindFilterHeaderName, KindFilterHeaderValue, KindPreciseHostname and
// KindFilterPath), so a backend may write it as it is.
type Filters struct {
	// RequestHeaders is the RequestHeaderModifier filter (at most one).
	RequestHeaders *HeaderModifier
	// ResponseHeaders is the ResponseHeaderModifier filter (at most one).
	ResponseHeaders *HeaderModifier
	// Redirect is the RequestRedirect filter (at most one). A rule with a
	// Redirect has no backendRefs (the API forbids both): it answers every
	// request it matches with the redirect and forwards nothing.
	Redirect *Redirect
	// Rewrite is the URLRewrite filter (at most one, never beside a
	// Redirect).
	Rewrite *Rewrite
	// Mirrors are the RequestMirror filters, in spec order.
	Mirrors []*Mirror
	// Other are the filters no data plane of gwretry translates
	// (ExtensionRef, CORS, ExternalAuth), in spec order.
	Other []OtherFilter
}

// HeaderModifier sets, adds and removes headers. Names are as written
// (header names compare case-insensitively).
type HeaderModifier struct {
	// Set replaces the header's value, or adds the header when absent.
	Set []Header
	// Add appends a value to the header (a new header line, or the value
	// after a comma), or adds the header when absent.
	Add []Header
	// Remove deletes the headers of these names.
	Remove []string
}

// Touches reports whether the modifier sets, adds or removes header name
// (compared case-insensitively). A nil modifier touches nothing.
func (hm *HeaderModifier) Touches(name string) bool {
	if hm == nil {
		return false
	}
	for _, h := range append(append([]Header(nil), hm.Set...), hm.Add...) {
		if strings.EqualFold(h.Name, name) {
			return true
		}
	}
	for _, n := range hm.Remove {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// Header is one header name and value.
type Header struct {
	Name  string
	Value string
}

// PathModifierType is how a redirect or rewrite changes the path.
type PathModifierType string

// Path modifier types, as in the Gateway API.
const (
	// ReplaceFullPath replaces the whole path with Value.
	ReplaceFullPath PathModifierType = "ReplaceFullPath"
	// ReplacePrefixMatch replaces the part of the path that the rule's
	// PathPrefix match matched with Value (which may be "" or "/": both
	// leave the rest of the path, starting with '/').
	ReplacePrefixMatch PathModifierType = "ReplacePrefixMatch"
)

// PathModifier changes the request path.
type PathModifier struct {
	Type PathModifierType
	// Value is a path starting with '/', or "" for ReplacePrefixMatch.
	Value string
}

// Redirect is a RequestRedirect filter: the rule answers with StatusCode
// and a Location built from the request with these parts replaced.
type Redirect struct {
	// Scheme is "http" or "https", or "" to keep the request's.
	Scheme string
	// Hostname replaces the request's host; "" keeps it.
	Hostname string
	// Path changes the path; nil keeps it.
	Path *PathModifier
	// Port is the Location's port; 0 when unset (the Gateway API then
	// derives it from Scheme or the listener).
	Port int
	// StatusCode is 301, 302 (the default), 303, 307 or 308.
	StatusCode int
}

// Rewrite is a URLRewrite filter: the request is forwarded with these parts
// changed.
type Rewrite struct {
	// Hostname replaces the Host header; "" keeps it.
	Hostname string
	// Path changes the path; nil keeps it.
	Path *PathModifier
}

// Mirror is a RequestMirror filter: a share of the requests is also sent to
// Backend, whose responses are ignored.
type Mirror struct {
	// Backend is the resolved backendRef, nil when it cannot receive
	// traffic (Invalid says why; the Gateway API then mirrors nothing).
	Backend *BackendRef
	Invalid string
	// Numerator/Denominator is the share mirrored: 100/100 when neither
	// percent nor fraction is set; percent P is P/100.
	Numerator, Denominator int
}

// OtherFilter is a filter that gwretry does not translate on any data
// plane.
type OtherFilter struct {
	// Type is the filter's type ("ExtensionRef").
	Type string
	// Feature is its report name ("filters.extensionRef").
	Feature Feature
	// Detail names it for messages ("ExtensionRef to example.com/Auth
	// basic").
	Detail string
}

// Filter features: one per filter kind a rule sets.
const (
	FeatureRequestHeaderModifier  = report.FeatureRequestHeaderModifier
	FeatureResponseHeaderModifier = report.FeatureResponseHeaderModifier
	FeatureRequestRedirect        = report.FeatureRequestRedirect
	FeatureURLRewrite             = report.FeatureURLRewrite
	FeatureRequestMirror          = report.FeatureRequestMirror
	FeatureExtensionRef           = report.FeatureExtensionRef
	FeatureCORS                   = report.FeatureCORS
	FeatureExternalAuth           = report.FeatureExternalAuth
	backendRefFilterPrefix        = report.BackendRefFilterPrefix
)

// Listener and attachment features.
const (
	FeatureListenerHTTPS   = report.FeatureListenerHTTPS
	FeatureRouteAttachment = report.FeatureRouteAttachment
)

// BackendRefFeature returns the feature of filter feature f set on a
// backendRef ("backendRefs.filters.urlRewrite").
func BackendRefFeature(f Feature) Feature { return backendRefFilterPrefix + f }

// Features returns the features of the filters, one per kind present, in
// report order.
func (fl *Filters) Features() []Feature {
	var out []Feature
	add := func(present bool, f Feature) {
		if present {
			out = append(out, f)
		}
	}
	add(fl.RequestHeaders != nil, FeatureRequestHeaderModifier)
	add(fl.ResponseHeaders != nil, FeatureResponseHeaderModifier)
	add(fl.Redirect != nil, FeatureRequestRedirect)
	add(fl.Rewrite != nil, FeatureURLRewrite)
	add(len(fl.Mirrors) > 0, FeatureRequestMirror)
	for _, o := range fl.Other {
		if !containsFeature(out, o.Feature) {
			out = append(out, o.Feature)
		}
	}
	return out
}

// IsZero reports whether no filter is set.
func (fl *Filters) IsZero() bool { return len(fl.Features()) == 0 }

func containsFeature(fs []Feature, f Feature) bool {
	for _, g := range fs {
		if g == f {
			return true
		}
	}
	return false
}

// backendFilterFeatures returns the features of the filters set on the
// rule's valid backendRefs.
func (r *Rule) backendFilterFeatures() []Feature {
	var out []Feature
	for _, b := range r.Backends {
		for _, f := range b.Filters.Features() {
			if bf := BackendRefFeature(f); !containsFeature(out, bf) {
				out = append(out, bf)
			}
		}
	}
	return out
}

// UngeneratedListener is a Gateway listener a route is attached to that
// gwretry does not generate (an HTTPS listener).
type UngeneratedListener struct {
	// Gateway is "namespace/name", Listener the listener's name.
	Gateway  string
	Listener string
	// Protocol is the listener's protocol ("HTTPS").
	Protocol string
}

func (u UngeneratedListener) String() string {
	return fmt.Sprintf("%s listener %s of Gateway %s", u.Protocol, u.Listener, u.Gateway)
}

// String describes the redirect for messages: "302 to https://example.com:8443".
func (rd *Redirect) String() string {
	scheme, host, port, path := rd.Scheme, rd.Hostname, "", "the same path"
	if scheme == "" {
		scheme = "the same scheme"
	} else {
		scheme += "://"
	}
	if host == "" {
		host = "the same host"
	}
	if rd.Port != 0 {
		port = fmt.Sprintf(" port %d", rd.Port)
	}
	if rd.Path != nil {
		switch rd.Path.Type {
		case ReplaceFullPath:
			path = "path " + rd.Path.Value
		case ReplacePrefixMatch:
			path = fmt.Sprintf("the matched prefix replaced by %q", rd.Path.Value)
		}
	}
	return fmt.Sprintf("%d to %s, %s%s, %s", rd.StatusCode, scheme, host, port, path)
}

// checkFilters re-validates every string of fl against the allowlists, for
// Model.Check.
func checkFilters(fl *Filters, where string, check func(where, kind, s string), errs *[]string) {
	for _, hm := range []*HeaderModifier{fl.RequestHeaders, fl.ResponseHeaders} {
		if hm == nil {
			continue
		}
		for _, h := range append(append([]Header(nil), hm.Set...), hm.Add...) {
			check(where+" header", KindFilterHeaderName, h.Name)
			check(where+" header "+h.Name, KindFilterHeaderValue, h.Value)
		}
		for _, n := range hm.Remove {
			check(where+" header", KindFilterHeaderName, n)
		}
	}
	checkPath := func(p *PathModifier) {
		switch {
		case p == nil:
		case p.Type == ReplaceFullPath, p.Type == ReplacePrefixMatch && p.Value != "":
			check(where+" path", KindFilterPath, p.Value)
		case p.Type != ReplacePrefixMatch:
			*errs = append(*errs, fmt.Sprintf("%s: unknown path modifier %q", where, p.Type))
		}
	}
	if rd := fl.Redirect; rd != nil {
		if rd.Scheme != "" && rd.Scheme != "http" && rd.Scheme != "https" {
			*errs = append(*errs, fmt.Sprintf("%s: redirect scheme %q", where, rd.Scheme))
		}
		if rd.Hostname != "" {
			check(where+" redirect", KindPreciseHostname, rd.Hostname)
		}
		if rd.Port < 0 || rd.Port > 65535 {
			*errs = append(*errs, fmt.Sprintf("%s: redirect port %d out of range", where, rd.Port))
		}
		if !ValidRedirectCode(rd.StatusCode) {
			*errs = append(*errs, fmt.Sprintf("%s: redirect status %d", where, rd.StatusCode))
		}
		checkPath(rd.Path)
	}
	if rw := fl.Rewrite; rw != nil {
		if rw.Hostname != "" {
			check(where+" rewrite", KindPreciseHostname, rw.Hostname)
		}
		checkPath(rw.Path)
	}
	for _, m := range fl.Mirrors {
		if m.Denominator < 1 || m.Numerator < 0 || m.Numerator > m.Denominator {
			*errs = append(*errs, fmt.Sprintf("%s: mirror share %d/%d", where, m.Numerator, m.Denominator))
		}
		if m.Backend != nil {
			checkBackend(m.Backend, where+" mirror", check, errs)
		}
	}
}

func ValidRedirectCode(c int) bool {
	switch c {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// ungeneratedText lists listeners for messages.
func ungeneratedText(us []UngeneratedListener) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.String()
	}
	return strings.Join(s, ", ")
}
