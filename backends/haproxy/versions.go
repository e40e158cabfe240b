package haproxy

import (
	"fmt"
	"slices"
	"strings"
)

// versionSupport is what one HAProxy release supports among the features
// gwretry configures. Every other keyword gwretry writes (retries, retry-on
// with conn-failure, empty-response and response-timeout, option
// http-buffer-request, option redispatch, http-request disable-l7-retry,
// default-server init-addr) exists since HAProxy 2.0.
type versionSupport struct {
	// Version is "MAJOR.MINOR".
	Version string
	// RetryCodes are the HTTP status codes retry-on accepts, sorted
	// (doc/configuration.txt at each tag; 429 came with haproxy/haproxy#2687,
	// 421 with haproxy/haproxy#2794). Any other code makes the
	// configuration fail to load ("unknown keyword").
	RetryCodes []int
}

// supportTable lists the supported versions, oldest first; the last one is
// the default.
func supportTable() []versionSupport {
	return []versionSupport{
		{Version: "2.6", RetryCodes: []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}},
		{Version: "2.8", RetryCodes: []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}},
		{Version: "3.0", RetryCodes: []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}},
		{Version: "3.1", RetryCodes: []int{401, 403, 404, 408, 425, 429, 500, 501, 502, 503, 504}},
		{Version: "3.2", RetryCodes: []int{401, 403, 404, 408, 421, 425, 429, 500, 501, 502, 503, 504}},
	}
}

// lookupVersion returns the table row of version v.
func lookupVersion(v string) (versionSupport, error) {
	var known []string
	for _, s := range supportTable() {
		if s.Version == v {
			return s, nil
		}
		known = append(known, s.Version)
	}
	return versionSupport{}, fmt.Errorf("unsupported HAProxy version %q: supported versions are %s", v, strings.Join(known, ", "))
}

// firstVersionWithCode returns the oldest version whose retry-on accepts
// code, or "" when none does.
func firstVersionWithCode(code int) string {
	for _, s := range supportTable() {
		if slices.Contains(s.RetryCodes, code) {
			return s.Version
		}
	}
	return ""
}
