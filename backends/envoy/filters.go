package envoy

import (
	"fmt"
	"regexp"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// This file translates the rule-level Standard filters into route fields:
//
//   - RequestHeaderModifier / ResponseHeaderModifier: the route's
//     request_headers_to_add (set: OVERWRITE_IF_EXISTS_OR_ADD, add:
//     APPEND_IF_EXISTS_OR_ADD) and request_headers_to_remove, and their
//     response_ twins. Envoy refuses any mutation of Host (and of
//     :-prefixed names, which the allowlist excludes), so those entries
//     are left out and reported.
//   - RequestRedirect: a redirect action (scheme_redirect, host_redirect,
//     port_redirect, path_redirect / prefix_rewrite / regex_rewrite,
//     response_code).
//   - URLRewrite: host_rewrite_literal and prefix_rewrite or regex_rewrite
//     on the route action.
//   - RequestMirror: request_mirror_policies with runtime_fraction.

// hostHeader is the one header name Envoy's route header mutations refuse
// besides pseudo-headers (":-prefixed or host headers may not be
// modified").
const hostHeader = "host"

// unmodifiable reports whether Envoy refuses to let a route mutate header
// name.
func unmodifiable(name string) bool {
	return strings.EqualFold(name, hostHeader) || strings.HasPrefix(name, ":")
}

// headerMutations returns the headers_to_add and headers_to_remove of a
// header modifier, without the names Envoy refuses, and those names.
func headerMutations(hm *translate.HeaderModifier) (add []*corev3.HeaderValueOption, remove, refused []string) {
	if hm == nil {
		return nil, nil, nil
	}
	option := func(h translate.Header, action corev3.HeaderValueOption_HeaderAppendAction) {
		if unmodifiable(h.Name) {
			refused = append(refused, h.Name)
			return
		}
		add = append(add, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: h.Name, Value: envoyText(h.Value)},
			AppendAction: action,
		})
	}
	for _, h := range hm.Set {
		option(h, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD)
	}
	for _, h := range hm.Add {
		option(h, corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD)
	}
	for _, n := range hm.Remove {
		if unmodifiable(n) {
			refused = append(refused, n)
			continue
		}
		remove = append(remove, n)
	}
	return add, remove, refused
}

// applyHeaderFilters writes the rule's header modifiers into the route.
func applyHeaderFilters(rt *routev3.Route, fl *translate.Filters) {
	rt.RequestHeadersToAdd, rt.RequestHeadersToRemove, _ = headerMutations(fl.RequestHeaders)
	rt.ResponseHeadersToAdd, rt.ResponseHeadersToRemove, _ = headerMutations(fl.ResponseHeaders)
}

// defaultPort is the well-known port of an http or https URL.
func defaultPort(scheme string) int {
	if scheme == "https" {
		return 443
	}
	return 80
}

// listenerSide is what a route inherits from the listener it is served on
// for a redirect: the listener's port and whether it terminates TLS.
type listenerSide struct {
	port int
	tls  bool
}

// scheme is the scheme of the requests the listener receives.
func (s listenerSide) scheme() string {
	if s.tls {
		return "https"
	}
	return "http"
}

// redirectLocation is where the Gateway API sends a redirect of rd served
// on listener side: the scheme, and the port that the Location names (0
// when it names none, the scheme's well-known port).
func redirectLocation(rd *translate.Redirect, side listenerSide) (scheme string, port int) {
	scheme = rd.Scheme
	if scheme == "" {
		scheme = side.scheme() // the request's
	}
	port = rd.Port
	if port == 0 {
		port = side.port
		if rd.Scheme != "" {
			port = defaultPort(rd.Scheme)
		}
	}
	if port == defaultPort(scheme) {
		port = 0
	}
	return scheme, port
}

// redirectCodes maps Gateway API redirect status codes to Envoy's enum.
var redirectCodes = map[int]routev3.RedirectAction_RedirectResponseCode{
	301: routev3.RedirectAction_MOVED_PERMANENTLY,
	302: routev3.RedirectAction_FOUND,
	303: routev3.RedirectAction_SEE_OTHER,
	307: routev3.RedirectAction_TEMPORARY_REDIRECT,
	308: routev3.RedirectAction_PERMANENT_REDIRECT,
}

// redirectAction builds the redirect of rd for a route whose match is mt,
// on listener side. stripHostPort is true when the Location
// takes the request's host without naming a port, so that the connection
// manager must drop the port the client wrote in Host.
func redirectAction(rd *translate.Redirect, mt translate.Match, side listenerSide) (ra *routev3.RedirectAction, stripHostPort bool, err error) {
	code, ok := redirectCodes[rd.StatusCode]
	if !ok {
		return nil, false, fmt.Errorf("redirect status %d has no Envoy response_code", rd.StatusCode)
	}
	ra = &routev3.RedirectAction{ResponseCode: code, HostRedirect: rd.Hostname}
	if rd.Scheme != "" {
		ra.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: rd.Scheme}
	}
	_, port := redirectLocation(rd, side)
	ra.PortRedirect = uint32(port)
	// Without port_redirect and host_redirect Envoy copies the request's
	// Host header, port included; strip_any_host_port removes it first.
	stripHostPort = port == 0 && rd.Hostname == ""
	if p := rd.Path; p != nil {
		switch p.Type {
		case translate.ReplaceFullPath:
			ra.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: p.Value}
		case translate.ReplacePrefixMatch:
			prefixRewrite, regex, err := prefixReplacement(mt, p.Value)
			if err != nil {
				return nil, false, err
			}
			switch {
			case regex != nil:
				ra.PathRewriteSpecifier = &routev3.RedirectAction_RegexRewrite{RegexRewrite: regex}
			case prefixRewrite != "":
				ra.PathRewriteSpecifier = &routev3.RedirectAction_PrefixRewrite{PrefixRewrite: prefixRewrite}
			}
		default:
			return nil, false, fmt.Errorf("unknown path modifier %q", p.Type)
		}
	}
	return ra, stripHostPort, nil
}

// prefixReplacement returns how Envoy replaces the part of the path that
// the PathPrefix match mt matched with value, element-wise as the Gateway
// API defines it: a prefix_rewrite, a regex_rewrite, or neither when the
// path stays as it is. With M the match prefix and V the value, both
// without trailing '/', the rest of the path after M ("" or "/...") is kept
// behind V, and an empty result is "/":
//
//   - M and V non-empty: prefix_rewrite V (the route matches
//     path_separated_prefix M, so the rest starts with '/' or is empty);
//   - M non-empty, V empty: regex_rewrite ^M(/|$) → "/" (a plain
//     prefix_rewrite "/" would leave "//rest", and "" an empty path);
//   - M empty (prefix "/"), V non-empty: prefix_rewrite V + "/" (the route
//     matches prefix "/", which it replaces);
//   - both empty: nothing.
func prefixReplacement(mt translate.Match, value string) (prefixRewrite string, regex *matcherv3.RegexMatchAndSubstitute, err error) {
	if mt.PathType != translate.PathPrefix {
		return "", nil, fmt.Errorf("ReplacePrefixMatch needs a PathPrefix match, not %s %q", mt.PathType, mt.Path)
	}
	m, v := strings.TrimRight(mt.Path, "/"), strings.TrimRight(value, "/")
	switch {
	case m != "" && v != "":
		return v, nil, nil
	case m != "":
		return "", &matcherv3.RegexMatchAndSubstitute{
			Pattern:      &matcherv3.RegexMatcher{Regex: "^" + regexp.QuoteMeta(m) + "(/|$)"},
			Substitution: "/",
		}, nil
	case v != "":
		return v + "/", nil, nil
	}
	return "", nil, nil
}

// fullPathRegex matches every path: regex_rewrite with it replaces the
// whole path (Envoy keeps the query string).
const fullPathRegex = "^/.*$"

// applyRewrite writes a URLRewrite into the route action of a route whose
// match is mt.
func applyRewrite(ra *routev3.RouteAction, rw *translate.Rewrite, mt translate.Match) error {
	if rw == nil {
		return nil
	}
	if rw.Hostname != "" {
		ra.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: rw.Hostname}
	}
	p := rw.Path
	if p == nil {
		return nil
	}
	switch p.Type {
	case translate.ReplaceFullPath:
		ra.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
			Pattern:      &matcherv3.RegexMatcher{Regex: fullPathRegex},
			Substitution: p.Value,
		}
	case translate.ReplacePrefixMatch:
		prefixRewrite, regex, err := prefixReplacement(mt, p.Value)
		if err != nil {
			return err
		}
		ra.PrefixRewrite, ra.RegexRewrite = prefixRewrite, regex
	default:
		return fmt.Errorf("unknown path modifier %q", p.Type)
	}
	return nil
}

// mirrorFraction is the FractionalPercent of a mirror share n/d: exact when
// d divides 100, 10000 or 1000000 (the denominators Envoy has), else
// rounded to millionths (exact false).
func mirrorFraction(n, d int) (fp *typev3.FractionalPercent, exact bool) {
	for _, den := range []struct {
		value int
		enum  typev3.FractionalPercent_DenominatorType
	}{{100, typev3.FractionalPercent_HUNDRED}, {10000, typev3.FractionalPercent_TEN_THOUSAND}, {1000000, typev3.FractionalPercent_MILLION}} {
		if d > 0 && den.value%d == 0 {
			return &typev3.FractionalPercent{Numerator: uint32(n * (den.value / d)), Denominator: den.enum}, true
		}
	}
	num := (int64(n)*1000000 + int64(d)/2) / int64(d)
	return &typev3.FractionalPercent{Numerator: uint32(num), Denominator: typev3.FractionalPercent_MILLION}, false
}

// mirrorPolicies returns the request_mirror_policies of the rule's mirrors
// that have a backend (the Gateway API mirrors nothing for the others), and
// records their clusters.
func (g *generator) mirrorPolicies(ms []*translate.Mirror) ([]*routev3.RouteAction_RequestMirrorPolicy, error) {
	var out []*routev3.RouteAction_RequestMirrorPolicy
	for _, m := range ms {
		if m.Backend == nil {
			continue
		}
		if err := g.useCluster(m.Backend); err != nil {
			return nil, err
		}
		fp, _ := mirrorFraction(m.Numerator, m.Denominator)
		out = append(out, &routev3.RouteAction_RequestMirrorPolicy{
			Cluster:         m.Backend.Name,
			RuntimeFraction: &corev3.RuntimeFractionalPercent{DefaultValue: fp},
			// The mirror gets the request's own Host, not "<host>-shadow".
			DisableShadowHostSuffixAppend: true,
		})
	}
	return out, nil
}

// isRuleFilter reports whether f is a rule-level filter that this backend
// translates.
func isRuleFilter(f translate.Feature) bool {
	switch f {
	case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier,
		translate.FeatureRequestRedirect, translate.FeatureURLRewrite, translate.FeatureRequestMirror:
		return true
	}
	return false
}

// filterDecision decides how Envoy handles one rule-level filter of r.
func (g *generator) filterDecision(r *translate.Rule, f translate.Feature) report.Decision {
	if !g.placed[r.Name] {
		return report.Decide(report.ReasonRuleOnNoListener)
	}
	if r.Dead() {
		// A direct_response route answers 500: no filter takes effect.
		return report.Decide(report.ReasonRuleForwardsNothing)
	}
	redirects := !r.Forwards() && r.Filters.Redirect != nil
	configured := report.Decide(report.ReasonConfigured)
	switch f {
	case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier:
		which, hm := "request", r.Filters.RequestHeaders
		if f == translate.FeatureResponseHeaderModifier {
			which, hm = "response", r.Filters.ResponseHeaders
		}
		add, remove, refused := headerMutations(hm)
		d := configured.Set(headerFact(which, add, remove))
		if len(refused) > 0 {
			// Envoy refuses route mutations of Host (":-prefixed or host
			// headers may not be modified"); URLRewrite hostname
			// (host_rewrite_literal) changes Host.
			d = d.With(report.NewCaveat(report.CaveatHeaderNotModifiable, "headers", strings.Join(refused, ", ")))
		}
		if which == "response" && hm.Touches("server") {
			// server_header_transformation OVERWRITE: the connection
			// manager writes Server after the route's mutations.
			d = d.With(report.NewCaveat(report.CaveatServerHeaderOverwritten))
		}
		return d
	case translate.FeatureRequestRedirect:
		if !redirects {
			// backendRefs beside a RequestRedirect, which the Gateway
			// API forbids: Envoy proxies and does not redirect.
			return report.Decide(report.ReasonNotTranslated)
		}
		return configured.Set(fmt.Sprintf("redirect response_code %s", redirectCodes[r.Filters.Redirect.StatusCode]))
	case translate.FeatureURLRewrite:
		return configured.Set(rewriteFact(r.Filters.Rewrite))
	case translate.FeatureRequestMirror:
		if redirects {
			// Envoy mirrors only from routes that forward
			// (request_mirror_policies of a route action).
			return report.Decide(report.ReasonRuleForwardsNothing)
		}
		return mirrorDecision(r.Filters.Mirrors)
	}
	return report.Decide(report.ReasonNotTranslated)
}

// headerFact is the configured fact of a header modifier: the fields
// written and the header names in them.
func headerFact(which string, add []*corev3.HeaderValueOption, remove []string) string {
	var parts []string
	if len(add) > 0 {
		ns := make([]string, len(add))
		for i, o := range add {
			ns[i] = o.GetHeader().GetKey()
		}
		parts = append(parts, fmt.Sprintf("%s_headers_to_add %s", which, strings.Join(ns, ", ")))
	}
	if len(remove) > 0 {
		parts = append(parts, fmt.Sprintf("%s_headers_to_remove %s", which, strings.Join(remove, ", ")))
	}
	return strings.Join(parts, "; ")
}

// rewriteFact is the configured fact of a URLRewrite.
func rewriteFact(rw *translate.Rewrite) string {
	var parts []string
	if rw.Hostname != "" {
		parts = append(parts, "host_rewrite_literal "+rw.Hostname)
	}
	if p := rw.Path; p != nil {
		switch {
		case p.Type == translate.ReplaceFullPath:
			parts = append(parts, "regex_rewrite to "+p.Value)
		case strings.TrimRight(p.Value, "/") == "":
			parts = append(parts, "regex_rewrite of the prefix to /")
		default:
			parts = append(parts, "prefix_rewrite "+p.Value)
		}
	}
	return strings.Join(parts, "; ")
}

// mirrorDecision decides the mirrors: approximated when a share is not
// one Envoy's FractionalPercent (denominators 100, 10000 and 1000000) can
// write exactly. An invalid mirror is not written, so nothing is mirrored
// to it, as the Gateway API asks.
func mirrorDecision(ms []*translate.Mirror) report.Decision {
	var rounded, roundedTo []string
	written := 0
	for _, m := range ms {
		if m.Backend == nil {
			continue
		}
		written++
		fp, exact := mirrorFraction(m.Numerator, m.Denominator)
		if !exact {
			rounded = append(rounded, fmt.Sprintf("%d/%d", m.Numerator, m.Denominator))
			roundedTo = append(roundedTo, fmt.Sprintf("%d/%s", fp.GetNumerator(), fp.GetDenominator()))
		}
	}
	d := report.Decide(report.ReasonConfigured)
	if written > 0 {
		d = d.Set(fmt.Sprintf("request_mirror_policies %d", written))
	}
	if len(rounded) > 0 {
		d = d.With(report.NewCaveat(report.CaveatMirrorShareRounded, "share", strings.Join(rounded, ", "), "rounded", strings.Join(roundedTo, ", ")))
	}
	return d
}
