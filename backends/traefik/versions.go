//gwretry:format
package traefik

import (
	"math"

	"github.com/gwretry/gwretry/translate"
)

// support is what one Traefik version's Retry middleware can do. Each field
// gates configuration that the older version's strict file provider would
// reject, dropping the whole dynamic configuration.
type support struct {
	// Version is "MAJOR.MINOR".
	Version string
	// StatusRetry: retry.status (retry on response codes) and
	// retry.retryNonIdempotentMethod (traefik/traefik#12667, 3.7.0).
	StatusRetry bool
	// RetryTimeout: retry.timeout, no retry starts after it (3.7.0).
	RetryTimeout bool
	// MaxAttempts is the most GEP retries gwretry configures; more are
	// clamped and reported approximated. Traefik's retry.attempts is a Go
	// int that its file provider parses as 64 bits and then converts, so a
	// value above math.MaxInt32 wraps on Traefik's 32-bit builds (linux/386,
	// linux/arm); retry.attempts MaxInt32 (MaxAttempts+1) is the largest
	// value every build reads as written. Traefik verified: v3.6.12 loads
	// attempts 2147483647. No request can use that many: with a backoff,
	// Traefik starts no retry 15 minutes after the first try.
	MaxAttempts int
	// StatusBodyLimit is Traefik's default retry.maxRequestBodyBytes: a
	// request whose body is larger is not retried on a status (3.7;
	// dynamic.RetryDefaultMaxRequestBodyBytes). 0 when the version has no
	// status retry.
	StatusBodyLimit int64
}

// versionTable lists the Traefik versions gwretry knows, oldest first; the
// last is the newest (Generate's for an empty version).
func versionTable() []support {
	return []support{
		{Version: "3.6", MaxAttempts: math.MaxInt32 - 1},
		{Version: "3.7", StatusRetry: true, RetryTimeout: true, MaxAttempts: math.MaxInt32 - 1,
			StatusBodyLimit: 2 << 20},
	}
}

// lookupVersion returns the table row for v.
func lookupVersion(v string) (support, error) {
	return translate.LookupVersion(versionTable(), func(s support) string { return s.Version }, v)
}

// liveVersion is the version the live tests run (dataplane.TraefikVersion):
// what --target traefik assumes without a version.
const liveVersion = "3.6"

// DefaultVersion returns the version --target traefik assumes: the newest
// one the live tests prove, not the newest gwretry knows.
func (*Backend) DefaultVersion() string { return liveVersion }
