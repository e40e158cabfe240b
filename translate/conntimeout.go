package translate

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/report"
)

// ConnectionTimeoutPolicyAPIVersion and ConnectionTimeoutPolicyKind name
// gwretry's policy of proxy-wide connection timeouts (config/crd/).
const (
	ConnectionTimeoutPolicyAPIVersion = "gwretry.io/v1alpha1"
	ConnectionTimeoutPolicyKind       = "ConnectionTimeoutPolicy"
)

// MaxHAProxyTimeout is HAProxy's largest time value, 2147483647 ms (about
// 24 days 20 hours). The OpenShift ingress operator clamps larger tuning
// options to it (clipHAProxyTimeoutValue in cluster-ingress-operator's
// pkg/operator/controller/ingress/deployment.go); gwretry does the same.
const MaxHAProxyTimeout = 2147483647 * time.Millisecond

// ConnectionTimeoutPolicy sets the proxy-wide connection timeouts of the
// Gateways it targets, as the OpenShift router's IngressController
// spec.tuningOptions does (openshift/api operator/v1
// types_ingresscontroller.go). Values are in the HAProxy time format.
type ConnectionTimeoutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ConnectionTimeoutPolicySpec `json:"spec"`
}

// ConnectionTimeoutPolicySpec is the policy's spec.
type ConnectionTimeoutPolicySpec struct {
	// TargetRefs are the Gateways, in the policy's namespace (GEP-713's
	// LocalPolicyTargetReference).
	TargetRefs       []PolicyTargetRef `json:"targetRefs"`
	ClientTimeout    *string           `json:"clientTimeout,omitempty"`
	ClientFinTimeout *string           `json:"clientFinTimeout,omitempty"`
	ServerTimeout    *string           `json:"serverTimeout,omitempty"`
	ServerFinTimeout *string           `json:"serverFinTimeout,omitempty"`
	TunnelTimeout    *string           `json:"tunnelTimeout,omitempty"`
	TLSInspectDelay  *string           `json:"tlsInspectDelay,omitempty"`
}

// PolicyTargetRef is a local reference to the object a policy targets.
type PolicyTargetRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

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

func (s *ConnectionTimeoutPolicySpec) fields() []*string {
	return []*string{s.ClientTimeout, s.ClientFinTimeout, s.ServerTimeout, s.ServerFinTimeout, s.TunnelTimeout, s.TLSInspectDelay}
}

// connectionPolicyErrors checks every ConnectionTimeoutPolicy: its target
// references and the format of each value.
func connectionPolicyErrors(in *Input) ErrorList {
	var errs ErrorList
	for _, o := range in.ConnectionTimeoutPolicies {
		p := o.Obj
		obj := objectName(ConnectionTimeoutPolicyKind, p.Namespace, p.Name)
		add := func(field, format string, args ...any) {
			errs = append(errs, &InputError{Pos: o.Pos, Object: obj, Field: field, Msg: fmt.Sprintf(format, args...)})
		}
		if p.APIVersion != ConnectionTimeoutPolicyAPIVersion {
			add("apiVersion", "%q is not served: use %s", p.APIVersion, ConnectionTimeoutPolicyAPIVersion)
		}
		if p.Name == "" {
			add("metadata.name", "required")
		}
		if len(p.Spec.TargetRefs) == 0 {
			add("spec.targetRefs", "required: name at least one Gateway")
		}
		first := map[PolicyTargetRef]int{}
		for i, t := range p.Spec.TargetRefs {
			f := fmt.Sprintf("spec.targetRefs[%d]", i)
			if j, dup := first[t]; dup {
				add(f, "repeats spec.targetRefs[%d]: each targetRef must be unique", j)
			} else {
				first[t] = i
			}
			if t.Group != gwv1.GroupName || t.Kind != "Gateway" {
				add(f, "targets group %q kind %q: a ConnectionTimeoutPolicy targets a Gateway (group %s, kind Gateway); its timeouts are proxy-wide, never per route", t.Group, t.Kind, gwv1.GroupName)
			}
			if err := CheckValue(KindName, t.Name); err != nil || t.Name == "" {
				add(f+".name", "%q is not a valid Gateway name", t.Name)
			}
		}
		set := false
		for i, v := range p.Spec.fields() {
			if v == nil {
				continue
			}
			set = true
			if _, _, err := ParseHAProxyTime(*v); err != nil {
				add("spec."+ConnectionFeatures()[i].Field(), "%v", err)
			}
		}
		if !set {
			add("spec", "sets no timeout: give at least one of clientTimeout, clientFinTimeout, serverTimeout, serverFinTimeout, tunnelTimeout, tlsInspectDelay")
		}
	}
	return errs
}

// olderPolicy orders policies as GEP-713 resolves conflicts: the oldest
// creationTimestamp first, then by namespace/name.
func olderPolicy(a, b *ConnectionTimeoutPolicy) int {
	return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time),
		cmp.Compare(nsOrDefault(a.Namespace)+"/"+a.Name, nsOrDefault(b.Namespace)+"/"+b.Name))
}

// connectionTimeouts merges the policies into m.ConnectionTimeouts: per
// Gateway and field the oldest policy's value, the generated listeners and
// rules of the Gateway, and what blocks each value. Input errors were
// reported by connectionPolicyErrors.
func (r *resolver) connectionTimeouts(m *Model) {
	policies := make([]*ConnectionTimeoutPolicy, 0, len(r.in.ConnectionTimeoutPolicies))
	for _, o := range r.in.ConnectionTimeoutPolicies {
		policies = append(policies, o.Obj)
	}
	slices.SortStableFunc(policies, olderPolicy)
	// rank orders the Gateways' values on a shared listener or rule: the
	// value of the oldest policy wins.
	rank := map[string]int{}
	byGateway := map[string]*GatewayTimeouts{}
	// reports are the policies' entries in Model.Policies, by
	// "namespace/name", in policies' order; found their Gateways.
	reports := make([]*PolicyReport, len(policies))
	byName := map[string]*PolicyReport{}
	found := make([][]string, len(policies))
	defer func() { r.connectionPolicyReports(m, reports, found, byGateway) }()
	for i, p := range policies {
		ns := nsOrDefault(p.Namespace)
		pname := ns + "/" + p.Name
		rep := &PolicyReport{Kind: ConnectionTimeoutPolicyKind, Namespace: ns, Name: p.Name}
		reports[i], byName[pname] = rep, rep
		for _, t := range p.Spec.TargetRefs {
			key := ns + "/" + t.Name
			if _, ok := r.gateways[key]; !ok {
				r.warn(ConnectionTimeoutPolicyKind+" "+pname, "targets Gateway %s, which is not in the input: its timeouts apply to nothing", key)
				rep.NotFound = append(rep.NotFound, "Gateway "+key)
				continue
			}
			rep.Targets = append(rep.Targets, "Gateway "+key)
			found[i] = append(found[i], key)
			g := byGateway[key]
			if g == nil {
				g = &GatewayTimeouts{Gateway: key}
				byGateway[key] = g
				rank[key] = i
			}
			for j, v := range p.Spec.fields() {
				if v == nil {
					continue
				}
				f := ConnectionFeatures()[j]
				if k := slices.IndexFunc(g.Timeouts, func(c ConnectionTimeout) bool { return c.Feature == f }); k >= 0 {
					r.warn(ConnectionTimeoutPolicyKind+" "+pname, "%s of Gateway %s is not used: policy %s, older or first by name, sets it (%s)", f.Field(), key, g.Timeouts[k].Policy, g.Timeouts[k].Text)
					rep.Lost = append(rep.Lost, fmt.Sprintf("%s of Gateway %s: lost to %s %s (%s), which is older or has the same creationTimestamp and comes first by namespace/name", f.Field(), key, ConnectionTimeoutPolicyKind, g.Timeouts[k].Policy, g.Timeouts[k].Text))
					continue
				}
				d, clamped, _ := ParseHAProxyTime(*v)
				g.Timeouts = append(g.Timeouts, ConnectionTimeout{Feature: f, Policy: pname, Text: *v, Value: d, Clamped: clamped, Order: i})
			}
		}
	}
	if len(byGateway) == 0 {
		return
	}
	// Where every Gateway's listeners are generated.
	gatewaysOf := map[*Listener][]string{}
	atBind := map[Bind][]*Listener{}
	for _, ml := range m.Listeners {
		b := Bind{Address: ml.Address, Port: ml.Port}
		atBind[b] = append(atBind[b], ml)
	}
	for _, key := range slices.Sorted(maps.Keys(r.gateways)) {
		gw := r.gateways[key]
		for _, l := range gw.Spec.Listeners {
			want := bindHTTP
			switch {
			case l.Protocol == gwv1.HTTPSProtocolType && r.opts.TLSDir != "":
				want = bindHTTPS
			case l.Protocol != gwv1.HTTPProtocolType:
				continue
			}
			b := r.listenerBind(key, l)
			if r.bindTLS[b] != want {
				continue
			}
			for _, ml := range atBind[b] {
				if !slices.Contains(gatewaysOf[ml], key) {
					gatewaysOf[ml] = append(gatewaysOf[ml], key)
				}
			}
		}
	}
	gatewaysOfRule := map[*Rule][]string{}
	for _, ml := range m.Listeners {
		for _, vh := range ml.VirtualHosts {
			for _, rm := range vh.Routes {
				for _, key := range gatewaysOf[ml] {
					if !slices.Contains(gatewaysOfRule[rm.Rule], key) {
						gatewaysOfRule[rm.Rule] = append(gatewaysOfRule[rm.Rule], key)
					}
				}
			}
		}
	}
	// Each Gateway's listeners and rules, in the model's order: one pass
	// over each, not one per Gateway.
	for _, ml := range m.Listeners {
		for _, key := range gatewaysOf[ml] {
			if g := byGateway[key]; g != nil {
				g.Listeners = append(g.Listeners, ml)
			}
		}
	}
	for _, rule := range m.Rules {
		for _, key := range gatewaysOfRule[rule] {
			if g := byGateway[key]; g != nil {
				g.Rules = append(g.Rules, rule)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(byGateway)) {
		g := byGateway[key]
		for i := range g.Timeouts {
			c := &g.Timeouts[i]
			if len(g.Listeners) == 0 {
				c.Blocked = "no listener of the Gateway is generated (no route is attached to it, or its listeners are not HTTP, or HTTPS without --tls-dir)"
				continue
			}
			// Another Gateway whose older policy sets a different value
			// where both apply wins there.
			var sites []string
			others := map[string]bool{}
			check := func(site string, gws []string) {
				for _, other := range gws {
					og := byGateway[other]
					if other == key || og == nil || rank[other] > rank[key] || (rank[other] == rank[key] && other > key) {
						continue
					}
					if k := slices.IndexFunc(og.Timeouts, func(o ConnectionTimeout) bool { return o.Feature == c.Feature }); k >= 0 && og.Timeouts[k].Value != c.Value {
						sites = append(sites, site)
						others[fmt.Sprintf("Gateway %s (%s, policy %s)", other, og.Timeouts[k].Text, og.Timeouts[k].Policy)] = true
						return
					}
				}
			}
			if c.Feature.ServerSide() {
				for _, rule := range g.Rules {
					check("rule "+rule.Route+" "+strconv.Itoa(rule.Index), gatewaysOfRule[rule])
				}
			} else {
				for _, ml := range g.Listeners {
					check("listener "+ml.Name, gatewaysOf[ml])
				}
			}
			if len(sites) > 0 {
				c.Blocked = fmt.Sprintf("%s is shared with %s, whose older policy wins there (a generated proxy has one %s for it), so gwretry applies this Gateway's value nowhere",
					strings.Join(sites, ", "), strings.Join(slices.Sorted(maps.Keys(others)), ", "), c.Feature.Field())
				// Once per Gateway and field: each has one value.
				byName[c.Policy].Lost = append(byName[c.Policy].Lost, fmt.Sprintf("%s of Gateway %s: %s", c.Feature.Field(), key, c.Blocked))
			}
		}
		m.ConnectionTimeouts = append(m.ConnectionTimeouts, g)
	}
	for _, ml := range m.Listeners {
		if gws := gatewaysOf[ml]; len(gws) > 1 {
			r.warn("", "listener %s serves Gateways %s: a ConnectionTimeoutPolicy of one applies to the connections of all", ml.Name, strings.Join(gws, ", "))
		}
	}
	m.Notes = r.notes
}

// connectionPolicyReports adds the ConnectionTimeoutPolicies' entries to
// m.Policies, as the RetryPolicies' are: the Gateways found and not, the
// rules served on the Gateways' listeners (which their connections
// carry) and the fields lost to another policy.
func (r *resolver) connectionPolicyReports(m *Model, reports []*PolicyReport, found [][]string, byGateway map[string]*GatewayTimeouts) {
	if len(reports) == 0 {
		return
	}
	for i, rep := range reports {
		rep.Reached = []string{}
		for _, key := range found[i] {
			if g := byGateway[key]; g != nil {
				for _, rule := range g.Rules {
					rep.Reached = append(rep.Reached, ruleLabel(rule.Route, rule.Index))
				}
			}
		}
		slices.Sort(rep.Reached)
		rep.Reached = slices.Compact(rep.Reached)
		switch {
		case len(rep.Targets) == 0:
			rep.Status = PolicyTargetNotFound
		case len(rep.Lost) > 0:
			rep.Status = PolicyConflicted
		default:
			rep.Status = PolicyAccepted
		}
		m.Policies = append(m.Policies, *rep)
	}
	slices.SortStableFunc(m.Policies, func(a, b PolicyReport) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name))
	})
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
