package translate

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// durationRE is the GEP-2257 grammar, as in the Gateway API's Duration type.
var durationRE = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// componentRE splits a duration into its components.
var componentRE = regexp.MustCompile(`([0-9]{1,5})(h|ms|m|s)`)

// MaxDuration is 99999h59m59s999ms, the largest GEP-2257 value. A timer at
// least this long can never fire on a duration the Gateway API can express.
const MaxDuration = 99999*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond

// ParseDuration parses a GEP-2257 duration: one to four components of one to
// five digits and a unit (h, m, s, ms), summed. Units may repeat. "0s" is
// valid; "0", "", fractions, negatives and other units are not. It is a copy
// of the Gateway API's pkg/utils.ParseDuration, which is not importable in
// v1.6.3; time.ParseDuration alone is too lenient.
func ParseDuration(s string) (time.Duration, error) {
	if !durationRE.MatchString(s) {
		return 0, fmt.Errorf("invalid duration %q: want 1 to 4 components of 1 to 5 digits and a unit h, m, s or ms (GEP-2257), e.g. 1h30m or 500ms", s)
	}
	var total time.Duration
	for _, c := range componentRE.FindAllStringSubmatch(s, -1) {
		n, err := strconv.Atoi(c[1])
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: %w", s, err)
		}
		unit := map[string]time.Duration{"h": time.Hour, "m": time.Minute, "s": time.Second, "ms": time.Millisecond}[c[2]]
		total += time.Duration(n) * unit
	}
	if total > MaxDuration {
		return 0, fmt.Errorf("invalid duration %q: longer than 99999h59m59s999ms", s)
	}
	return total, nil
}

// FormatDuration writes d in the GEP-2257 canonical form: descending,
// non-repeating, the largest units ("1h30m", "500ms"), zero as "0s". It
// rejects negative values, sub-millisecond precision and values above
// 99999h59m59s999ms.
func FormatDuration(d time.Duration) (string, error) {
	if d < 0 {
		return "", fmt.Errorf("duration %v is negative", d)
	}
	if d%time.Millisecond != 0 {
		return "", fmt.Errorf("duration %v has sub-millisecond precision", d)
	}
	if d > MaxDuration {
		return "", fmt.Errorf("duration %v is longer than 99999h59m59s999ms", d)
	}
	if d == 0 {
		return "0s", nil
	}
	out := ""
	for _, u := range []struct {
		unit string
		size time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}} {
		if n := d / u.size; n > 0 {
			out += strconv.FormatInt(int64(n), 10) + u.unit
			d -= n * u.size
		}
	}
	return out, nil
}
