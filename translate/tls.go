package translate

// Certificate paths a configuration may name; resolve/tls.go finds each
// HTTPS listener's certificate.

import (
	"fmt"
	"regexp"
	"strings"
)

// filePathRE is what a certificate path may be: absolute, letters, digits
// and ._-/ only, so that no configuration format needs to quote it.
var filePathRE = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)

// CheckFilePath reports whether p may be written into a configuration as a
// file path.
func CheckFilePath(p string) error {
	if len(p) > 1024 || !filePathRE.MatchString(p) || strings.Contains(p, "..") || strings.Contains(p, "//") {
		return fmt.Errorf("file path %s is not allowed in a generated configuration (allowed: an absolute path of letters, digits, '.', '_', '-' and '/', no '..')", QuoteShort(p))
	}
	return nil
}
