// Package linkerd writes the input HTTPRoutes back out with the annotations
// Linkerd 2.16 and later reads for retries and timeouts
// (linkerd/httproutes.yaml).
//
// Linkerd reads neither rules[].retry nor timeouts.backendRequest, and
// timeouts.request only from 2.20 on: its retries, per-try timeouts and (up
// to 2.19) request timeouts come from route annotations, which apply to
// every rule of the route. A route whose rules need different annotations
// is therefore split into one route per group of rules. Linkerd applies a
// route only when a parentRef is a Service (a GAMMA mesh attachment,
// Rule.MeshParents): the routes attached to Services only
// (Model.MeshRules) are its main input. It implements no Gateway, so the
// findings of routes attached to Gateways only say that Linkerd ignores
// them. The routes are written as the Gateway API CRDs each Linkerd
// version installs accept them (versions.go, writtenRule): no rules[].retry
// or name, and on 2.16 and 2.17 apiVersion v1beta1 and no timeouts; a rule
// with a field those CRDs lack is not written. What each feature becomes
// is in findings.go; judge.go reads the file back as Linkerd's policy
// controller does.
package linkerd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/translate"
)

// routesPath is the output file.
const routesPath = "linkerd/httproutes.yaml"

// Backend generates Linkerd annotated HTTPRoutes.
type Backend struct{}

// Scope: the routes with a Service parent, which Linkerd applies to its
// meshed clients' requests; it implements no Gateway listener and no
// proxy that accepts connections.
func (*Backend) Scope() translate.Scope { return translate.Scope{MeshRoutes: true} }

// New returns the Linkerd backend.
func New() *Backend { return &Backend{} }

// Name returns "linkerd".
func (*Backend) Name() string { return "linkerd" }

// Versions returns the Linkerd versions known, oldest first.
func (*Backend) Versions() []string {
	return translate.VersionNames(versionTable(), func(s support) string { return s.Version })
}

// outRoute is one route written: its object and the rules it holds.
type outRoute struct {
	obj   *gwv1.HTTPRoute
	plans []rulePlan
}

// Generate writes linkerd/httproutes.yaml for m and reports, per rule and
// feature, what Linkerd does with it.
func (b *Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	sup, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	byRoute := map[string][]*translate.Rule{}
	var keys []string
	for _, r := range slices.Concat(m.Rules, m.MeshRules) {
		if _, ok := byRoute[r.Route]; !ok {
			keys = append(keys, r.Route)
		}
		byRoute[r.Route] = append(byRoute[r.Route], r)
	}
	slices.Sort(keys)
	names := &namer{taken: map[string]bool{}, next: map[string]int{}}
	for k := range m.HTTPRoutes {
		names.taken[k] = true
	}
	out := &translate.Output{}
	var routes []outRoute
	for _, key := range keys {
		src := m.HTTPRoutes[key]
		if src == nil {
			return nil, &translate.InternalError{Err: fmt.Errorf("HTTPRoute %s: not among the model's input routes", key)}
		}
		rules := byRoute[key]
		if len(rules) != len(src.Spec.Rules) {
			return nil, &translate.InternalError{Err: fmt.Errorf("HTTPRoute %s: %d rules translated of %d", key, len(rules), len(src.Spec.Rules))}
		}
		written, notes, err := splitRoute(key, src, rules, sup, names)
		if err != nil {
			return nil, err
		}
		out.Notes = append(out.Notes, notes...)
		// Every rule of a route has the route's Service parents that
		// attach (a Service not in the input, or without the port, does
		// not).
		isMeshed := len(rules[0].MeshParents) > 0
		// A route with no mesh parentRef is outside Linkerd's scope:
		// translate reports it (not applicable), not this target.
		inScope := isMeshed || translate.HasMeshParentRef(src)
		// A split route's rules are named in an Info note of splitRoute
		// (which rules went to which route), not in their findings.
		for _, w := range written {
			for _, p := range w.plans {
				if inScope {
					out.Findings = append(out.Findings, findings(p, isMeshed, opts.Shared)...)
				}
				if isMeshed && p.rejected == "" && p.crdLacks == "" {
					out.Notes = append(out.Notes, inheritedNote(p)...)
				}
			}
		}
		switch {
		case !isMeshed && inScope:
			out.Notes = append(out.Notes, translate.Info("HTTPRoute "+key, "none of its Service parentRefs attaches (gwretry's warnings say why): Linkerd does not apply the route"))
		case !isMeshed:
			out.Notes = append(out.Notes, translate.Info("HTTPRoute "+key, "no parentRef is a Service: Linkerd does not apply the route (it implements no Gateway); its annotations take effect only for a route attached to the Service its clients call"))
		}
		for _, w := range written {
			if w.plans[0].crdLacks == "" {
				routes = append(routes, w)
			}
		}
		if slices.ContainsFunc(src.Spec.Rules, func(r gwv1.HTTPRouteRule) bool { return r.SessionPersistence != nil }) {
			out.Notes = append(out.Notes, translate.Info("HTTPRoute "+key, "sessionPersistence not written: Linkerd does not implement it, and the Gateway API CRDs Linkerd %s installs do not accept it as the input writes it", sup.Version))
		}
	}
	data, written, err := encode(routes)
	if err != nil {
		return nil, err
	}
	back, err := verify(data, written)
	if err != nil {
		return nil, &translate.InternalError{Err: fmt.Errorf("%s: %w", routesPath, err)}
	}
	// The judge reads the routes as decoded back here, not a second
	// decoding of the same bytes.
	out.Files = []translate.File{{Path: routesPath, Data: data, Parsed: translate.NewParsed(data, back)}}
	out.Notes = append(out.Notes, translate.InfoNotes(
		"Linkerd applies "+routesPath+" itself (kubectl apply -f): the annotations act on meshed clients' requests to each route's Service parents",
		"a Service's own retry.linkerd.io annotations apply to the rules of routes that set no retry annotation, and its timeout.linkerd.io annotations to the rules with no timeout of their own (gwretry names each rule they reach when the Service is in the input), and a ServiceProfile of the Service makes Linkerd ignore these annotations altogether",
		"the input routes' own annotations are not carried over, so that only the ones gwretry writes apply",
	)...)
	return out, nil
}

// splitRoute groups the rules of route key by the annotations they need
// and returns one route per group, in the order of the groups' first
// rules. The group of rule 0 keeps the route's name; the others are named
// after their first rule, unique in the namespace.
func splitRoute(key string, src *gwv1.HTTPRoute, rules []*translate.Rule, sup support, names *namer) ([]outRoute, []translate.Note, error) {
	var groups []outRoute
	index := map[string]int{}
	for i, r := range rules {
		if r.Index != i {
			return nil, nil, &translate.InternalError{Err: fmt.Errorf("HTTPRoute %s: rule %d out of order", key, r.Index)}
		}
		p := plan(r, src.Spec.Rules[i], sup)
		for _, h := range src.Spec.Hostnames {
			p.hosts = append(p.hosts, string(h))
		}
		k := p.groupKey()
		g, ok := index[k]
		if !ok {
			g = len(groups)
			index[k] = g
			groups = append(groups, outRoute{})
		}
		groups[g].plans = append(groups[g].plans, p)
	}
	ns, _, _ := strings.Cut(key, "/")
	var notes []translate.Note
	for g := range groups {
		name := src.Name
		if g > 0 {
			name = names.unique(ns, splitName(src.Name, groups[g].plans[0].rule))
		}
		obj, err := routeObject(ns, name, key, src, groups[g].plans, sup)
		if err != nil {
			return nil, nil, err
		}
		groups[g].obj = obj
		if l := groups[g].plans[0].crdLacks; l != "" {
			notes = append(notes, translate.Warning("HTTPRoute "+key, "rule(s) %s not written: the Gateway API CRDs Linkerd %s installs lack their %s, so the API server would refuse the route", obj.Annotations[annRules], sup.Version, l))
		} else if g > 0 {
			notes = append(notes, translate.Info("HTTPRoute "+key, "split for Linkerd, whose annotations apply to a whole route: rule(s) %s written to HTTPRoute %s/%s; a new route is newer than the others, which can change which of two equally specific matches of different routes wins", obj.Annotations[annRules], ns, name))
		}
	}
	return groups, notes, nil
}

// splitName is the name of a split route whose first rule is r: the
// route's name and the rule's name, or "rule-N" (also when the rule's
// name leaves no room for the route's), the route's name shortened to
// keep it a valid name.
func splitName(route string, r *translate.Rule) string {
	suffix := "-rule-" + strconv.Itoa(r.Index)
	if r.RuleName != "" && len(r.RuleName)+1 < validation.DNS1123SubdomainMaxLength {
		suffix = "-" + r.RuleName
	}
	return withSuffix(route, suffix)
}

// withSuffix appends suffix (shorter than an object name may be) to the
// valid object name base, cutting base so that the result is at most 253
// characters and still ends a label with a letter or digit.
func withSuffix(base, suffix string) string {
	if keep := validation.DNS1123SubdomainMaxLength - len(suffix); len(base) > keep {
		base = strings.TrimRight(base[:keep], ".-")
	}
	return base + suffix
}

// namer gives split routes names unique in their namespace.
type namer struct {
	// taken holds "namespace/name" of every input route and every route
	// written.
	taken map[string]bool
	// next is, by "namespace/name" of a name asked for, the first "-N"
	// not yet tried: names that collide again (long names cut to the same
	// prefix) do not probe the same suffixes over again.
	next map[string]int
}

// unique returns name, or name with "-2", "-3"... when a route of that
// name exists in the namespace, shortened to stay a valid name; the name
// returned is taken. Each candidate is a distinct string, so one not
// taken is found within len(taken)+1 tries.
func (nm *namer) unique(ns, name string) string {
	key := ns + "/" + name
	cand := name
	if nm.taken[key] {
		n := max(nm.next[key], 2)
		for nm.taken[ns+"/"+withSuffix(name, "-"+strconv.Itoa(n))] {
			n++
		}
		nm.next[key] = n + 1
		cand = withSuffix(name, "-"+strconv.Itoa(n))
	}
	nm.taken[ns+"/"+cand] = true
	return cand
}

// validName reports whether s is a valid object name (DNS-1123
// subdomain).
func validName(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }

// writtenRule is rule as written for sup: without retry and name (which
// no bundled CRD knows: the annotations carry the retry policy), without
// sessionPersistence (which Linkerd does not implement; v0.7.1 lacks it,
// and v1.1.1's differs from the input's: cookie and header came later)
// and, for 2.16 and 2.17, without timeouts (the annotations carry them:
// plan writes every timeout these versions do not read from the field).
func writtenRule(src gwv1.HTTPRouteRule, sup support) gwv1.HTTPRouteRule {
	rule := *src.DeepCopy()
	rule.Retry, rule.Name, rule.SessionPersistence = nil, nil, nil
	if !sup.RuleTimeouts {
		rule.Timeouts = nil
	}
	return rule
}

// routeObject builds the output route of one group: the input route's
// parentRefs and hostnames, the group's rules in order, and the
// annotations, as the Gateway API CRDs bundled with sup accept it: the
// apiVersion they serve, each rule as writtenRule writes it.
func routeObject(ns, name, key string, src *gwv1.HTTPRoute, plans []rulePlan, sup support) (*gwv1.HTTPRoute, error) {
	ann := map[string]string{annSource: key}
	var idx []string
	for k, v := range plans[0].ann {
		ann[k] = v
	}
	spec := gwv1.HTTPRouteSpec{CommonRouteSpec: *src.Spec.CommonRouteSpec.DeepCopy(), Hostnames: slices.Clone(src.Spec.Hostnames)}
	for _, p := range plans {
		idx = append(idx, strconv.Itoa(p.rule.Index))
		spec.Rules = append(spec.Rules, writtenRule(src.Spec.Rules[p.rule.Index], sup))
	}
	ann[annRules] = strings.Join(idx, ",")
	for k, v := range ann {
		if err := checkAnnotation(k, v); err != nil {
			return nil, &translate.InternalError{Err: fmt.Errorf("HTTPRoute %s: %w", key, err)}
		}
	}
	if !validName(name) || len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, &translate.InternalError{Err: fmt.Errorf("HTTPRoute %s: name %s/%s is not valid", key, ns, name)}
	}
	labels := map[string]string{}
	for k, v := range src.Labels {
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			return nil, fmt.Errorf("HTTPRoute %s: metadata.labels[%q]: not a valid label", key, k)
		}
		labels[k] = v
	}
	if len(labels) == 0 {
		labels = nil
	}
	obj := &gwv1.HTTPRoute{Spec: spec}
	obj.APIVersion = sup.APIVersion
	obj.Kind = "HTTPRoute"
	obj.Name, obj.Namespace, obj.Labels, obj.Annotations = name, ns, labels, ann
	return obj, nil
}

// document is what is written of a route: no status.
type document struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   metadata           `json:"metadata"`
	Spec       gwv1.HTTPRouteSpec `json:"spec"`
}

type metadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func toDocument(o *gwv1.HTTPRoute) document {
	return document{APIVersion: o.APIVersion, Kind: o.Kind, Spec: o.Spec,
		Metadata: metadata{Name: o.Name, Namespace: o.Namespace, Labels: o.Labels, Annotations: o.Annotations}}
}

// writtenRoute is one route as encode wrote it: its name and the JSON
// its YAML document was written from.
type writtenRoute struct {
	namespace, name string
	json            []byte
}

// encode writes the routes as YAML documents, as sigs.k8s.io/yaml's
// Marshal writes each (a yamlchunk.Writer writes the same bytes at a
// fraction of the cost: mappings as yaml.v2 MapSlices, each distinct set
// of keys put in yaml.v2's order once for all the routes), and returns the
// JSON each was written from.
func encode(routes []outRoute) ([]byte, []writtenRoute, error) {
	var buf bytes.Buffer
	written := make([]writtenRoute, 0, len(routes))
	yw := yamlchunk.NewWriter()
	for i, r := range routes {
		j, err := json.Marshal(toDocument(r.obj))
		if err != nil {
			return nil, nil, fmt.Errorf("encoding HTTPRoute %s/%s: %w", r.obj.Namespace, r.obj.Name, err)
		}
		data, err := yw.JSONToYAML(j)
		if err != nil {
			return nil, nil, fmt.Errorf("encoding HTTPRoute %s/%s: %w", r.obj.Namespace, r.obj.Name, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
		written = append(written, writtenRoute{namespace: r.obj.Namespace, name: r.obj.Name, json: j})
	}
	return buf.Bytes(), written, nil
}

// verify decodes data strictly as HTTPRoutes and compares each, encoded
// as JSON, with the JSON its document was written from; it returns the
// routes decoded.
func verify(data []byte, written []writtenRoute) ([]*gwv1.HTTPRoute, error) {
	got, err := decode(data)
	if err != nil {
		return nil, err
	}
	if len(got) != len(written) {
		return nil, fmt.Errorf("decoded %d routes, wrote %d", len(got), len(written))
	}
	for i, w := range written {
		a, err := json.Marshal(toDocument(got[i]))
		if err != nil || !bytes.Equal(a, w.json) {
			return nil, fmt.Errorf("route %d (%s/%s) does not read back as written", i, w.namespace, w.name)
		}
	}
	return got, nil
}
