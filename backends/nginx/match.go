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
		cs = append(cs, condition{Source: "$args", Extract: "(?:^|&)" + literal(q.Name) + "=([^&]*)", Regex: re})
	}
	return cs, nil
}

// pathRegex returns the PCRE that nginx's normalized, percent-decoded $uri
// must match.
func pathRegex(m translate.Match) (string, error) {
	switch m.PathType {
	case translate.PathExact:
		p, err := decodePath(m.Path)
		if err != nil {
			return "", err
		}
		return "^" + literal(p) + "$", nil
	case translate.PathPrefix:
		// A trailing '/' is ignored; the prefix matches whole elements.
		p, err := decodePath(strings.TrimRight(m.Path, "/"))
		if err != nil {
			return "", err
		}
		if p == "" {
			return "^/", nil
		}
		return "^" + literal(p) + "(?:/|$)", nil
	case translate.PathRegex:
		return "^(?:" + m.Path + ")$", nil
	}
	return "", fmt.Errorf("unknown path type %q", m.PathType)
}

// valueRegex returns the regex for a header (prefix "") or a query value
// (prefix "=", see condition.Extract).
func valueRegex(v translate.ValueMatch, prefix string) (string, error) {
	switch v.Type {
	case translate.StringExact:
		if v.Value == "" && prefix == "" {
			return "", fmt.Errorf("nginx cannot tell an empty header from a missing one")
		}
		return "^" + prefix + literal(v.Value) + "$", nil
	case translate.StringRegex:
		return "^" + prefix + "(?:" + v.Value + ")$", nil
	}
	return "", fmt.Errorf("unknown match type %q", v.Type)
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
