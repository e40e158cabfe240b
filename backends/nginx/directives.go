//gwretry:format
package nginx

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// The reading of nginx's directives that the judges and the reader of
// ingress-nginx's configuration (importer/ingressnginx/nginxconf) share:
// one reader of the format.

// Lookup returns the arguments of the last name directive in the innermost
// scope that has one (location, then server, then http), and false when
// none has it.
func Lookup(scopes []crossplane.Directives, name string) ([]string, bool) {
	for _, s := range scopes {
		var args []string
		found := false
		for _, d := range s {
			if d.Directive == name {
				args, found = d.Args, true
			}
		}
		if found {
			return args, true
		}
	}
	return nil, false
}

// Leaves returns the directives of ds that have no block: the settings a
// level passes down, without its maps, upstreams, servers or locations.
func Leaves(ds crossplane.Directives) crossplane.Directives {
	var out crossplane.Directives
	for _, d := range ds {
		if d.Block == nil {
			out = append(out, d)
		}
	}
	return out
}

// ParseTime parses an nginx time value as ngx_parse_time does for
// milliseconds: one or more number+unit parts from the most to the least
// significant (ms s m h d w M y, no unit = seconds).
func ParseTime(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{
		{"ms", time.Millisecond}, {"y", 365 * 24 * time.Hour}, {"M", 30 * 24 * time.Hour}, {"w", 7 * 24 * time.Hour},
		{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
	}
	rank := func(d time.Duration) int { return int(d / time.Millisecond) }
	if s == "" {
		return 0, fmt.Errorf("empty time")
	}
	var total time.Duration
	last := -1
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i > 12 {
			return 0, fmt.Errorf("bad number in time")
		}
		n, _ := strconv.ParseInt(s[:i], 10, 64)
		s = s[i:]
		unit := time.Second
		matched := s == ""
		for _, u := range units {
			if strings.HasPrefix(s, u.suffix) {
				unit, s, matched = u.d, s[len(u.suffix):], true
				break
			}
		}
		if !matched {
			return 0, fmt.Errorf("unknown unit in time")
		}
		if last >= 0 && rank(unit) >= last {
			return 0, fmt.Errorf("time units out of order")
		}
		last = rank(unit)
		if n > int64((1<<63-1)/unit) || total > time.Duration(1<<63-1)-time.Duration(n)*unit {
			return 0, fmt.Errorf("time out of range")
		}
		total += time.Duration(n) * unit
	}
	return total, nil
}

// NextUpstream reads proxy_next_upstream's conditions (next, its
// arguments or nginx's default "error timeout"): the status codes retried
// (http_NNN, sorted), whether connection failures are retried ("error":
// nginx does not tell a failure before sending from one after), and
// whether a try its timer cut is retried ("timeout").
func NextUpstream(next []string) (codes []int, conn translate.ConnRetry, timeout bool, err error) {
	for _, tok := range next {
		if c, ok := strings.CutPrefix(tok, "http_"); ok {
			n, err := strconv.Atoi(c)
			if err != nil {
				return nil, translate.ConnRetryNone, false, fmt.Errorf("proxy_next_upstream %q", tok)
			}
			codes = append(codes, n)
		}
	}
	slices.Sort(codes)
	conn = translate.ConnRetryNone
	if slices.Contains(next, "error") {
		conn = translate.ConnRetryAll
	}
	return codes, conn, slices.Contains(next, "timeout"), nil
}
