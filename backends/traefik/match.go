package traefik

import (
	"fmt"
	"strconv"
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
		return call("Path", rulePath(m.Path)), nil
	case translate.PathPrefix:
		p := rulePath(strings.TrimRight(m.Path, "/"))
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

// traefikKeptEncoded are the characters whose percent-escapes Traefik
// keeps when it compares a request's path: RFC 3986's reserved
// characters and '%' itself.
const traefikKeptEncoded = "%:/?#[]@!$&'()*+,;="

// rulePath is a match's path as Traefik's Path and PathPrefix compare it
// with the request's path, which Traefik percent-decodes but for the
// escapes of reserved characters and '%' (traefikKeptEncoded), which stay
// encoded with upper-case hex. Live on 3.6.12: Path(`/q/%78`) matches
// neither /q/x nor /q/%78 while Path(`/q/x`) matches both;
// Path(`/p/x%3F%25`) matches /p/%78%3F%25; Path(`/r/a;b`) does not match
// /r/a%3Bb; Path(`/a/` + "\n" + `)` matches /a/%0A, and a decoded '"',
// space or é is written as it is.
func rulePath(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+2 >= len(p) {
			b.WriteByte(p[i])
			continue
		}
		n, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
		if err != nil {
			b.WriteByte(p[i])
			continue
		}
		if strings.IndexByte(traefikKeptEncoded, byte(n)) >= 0 {
			fmt.Fprintf(&b, "%%%02X", n)
		} else {
			b.WriteByte(byte(n))
		}
		i += 2
	}
	return b.String()
}
