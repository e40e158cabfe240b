package envoy

import (
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/gwretry/gwretry/translate"
)

// buildMatch translates a Gateway API match. Envoy compares paths without
// the query string, case-sensitively, and regular expressions (RE2) against
// the whole value, as the Gateway API expects.
func buildMatch(mt translate.Match) *routev3.RouteMatch {
	m := &routev3.RouteMatch{}
	switch mt.PathType {
	case translate.PathExact:
		m.PathSpecifier = &routev3.RouteMatch_Path{Path: mt.Path}
	case translate.PathRegex:
		m.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: mt.Path}}
	default: // PathPrefix; Model.Check rejects other types.
		// Element-wise: a trailing "/" is ignored, and path_separated_prefix
		// matches the prefix itself or the prefix followed by "/".
		if p := strings.TrimRight(mt.Path, "/"); p != "" {
			m.PathSpecifier = &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: p}
		} else {
			m.PathSpecifier = &routev3.RouteMatch_Prefix{Prefix: "/"}
		}
	}
	if mt.Method != "" {
		m.Headers = append(m.Headers, headerMatcher(":method", translate.ValueMatch{Type: translate.StringExact, Value: mt.Method}))
	}
	for _, h := range mt.Headers {
		m.Headers = append(m.Headers, headerMatcher(h.Name, h))
	}
	for _, q := range mt.Query {
		m.QueryParameters = append(m.QueryParameters, &routev3.QueryParameterMatcher{
			Name:                         q.Name,
			QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: stringMatcher(q)},
		})
	}
	return m
}

func headerMatcher(name string, v translate.ValueMatch) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{
		Name:                 name,
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: stringMatcher(v)},
	}
}

func stringMatcher(v translate.ValueMatch) *matcherv3.StringMatcher {
	if v.Type == translate.StringRegex {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{
			SafeRegex: &matcherv3.RegexMatcher{Regex: v.Value},
		}}
	}
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v.Value}}
}
