package resolve

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// CheckEndpoints refuses an --endpoint that names no Service port of the
// input: neither a port of a Service in it nor one an HTTPRoute sends to
// (a backendRef or a RequestMirror filter's). Such an override changed
// nothing and said nothing, so a typo in its name, namespace or port sent
// the traffic to the Service's other addresses instead.
func CheckEndpoints(in *input.Input, eps []translate.EndpointOverride) error {
	if len(eps) == 0 {
		return nil
	}
	ports := servicePorts(in)
	var msgs []string
	for _, o := range eps {
		if slices.ContainsFunc(ports, func(p servicePort) bool { return p.matches(o) }) {
			continue
		}
		name := o.Service
		if o.Namespace != "" {
			name += "." + o.Namespace
		}
		msgs = append(msgs, fmt.Sprintf("--endpoint %s:%d names no Service port of the input: %s", name, o.Port, existing(ports, o)))
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(msgs, "\n"))
}

// existing says which Service ports the input has, those of the Service
// named first.
func existing(ports []servicePort, o translate.EndpointOverride) string {
	if len(ports) == 0 {
		return "it has none"
	}
	var same, other []string
	for _, p := range ports {
		s := p.Name + "." + p.Namespace + ":" + strconv.Itoa(p.Port)
		if p.Name == o.Service {
			same = append(same, s)
		} else {
			other = append(other, s)
		}
	}
	all := append(same, other...)
	const max = 12
	more := ""
	if len(all) > max {
		more = fmt.Sprintf(" and %d more", len(all)-max)
		all = all[:max]
	}
	return "it has " + strings.Join(all, ", ") + more + " (NAME.NAMESPACE:PORT)"
}

// servicePort is a port of a Service in a namespace.
type servicePort struct {
	Namespace, Name string
	Port            int
}

// matches reports whether --endpoint o applies to p, as endpoints
// applies it.
func (p servicePort) matches(o translate.EndpointOverride) bool {
	return o.Service == p.Name && (o.Namespace == "" || o.Namespace == p.Namespace) && o.Port == p.Port
}

// servicePorts are the Service ports of the input, sorted, each once.
func servicePorts(in *input.Input) []servicePort {
	var out []servicePort
	for _, o := range in.Services {
		for _, p := range o.Obj.Spec.Ports {
			out = append(out, servicePort{Namespace: nsOrDefault(o.Obj.Namespace), Name: o.Obj.Name, Port: int(p.Port)})
		}
	}
	for _, o := range in.Routes {
		rt := o.Obj
		ref := func(b gwv1.BackendObjectReference) {
			if (b.Group != nil && *b.Group != "") || (b.Kind != nil && *b.Kind != "Service") || b.Port == nil {
				return
			}
			ns := nsOrDefault(rt.Namespace)
			if b.Namespace != nil {
				ns = string(*b.Namespace)
			}
			out = append(out, servicePort{Namespace: ns, Name: string(b.Name), Port: int(*b.Port)})
		}
		filters := func(fs []gwv1.HTTPRouteFilter) {
			for _, f := range fs {
				if f.RequestMirror != nil {
					ref(f.RequestMirror.BackendRef)
				}
			}
		}
		for _, r := range rt.Spec.Rules {
			filters(r.Filters)
			for _, b := range r.BackendRefs {
				ref(b.BackendObjectReference)
				filters(b.Filters)
			}
		}
	}
	slices.SortFunc(out, func(a, b servicePort) int {
		return strings.Compare(a.Namespace+"/"+a.Name+":"+fmt.Sprintf("%05d", a.Port), b.Namespace+"/"+b.Name+":"+fmt.Sprintf("%05d", b.Port))
	})
	return slices.Compact(out)
}
