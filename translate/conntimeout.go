package translate

// Proxy-wide connection timeouts in the model (GatewayTimeouts, one per
// Gateway a ConnectionTimeoutPolicy targets) and the pipeline's side of
// them: the findings every target gives (ConnectionDecisions), the judge's
// reading (ConnectionJudge) and the contract check. resolve merges the
// policies into them (resolve/conntimeout.go).

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/report"
)

// MaxHAProxyTimeout is HAProxy's largest time value, 2147483647 ms (about
// 24 days 20 hours). The OpenShift ingress operator clamps larger tuning
// options to it (clipHAProxyTimeoutValue in cluster-ingress-operator's
// pkg/operator/controller/ingress/deployment.go); gwretry does the same.
const MaxHAProxyTimeout = 2147483647 * time.Millisecond

// The connection.* features: one per ConnectionTimeoutPolicy field. Their
// findings are per (Gateway, target, feature): Finding.Gateway is set and
// Route, Rule and RuleName are empty.
const (
	FeatureConnClientTimeout    = report.FeatureConnClientTimeout
	FeatureConnClientFinTimeout = report.FeatureConnClientFinTimeout
	FeatureConnServerTimeout    = report.FeatureConnServerTimeout
	FeatureConnServerFinTimeout = report.FeatureConnServerFinTimeout
	FeatureConnTunnelTimeout    = report.FeatureConnTunnelTimeout
	FeatureConnTLSInspectDelay  = report.FeatureConnTLSInspectDelay
)

// ConnectionFeatures are the connection.* features in report order.
func ConnectionFeatures() []Feature { return report.ConnectionFeatures() }

// GatewayTimeouts are the connection timeouts of one Gateway, merged from
// the ConnectionTimeoutPolicies that target it.
type GatewayTimeouts struct {
	// Gateway is "namespace/name".
	Gateway string
	// Listeners are the generated listeners where the Gateway's listeners
	// are, in Model order: the client-side fields apply there.
	Listeners []*Listener
	// Rules are the rules served on those listeners, in Model order: the
	// server-side fields apply to those that set no timeouts of their own
	// (a rule's own timeouts win, as an OpenShift Route's timeout
	// annotation wins over tuningOptions.serverTimeout).
	Rules []*Rule
	// Timeouts are the fields set, in ConnectionFeatures order.
	Timeouts []ConnectionTimeout
}

// ConnectionTimeout is one field of a Gateway's connection timeouts.
type ConnectionTimeout struct {
	Feature Feature
	// Policy is "namespace/name" of the policy the value comes from.
	Policy string
	// Text is the value as written ("45s", "3000").
	Text string
	// Value is the duration, clamped to MaxHAProxyTimeout.
	Value time.Duration
	// Clamped is true when the value written was larger than
	// MaxHAProxyTimeout.
	Clamped bool
	// Order is the policy's place in GEP-713 conflict order (oldest
	// creationTimestamp, then namespace/name): lower wins where a target
	// has one value for several Gateways.
	Order int
	// Blocked says why no target applies the value, or where not: the
	// Gateway has no generated listener, or another Gateway's value wins
	// on a listener or rule they share. "" when nothing blocks it.
	Blocked string
}

// OwnTimeouts reports whether a rule sets timeouts of its own, which win
// over a Gateway's serverTimeout.
func (r *Rule) OwnTimeouts() bool {
	return r.Timeouts.Request != nil || r.Timeouts.BackendRequest != nil
}

// haproxyTime is the HAProxy time format the OpenShift enhancement admits:
// an integer and an optional unit; no unit means milliseconds.
var haproxyTime = regexp.MustCompile(`^([0-9]+)(us|ms|s|m|h|d)?$`)

// ParseHAProxyTime parses a time in the HAProxy format ("45s", "3000",
// "1d"). A value larger than MaxHAProxyTimeout is returned as that maximum
// with clamped set. Zero is refused: HAProxy reads it as "no timeout", while
// the OpenShift operator ignores a zero tuning option and keeps the router's
// default, so it means different things on different targets.
func ParseHAProxyTime(s string) (d time.Duration, clamped bool, err error) {
	if len(s) > 32 {
		return 0, false, fmt.Errorf("%q is longer than 32 characters", s[:32]+"...")
	}
	m := haproxyTime.FindStringSubmatch(s)
	if m == nil {
		return 0, false, fmt.Errorf("%q is not an HAProxy time: want digits and an optional unit us, ms, s, m, h or d (no unit means milliseconds), such as 45s or 3000", s)
	}
	unit := map[string]time.Duration{"us": time.Microsecond, "": time.Millisecond, "ms": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour}[m[2]]
	n, perr := strconv.ParseUint(m[1], 10, 64)
	if perr != nil || n > uint64(math.MaxInt64/int64(unit)) {
		return MaxHAProxyTimeout, true, nil // larger than any time.Duration
	}
	if n == 0 {
		return 0, false, fmt.Errorf("%q is zero: HAProxy would read it as no timeout at all, but the OpenShift operator ignores a zero value and keeps the router's default; give a positive time", s)
	}
	d = time.Duration(n) * unit
	if d > MaxHAProxyTimeout {
		return MaxHAProxyTimeout, true, nil
	}
	return d, false, nil
}

// ConnectionDecisions returns exactly one finding for every field of
// every Gateway's connection timeouts. decide gives the decision of a
// field that nothing blocks; a blocked field is unsupported
// (PolicyBlocked), a server-side field no rule takes is NoRuleTakesIt, and
// a clamped value gets the TimeoutClamped caveat.
func ConnectionDecisions(m *Model, decide func(g *GatewayTimeouts, c ConnectionTimeout) report.Decision) []Finding {
	var out []Finding
	for _, g := range m.ConnectionTimeouts {
		for _, c := range g.Timeouts {
			// The value comes from the policy that won the field, never
			// from an HTTPRoute (the text report's SOURCE column said so).
			f := Finding{Gateway: g.Gateway, Feature: c.Feature, Source: ConnectionTimeoutPolicyKind + " " + c.Policy}
			switch {
			case c.Blocked != "":
				f.Decide(report.Decide(report.ReasonPolicyBlocked))
			case c.Feature.ServerSide() && !slices.ContainsFunc(g.Rules, func(r *Rule) bool { return r.Forwards() && !(c.Feature == FeatureConnServerTimeout && r.OwnTimeouts()) }):
				f.Decide(report.Decide(report.ReasonConfigured).With(report.NewCaveat(report.CaveatNoRuleTakesIt)))
			default:
				d := decide(g, c)
				if c.Clamped && d.Status() != Unsupported {
					d = d.With(report.NewCaveat(report.CaveatTimeoutClamped, "max", "2147483647ms"))
				}
				f.Decide(d)
			}
			out = append(out, f)
		}
	}
	return out
}

// UnsupportedConnections returns an unsupported finding (NotExpressible)
// for every field of every Gateway's connection timeouts, for a target
// that has none of them.
func UnsupportedConnections(m *Model) []Finding {
	return ConnectionDecisions(m, func(*GatewayTimeouts, ConnectionTimeout) report.Decision {
		return report.Decide(report.ReasonNotExpressible)
	})
}

// ConnectionJudge is implemented by a backend whose judge reads the
// connection timeouts back from its files. Run checks every honoured
// connection.* claim with it; a backend without it cannot claim one.
type ConnectionJudge interface {
	// ObserveConnections returns, by Gateway ("namespace/name") and
	// feature, the values the files set at every place the Gateway's
	// field applies (each of its listeners, each of its rules without
	// timeouts of their own).
	ObserveConnections(m *Model, opts Options, files []File) (map[string]map[Feature][]time.Duration, error)
}

// checkConnectionClaims compares every connection.* finding Checked names with
// what the backend's ConnectionJudge read back.
func checkConnectionClaims(b Backend, m *Model, opts Options, out *Output) error {
	var claims []Finding
	for _, f := range out.Findings {
		if f.Gateway != "" && Checked(f) {
			claims = append(claims, f)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	j, ok := b.(ConnectionJudge)
	if !ok {
		return fmt.Errorf("claims %s of Gateway %s %s, but has no judge that reads connection timeouts back", claims[0].Feature, claims[0].Gateway, claims[0].Status)
	}
	observed, err := j.ObserveConnections(m, opts, out.Files)
	if err != nil {
		return fmt.Errorf("reading the connection timeouts back: %w", err)
	}
	var msgs []string
	for _, f := range claims {
		var want ConnectionTimeout
		for _, g := range m.ConnectionTimeouts {
			if g.Gateway == f.Gateway {
				if k := slices.IndexFunc(g.Timeouts, func(c ConnectionTimeout) bool { return c.Feature == f.Feature }); k >= 0 {
					want = g.Timeouts[k]
				}
			}
		}
		got := observed[f.Gateway][f.Feature]
		if len(got) == 0 {
			msgs = append(msgs, fmt.Sprintf("Gateway %s: %s is claimed %s, but the configuration sets it nowhere", f.Gateway, f.Feature, f.Status))
		}
		for _, v := range got {
			if v != want.Value {
				msgs = append(msgs, fmt.Sprintf("Gateway %s: %s is claimed %s (%s), but the configuration sets %s", f.Gateway, f.Feature, f.Status, want.Value, v))
				break
			}
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("the report claims more than the configuration does:\n  %s", strings.Join(msgs, "\n  "))
	}
	return nil
}

// ListenerConnection returns the value of client-side connection feature f
// on generated listener l: that of a Gateway there whose value nothing
// blocks (they agree), and false when there is none.
func (m *Model) ListenerConnection(l *Listener, f Feature) (ConnectionTimeout, bool) {
	for _, g := range m.connIndex().listeners[l] {
		for _, c := range g.Timeouts {
			if c.Feature == f && c.Blocked == "" {
				return c, true
			}
		}
	}
	return ConnectionTimeout{}, false
}

// RuleConnection returns the value of server-side connection feature f for
// rule r, as ListenerConnection does; serverTimeout is false for a rule
// with timeouts of its own, which win, and every feature is false for a
// rule that forwards nothing (it never contacts a backend).
func (m *Model) RuleConnection(r *Rule, f Feature) (ConnectionTimeout, bool) {
	if !r.Forwards() || f == FeatureConnServerTimeout && r.OwnTimeouts() {
		return ConnectionTimeout{}, false
	}
	for _, g := range m.connIndex().rules[r] {
		for _, c := range g.Timeouts {
			if c.Feature == f && c.Blocked == "" {
				return c, true
			}
		}
	}
	return ConnectionTimeout{}, false
}

// connIndex is, for each generated listener and rule, the Gateways'
// connection timeouts that apply there, in Model.ConnectionTimeouts order.
type connIndex struct {
	listeners map[*Listener][]*GatewayTimeouts
	rules     map[*Rule][]*GatewayTimeouts
}

// connIndex builds the index once: a backend asks for every listener and
// rule, and scanning each Gateway's lists on every call grew with the
// square of the rules. A Model must not change after it was asked for.
func (m *Model) connIndex() *connIndex {
	m.connOnce.Do(func() {
		m.connIdx = connIndex{listeners: map[*Listener][]*GatewayTimeouts{}, rules: map[*Rule][]*GatewayTimeouts{}}
		for _, g := range m.ConnectionTimeouts {
			for _, l := range g.Listeners {
				if ls := m.connIdx.listeners[l]; len(ls) == 0 || ls[len(ls)-1] != g {
					m.connIdx.listeners[l] = append(ls, g)
				}
			}
			for _, r := range g.Rules {
				if rs := m.connIdx.rules[r]; len(rs) == 0 || rs[len(rs)-1] != g {
					m.connIdx.rules[r] = append(rs, g)
				}
			}
		}
	})
	return &m.connIdx
}

// ConnectionSites calls visit for every place feature f of Gateway g
// applies: each of its listeners for a client-side feature, each of its
// rules that forward (without timeouts of their own, for serverTimeout) for
// a server-side one. A judge reports the value it reads at each.
func (g *GatewayTimeouts) ConnectionSites(f Feature, listener func(*Listener), rule func(*Rule)) {
	if !f.ServerSide() {
		for _, l := range g.Listeners {
			listener(l)
		}
		return
	}
	for _, r := range g.Rules {
		if !r.Forwards() || f == FeatureConnServerTimeout && r.OwnTimeouts() {
			continue
		}
		rule(r)
	}
}
