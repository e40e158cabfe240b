//gwretry:format
package linkerd

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Linkerd's annotations (linkerd.io/2-edge/reference/retries and
// /timeouts).
const (
	annRetryHTTP       = "retry.linkerd.io/http"
	annRetryLimit      = "retry.linkerd.io/limit"
	annRetryTimeout    = "retry.linkerd.io/timeout"
	annRequestTimeout  = "timeout.linkerd.io/request"
	annResponseTimeout = "timeout.linkerd.io/response"
	// annSource and annRules say which input route and which of its rules
	// (indices, in order) an output route holds; the judge reads them.
	annSource = "gwretry.io/source-route"
	annRules  = "gwretry.io/source-rules"
)

// linkerdPrefixes are the annotation prefixes whose keys Linkerd reads on a
// route; the input's own are not carried over, so that only gwretry's
// apply.
var linkerdPrefixes = []string{"retry.linkerd.io/", "timeout.linkerd.io/"}

// maxLimit is the largest retry.linkerd.io/limit: Linkerd parses it as an
// unsigned 16-bit integer.
const maxLimit = 1<<16 - 1

// maxRetriedBody is the largest request body Linkerd retries: its policy
// controller sends max_request_bytes 64 KiB with every retry policy.
const maxRetriedBody = 64 << 10

// minBackoff and maxBackoff bound the pause before a retry: the policy
// controller sends 25 ms to 250 ms with a jitter ratio of 1 with every
// retry policy (outbound/http.rs).
const (
	minBackoff = 25 * time.Millisecond
	maxBackoff = 250 * time.Millisecond
)

// Allowlists for the annotation values gwretry writes.
var (
	codesRE    = regexp.MustCompile(`^[1-5][0-9]{2}(-[1-5][0-9]{2})?(,[1-5][0-9]{2}(-[1-5][0-9]{2})?)*$`)
	durationRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,15})(ms|s|m|h)$`)
	limitRE    = regexp.MustCompile(`^[1-9][0-9]{0,4}$`)
	indicesRE  = regexp.MustCompile(`^(0|[1-9][0-9]{0,3})(,(0|[1-9][0-9]{0,3}))*$`)
)

// codesText writes sorted, unique status codes in Linkerd's list syntax,
// runs of consecutive codes as ranges: "500,502-504".
func codesText(codes []int) string {
	var parts []string
	for i := 0; i < len(codes); {
		j := i
		for j+1 < len(codes) && codes[j+1] == codes[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", codes[i], codes[j]))
		} else {
			parts = append(parts, strconv.Itoa(codes[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// durationText writes d in Linkerd's duration syntax, one integer and one
// unit, in the largest unit that keeps it exact. Gateway API durations are
// whole milliseconds.
func durationText(d time.Duration) string {
	ms := d.Milliseconds()
	switch {
	case ms == 0:
		return "0s"
	case ms%3600000 == 0:
		return strconv.FormatInt(ms/3600000, 10) + "h"
	case ms%60000 == 0:
		return strconv.FormatInt(ms/60000, 10) + "m"
	case ms%1000 == 0:
		return strconv.FormatInt(ms/1000, 10) + "s"
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// parseDuration reads a duration as Linkerd's policy controller does
// (parse_duration in outbound/index.rs): trimmed, one unsigned integer,
// then ms, s, m, h or d, or a bare 0.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	end := strings.LastIndexFunc(s, func(r rune) bool { return r >= '0' && r <= '9' })
	if end < 0 {
		return 0, fmt.Errorf("%q does not contain a duration value", s)
	}
	mag, err := strconv.ParseUint(s[:end+1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	var unit time.Duration
	switch s[end+1:] {
	case "":
		if mag != 0 {
			return 0, fmt.Errorf("%q has no unit", s)
		}
	case "ms":
		unit = time.Millisecond
	case "s":
		unit = time.Second
	case "m":
		unit = time.Minute
	case "h":
		unit = time.Hour
	case "d":
		unit = 24 * time.Hour
	default:
		return 0, fmt.Errorf("%q: invalid duration unit", s)
	}
	if unit != 0 && mag > uint64(1<<62)/uint64(unit) {
		return 0, fmt.Errorf("%q overflows", s)
	}
	return time.Duration(mag) * unit, nil
}

// parseCodes reads retry.linkerd.io/http as Linkerd's parse_http_retry
// does (split on ',' with no trimming; 5xx, gateway-error, NNN, NNN-MMM,
// codes 100-599) and returns every status code it retries, sorted.
func parseCodes(v string) ([]int, error) {
	code := func(s string) (int, bool) {
		n, err := strconv.ParseUint(s, 10, 32)
		return int(n), err == nil && n >= 100 && n < 600
	}
	var out []int
	add := func(lo, hi int) {
		for c := lo; c <= hi; c++ {
			out = append(out, c)
		}
	}
	for _, cond := range strings.Split(v, ",") {
		switch {
		case strings.EqualFold(cond, "5xx"):
			add(500, 599)
			continue
		case strings.EqualFold(cond, "gateway-error"):
			add(502, 504)
			continue
		}
		if c, ok := code(cond); ok {
			add(c, c)
			continue
		}
		if a, b, found := strings.Cut(cond, "-"); found {
			lo, ok1 := code(a)
			hi, ok2 := code(b)
			if ok1 && ok2 && lo <= hi {
				add(lo, hi)
				continue
			}
		}
		return nil, fmt.Errorf("invalid retry condition %q", v)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// parseIndices reads the gwretry.io/source-rules annotation.
func parseIndices(v string) ([]int, error) {
	if !indicesRE.MatchString(v) {
		return nil, fmt.Errorf("%s %q is not a list of rule indices", annRules, v)
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, _ := strconv.Atoi(s)
		out = append(out, n)
	}
	return out, nil
}

// checkAnnotation checks a value gwretry writes against its allowlist.
func checkAnnotation(key, value string) error {
	var ok bool
	switch key {
	case annRetryHTTP:
		ok = codesRE.MatchString(value)
	case annRetryLimit:
		n, err := strconv.Atoi(value)
		ok = limitRE.MatchString(value) && err == nil && n <= maxLimit
	case annRetryTimeout, annRequestTimeout, annResponseTimeout:
		ok = durationRE.MatchString(value)
	case annRules:
		ok = indicesRE.MatchString(value)
	case annSource:
		ns, name, found := strings.Cut(value, "/")
		ok = found && validName(ns) && validName(name)
	}
	if !ok {
		return fmt.Errorf("internal error: annotation %s value %q is outside gwretry's allowlist", key, value)
	}
	return nil
}
