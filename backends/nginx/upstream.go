package nginx

import (
	"net/netip"
	"strconv"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// maxEntryWeight bounds the weight= of one upstream entry; beyond it the
// backend weights are rounded.
const maxEntryWeight = 1000000

// upstreamPlan is the upstream block of one rule.
type upstreamPlan struct {
	// Servers are the server directives, in order.
	Servers crossplane.Directives
	// Repeat is how many times each endpoint is listed.
	Repeat int
	// Rounded reports that the weights could not be kept exact.
	Rounded bool
	// Hostnames are the endpoint hosts that are DNS names.
	Hostnames []string
}

// planUpstream lists every endpoint of the rule's backends with a weight
// above 0, each repeated so that there are at least `tries` entries: nginx
// never sends a retry to an entry already tried, so a retry to the same
// endpoint needs a second entry for it. max_fails=0 keeps a retried status
// from taking the entry out of rotation. Every endpoint is repeated the same
// number of times, so the share of each entry's weight is unchanged: entry
// weight = backend weight / backend endpoint count, scaled to integers.
// It returns nil Servers when every backend has weight 0.
func planUpstream(r *translate.Rule, tries int) upstreamPlan {
	var active []*translate.BackendRef
	endpoints := 0
	for _, b := range r.Backends {
		if b.Weight > 0 {
			active = append(active, b)
			endpoints += len(b.Endpoints)
		}
	}
	var p upstreamPlan
	if endpoints == 0 {
		return p
	}
	p.Repeat = max(1, (tries+endpoints-1)/endpoints)
	weights, rounded := entryWeights(active)
	p.Rounded = rounded
	seen := map[string]bool{}
	for i, b := range active {
		for _, e := range b.Endpoints {
			if _, err := netip.ParseAddr(e.Host); err != nil && !seen[e.Host] {
				seen[e.Host] = true
				p.Hostnames = append(p.Hostnames, e.Host)
			}
			args := []string{hostPort(e.Host, e.Port)}
			if len(active) > 1 && !allEqual(weights) {
				args = append(args, "weight="+strconv.Itoa(weights[i]))
			}
			args = append(args, "max_fails=0")
			for range p.Repeat {
				p.Servers = append(p.Servers, directive("server", args...))
			}
		}
	}
	return p
}

// entryWeights returns the weight of one entry of each backend:
// proportional to weight/len(endpoints), as small integers.
func entryWeights(bs []*translate.BackendRef) ([]int, bool) {
	l := 1
	exact := true
	for _, b := range bs {
		l = lcm(l, len(b.Endpoints))
		if l > maxEntryWeight {
			exact = false
			break
		}
	}
	ws := make([]int, len(bs))
	if exact {
		g := 0
		for i, b := range bs {
			ws[i] = b.Weight * (l / len(b.Endpoints))
			g = gcd(g, ws[i])
		}
		big := false
		for i := range ws {
			ws[i] /= g
			big = big || ws[i] > maxEntryWeight
		}
		if !big {
			return ws, false
		}
	}
	// Round: scale the largest per-entry share to maxEntryWeight.
	top := 0.0
	for _, b := range bs {
		top = max(top, float64(b.Weight)/float64(len(b.Endpoints)))
	}
	for i, b := range bs {
		ws[i] = max(1, int(float64(b.Weight)/float64(len(b.Endpoints))/top*maxEntryWeight+0.5))
	}
	return ws, true
}

func allEqual(ws []int) bool {
	for _, w := range ws {
		if w != ws[0] {
			return false
		}
	}
	return true
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int) int { return a / gcd(a, b) * b }
