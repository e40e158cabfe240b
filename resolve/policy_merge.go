package resolve

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// The fields a policy sets, named as the features that report them.
const (
	fieldAttempts       = string(translate.FeatureRetryAttempts)
	fieldCodes          = string(translate.FeatureRetryCodes)
	fieldBackoff        = string(translate.FeatureRetryBackoff)
	fieldRequest        = string(translate.FeatureRequestTimeout)
	fieldBackendRequest = string(translate.FeatureBackendRequestTimeout)
	// fieldRetryOn is a BackendTrafficPolicy's retry condition
	// (*translate.RetryOn), which only its retry sets.
	fieldRetryOn = "retryOn"
)

// mergeFields are the fields merged one by one, in report order.
var mergeFields = []string{fieldAttempts, fieldCodes, fieldBackoff, fieldBackendRequest, fieldRequest}

// layerValue is one field's value in one layer: an int (attempts), an
// []int (codes, replaced whole) or a duration's text. apiDefault is true
// when a CRD default filled it.
type layerValue struct {
	value      any
	apiDefault bool
}

// The places a policy attaches to, from the top of GEP-713's hierarchy.
// A sectionName makes a place more specific than its object.
type place int

const (
	placeGateway place = iota
	placeListener
	placeRoute
	placeRuleSection
	placeService
)

// policySrc is one policy object, as the merge uses it.
type policySrc struct {
	kind, key string // "RetryPolicy", "ns/name"
	created   metav1.Time
	override  map[string]layerValue
	dflt      map[string]layerValue
	btp       *btpValues
	btpSpec   *translate.BTPSpec
	report    *translate.PolicyReport
	// targets are the targetRefs by place key, and whether each was
	// found in the input.
	targets []policyTargetRef
	// empty are the sides ("spec.default") that set no field: valid per
	// the CRD, but they change no rule.
	empty []string
	// said are the lines already in report.Lost and report.Notes: a
	// policy can lose a field on every rule of a Gateway, and looking
	// each line up in the list grew with the square of the rules.
	said map[string]bool
}

// conflict adds s to the policy's report.Lost once.
func (p *policySrc) conflict(s string) {
	if p.say("lost " + s) {
		p.report.Lost = append(p.report.Lost, s)
	}
}

// note adds s to the policy's report.Notes once.
func (p *policySrc) note(s string) {
	if p.say("note " + s) {
		p.report.Notes = append(p.report.Notes, s)
	}
}

// say reports whether key is new, and records it.
func (p *policySrc) say(key string) bool {
	if p.said[key] {
		return false
	}
	if p.said == nil {
		p.said = map[string]bool{}
	}
	p.said[key] = true
	return true
}

type policyTargetRef struct {
	label string // "Gateway infra/gw listener http"
	key   string // place key
	found bool
}

func (p *policySrc) object() string { return p.kind + " " + p.key }

// older orders policies at one place as GEP-713 and Envoy Gateway's
// controller (gatewayapi/resource Resources.Sort) do: the oldest
// creationTimestamp first, then by namespace, then by name.
func older(a, b *policySrc) int {
	an, aname, _ := strings.Cut(a.key, "/")
	bn, bname, _ := strings.Cut(b.key, "/")
	return cmp.Or(a.created.Time.Compare(b.created.Time), cmp.Compare(an, bn), cmp.Compare(aname, bname))
}

// policyState indexes the policies by the place they target and collects
// what happens to each, for the report.
type policyState struct {
	all []*policySrc
	// at are the policies by place key ("Gateway/ns/gw",
	// "Gateway/ns/gw/listener", "HTTPRoute/ns/r", "HTTPRoute/ns/r/rule",
	// "Service/ns/s").
	at map[string][]*policySrc
	// seenService are the Services some rule's backends refer to.
	seenService map[string]bool
}

func newPolicyState(in *input.Input) *policyState {
	s := &policyState{at: map[string][]*policySrc{}, seenService: map[string]bool{}}
	for _, o := range in.Policies.Retry {
		p := o.Obj
		src := &policySrc{kind: "RetryPolicy", key: nsOrDefault(p.Namespace) + "/" + p.Name, created: p.CreationTimestamp}
		if p.Spec.Override != nil {
			src.override = policyLayer(p.Spec.Override)
			if len(src.override) == 0 {
				src.empty = append(src.empty, "spec.override")
			}
		}
		if p.Spec.Default != nil {
			src.dflt = policyLayer(p.Spec.Default)
			if len(src.dflt) == 0 {
				src.empty = append(src.empty, "spec.default")
			}
		}
		s.add(src, p.Namespace, p.Spec.TargetRefs)
	}
	for _, o := range in.Policies.BackendTraffic {
		p := o.Obj
		v := convertBTP(p)
		src := &policySrc{kind: "BackendTrafficPolicy", key: nsOrDefault(p.Namespace) + "/" + p.Name, created: p.CreationTimestamp, btp: &v, btpSpec: &p.Spec}
		s.add(src, p.Namespace, p.Targets())
		src.report.NotCarried = v.notCarried
		src.report.EnvoyOnly = v.envoyOnly
	}
	for _, ps := range s.at {
		slices.SortFunc(ps, older)
	}
	return s
}

func (s *policyState) add(src *policySrc, ns string, refs []gwv1.LocalPolicyTargetReferenceWithSectionName) {
	ns = nsOrDefault(ns)
	name, _ := strings.CutPrefix(src.key, ns+"/")
	src.report = &translate.PolicyReport{Kind: src.kind, Namespace: ns, Name: name}
	for _, t := range refs {
		key := string(t.Kind) + "/" + ns + "/" + string(t.Name)
		if t.SectionName != nil {
			key += "/" + string(*t.SectionName)
		}
		src.targets = append(src.targets, policyTargetRef{label: policyTarget(ns, t), key: key})
		s.at[key] = append(s.at[key], src)
	}
	s.all = append(s.all, src)
}

// policyLayer turns a RetryPolicy's default or override into field
// values, with the CRD default applied: a retry stanza without attempts
// holds attempts 1.
func policyLayer(v *translate.PolicyValues) map[string]layerValue {
	return stanzaLayer(v.Retry, v.Timeouts)
}

func stanzaLayer(rt *gwv1.HTTPRouteRetry, t *gwv1.HTTPRouteTimeouts) map[string]layerValue {
	out := map[string]layerValue{}
	if rt != nil {
		if rt.Attempts != nil {
			out[fieldAttempts] = layerValue{value: *rt.Attempts}
		} else {
			out[fieldAttempts] = layerValue{value: 1, apiDefault: true}
		}
		if rt.Codes != nil {
			codes := make([]int, 0, len(rt.Codes))
			for _, c := range rt.Codes {
				codes = append(codes, int(c))
			}
			slices.Sort(codes)
			out[fieldCodes] = layerValue{value: slices.Compact(codes)}
		}
		if rt.Backoff != nil {
			out[fieldBackoff] = layerValue{value: string(*rt.Backoff)}
		}
	}
	if t != nil {
		if t.Request != nil {
			out[fieldRequest] = layerValue{value: string(*t.Request)}
		}
		if t.BackendRequest != nil {
			out[fieldBackendRequest] = layerValue{value: string(*t.BackendRequest)}
		}
	}
	return out
}

// layer is one step of a rule's precedence chain.
type layer struct {
	src *policySrc // nil for the rule's own fields
	// group identifies the place and side ("override 2"): policies in
	// one group conflict with each other.
	group  string
	source string
	vals   map[string]layerValue
}

// winner is the value of one field and the layer it came from.
type winner struct {
	layerValue
	layer *layer
}

// source is the report's text for where a value came from.
func (w winner) source() string {
	if w.apiDefault {
		return w.layer.source + " (API default)"
	}
	return w.layer.source
}

// ruleScope is what a rule's policies are looked up by.
type ruleScope struct {
	route, ruleName string
	// attachments are the Gateway listeners the route is attached to
	// ("ns/gw", "listener").
	attachments [][2]string
	services    []string
}

// chain builds the rule's precedence chain for one choice of Gateway
// attachments and Services: Gateway override > listener override >
// HTTPRoute override > rule override > Service override > the rule's own
// fields > Service default > rule default > HTTPRoute default > listener
// default > Gateway default. Each place holds its policies oldest first.
func (s *policyState) chain(sc ruleScope, own map[string]layerValue) []*layer {
	keys := make([][]string, placeService+1)
	for _, a := range sc.attachments {
		keys[placeGateway] = append(keys[placeGateway], "Gateway/"+a[0])
		keys[placeListener] = append(keys[placeListener], "Gateway/"+a[0]+"/"+a[1])
	}
	keys[placeRoute] = []string{"HTTPRoute/" + sc.route}
	if sc.ruleName != "" {
		keys[placeRuleSection] = []string{"HTTPRoute/" + sc.route + "/" + sc.ruleName}
	}
	for _, svc := range sc.services {
		keys[placeService] = append(keys[placeService], "Service/"+svc)
	}
	at := func(pl place) []*policySrc {
		var out []*policySrc
		for _, k := range keys[pl] {
			for _, p := range s.at[k] {
				if p.btp == nil && !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
		slices.SortFunc(out, older)
		return out
	}
	var ls []*layer
	for pl := placeGateway; pl <= placeService; pl++ {
		for _, p := range at(pl) {
			if p.override != nil {
				ls = append(ls, &layer{src: p, group: fmt.Sprintf("override %d", pl), source: p.object() + " override", vals: p.override})
			}
		}
	}
	ls = append(ls, &layer{group: "own", source: "HTTPRoute", vals: own})
	for pl := placeService; pl >= placeGateway; pl-- {
		for _, p := range at(pl) {
			if p.dflt != nil {
				ls = append(ls, &layer{src: p, group: fmt.Sprintf("default %d", pl), source: p.object() + " default", vals: p.dflt})
			}
		}
	}
	return ls
}

// evaluate picks, per field, the first layer of the chain that sets it.
func evaluate(ls []*layer) map[string]winner {
	out := map[string]winner{}
	for _, f := range mergeFields {
		for _, l := range ls {
			if v, ok := l.vals[f]; ok {
				out[f] = winner{layerValue: v, layer: l}
				break
			}
		}
	}
	return out
}

// btpFor chooses the BackendTrafficPolicy of a rule as Envoy Gateway does:
// the most specific target wins whole (rule, route, listener, Gateway);
// at one place the oldest, then namespace/name. The others reaching the
// rule are returned too.
func (s *policyState) btpFor(sc ruleScope) (chosen *policySrc, others []*policySrc, sameTier map[*policySrc]bool) {
	sameTier = map[*policySrc]bool{}
	chosenTier := -1
	var tiers [][]string
	if sc.ruleName != "" {
		tiers = append(tiers, []string{"HTTPRoute/" + sc.route + "/" + sc.ruleName})
	}
	tiers = append(tiers, []string{"HTTPRoute/" + sc.route})
	var ls, gs []string
	for _, a := range sc.attachments {
		ls = append(ls, "Gateway/"+a[0]+"/"+a[1])
		gs = append(gs, "Gateway/"+a[0])
	}
	tiers = append(tiers, ls, gs)
	for tier, keys := range tiers {
		var here []*policySrc
		for _, k := range keys {
			for _, p := range s.at[k] {
				if p.btp != nil && !slices.Contains(here, p) && !slices.Contains(others, p) && p != chosen {
					here = append(here, p)
				}
			}
		}
		slices.SortFunc(here, older)
		for _, p := range here {
			if chosen == nil {
				chosen, chosenTier = p, tier
			} else {
				others = append(others, p)
				sameTier[p] = tier == chosenTier
			}
		}
	}
	return chosen, others, sameTier
}

// ruleMerge is the outcome of merging the policies of one rule.
type ruleMerge struct {
	values    map[string]winner
	policies  []string
	conflicts []translate.PolicyConflict
}

// merge computes the rule's effective retry and timeouts: the
// RetryPolicy chain, then the rule's BackendTrafficPolicy. It records in
// each policy's report which rules it reached and what it lost.
func (s *policyState) merge(sc ruleScope, rule gwv1.HTTPRouteRule, ruleLabel string) ruleMerge {
	for _, svc := range sc.services {
		s.seenService[svc] = true
	}
	own := stanzaLayer(rule.Retry, rule.Timeouts)
	ls := s.chain(sc, own)
	vals := evaluate(ls)
	out := ruleMerge{values: vals}
	reached := map[*policySrc]bool{}
	for _, l := range ls {
		if l.src != nil {
			reached[l.src] = true
		}
	}
	// Same-place conflicts: a policy that sets a field another one at its
	// place and side won.
	for _, f := range mergeFields {
		w, ok := vals[f]
		if !ok || w.layer.src == nil {
			continue
		}
		for _, l := range ls {
			if l != w.layer && l.group == w.layer.group && l.src != w.layer.src {
				if _, sets := l.vals[f]; sets {
					why := "is older"
					if l.src.created.Time.Equal(w.layer.src.created.Time) {
						why = "has the same creationTimestamp and comes first by namespace/name"
					}
					l.src.conflict(fmt.Sprintf("%s of %s: lost to %s, which %s", f, ruleLabel, w.layer.source, why))
				}
			}
		}
	}
	// An override that a less specific target's override beats applies
	// nowhere on this rule: say so, as a fact (not a conflict: GEP-713
	// wants the higher override to win), so that its policy's entry does
	// not read as if its value were in force.
	for _, f := range mergeFields {
		w, ok := vals[f]
		if !ok || w.layer.src == nil {
			continue
		}
		for _, l := range ls {
			if l.src == nil || l == w.layer || l.src == w.layer.src || l.group == w.layer.group || !strings.HasPrefix(l.group, "override ") {
				continue
			}
			if v, sets := l.vals[f]; sets {
				l.src.note(fmt.Sprintf("%s of %s: spec.override %s not applied, %s from %s wins (the override of a less specific target beats it)", f, ruleLabel, valueText(v.value), valueText(w.value), w.source()))
			}
		}
	}
	// A rule with backends of several Services, or attached to several
	// listeners, gets one value per field: the places' policies were
	// merged as one; when they ask for different values, say so.
	out.conflicts = append(out.conflicts, s.variants(sc, own, vals, "Service", len(sc.services), func(i int) ruleScope {
		v := sc
		v.services = []string{sc.services[i]}
		return v
	})...)
	out.conflicts = append(out.conflicts, s.variants(sc, own, vals, "Gateway listener", len(sc.attachments), func(i int) ruleScope {
		v := sc
		v.attachments = [][2]string{sc.attachments[i]}
		return v
	})...)
	// Envoy Gateway: the rule's own retry (here: any retry stanza above)
	// replaces the policy's retry whole; the timeout fills what is unset.
	chosen, others, sameTier := s.btpFor(sc)
	if parent, _ := s.mergedBTP(chosen, sc); parent != nil {
		others = slices.DeleteFunc(others, func(p *policySrc) bool { return p == parent })
	}
	for _, p := range others {
		reached[p] = true
		why := "targets the rule more specifically"
		switch {
		case sameTier[p] && p.created.Time.Equal(chosen.created.Time):
			why = "targets the same place, has the same creationTimestamp and comes first by namespace, then name"
		case sameTier[p]:
			why = "targets the same place and is older (creationTimestamp)"
		}
		p.conflict(fmt.Sprintf("%s: not applied, %s %s (Envoy Gateway applies the one BackendTrafficPolicy that wins, whole)", ruleLabel, chosen.object(), why))
	}
	if chosen != nil {
		reached[chosen] = true
		btp := chosen.btp
		bl := &layer{src: chosen, group: "btp", source: chosen.object()}
		if parent, merged := s.mergedBTP(chosen, sc); parent != nil {
			// Envoy Gateway merges a route's policy with mergeType into
			// the closest policy of the Gateway (listener, then Gateway).
			btp = merged
			reached[parent] = true
			parent.note(fmt.Sprintf("%s: merged with %s (its spec.mergeType %s wins field by field)", ruleLabel, chosen.object(), *chosen.btpSpec.MergeType))
			bl.source = chosen.object() + " merged into " + parent.object()
		}
		_, hasRetry := vals[fieldAttempts]
		be, hasBE := vals[fieldBackendRequest]
		ownBE := hasBE && be.layer.src == nil && !hasRetry
		if hasRetry && len(btp.retry) > 0 {
			chosen.note(fmt.Sprintf("%s: spec.retry not applied, the retry of %s replaces it whole (as in Envoy Gateway)", ruleLabel, vals[fieldAttempts].layer.source))
		} else {
			if ownBE && len(btp.retry) > 0 {
				// Envoy Gateway: a rule's backendRequest without a retry
				// of its own is the route timeout (over its request), and
				// the policy's perRetry.timeout the per-try timeout.
				if req, ok := vals[fieldRequest]; ok {
					chosen.note(fmt.Sprintf("%s of %s: %s from %s not applied, the rule's backendRequest %s is the route timeout once %s retries it (as in Envoy Gateway)", fieldRequest, ruleLabel, valueText(req.value), req.source(), valueText(be.value), chosen.object()))
				}
				vals[fieldRequest] = be
				delete(vals, fieldBackendRequest)
			}
			applyBTP(chosen, bl, btp.retry, vals, ruleLabel)
		}
		if v, ok := btp.timeouts[fieldRequest]; ok && ownBE {
			if _, set := vals[fieldRequest]; !set {
				// Without retries, Envoy Gateway's route timeout is the
				// rule's backendRequest, over the policy's requestTimeout.
				chosen.note(fmt.Sprintf("%s of %s: spec.timeout.http.requestTimeout %s not applied, the rule's backendRequest %s is the route timeout (as in Envoy Gateway)", fieldRequest, ruleLabel, valueText(v.value), valueText(be.value)))
				vals[fieldRequest] = be
				delete(vals, fieldBackendRequest)
			}
		}
		applyBTP(chosen, bl, btp.timeouts, vals, ruleLabel)
	}
	for p := range reached {
		p.report.Reached = append(p.report.Reached, ruleLabel)
		out.policies = append(out.policies, p.object())
	}
	slices.Sort(out.policies)
	return out
}

// btpFields are the BackendTrafficPolicy fields each merged field comes
// from, for messages.
var btpFields = map[string]string{
	fieldAttempts:       "spec.retry.numRetries",
	fieldCodes:          "spec.retry.retryOn",
	fieldBackoff:        "spec.retry.perRetry.backOff.baseInterval",
	fieldBackendRequest: "spec.retry.perRetry.timeout",
	fieldRequest:        "spec.timeout.http.requestTimeout",
	fieldRetryOn:        "spec.retry.retryOn",
}

// applyBTP fills the fields of vals that the rule and its RetryPolicies
// leave unset with the BackendTrafficPolicy's values; each value of the
// policy that a rule or RetryPolicy value beats gets a note naming the
// winner, so that it is not dropped without a word.
func applyBTP(p *policySrc, bl *layer, from map[string]layerValue, vals map[string]winner, ruleLabel string) {
	for _, f := range append(slices.Clone(mergeFields), fieldRetryOn) {
		v, ok := from[f]
		if !ok {
			continue
		}
		if w, set := vals[f]; set {
			p.note(fmt.Sprintf("%s of %s: %s %s not applied, %s from %s wins", f, ruleLabel, btpFields[f], valueText(v.value), valueText(w.value), w.source()))
			continue
		}
		vals[f] = winner{layerValue: v, layer: bl}
	}
}

// variants merges the chain once per Service (or listener) alone and
// returns a conflict for each field whose value then differs.
func (s *policyState) variants(sc ruleScope, own map[string]layerValue, chosen map[string]winner, what string, n int, only func(int) ruleScope) []translate.PolicyConflict {
	if n < 2 {
		return nil
	}
	var out []translate.PolicyConflict
	per := make([]map[string]winner, n)
	labels := make([]string, n)
	for i := range n {
		v := only(i)
		per[i] = evaluate(s.chain(v, own))
		if len(v.services) == 1 && what == "Service" {
			labels[i] = "Service " + v.services[0]
		} else {
			labels[i] = "Gateway " + v.attachments[0][0] + " listener " + v.attachments[0][1]
		}
	}
	for _, f := range mergeFields {
		differ := false
		for i := 1; i < n; i++ {
			a, aok := per[0][f]
			b, bok := per[i][f]
			if aok != bok || (aok && !reflect.DeepEqual(a.value, b.value)) {
				differ = true
			}
		}
		if !differ {
			continue
		}
		var parts []string
		for i := range n {
			if w, ok := per[i][f]; ok {
				parts = append(parts, fmt.Sprintf("%s: %s from %s", labels[i], valueText(w.value), w.source()))
			} else {
				parts = append(parts, labels[i]+": unset")
			}
		}
		w := chosen[f]
		whose := "the Services of the rule's backends"
		if what != "Service" {
			whose = "the Gateway listeners the rule is attached to"
		}
		text := fmt.Sprintf("%s carry different policies for %s (%s); gwretry writes one value per rule: %s from %s",
			whose, f, strings.Join(parts, "; "), valueText(w.value), w.source())
		for _, feat := range fieldFeatures(f) {
			out = append(out, translate.PolicyConflict{Feature: feat, Text: text})
		}
	}
	return out
}

// fieldFeatures are the features whose findings a field's value decides.
func fieldFeatures(f string) []translate.Feature {
	switch f {
	case fieldBackendRequest:
		return []translate.Feature{translate.FeatureBackendRequestTimeout, translate.FeatureRetryBackendTimeout}
	case fieldAttempts:
		return []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryConnectionErrors}
	}
	return []translate.Feature{translate.Feature(f)}
}

func valueText(v any) string {
	switch x := v.(type) {
	case []int:
		s := make([]string, len(x))
		for i, c := range x {
			s[i] = fmt.Sprint(c)
		}
		return "[" + strings.Join(s, ", ") + "]"
	case string:
		return x
	case *translate.RetryOn:
		return "retry_on " + strings.Join(x.Triggers, ",")
	}
	return fmt.Sprint(v)
}

// mergedRule is the rule with the merged retry and timeouts, for intent.
func (m ruleMerge) mergedRule(rule gwv1.HTTPRouteRule) gwv1.HTTPRouteRule {
	out := rule
	out.Retry, out.Timeouts = nil, nil
	if w, ok := m.values[fieldAttempts]; ok {
		n := w.value.(int)
		out.Retry = &gwv1.HTTPRouteRetry{Attempts: &n}
		if c, ok := m.values[fieldCodes]; ok {
			for _, code := range c.value.([]int) {
				out.Retry.Codes = append(out.Retry.Codes, gwv1.HTTPRouteRetryStatusCode(code))
			}
			if out.Retry.Codes == nil {
				out.Retry.Codes = []gwv1.HTTPRouteRetryStatusCode{}
			}
		}
		if b, ok := m.values[fieldBackoff]; ok {
			d := gwv1.Duration(b.value.(string))
			out.Retry.Backoff = &d
		}
	}
	req, hasReq := m.values[fieldRequest]
	be, hasBE := m.values[fieldBackendRequest]
	if hasReq || hasBE {
		out.Timeouts = &gwv1.HTTPRouteTimeouts{}
		if hasReq {
			d := gwv1.Duration(req.value.(string))
			out.Timeouts.Request = &d
		}
		if hasBE {
			d := gwv1.Duration(be.value.(string))
			out.Timeouts.BackendRequest = &d
		}
	}
	return out
}

// checkTimeouts refuses merged timeouts that the Gateway API would refuse
// on a rule (backendRequest longer than a non-zero request) when a policy
// gave one of them: each value was valid where it was written, but
// together no data plane can honour both, and a backend's report would
// claim the backendRequest its own configuration cuts short.
func (m ruleMerge) checkTimeouts(f *input.FieldErrors, field string, t translate.Timeouts) {
	if len(m.policies) == 0 || t.Request == nil || t.BackendRequest == nil || t.Request.Value == 0 || t.BackendRequest.Value <= t.Request.Value {
		return
	}
	req, be := m.values[fieldRequest], m.values[fieldBackendRequest]
	f.Add(field+".timeouts.backendRequest", "with the policies merged, backendRequest %s (from %s) is longer than request %s (from %s), which the Gateway API refuses: backendRequest timeout cannot be longer than request timeout; change one of them",
		t.BackendRequest.Text, be.source(), t.Request.Text, req.source())
}

// effective describes the rule's final retry and timeouts, feature by
// feature, with where each value came from.
func (m ruleMerge) effective(route string, index int, ruleName string, rt *translate.Retry, t translate.Timeouts) translate.RuleEffective {
	src := func(f string) string {
		if w, ok := m.values[f]; ok {
			return w.source()
		}
		return "HTTPRoute"
	}
	out := translate.RuleEffective{Route: route, Rule: index, RuleName: ruleName, Effective: map[translate.Feature]translate.EffectiveValue{}, Policies: m.policies}
	if rt != nil {
		out.Effective[translate.FeatureRetryAttempts] = translate.EffectiveValue{Value: rt.Attempts, Source: src(fieldAttempts)}
		out.Effective[translate.FeatureRetryConnectionErrors] = translate.EffectiveValue{Value: rt.Attempts > 0, Source: src(fieldAttempts)}
		if len(rt.Codes) > 0 {
			out.Effective[translate.FeatureRetryCodes] = translate.EffectiveValue{Value: rt.Codes, Source: src(fieldCodes)}
		}
		if rt.Backoff != nil {
			out.Effective[translate.FeatureRetryBackoff] = translate.EffectiveValue{Value: rt.Backoff.Text, Source: src(fieldBackoff)}
		}
		if t.BackendRequest != nil {
			out.Effective[translate.FeatureRetryBackendTimeout] = translate.EffectiveValue{Value: t.BackendRequest.Text, Source: src(fieldBackendRequest)}
		}
	}
	if t.BackendRequest != nil {
		out.Effective[translate.FeatureBackendRequestTimeout] = translate.EffectiveValue{Value: t.BackendRequest.Text, Source: src(fieldBackendRequest)}
	}
	if t.Request != nil {
		out.Effective[translate.FeatureRequestTimeout] = translate.EffectiveValue{Value: t.Request.Text, Source: src(fieldRequest)}
	}
	return out
}

// finish marks the targets found in the input and returns the policies'
// reports and notes: an info line for each policy that lost a conflict or
// targets nothing in the input, a warning for what a BackendTrafficPolicy
// sets that no target gets.
func (s *policyState) finish(found func(key string) bool) ([]translate.PolicyReport, []translate.Note) {
	var reports []translate.PolicyReport
	var notes []translate.Note
	all := slices.Clone(s.all)
	slices.SortFunc(all, func(a, b *policySrc) int { return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.key, b.key)) })
	for _, p := range all {
		rep := p.report
		anyFound := false
		for _, t := range p.targets {
			ok := found(t.key) || strings.HasPrefix(t.key, "Service/") && s.seenService[strings.TrimPrefix(t.key, "Service/")]
			if ok {
				anyFound = true
				rep.Targets = append(rep.Targets, t.label)
			} else {
				rep.NotFound = append(rep.NotFound, t.label)
			}
		}
		slices.Sort(rep.Reached)
		rep.Reached = slices.Compact(rep.Reached)
		switch {
		case !anyFound && len(p.targets) == 0:
			rep.Status = translate.PolicyTargetNotFound
			notes = append(notes, translate.Warning(p.object(), "TargetNotFound: it has no targetRefs (gwretry does not evaluate targetSelectors)"))
		case !anyFound:
			rep.Status = translate.PolicyTargetNotFound
			notes = append(notes, translate.Warning(p.object(), "TargetNotFound: no target is in the input (%s); a policy reaches objects in its own namespace, %s, only", strings.Join(rep.NotFound, ", "), rep.Namespace))
		case len(rep.Lost) > 0:
			rep.Status = translate.PolicyConflicted
			for _, l := range rep.Lost {
				notes = append(notes, translate.Info(p.object(), "Conflicted: %s", l))
			}
		default:
			rep.Status = translate.PolicyAccepted
		}
		if anyFound && len(rep.NotFound) > 0 {
			notes = append(notes, translate.Warning(p.object(), "targets not in the input: %s (a policy reaches objects in its own namespace, %s, only)", strings.Join(rep.NotFound, ", "), rep.Namespace))
		}
		for _, n := range rep.Notes {
			notes = append(notes, translate.Info(p.object(), "%s", n))
		}
		for _, n := range rep.NotCarried {
			notes = append(notes, translate.Warning(p.object(), "not carried to any target: %s", n))
		}
		for _, n := range rep.EnvoyOnly {
			notes = append(notes, translate.Info(p.object(), "carried to the Envoy target only: %s", n))
		}
		for _, side := range p.empty {
			notes = append(notes, translate.Warning(p.object(), "%s sets no field (neither retry nor timeouts.request or timeouts.backendRequest): it changes no rule", side))
		}
		if rep.Reached == nil {
			rep.Reached = []string{}
		}
		reports = append(reports, *rep)
	}
	return reports, notes
}

// mergePolicies merges the policies that reach rule index i of route key
// (through the listeners it is attached to, the route, the rule's name and
// its backends' Services) with the rule's own retry and timeouts.
func (r *resolver) mergePolicies(key string, i int, ruleName string, atts []attachment, backends []*translate.BackendRef, rule gwv1.HTTPRouteRule) ruleMerge {
	sc := ruleScope{route: key, ruleName: ruleName}
	for _, a := range atts {
		if a.gateway == "" {
			continue
		}
		if p := [2]string{a.gateway, a.listener}; !slices.Contains(sc.attachments, p) {
			sc.attachments = append(sc.attachments, p)
		}
	}
	slices.SortFunc(sc.attachments, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, b := range backends {
		if !slices.Contains(sc.services, b.Service) {
			sc.services = append(sc.services, b.Service)
		}
	}
	slices.Sort(sc.services)
	label := translate.RuleLabel(key, i)
	m := r.pol.merge(sc, rule, label)
	req, hasReq := m.values[fieldRequest]
	be, hasBE := m.values[fieldBackendRequest]
	if hasReq && hasBE && req.layer != be.layer {
		rv, rerr := translate.ParseDuration(req.value.(string))
		bv, berr := translate.ParseDuration(be.value.(string))
		if rerr == nil && berr == nil && rv != 0 && bv > rv {
			r.warn(fmt.Sprintf("HTTPRoute %s rule %d", key, i), "timeouts.backendRequest %s (from %s) is longer than timeouts.request %s (from %s): the request timeout ends every try first",
				be.value, be.source(), req.value, req.source())
		}
	}
	return m
}

// finishPolicies returns the policies' reports and the rules' provenance,
// and adds the policies' notes.
func (r *resolver) finishPolicies() ([]translate.PolicyReport, []translate.RuleEffective) {
	found := func(key string) bool {
		parts := strings.SplitN(key, "/", 4)
		if len(parts) < 3 {
			return false
		}
		obj := parts[1] + "/" + parts[2]
		switch parts[0] {
		case "Gateway":
			gw, ok := r.gateways[obj]
			if !ok || len(parts) == 3 {
				return ok
			}
			for _, l := range gw.Spec.Listeners {
				if string(l.Name) == parts[3] {
					return true
				}
			}
		case "HTTPRoute":
			rt, ok := r.routeObjs[obj]
			if !ok || len(parts) == 3 {
				return ok
			}
			for _, rule := range rt.Spec.Rules {
				if rule.Name != nil && string(*rule.Name) == parts[3] {
					return true
				}
			}
		case "Service":
			_, ok := r.services[obj]
			return ok
		}
		return false
	}
	reports, notes := r.pol.finish(found)
	r.notes = append(r.notes, notes...)
	eff := slices.Clone(r.effective)
	slices.SortFunc(eff, func(a, b translate.RuleEffective) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.Rule, b.Rule))
	})
	return reports, eff
}

// bakePolicies puts the merged retry and timeouts of a policy-shaped rule
// into the route object the Model keeps (Model.HTTPRoutes), on a copy, so
// that a backend that writes the routes back carries the policies' values
// into the fields; the input object is left as read.
func (r *resolver) bakePolicies(key string, rt *gwv1.HTTPRoute, i int, m ruleMerge, rule gwv1.HTTPRouteRule) {
	if len(m.policies) == 0 {
		return
	}
	if r.routeObjs[key] == rt {
		r.routeObjs[key] = rt.DeepCopy()
	}
	mr := m.mergedRule(rule)
	r.routeObjs[key].Spec.Rules[i].Retry, r.routeObjs[key].Spec.Rules[i].Timeouts = mr.Retry, mr.Timeouts
}

// mergedBTP is, for a policy with spec.mergeType that targets the rule's
// HTTPRoute (or rule), the policy it merges into as Envoy Gateway does:
// the oldest targeting the first listener the route is attached to, else
// the oldest targeting its Gateway; and the values of the merge, in which
// the route's policy wins field by field and a list is replaced whole
// (strategic and JSON merge agree on the retry and timeout fields). It
// returns nil when there is nothing to merge.
func (s *policyState) mergedBTP(chosen *policySrc, sc ruleScope) (*policySrc, *btpValues) {
	if chosen == nil || chosen.btpSpec.MergeType == nil || len(sc.attachments) == 0 {
		return nil, nil
	}
	onRoute := slices.Contains(s.at["HTTPRoute/"+sc.route], chosen) || sc.ruleName != "" && slices.Contains(s.at["HTTPRoute/"+sc.route+"/"+sc.ruleName], chosen)
	if !onRoute {
		return nil, nil
	}
	a := sc.attachments[0]
	var parent *policySrc
	for _, k := range []string{"Gateway/" + a[0] + "/" + a[1], "Gateway/" + a[0]} {
		for _, p := range s.at[k] {
			if p.btp != nil {
				parent = p
				break
			}
		}
		if parent != nil {
			break
		}
	}
	if parent == nil {
		return nil, nil
	}
	merged, err := mergeBTPSpec(parent.btpSpec, chosen.btpSpec)
	if err != nil {
		return nil, nil
	}
	v := convertBTP(&translate.BackendTrafficPolicy{Spec: *merged})
	return parent, &v
}

// mergeBTPSpec overlays the retry and timeout of route on those of parent
// (JSON merge patch, RFC 7386, without nulls).
func mergeBTPSpec(parent, route *translate.BTPSpec) (*translate.BTPSpec, error) {
	type part struct {
		Retry   *translate.BTPRetry   `json:"retry,omitempty"`
		Timeout *translate.BTPTimeout `json:"timeout,omitempty"`
	}
	toMap := func(p part) (map[string]any, error) {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		return m, json.Unmarshal(b, &m)
	}
	pm, err := toMap(part{parent.Retry, parent.Timeout})
	if err != nil {
		return nil, err
	}
	// The CRD's default (numRetries 2) is in the route's retry before
	// the merge, as the API server stores it: it beats the parent's.
	rr := route.Retry
	if rr != nil && rr.NumRetries == nil {
		c := *rr
		two := int32(2)
		c.NumRetries = &two
		rr = &c
	}
	rm, err := toMap(part{rr, route.Timeout})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(mergePatch(pm, rm))
	if err != nil {
		return nil, err
	}
	var out part
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &translate.BTPSpec{Retry: out.Retry, Timeout: out.Timeout}, nil
}

// mergePatch applies patch to target as a JSON merge patch: objects merge
// key by key, anything else replaces.
func mergePatch(target, patch map[string]any) map[string]any {
	for k, pv := range patch {
		if pm, ok := pv.(map[string]any); ok {
			if tm, ok := target[k].(map[string]any); ok {
				target[k] = mergePatch(tm, pm)
				continue
			}
		}
		target[k] = pv
	}
	return target
}
