//gwretry:format
package linkerd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/translate"
)

// Linkerd's policy controller falls back on the annotations of the
// Service a route is attached to, rule by rule
// (policy-controller/grpc/src/outbound/http.rs, convert_outbound_route,
// the same from version-2.16 to main): a rule whose route sets no retry
// annotation gets the Service's retry policy, and a rule with no timeout
// at all (no timeout.linkerd.io/request, response or idle annotation on
// the route and, from 2.20, no non-zero timeouts.request) gets the
// Service's three timeouts. A Service annotation Linkerd cannot parse is
// ignored with a warning (outbound/index.rs, parse_http_retry and
// parse_timeouts: unwrap_or_default).

var (
	retryKeys   = []string{annRetryLimit, annRetryTimeout, annRetryHTTP}
	timeoutKeys = []string{annRequestTimeout, annResponseTimeout, annIdleTimeout}
)

// annIdleTimeout is read from Services and routes; gwretry never writes
// it.
const annIdleTimeout = "timeout.linkerd.io/idle"

// retryPolicy is a retry policy as parse_http_retry reads it.
type retryPolicy struct {
	limit    int
	timeout  time.Duration
	codes    []int
	hasCodes bool
}

// parseRetry reads the retry annotations of ann as parse_http_retry does:
// nil when none is set (a limit of 0 and a timeout of 0 are unset), the
// limit 1 when only the others are.
func parseRetry(ann map[string]string) (*retryPolicy, error) {
	var p retryPolicy
	if v, ok := ann[annRetryLimit]; ok {
		// Rust's u16::from_str: an optional '+', then decimal digits
		// (leading zeros too), nothing trimmed.
		n, err := strconv.ParseUint(strings.TrimPrefix(v, "+"), 10, 16)
		if err != nil || strings.HasPrefix(v, "+-") || strings.HasPrefix(v, "++") {
			return nil, fmt.Errorf("%s %q is not a 16-bit unsigned integer", annRetryLimit, v)
		}
		p.limit = int(n)
	}
	if v, ok := ann[annRetryTimeout]; ok {
		d, err := parseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", annRetryTimeout, err)
		}
		p.timeout = d
	}
	if v, ok := ann[annRetryHTTP]; ok {
		c, err := parseCodes(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", annRetryHTTP, err)
		}
		p.codes, p.hasCodes = c, true
	}
	if p.limit == 0 && p.timeout == 0 && !p.hasCodes {
		return nil, nil
	}
	if p.limit == 0 {
		p.limit = 1
	}
	return &p, nil
}

// routeTimeouts are the three timeouts of parse_timeouts; nil is unset.
type routeTimeouts struct {
	request, response, idle *time.Duration
}

func (t routeTimeouts) set() bool { return t.request != nil || t.response != nil || t.idle != nil }

// parseTimeouts reads the timeout annotations of ann as parse_timeouts
// does ("0s" is set, to zero).
func parseTimeouts(ann map[string]string) (routeTimeouts, error) {
	var t routeTimeouts
	for _, x := range []struct {
		key string
		dst **time.Duration
	}{{annRequestTimeout, &t.request}, {annResponseTimeout, &t.response}, {annIdleTimeout, &t.idle}} {
		if v, ok := ann[x.key]; ok {
			d, err := parseDuration(v)
			if err != nil {
				return routeTimeouts{}, fmt.Errorf("%s: %w", x.key, err)
			}
			*x.dst = &d
		}
	}
	return t, nil
}

// serviceAnnotations is what the Service parents of a rule give it: for
// each parent whose annotations reach the rule, the parent and those
// annotations ("key \"value\"").
type inherited struct {
	parent translate.MeshParent
	retry  *retryPolicy
	timers routeTimeouts
	// text lists the annotations that reach the rule, sorted.
	text []string
}

// fromServices returns, for each Service parent of the rule, what of its
// annotations Linkerd applies to a rule whose route sets a retry policy
// (routeRetry) or any timeout (routeTimeouts) of its own or not; parents
// that give nothing are left out.
func fromServices(parents []translate.MeshParent, routeRetry, routeTimers bool) []inherited {
	var out []inherited
	for _, mp := range parents {
		in := inherited{parent: mp}
		var keys []string
		if !routeRetry {
			if rp, err := parseRetry(mp.Annotations); err == nil && rp != nil {
				in.retry = rp
				keys = append(keys, retryKeys...)
			}
		}
		if !routeTimers {
			if t, err := parseTimeouts(mp.Annotations); err == nil && t.set() {
				in.timers = t
				keys = append(keys, timeoutKeys...)
			}
		}
		for _, k := range keys {
			if v, ok := mp.Annotations[k]; ok {
				in.text = append(in.text, fmt.Sprintf("%s %q", k, v))
			}
		}
		if len(in.text) > 0 {
			slices.Sort(in.text)
			out = append(out, in)
		}
	}
	return out
}

// describe names what the Service parents give the rule, for messages.
func describe(in []inherited) string {
	var parts []string
	for _, x := range in {
		parts = append(parts, fmt.Sprintf("%s's %s", x.parent.String(), strings.Join(x.text, ", ")))
	}
	return strings.Join(parts, "; ")
}
