package haproxy

import (
	"strconv"
	"time"

	"github.com/gwretry/gwretry/translate"
)

const (
	// maxTimeoutMs is HAProxy's largest time value (~24.8 days); larger
	// ones fail with "timer overflow".
	maxTimeoutMs = 2147483647
	// Defaults written in the defaults section.
	defaultConnectMs     = 5000
	defaultClientMs      = 60000
	defaultServerMs      = 60000
	defaultHTTPRequestMs = 10000
)

// ms writes a time as HAProxy reads it: one integer and the unit "ms".
func ms(v int64) string {
	return strconv.FormatInt(v, 10) + "ms"
}

// timeoutPlan is the per-backend timeout server / timeout connect of one
// rule, and where it came from.
type timeoutPlan struct {
	// set is false when the rule inherits the defaults.
	set bool
	// serverMs and connectMs are the values written.
	serverMs, connectMs int64
	// clamped is true when the Gateway API value exceeded maxTimeoutMs.
	clamped bool
}

// planTimeouts chooses timeout server for a rule: backendRequest when set,
// else request (HAProxy has no total request timeout; the per-try
// inactivity timer is the closest), else the defaults. "0s" (disabled)
// becomes the largest value, since "timeout server 0" makes HAProxy warn
// about missing timeouts.
func planTimeouts(t translate.Timeouts) timeoutPlan {
	d := t.BackendRequest
	if d == nil {
		d = t.Request
	}
	if d == nil {
		return timeoutPlan{}
	}
	p := timeoutPlan{set: true, serverMs: maxTimeoutMs}
	if !d.IsZero() {
		v := d.Value.Milliseconds()
		if d.Value%time.Millisecond != 0 {
			v++ // never cut sooner than asked
		}
		if v > maxTimeoutMs {
			p.clamped = true
			v = maxTimeoutMs
		}
		p.serverMs = v
	}
	p.connectMs = min(p.serverMs, defaultConnectMs)
	return p
}
