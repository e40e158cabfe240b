//gwretry:format
package nginx

import (
	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// version is what gwretry relies on in one nginx release line.
type version struct {
	// Name is "MAJOR.MINOR".
	Name string
	// RetryCodes are the status codes proxy_next_upstream accepts as
	// http_<code> (ngx_http_proxy_next_upstream_masks[]).
	RetryCodes []int
	// Directives is the crossplane directive table the output is parsed
	// back with. crossplane v0.4.89 ships tables for 1.24, 1.26 and the
	// latest mainline; 1.22 uses the 1.24 table, which has every directive
	// gwretry writes with the same contexts and argument counts.
	Directives crossplane.MatchFunc
	// MaxRetries is the most retries gwretry configures: each retry needs
	// one more upstream entry per endpoint (nginx never retries an entry
	// already tried), so a larger attempts is clamped to it and reported
	// approximated. nginx itself accepts far larger
	// proxy_next_upstream_tries (an ngx_int_t); the cap keeps the upstream
	// small.
	MaxRetries int
	// JoinsHeaderLines: $http_<name> joins the lines of a header sent
	// several times (nginx 1.23.0); before, it holds only the first.
	JoinsHeaderLines bool
	// ChecksResponseFraming: a backend's response with two Content-Length
	// lines, a Content-Length nginx cannot parse, both Content-Length and
	// Transfer-Encoding, or a Transfer-Encoding other than chunked is an
	// invalid header (retried with invalid_header) since nginx 1.23.0;
	// before, nginx passes it to the client (seen live on 1.22.1 and
	// 1.26.3, TestLiveResponseFraming).
	ChecksResponseFraming bool
	// ReadsEarlyHints: a backend's 103 (Early Hints) is read as an
	// interim response and nginx waits for the final one (nginx 1.29.0,
	// "Upstream: early hints support"); before, nginx takes any 1xx
	// (103, 100) as the final response, so a listed retry code that
	// follows is neither retried nor passed on but for the body (seen
	// live on 1.22.1 and 1.26.3, TestLiveInterimResponse). nginx 1.29
	// still takes a 100 or 102 as final: it sends no Expect.
	ReadsEarlyHints bool
}

// retryCodes are the codes every supported nginx version can retry: 403, 404
// and 429 (since 1.11.13) and 500, 502, 503, 504. Nothing changed in
// 1.22 to 1.28 (`denied`, 1.29.3, is commercial only).
func retryCodes() []int { return []int{403, 404, 429, 500, 502, 503, 504} }

// versionTable is the one table of what each supported nginx version does,
// oldest first; the last is the newest (Generate's for an empty version).
func versionTable() []version {
	return []version{
		{Name: "1.22", RetryCodes: retryCodes(), Directives: crossplane.MatchOss124, MaxRetries: maxAttempts},
		{Name: "1.24", RetryCodes: retryCodes(), Directives: crossplane.MatchOss124, MaxRetries: maxAttempts, JoinsHeaderLines: true, ChecksResponseFraming: true},
		{Name: "1.26", RetryCodes: retryCodes(), Directives: crossplane.MatchOss126, MaxRetries: maxAttempts, JoinsHeaderLines: true, ChecksResponseFraming: true},
		{Name: "1.28", RetryCodes: retryCodes(), Directives: crossplane.MatchOssLatest, MaxRetries: maxAttempts, JoinsHeaderLines: true, ChecksResponseFraming: true},
	}
}

func lookupVersion(name string) (version, error) {
	return translate.LookupVersion(versionTable(), func(v version) string { return v.Name }, name)
}

// liveVersion is the newest version the live tests run (nginx 1.26.3, see
// internal/dataplane): what --target nginx assumes without a version.
const liveVersion = "1.26"

// DefaultVersion returns the version --target nginx assumes: the newest
// one the live tests prove, not the newest gwretry knows.
func (*Backend) DefaultVersion() string { return liveVersion }
