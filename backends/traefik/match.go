package traefik

import (
	"fmt"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// matchExpr builds the router rule for one match on a virtual host.
func matchExpr(hostname string, m translate.Match) (expr, error) {
	var parts []expr
	switch {
	case hostname == "":
	case strings.HasPrefix(hostname, "*."):
		parts = append(parts, call("HostRegexp", wildcardRegexp(hostname)))
	default:
		parts = append(parts, call("Host", hostname))
	}
	p, err := pathExpr(m)
	if err != nil {
		return expr{}, err
	}
	parts = append(parts, p)
	if m.Method != "" {
		parts = append(parts, call("Method", m.Method))
	}
	for _, h := range m.Headers {
		x, err := valueExpr("Header", h)
		if err != nil {
			return expr{}, err
		}
		parts = append(parts, x)
	}
	for _, q := range m.Query {
		x, err := valueExpr("Query", q)
		if err != nil {
			return expr{}, err
		}
		parts = append(parts, x)
	}
	return allOf(parts...), nil
}

// wildcardRegexp turns "*.example.com" into a regular expression for any
// host with that suffix and at least one more label, not the apex. Traefik
// compares it with the lower-cased request host without its port. Dots are
// written as [.] so that no backslash reaches the rule.
func wildcardRegexp(hostname string) string {
	suffix := strings.TrimPrefix(hostname, "*")
	return "^.+" + strings.ReplaceAll(suffix, ".", "[.]") + "$"
}

// pathExpr matches the path. Traefik's PathPrefix is a plain string prefix,
// while the Gateway API's is element-wise, so prefix /p becomes
// Path(`/p`) || PathPrefix(`/p/`). A trailing slash in the prefix is
// ignored, as the Gateway API defines.
func pathExpr(m translate.Match) (expr, error) {
	switch m.PathType {
	case translate.PathExact:
		return call("Path", m.Path), nil
	case translate.PathPrefix:
		p := strings.TrimRight(m.Path, "/")
		if p == "" {
			return call("PathPrefix", "/"), nil
		}
		return anyOf(call("Path", p), call("PathPrefix", p+"/")), nil
	case translate.PathRegex:
		return call("PathRegexp", fullMatch(m.Path)), nil
	}
	return expr{}, fmt.Errorf("unknown path match type %q", m.PathType)
}

// valueExpr matches a header (kind "Header") or query parameter ("Query").
func valueExpr(kind string, v translate.ValueMatch) (expr, error) {
	switch v.Type {
	case translate.StringExact:
		return call(kind, v.Name, v.Value), nil
	case translate.StringRegex:
		return call(kind+"Regexp", v.Name, fullMatch(v.Value)), nil
	}
	return expr{}, fmt.Errorf("unknown %s match type %q", strings.ToLower(kind), v.Type)
}

// fullMatch anchors a regular expression: Traefik's *Regexp matchers search
// (unanchored), gwretry matches the whole value, as Envoy does.
func fullMatch(re string) string { return "^(?:" + re + ")$" }
