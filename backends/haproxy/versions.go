package haproxy

import (
	"slices"

	"github.com/gwretry/gwretry/translate"
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
	// Backported are codes that later patch releases of the branch accept,
	// each with the first release that does ("3.0.4"): the branch's first
	// releases refuse them, so they stay out of RetryCodes and out of the
	// output, and the finding says where they work. 429 was backported to
	// 3.0.4 (its CHANGELOG: "MINOR: proxy: Add support of
	// 429-Too-Many-Requests in retry-on status"); verified with HAProxy
	// 3.0.11, which loads retry-on 429 and retries a 429, and refuses 421.
	Backported map[int]string
	// MaxRetries is the largest `retries` value HAProxy honours: it reads
	// the number with atol() into an int (proxy.conn_retries, the same in
	// every version from 2.6 to 3.2, src/cfgparse-listen.c), so
	// 4294967297 becomes 1 and 2147483648 becomes negative (no retry at
	// all); both verified with HAProxy 2.6.12. Larger attempts are clamped.
	MaxRetries int64
	// SilentKeepAliveClose: when the last try of a request that is not the
	// first on its client connection ends with an empty response or a
	// reset, HAProxy closes the client connection without any answer
	// (http_wait_for_response, "abort_keep_alive", keyed on TX_NOT_FIRST)
	// instead of answering 502. 3.0 keys it on a reused server connection
	// instead (haproxy/haproxy 3fc38593d, "Deliver 502 on keep-alive for
	// fresh server connection"), which option http-server-close rules out.
	// Verified with HAProxy 2.6.12.
	SilentKeepAliveClose bool
	// ServerTimeoutDuringUpload: timeout server also runs while the
	// client is still sending the request body, so a client that stalls
	// its upload gets 504 once it expires and the backend gets a
	// truncated body. HAProxy 2.8 stops timing the server then
	// (haproxy/haproxy f4b89f162, "MEDIUM: mux-h1: Don't expect data from
	// server as long as request is unfinished", in 2.8-dev5: "never report
	// a server timeout on receive if the client is still uploading
	// data"). Seen live with HAProxy 2.6.12 and 3.0.11
	// (TestLiveServerTimeoutStalledUpload).
	ServerTimeoutDuringUpload bool
}

// maxInt32 is C's INT_MAX.
const maxInt32 = 1<<31 - 1

// supportTable lists the supported versions, oldest first; the last one is
// the newest (Generate's for an empty version).
func supportTable() []versionSupport {
	return []versionSupport{
		{Version: "2.6", RetryCodes: []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}, MaxRetries: maxInt32, SilentKeepAliveClose: true, ServerTimeoutDuringUpload: true},
		{Version: "2.8", RetryCodes: []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}, MaxRetries: maxInt32, SilentKeepAliveClose: true},
		{Version: "3.0", RetryCodes: []int{401, 403, 404, 408, 425, 500, 501, 502, 503, 504}, MaxRetries: maxInt32, Backported: map[int]string{429: "3.0.4"}},
		{Version: "3.1", RetryCodes: []int{401, 403, 404, 408, 425, 429, 500, 501, 502, 503, 504}, MaxRetries: maxInt32},
		{Version: "3.2", RetryCodes: []int{401, 403, 404, 408, 421, 425, 429, 500, 501, 502, 503, 504}, MaxRetries: maxInt32},
	}
}

// lookupVersion returns the table row of version v.
func lookupVersion(v string) (versionSupport, error) {
	return translate.LookupVersion(supportTable(), func(s versionSupport) string { return s.Version }, v)
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

// liveVersion is the newest version the live tests run (HAProxy 3.0.11, see
// internal/dataplane): what --target haproxy assumes without a version.
const liveVersion = "3.0"

// DefaultVersion returns the version --target haproxy assumes: the newest
// one the live tests prove, not the newest gwretry knows.
func (*Backend) DefaultVersion() string { return liveVersion }
