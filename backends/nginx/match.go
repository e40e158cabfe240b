package nginx

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// condition is one part of a match, tested by an nginx map: the value of
// Source (after Extract, when set) must match the PCRE Regex.
type condition struct {
	// Source is an nginx variable: $uri, $request_method, $http_<name> or
	// $args.
	Source string
	// Extract, when set, is a regex over Source whose first group is the
	// value tested; the tested value is "=" plus that group, or "" when
	// Extract does not match (so a missing parameter never matches).
	Extract string
	// Regex is matched, case-sensitively, against the tested value.
	Regex string
}

// headerVarRE is the header names nginx exposes as $http_<name>: nginx
// lower-cases names and turns '-' into '_', so $http_x_y holds X-Y and
// X_Y alike (the servers accept both: acceptedHeaderNames), and a
// variable name has no '.': a name with '_' or '.' cannot be matched.
var headerVarRE = regexp.MustCompile(`^[a-z0-9-]+$`)

// conditions returns the conditions that together (AND) select the requests
// m selects. The error says why m cannot be expressed in nginx.
func conditions(m translate.Match) ([]condition, error) {
	path, err := pathRegex(m)
	if err != nil {
		return nil, err
	}
	cs := []condition{{Source: "$uri", Regex: path}}
	if m.Method != "" {
		cs = append(cs, condition{Source: "$request_method", Regex: "^" + m.Method + "$"})
	}
	for _, h := range m.Headers {
		if !headerVarRE.MatchString(h.Name) {
			return nil, fmt.Errorf("header %q: nginx has no variable for a header name with '_' or '.'", h.Name)
		}
		re, err := valueRegex(h, "")
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", h.Name, err)
		}
		source := "$http_" + strings.ReplaceAll(h.Name, "-", "_")
		cs = append(cs, condition{Source: source, Regex: re})
		compiled, err := regexp.Compile(re)
		if err != nil {
			return nil, fmt.Errorf("header %q: %w", h.Name, err)
		}
		if compiled.MatchString("") {
			// A missing header reads as "": require a value so that a
			// missing header never matches.
			cs = append(cs, condition{Source: source, Regex: "."})
		}
	}
	for _, q := range m.Query {
		re, err := valueRegex(q, "=")
		if err != nil {
			return nil, fmt.Errorf("query parameter %q: %w", q.Name, err)
		}
		// The leftmost match is the first occurrence of the parameter.
		cs = append(cs, condition{Source: "$args", Extract: "(?:^|&)" + valueLiteral(q.Name) + "=([^&]*)", Regex: re})
	}
	return cs, nil
}

// pathRegex returns the PCRE that nginx's normalized, percent-decoded $uri
// must match.
func pathRegex(m translate.Match) (string, error) {
	switch m.PathType {
	case translate.PathExact:
		p, err := decodeMatchPath(m.Path)
		if err != nil {
			return "", err
		}
		return "^" + pathLiteral(p) + "$", nil
	case translate.PathPrefix:
		// A trailing '/' is ignored; the prefix matches whole elements.
		p, err := decodeMatchPath(strings.TrimRight(m.Path, "/"))
		if err != nil {
			return "", err
		}
		if p == "" {
			return "^/", nil
		}
		return "^" + pathLiteral(p) + "(?:/|$)", nil
	case translate.PathRegex:
		return "^(?:" + nginxRegex(m.Path) + ")$", nil
	}
	return "", fmt.Errorf("unknown path type %q", m.PathType)
}

// pathLiteral is literal for a decoded path: as literal writes it when
// every byte is one a path holds as it is (decodePath), else valueLiteral
// (a control byte such as %0A's line feed, or one that is not ASCII, as
// \xHH, which PCRE compares byte by byte with nginx's decoded $uri).
func pathLiteral(p string) string {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c > 0x7e || c == '\\' || c == '^' {
			return valueLiteral(p)
		}
	}
	return literal(p)
}

// valueRegex returns the regex for a header (prefix "") or a query value
// (prefix "=", see condition.Extract).
func valueRegex(v translate.ValueMatch, prefix string) (string, error) {
	switch v.Type {
	case translate.StringExact:
		if v.Value == "" && prefix == "" {
			return "", fmt.Errorf("nginx cannot tell an empty header from a missing one")
		}
		return "^" + prefix + valueLiteral(v.Value) + "$", nil
	case translate.StringRegex:
		return "^" + prefix + "(?:" + nginxRegex(v.Value) + ")$", nil
	}
	return "", fmt.Errorf("unknown match type %q", v.Type)
}

// valueLiteral is literal for a header or query value, which may hold
// any character: a backslash, '^', and every byte that is not printable
// ASCII are written \xHH, which nginx's tokenizer keeps as it is (it reads
// only \\, \", \', \t, \r and \n as escapes) and PCRE reads as that
// byte.
func valueLiteral(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' || c == '^' || c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, `\x%02x`, c)
		case strings.IndexByte(".$()*+?{}|[", c) >= 0:
			b.WriteString("[" + string(c) + "]")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// nginxRegex writes a user's regular expression so that nginx hands PCRE
// the same expression: nginx's tokenizer (and nginx-go-crossplane's
// quoting, which writes a backslash as it is) would turn the escapes
// \\, \", \', \t, \n and \r into characters, so they are written as the
// \xHH escape or the character PCRE reads them as; every other escape
// (\d, \w, \.) passes through unchanged. Expresses refuses "${", which
// crossplane reads as a variable.
func nginxRegex(re string) string {
	if !strings.Contains(re, "\\") {
		return re
	}
	var b strings.Builder
	for i := 0; i < len(re); i++ {
		c := re[i]
		if c != '\\' || i+1 >= len(re) {
			b.WriteByte(c)
			continue
		}
		i++
		switch n := re[i]; n {
		case '\\':
			b.WriteString(`\x5c`)
		case '"', '\'':
			b.WriteByte(n)
		case 't':
			b.WriteString(`\x09`)
		case 'n':
			b.WriteString(`\x0a`)
		case 'r':
			b.WriteString(`\x0d`)
		default:
			b.WriteByte('\\')
			b.WriteByte(n)
		}
	}
	return b.String()
}

// literal writes s as a PCRE that matches s exactly, without backslashes
// (which nginx-go-crossplane cannot quote safely): metacharacters go into a
// one-character class. s holds only allowlisted characters.
func literal(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(".$()*+?{}|[", c) >= 0 {
			b.WriteString("[" + string(c) + "]")
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
