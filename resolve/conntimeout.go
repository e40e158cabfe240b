package resolve

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// olderPolicy orders policies as GEP-713 resolves conflicts: the oldest
// creationTimestamp first, then by namespace/name.
func olderPolicy(a, b *translate.ConnectionTimeoutPolicy) int {
	return cmp.Or(a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time),
		cmp.Compare(nsOrDefault(a.Namespace)+"/"+a.Name, nsOrDefault(b.Namespace)+"/"+b.Name))
}

// connectionTimeouts merges the policies into m.ConnectionTimeouts: per
// Gateway and field the oldest policy's value, the generated listeners and
// rules of the Gateway, and what blocks each value. Input errors were
// reported by input.CheckConnectionPolicies.
func (r *resolver) connectionTimeouts(m *translate.Model) {
	policies := make([]*translate.ConnectionTimeoutPolicy, 0, len(r.in.ConnectionTimeoutPolicies))
	for _, o := range r.in.ConnectionTimeoutPolicies {
		policies = append(policies, o.Obj)
	}
	slices.SortStableFunc(policies, olderPolicy)
	// rank orders the Gateways' values on a shared listener or rule: the
	// value of the oldest policy wins.
	rank := map[string]int{}
	byGateway := map[string]*translate.GatewayTimeouts{}
	// reports are the policies' entries in Model.Policies, by
	// "namespace/name", in policies' order; found their Gateways.
	reports := make([]*translate.PolicyReport, len(policies))
	byName := map[string]*translate.PolicyReport{}
	found := make([][]string, len(policies))
	// The notes go to the model last, after the reports' (deferred calls
	// run last first): returning early, for no Gateway found, dropped the
	// warning that a policy's Gateway is not in the input.
	defer func() { m.Notes = r.notes }()
	defer func() { r.connectionPolicyReports(m, reports, found, byGateway) }()
	for i, p := range policies {
		ns := nsOrDefault(p.Namespace)
		pname := ns + "/" + p.Name
		rep := &translate.PolicyReport{Kind: translate.ConnectionTimeoutPolicyKind, Namespace: ns, Name: p.Name}
		reports[i], byName[pname] = rep, rep
		for _, t := range p.Spec.TargetRefs {
			key := ns + "/" + t.Name
			if _, ok := r.gateways[key]; !ok {
				r.warn(translate.ConnectionTimeoutPolicyKind+" "+pname, "targets Gateway %s, which is not in the input: its timeouts apply to nothing", key)
				rep.NotFound = append(rep.NotFound, "Gateway "+key)
				continue
			}
			rep.Targets = append(rep.Targets, "Gateway "+key)
			found[i] = append(found[i], key)
			g := byGateway[key]
			if g == nil {
				g = &translate.GatewayTimeouts{Gateway: key}
				byGateway[key] = g
				rank[key] = i
			}
			for j, v := range p.Spec.Fields() {
				if v == nil {
					continue
				}
				f := translate.ConnectionFeatures()[j]
				if k := slices.IndexFunc(g.Timeouts, func(c translate.ConnectionTimeout) bool { return c.Feature == f }); k >= 0 {
					r.warn(translate.ConnectionTimeoutPolicyKind+" "+pname, "%s of Gateway %s is not used: policy %s, older or first by name, sets it (%s)", f.Field(), key, g.Timeouts[k].Policy, g.Timeouts[k].Text)
					rep.Lost = append(rep.Lost, fmt.Sprintf("%s of Gateway %s: lost to %s %s (%s), which is older or has the same creationTimestamp and comes first by namespace/name", f.Field(), key, translate.ConnectionTimeoutPolicyKind, g.Timeouts[k].Policy, g.Timeouts[k].Text))
					continue
				}
				d, clamped, _ := translate.ParseHAProxyTime(*v)
				g.Timeouts = append(g.Timeouts, translate.ConnectionTimeout{Feature: f, Policy: pname, Text: *v, Value: d, Clamped: clamped, Order: i})
			}
		}
	}
	if len(byGateway) == 0 {
		return
	}
	// Where every Gateway's listeners are generated.
	gatewaysOf := map[*translate.Listener][]string{}
	atBind := map[translate.Bind][]*translate.Listener{}
	for _, ml := range m.Listeners {
		b := translate.Bind{Address: ml.Address, Port: ml.Port}
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
	gatewaysOfRule := map[*translate.Rule][]string{}
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
					if k := slices.IndexFunc(og.Timeouts, func(o translate.ConnectionTimeout) bool { return o.Feature == c.Feature }); k >= 0 && og.Timeouts[k].Value != c.Value {
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
}

// connectionPolicyReports adds the ConnectionTimeoutPolicies' entries to
// m.Policies, as the RetryPolicies' are: the Gateways found and not, the
// rules served on the Gateways' listeners (which their connections
// carry) and the fields lost to another policy.
func (r *resolver) connectionPolicyReports(m *translate.Model, reports []*translate.PolicyReport, found [][]string, byGateway map[string]*translate.GatewayTimeouts) {
	if len(reports) == 0 {
		return
	}
	for i, rep := range reports {
		rep.Reached = []string{}
		for _, key := range found[i] {
			if g := byGateway[key]; g != nil {
				for _, rule := range g.Rules {
					rep.Reached = append(rep.Reached, translate.RuleLabel(rule.Route, rule.Index))
				}
			}
		}
		slices.Sort(rep.Reached)
		rep.Reached = slices.Compact(rep.Reached)
		switch {
		case len(rep.Targets) == 0:
			rep.Status = translate.PolicyTargetNotFound
		case len(rep.Lost) > 0:
			rep.Status = translate.PolicyConflicted
		default:
			rep.Status = translate.PolicyAccepted
		}
		m.Policies = append(m.Policies, *rep)
	}
	slices.SortStableFunc(m.Policies, func(a, b translate.PolicyReport) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name))
	})
}
