//gwretry:format
package haproxy

import (
	"fmt"
	"regexp"
	"strings"
)

// The crt-list format as gwretry writes it, and where HAProxy finds the
// key of each certificate: shared by the writer (tls.go) and the judge
// (judge_tls.go), which both need the format's syntax.

// crtWordRE is what one word of a crt-list line may be: a certificate path
// or an SNI filter. No '[' (SSL options), '#' (comments) or whitespace.
var crtWordRE = regexp.MustCompile(`^!?[A-Za-z0-9._/*-]+$`)

// crtLine is one line of a crt-list: a certificate and its SNI filter.
type crtLine struct {
	cert, filter string
}

// keyPath is where HAProxy, with ssl-load-extra-del-ext, looks for the key
// of certificate file cert: its extension replaced by ".key".
func keyPath(cert string) string {
	dot := strings.LastIndexByte(cert, '.')
	if dot <= strings.LastIndexByte(cert, '/') {
		return cert + ".key"
	}
	return cert[:dot] + ".key"
}

// parseCrtList reads the crt-list lines gwretry writes: a certificate path
// and one SNI filter, and nothing else (no SSL options, no comments).
func parseCrtList(data []byte) ([]crtLine, error) {
	var out []crtLine
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.Join(f, " ") != line {
			return nil, fmt.Errorf("line %d %q is not a certificate path and one SNI filter", i+1, line)
		}
		for _, w := range f {
			if !crtWordRE.MatchString(w) {
				return nil, fmt.Errorf("line %d: %q is not an allowed crt-list word", i+1, w)
			}
		}
		if !strings.HasPrefix(f[0], "/") {
			return nil, fmt.Errorf("line %d: certificate path %q is not absolute", i+1, f[0])
		}
		out = append(out, crtLine{cert: f[0], filter: f[1]})
	}
	return out, nil
}
