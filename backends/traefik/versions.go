package traefik

import "fmt"

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
}

// versionTable lists the Traefik versions gwretry knows, oldest first; the
// last is the default.
func versionTable() []support {
	return []support{
		{Version: "3.6"},
		{Version: "3.7", StatusRetry: true, RetryTimeout: true},
	}
}

// lookupVersion returns the table row for v.
func lookupVersion(v string) (support, error) {
	var names []string
	for _, s := range versionTable() {
		if s.Version == v {
			return s, nil
		}
		names = append(names, s.Version)
	}
	return support{}, fmt.Errorf("unsupported Traefik version %q (supported: %v)", v, names)
}
