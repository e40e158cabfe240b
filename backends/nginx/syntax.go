//gwretry:format
package nginx

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// nginx's syntax and decoding that both the writer and the judge need:
// how an address is written, and how nginx decodes a request path.

// hostPort writes host:port, with brackets around an IPv6 address.
func hostPort(host string, port int) string {
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

// decodedSafe are the characters a percent-escape in a path may stand for:
// nginx matches locations against the decoded path, and these are the
// characters literal can write without a backslash.
const decodedSafe = "._~!$&()*+,=:@%/-"

// decodePath decodes the percent-escapes of a path the way nginx decodes the
// request path before matching it.
func decodePath(p string) (string, error) {
	return decodeEscapes(p, func(c byte) string {
		if !isAlnum(c) && !strings.ContainsRune(decodedSafe, rune(c)) {
			return "decodes to a character gwretry does not write into an nginx regex"
		}
		return ""
	})
}

// decodeMatchPath decodes the percent-escapes of a path that a match
// compares with nginx's decoded $uri: any byte but NUL (which nginx
// refuses with 400) may be the escape's, as nginx decodes it (a line feed
// from %0A too); pathRegex writes the bytes literal does not as \xHH
// (valueLiteral).
func decodeMatchPath(p string) (string, error) {
	return decodeEscapes(p, func(c byte) string {
		if c == 0 {
			return "decodes to NUL, which nginx refuses with 400"
		}
		return ""
	})
}

// decodeEscapes decodes the percent-escapes of p; refuse says why an
// escape's byte may not be written ("" when it may).
func decodeEscapes(p string, refuse func(c byte) string) (string, error) {
	if !strings.Contains(p, "%") {
		return p, nil
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' {
			b.WriteByte(p[i])
			continue
		}
		if i+2 >= len(p) {
			return "", fmt.Errorf("path %q: incomplete percent-escape", p)
		}
		n, err := strconv.ParseUint(p[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("path %q: invalid percent-escape %q", p, p[i:i+3])
		}
		if why := refuse(byte(n)); why != "" {
			return "", fmt.Errorf("path %q: percent-escape %q %s", p, p[i:i+3], why)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// decodedOrRaw is p decoded as nginx decodes the request path, or p when it
// does not decode (no request that nginx matches begins with such a
// prefix: conditions refuses its match).
func decodedOrRaw(p string) string {
	if d, err := decodePath(p); err == nil {
		return d
	}
	return p
}

// decodedMatchOrRaw is decodedOrRaw with decodeMatchPath.
func decodedMatchOrRaw(p string) string {
	if d, err := decodeMatchPath(p); err == nil {
		return d
	}
	return p
}

// sortPrefixes sorts prefixes longest first by their decoded length, the
// length of the path nginx matches, stably.
func sortPrefixes(ps []string) {
	slices.SortStableFunc(ps, func(a, b string) int { return len(decodedMatchOrRaw(b)) - len(decodedMatchOrRaw(a)) })
}

// orRoot is path s, or "/" when s is empty: an empty path is the root.
func orRoot(s string) string {
	if s == "" {
		return "/"
	}
	return s
}
