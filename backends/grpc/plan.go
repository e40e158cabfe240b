package grpc

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gwretry/gwretry/translate"
)

// nameOf returns the service config name of the calls match selects, or
// why a service config cannot select them, as a short cause: "headers",
// "query", "method GET", "RegularExpression" or "path /p" (not a gRPC
// method path). gRPC calls are POSTs to /package.Service/Method: an Exact
// path of that form (or a PathPrefix of it) is one method, a PathPrefix
// /package.Service every method of the service, PathPrefix / every method.
func nameOf(m translate.Match) (Name, string) {
	switch {
	case len(m.Headers) > 0:
		// A service config selects calls by method name only.
		return Name{}, "headers"
	case len(m.Query) > 0:
		// gRPC calls have no query parameters.
		return Name{}, "query"
	case m.Method != "" && m.Method != "POST":
		// Every gRPC call is a POST.
		return Name{}, "method " + m.Method
	case m.PathType == translate.PathRegex:
		// A service config names services and methods exactly.
		return Name{}, string(translate.PathRegex)
	case m.PathType == translate.PathPrefix && m.Path == "/":
		return Name{}, ""
	}
	parts := strings.Split(strings.TrimPrefix(m.Path, "/"), "/")
	// Not /package.Service/Method (a protobuf full name, then a protobuf
	// identifier).
	notMethod := "path " + m.Path
	if !strings.HasPrefix(m.Path, "/") || !serviceRE.MatchString(parts[0]) {
		return Name{}, notMethod
	}
	switch {
	case len(parts) == 1 && m.PathType == translate.PathPrefix:
		return Name{Service: parts[0]}, ""
	case len(parts) == 2 && methodRE.MatchString(parts[1]):
		// An Exact path, or a PathPrefix whose only gRPC path is itself.
		return Name{Service: parts[0], Method: parts[1]}, ""
	}
	return Name{}, notMethod
}

// rulePlan is what the service config holds for one rule.
type rulePlan struct {
	// Names are the names of the rule's methodConfig, in precedence order.
	Names []Name
	// Unnamed are why some of the rule's matches no name can express, each
	// cause once (nameOf).
	Unnamed []string
	// LostNames are the names the rule would have that a rule of higher
	// precedence (or one served on other hostnames) holds, each once, in
	// the order lost.
	LostNames []Name
	// LostTo are the rules that hold them ("HTTPRoute ns/name rule 0"),
	// each once.
	LostTo []string
	// Hostnames are the specific hostnames (not the catch-all) the rule is
	// served for.
	Hostnames []string
}

// partial says whether some of the rule's requests do not get its
// methodConfig.
func (p *rulePlan) partial() bool { return len(p.Unnamed) > 0 || len(p.LostNames) > 0 }

// plan walks the model in Gateway API precedence order (listeners, then
// virtual hosts from the most specific hostname, then their routes in
// precedence order) and gives each name to the first forwarding rule that
// claims it: gRPC rejects a service config that names a method twice, and
// the first rule is the one the Gateway API would send the calls to.
func plan(m *translate.Model) map[*translate.Rule]*rulePlan {
	out := map[*translate.Rule]*rulePlan{}
	owner := map[Name]*translate.Rule{}
	for _, r := range m.Rules {
		p := &rulePlan{}
		out[r] = p
		seenUntr, seenHost, anyHost := map[string]bool{}, map[string]bool{}, false
		for _, pl := range m.PlacementsOf(r) {
			h := pl.VirtualHost.Hostname
			anyHost = anyHost || h == ""
			if h != "" && !seenHost[h] {
				seenHost[h] = true
				p.Hostnames = append(p.Hostnames, h)
			}
			if _, why := nameOf(pl.Match.Match); why != "" && !seenUntr[why] {
				seenUntr[why] = true
				p.Unnamed = append(p.Unnamed, why)
			}
		}
		if anyHost {
			p.Hostnames = nil
		}
		slices.Sort(p.Hostnames)
	}
	vhosts := map[*translate.Rule]map[*translate.VirtualHost]bool{}
	for _, r := range m.Rules {
		vhosts[r] = map[*translate.VirtualHost]bool{}
		for _, pl := range m.PlacementsOf(r) {
			vhosts[r][pl.VirtualHost] = true
		}
	}
	// elsewhere says whether r is served on a virtual host o is not.
	elsewhere := func(r, o *translate.Rule) bool {
		for vh := range vhosts[r] {
			if !vhosts[o][vh] {
				return true
			}
		}
		return false
	}
	// lost and lostTo are p.LostNames and p.LostTo as sets. A name has one
	// owner; the caveat names it, and the rule that holds it, whether that
	// rule takes precedence or is served on other hostnames (a service
	// config has no hostnames).
	lost := map[*rulePlan]map[Name]bool{}
	lostTo := map[*rulePlan]map[*translate.Rule]bool{}
	lose := func(p *rulePlan, o *translate.Rule, n Name) {
		if lost[p] == nil {
			lost[p], lostTo[p] = map[Name]bool{}, map[*translate.Rule]bool{}
		}
		if !lost[p][n] {
			lost[p][n] = true
			p.LostNames = append(p.LostNames, n)
		}
		if !lostTo[p][o] {
			lostTo[p][o] = true
			p.LostTo = append(p.LostTo, fmt.Sprintf("HTTPRoute %s rule %d", o.Route, o.Index))
		}
	}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				r := rm.Rule
				n, why := nameOf(rm.Match)
				if why != "" || !r.Forwards() {
					continue
				}
				p := out[r]
				switch o, taken := owner[n]; {
				case !taken:
					owner[n] = r
					p.Names = append(p.Names, n)
				case o != r:
					lose(p, o, n)
				}
			}
		}
	}
	// A name held by a rule served on fewer virtual hosts than a rule with
	// a wider name takes the calls it names from the wider rule on the
	// other hosts too: the Gateway API sends those to the wider rule, the
	// channel's service config to the narrower one.
	// Each name has one owner, so the empty name is looked at once and a
	// service's names once per service-wide name: n log n in the names.
	names := sortedNames(owner)
	byService := map[string][]Name{}
	for _, n := range names {
		byService[n.Service] = append(byService[n.Service], n)
	}
	for _, r := range m.Rules {
		for _, wide := range out[r].Names {
			var narrower []Name
			switch {
			case wide.Service == "":
				narrower = names
			case wide.Method == "":
				narrower = byService[wide.Service]
			}
			for _, n := range narrower {
				if o := owner[n]; o != r && covers(wide, n) && elsewhere(r, o) {
					lose(out[r], o, n)
				}
			}
		}
	}
	return out
}

// covers says whether wide names every call n names, and more.
func covers(wide, n Name) bool {
	switch {
	case wide == n:
		return false
	case wide.Service == "":
		return true
	}
	return wide.Method == "" && wide.Service == n.Service
}

// sortedNames returns the names of owner in a stable order.
func sortedNames(owner map[Name]*translate.Rule) []Name {
	out := make([]Name, 0, len(owner))
	for n := range owner {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Name) int { return strings.Compare(a.Service+"/"+a.Method, b.Service+"/"+b.Method) })
	return out
}

// The HTTP status gRPC gives a response without grpc-status
// (grpc/grpc doc/http-grpc-status-mapping.md). grpc-go 1.84 lacks the 431
// row (it gives UNKNOWN); gRPC Java and the document give INTERNAL.
func httpStatus(code int) []string {
	switch code {
	case 400:
		return []string{"INTERNAL"}
	case 431:
		return []string{"INTERNAL", "UNKNOWN"}
	case 401:
		return []string{"UNAUTHENTICATED"}
	case 403:
		return []string{"PERMISSION_DENIED"}
	case 404:
		return []string{"UNIMPLEMENTED"}
	case 429, 502, 503, 504:
		return []string{"UNAVAILABLE"}
	}
	return []string{"UNKNOWN"}
}

// retryableCodes maps the rule's HTTP codes to gRPC statuses, with
// UNAVAILABLE always (the status of a call whose connection fails: the
// Gateway API retries connection errors whatever codes says). Sorted by
// status number.
func retryableCodes(codes []int) []string {
	want := map[string]bool{"UNAVAILABLE": true}
	for _, c := range codes {
		for _, s := range httpStatus(c) {
			want[s] = true
		}
	}
	var out []string
	for _, s := range statusCodes {
		if want[s] {
			out = append(out, s)
		}
	}
	return out
}

// Backoff settings. gRPC waits initialBackoff × multiplier^n, capped at
// maxBackoff, times a random factor in [0.8, 1.2] (gRFC A6 as amended;
// grpc-go 1.84 stream.go). initialBackoff is 1.25 × the rule's backoff so
// that the shortest first wait is the backoff; maxBackoff is 10 ×
// initialBackoff, as gRFC A44 derives it.
const (
	multiplier = 2
	// defaultBackoff is A44's base interval for a policy without one.
	defaultBackoff = 25 * time.Millisecond
	// minBackoff is the least initialBackoff gwretry writes (A44 raises
	// smaller values to it): A6 needs a positive one.
	minBackoff = time.Millisecond
)

// initialBackoff returns the initialBackoff for a rule's backoff.
func initialBackoff(b *translate.Duration) time.Duration {
	switch {
	case b == nil:
		return defaultBackoff
	case b.Value == 0:
		return minBackoff
	}
	return max(b.Value+b.Value/4, minBackoff)
}

// build returns the service config for the model: one methodConfig per
// rule with names, in the model's rule order.
func build(m *translate.Model, plans map[*translate.Rule]*rulePlan, throttling *RetryThrottling) *ServiceConfig {
	sc := &ServiceConfig{MethodConfig: []MethodConfig{}, RetryThrottling: throttling}
	for _, r := range m.Rules {
		p := plans[r]
		if len(p.Names) == 0 {
			continue
		}
		mc := MethodConfig{Name: p.Names}
		if d := r.Timeouts.Request; d != nil && !d.IsZero() {
			mc.Timeout = protoDuration(d.Value)
		}
		if rt := r.Retry; rt != nil && rt.Attempts > 0 {
			ib := initialBackoff(rt.Backoff)
			mc.RetryPolicy = &RetryPolicy{
				MaxAttempts:          min(rt.Attempts, maxAttemptsCap-1) + 1,
				InitialBackoff:       protoDuration(ib),
				MaxBackoff:           protoDuration(10 * ib),
				BackoffMultiplier:    multiplier,
				RetryableStatusCodes: retryableCodes(rt.Codes),
			}
		}
		sc.MethodConfig = append(sc.MethodConfig, mc)
	}
	return sc
}
