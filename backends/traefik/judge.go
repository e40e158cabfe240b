package traefik

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/translate"
)

// Traefik's defaults where the files say nothing (pkg/config/dynamic,
// pkg/server/service/transport.go, cenkalti/backoff v4).
const (
	// defaultDialTimeout applies when a servers transport has no
	// forwardingTimeouts, or no transport is named.
	defaultDialTimeout = 30 * time.Second
	// defaultMaxIdleConnsPerHost is the static serversTransport default:
	// keep-alive on.
	defaultMaxIdleConnsPerHost = 200
	// backoffJitter: each wait is the interval times [0.5, 1.5].
	backoffJitter = 0.5
	// proxyTimeoutStatus is what Traefik answers when responseHeaderTimeout
	// or dialTimeout cuts a try (ComputeStatusCode: a timeout is 504).
	proxyTimeoutStatus = 504
	// emptyWeightedStatus and noServerStatus: Traefik's "no available
	// server" answer.
	noServerStatus = 503
)

var routerNameRE = regexp.MustCompile(`^m[0-9]{4,}-(.+)$`)

// Observe reads traefik.yaml and dynamic.yaml back with strict decoding
// into the package's own structs (the names Traefik's file provider reads)
// and derives, for every rule and method class, what Traefik does with its
// requests. It knows Traefik's semantics, not gwretry's plan: the routers
// of a rule are found by name, and everything else is followed from them.
func (b *Backend) Observe(m *translate.Model, opts translate.Options, files []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	var haveStatic, haveDynamic bool
	for _, f := range files {
		switch f.Path {
		case staticPath:
			haveStatic = f.Data != nil || f.Spooled != ""
		case dynamicPath:
			haveDynamic = f.Data != nil || f.Spooled != ""
		}
	}
	if !haveStatic || !haveDynamic {
		return nil, fmt.Errorf("%s and %s are both needed", staticPath, dynamicPath)
	}
	st, err := translate.FileParsed(files, staticPath, parseStatic)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", staticPath, err)
	}
	if err := checkDynamicFile(st.Providers.File.Filename); err != nil {
		return nil, fmt.Errorf("%s: %w", staticPath, err)
	}
	d, err := translate.FileParsed(files, dynamicPath, parseDynamic)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dynamicPath, err)
	}
	sup, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	// Which entry points terminate TLS is read in Traefik's terms and
	// must be the model's: a TLS listener served as plain HTTP (or the
	// reverse) is no behaviour of the rule's but a broken listener.
	tobs, err := observeDecodedTLS(st, d, m.CertSource)
	if err != nil {
		return nil, err
	}
	for _, l := range m.Listeners {
		if t, ok := tobs.terminates[l.Name]; ok && t != l.TLS {
			return nil, fmt.Errorf("entry point %s: terminates TLS %v, but listener %s has TLS %v", l.Name, t, l.Name, l.TLS)
		}
	}
	j := &judge{d: d, st: st, v37: sup.StatusRetry}
	byRule := map[string][]string{}
	for name := range d.HTTP.Routers {
		if sm := routerNameRE.FindStringSubmatch(name); sm != nil {
			byRule[sm[1]] = append(byRule[sm[1]], name)
		}
	}
	// The hosts of the TLS routers per entry point: a more specific one
	// takes the SNI names it covers from a less specific one.
	tlsHosts := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(d.HTTP.Routers)) {
		rt := d.HTTP.Routers[name]
		if rt.TLS == nil {
			continue
		}
		h, err := routerHost(rt.Rule)
		if err != nil {
			return nil, fmt.Errorf("router %s: %w", name, err)
		}
		for _, ep := range rt.EntryPoints {
			tlsHosts[ep] = append(tlsHosts[ep], h)
		}
	}
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	for _, r := range m.Rules {
		routers := byRule[r.Name]
		slices.Sort(routers)
		if len(routers) == 0 {
			continue
		}
		// The certificate Traefik presents for each TLS entry point and
		// host that routes to the rule.
		var tlsBy map[string]translate.Certificate
		for _, rn := range routers {
			rt := d.HTTP.Routers[rn]
			if rt.TLS == nil {
				continue
			}
			f, err := j.facts(rt)
			if err != nil {
				return nil, fmt.Errorf("router %s: %w", rn, err)
			}
			h, err := routerHost(rt.Rule)
			if err != nil {
				return nil, fmt.Errorf("router %s: %w", rn, err)
			}
			if tlsBy == nil {
				tlsBy = map[string]translate.Certificate{}
			}
			tlsBy[translate.TLSKey(f.port, h)] = tobs.store.presented(h, tlsHosts[rt.EntryPoints[0]])
		}
		perClass := map[translate.MethodClass]translate.Behaviour{}
		for _, c := range r.MethodClasses() {
			var first translate.Behaviour
			firstName := ""
			for _, rn := range routers {
				for _, ep := range d.HTTP.Routers[rn].EntryPoints {
					if _, ok := st.EntryPoints[ep]; !ok {
						return nil, fmt.Errorf("router %s: entry point %s is not in %s", rn, ep, staticPath)
					}
				}
				bh, serves, err := j.router(r, d.HTTP.Routers[rn], c)
				if err != nil {
					return nil, fmt.Errorf("router %s: %w", rn, err)
				}
				switch {
				case !serves:
					// Its method is of the other class.
				case firstName == "":
					first, firstName = bh, rn
				case reflect.DeepEqual(first, bh):
				case sameButRedirectCode(&first, bh):
					// Routers of one method class (GET and HEAD) that
					// redirect with different codes: no one code.
				default:
					return nil, fmt.Errorf("routers %s and %s of rule %s behave differently: %+v / %+v",
						firstName, rn, r.Name, first, bh)
				}
			}
			if firstName == "" {
				continue
			}
			first.TLS = tlsBy
			perClass[c] = first
		}
		out[r.Name] = perClass
	}
	return out, nil
}

type judge struct {
	d   *dynamicConfig
	st  *staticConfig
	v37 bool
	// known holds the facts of each router read so far: a router is
	// read once per method class and once for its TLS host, and facts
	// parses its rule.
	known map[*router]routerFacts
}

// chain is what a router's middlewares do.
type chain struct {
	retry *retry
	// rewrites maps a status answered inside the chain to what the errors
	// middlewares make of it.
	rewrites map[int]int
}

func (j *judge) chain(names []string) (chain, error) {
	c := chain{rewrites: map[int]int{}}
	for _, n := range names {
		mw := j.d.HTTP.Middlewares[n]
		if mw == nil {
			return c, fmt.Errorf("middleware %s is not defined", n)
		}
		types := 0
		for _, set := range []bool{mw.Retry != nil, mw.Errors != nil, mw.Headers != nil, mw.RedirectRegex != nil,
			mw.ReplacePath != nil, mw.ReplacePathRegex != nil} {
			if set {
				types++
			}
		}
		switch {
		case types > 1:
			return c, fmt.Errorf("middleware %s has two types", n)
		case mw.Headers != nil, mw.RedirectRegex != nil, mw.ReplacePath != nil, mw.ReplacePathRegex != nil:
			// Filters: read by readFilters.
		case mw.Retry != nil:
			if c.retry != nil {
				return c, fmt.Errorf("two Retry middlewares")
			}
			if mw.Retry.Attempts <= 0 {
				return c, fmt.Errorf("middleware %s: Traefik refuses attempts %d", n, mw.Retry.Attempts)
			}
			if !j.v37 && (mw.Retry.Status != nil || mw.Retry.Timeout != "" || mw.Retry.RetryNonIdempotentMethod ||
				mw.Retry.MaxRequestBodyBytes != nil) {
				return c, fmt.Errorf("middleware %s uses fields Traefik 3.6 does not know: it drops the whole file", n)
			}
			c.retry = mw.Retry
		case mw.Errors != nil:
			if svc := mw.Errors.Service; svc != noopService && j.d.HTTP.Services[svc] == nil {
				return c, fmt.Errorf("middleware %s: error service %s is not defined", n, svc)
			}
			codes, err := expandCodes(mw.Errors.Status)
			if err != nil {
				return c, fmt.Errorf("middleware %s: %w", n, err)
			}
			for _, code := range codes {
				to := code
				for from, v := range mw.Errors.StatusRewrites {
					fc, err := expandCodes([]string{from})
					if err != nil {
						return c, fmt.Errorf("middleware %s: %w", n, err)
					}
					if slices.Contains(fc, code) {
						to = v
					}
				}
				// The error page is fetched from mw.Errors.Service and sent
				// with the rewritten code, whatever that service answers.
				if _, seen := c.rewrites[code]; !seen {
					c.rewrites[code] = to
				}
			}
		default:
			return c, fmt.Errorf("middleware %s has no type", n)
		}
	}
	return c, nil
}

// target is where a router's service sends requests.
type target struct {
	// answers are the statuses Traefik answers itself, by weight.
	answers map[int]int
	// proxied is the total weight of shares sent to servers, and
	// transports the servers transports used for them.
	proxied    int
	transports []string
	// mirroring is the mirroring service the requests go through first.
	mirroring *mirroring
}

func (j *judge) service(name string, weight int, t *target, depth int) error {
	if depth > 8 {
		return errors.New("services nest too deep")
	}
	if name == noopService {
		t.answers[noopStatus] += weight
		return nil
	}
	s := j.d.HTTP.Services[name]
	if s == nil {
		return fmt.Errorf("service %s is not defined", name)
	}
	switch {
	case (s.LoadBalancer != nil) && (s.Weighted != nil || s.Mirroring != nil) || s.Weighted != nil && s.Mirroring != nil:
		return fmt.Errorf("service %s has two types", name)
	case s.Mirroring != nil:
		if depth > 0 || t.mirroring != nil {
			return fmt.Errorf("service %s: a mirroring service below another service", name)
		}
		t.mirroring = s.Mirroring
		return j.service(s.Mirroring.Service, weight, t, depth+1)
	case s.LoadBalancer != nil:
		if len(s.LoadBalancer.Servers) == 0 {
			t.answers[noServerStatus] += weight
			return nil
		}
		t.proxied += weight
		t.transports = append(t.transports, s.LoadBalancer.ServersTransport)
		return nil
	case s.Weighted != nil:
		for _, c := range s.Weighted.Services {
			if c.Weight > 0 {
				if err := j.service(c.Name, weight*c.Weight, t, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return fmt.Errorf("service %s has no type", name)
}

// router derives the behaviour of one router for one method class;
// serves is false when the router's method is of the other class.
func (j *judge) router(r *translate.Rule, rt *router, class translate.MethodClass) (translate.Behaviour, bool, error) {
	bh, err := j.routerBehaviour(r, rt, class)
	if err != nil {
		return bh, false, err
	}
	f, err := j.facts(rt)
	if err != nil {
		return bh, false, err
	}
	return bh, f.serves(class), nil
}

func (j *judge) routerBehaviour(r *translate.Rule, rt *router, class translate.MethodClass) (translate.Behaviour, error) {
	var bh translate.Behaviour
	ch, err := j.chain(rt.Middlewares)
	if err != nil {
		return bh, err
	}
	f, err := j.facts(rt)
	if err != nil {
		return bh, err
	}
	fl, answered, err := j.readFilters(r, rt, f, class)
	if err != nil {
		return bh, err
	}
	bh.Filters = fl
	if answered != 0 {
		// A redirect answers every request before the service is used.
		bh.Answer = answered
		return bh, nil
	}
	t := &target{answers: map[int]int{}}
	if err := j.service(rt.Service, 1, t, 0); err != nil {
		return bh, err
	}
	if t.mirroring != nil {
		ms, err := j.readMirrors(r, t.mirroring, ch.retry != nil && ch.retry.Attempts > 1)
		if err != nil {
			return bh, err
		}
		bh.Filters.Mirrors = ms
	}
	answer := func(code int) int {
		if to, ok := ch.rewrites[code]; ok {
			return to
		}
		return code
	}
	if t.proxied == 0 {
		// Nothing is proxied: Traefik answers every request itself.
		codes := map[int]bool{}
		for c := range t.answers {
			codes[answer(c)] = true
		}
		if len(codes) != 1 {
			codes = map[int]bool{noServerStatus: true}
		}
		for c := range codes {
			bh.Answer = c
		}
		return bh, nil
	}
	// Shares answered by Traefik: is the invalid share answered 500, in
	// the proportion the Gateway API gives it?
	answered500, all500 := 0, true
	for c, w := range t.answers {
		if answer(c) == 500 {
			answered500 += w
		} else {
			all500 = false
		}
	}
	validWeight := 0
	for _, b := range r.Backends {
		validWeight += max(b.Weight, 0)
	}
	// answered / proxied must be the invalid weight / the valid weight.
	bh.InvalidShareAnswered = all500 && answered500*validWeight == r.InvalidWeight()*t.proxied

	keepAlive := false
	var try translate.Timer
	for i, tn := range t.transports {
		tt, ka, err := j.transport(tn)
		if err != nil {
			return bh, err
		}
		keepAlive = keepAlive || ka
		if i == 0 {
			try = tt
		} else if tt != try {
			return bh, fmt.Errorf("the servers of one rule use different timeouts (%s, %s)", try, tt)
		}
	}
	bh.TryTimeout = try
	bh.RequestTimeout = translate.Timer{Kind: translate.TimerNone}
	bh.TimeoutStatus = proxyTimeoutStatus
	bh.ConnErrors = translate.ConnRetryNone
	bh.MaxRetriedBody = -1
	// Go's transport re-sends an idempotent request once by itself when a
	// reused connection closes before any response (errServerClosedIdle);
	// with MaxIdleConnsPerHost < 0 no connection is ever reused.
	bh.ExtraRetries = class == translate.Idempotent && keepAlive

	rr := ch.retry
	if rr == nil || rr.Attempts < 2 {
		return bh, nil
	}
	bh.Retries = rr.Attempts - 1
	bh.RetriesSource = fmt.Sprintf("attempts %d, the first try included", rr.Attempts)
	// Before the request is written: dial errors, refused connections, any
	// method.
	bh.ConnErrors = translate.ConnRetryUnsent
	if rr.InitialInterval != "" {
		iv, err := traefikDurationValue(rr.InitialInterval)
		if err != nil {
			return bh, fmt.Errorf("initialInterval: %w", err)
		}
		if iv > 0 {
			// newBackOff: cenkalti's ExponentialBackOff with a multiplier
			// that doubles the interval over the attempts.
			bh.Backoff = translate.Backoff{Base: iv, Multiplier: math.Pow(2, 1/float64(rr.Attempts-1)), Max: maxInterval,
				JitterMin: 1 - backoffJitter, JitterMax: 1 + backoffJitter, MaxElapsed: maxElapsed}
		}
		bh.MinGap = bh.Backoff.MinGap(bh.Retries)
	}
	if j.v37 && rr.Timeout != "" {
		d, err := traefikDurationValue(rr.Timeout)
		if err != nil {
			return bh, fmt.Errorf("timeout: %w", err)
		}
		// No further retry once the timeout has passed since the start.
		bh.RetryBudget = d
	}
	if !j.v37 || len(rr.Status) == 0 {
		return bh, nil
	}
	if class == translate.NonIdempotent && !rr.RetryNonIdempotentMethod {
		return bh, nil
	}
	codes, err := expandCodes(rr.Status)
	if err != nil {
		return bh, err
	}
	bh.Codes = codes
	limit := int64(2 << 20)
	if rr.MaxRequestBodyBytes != nil {
		limit = *rr.MaxRequestBodyBytes
	}
	bh.MaxRetriedBody = max(limit, -1)
	// Failures after sending become 502 and a cut try 504 (inferred from
	// Traefik 3.7's source).
	if slices.Contains(codes, 502) {
		bh.ConnErrors = translate.ConnRetryAll
	}
	bh.TimeoutRetried = slices.Contains(codes, proxyTimeoutStatus)
	return bh, nil
}

// transport returns the per-try timer of a servers transport and whether
// it keeps upstream connections alive. "" is Traefik's default transport.
func (j *judge) transport(name string) (translate.Timer, bool, error) {
	dial, header := defaultDialTimeout, time.Duration(0)
	idle := defaultMaxIdleConnsPerHost
	if name != "" {
		st := j.d.HTTP.ServersTransports[name]
		if st == nil {
			return translate.Timer{}, false, fmt.Errorf("servers transport %s is not defined", name)
		}
		idle = st.MaxIdleConnsPerHost
		if idle == 0 {
			idle = defaultMaxIdleConnsPerHost // Go's default when 0
		}
		if ft := st.ForwardingTimeouts; ft != nil {
			var err error
			if ft.DialTimeout != "" {
				if dial, err = traefikDurationValue(ft.DialTimeout); err != nil {
					return translate.Timer{}, false, fmt.Errorf("dialTimeout: %w", err)
				}
			}
			if ft.ResponseHeaderTimeout != "" {
				if header, err = traefikDurationValue(ft.ResponseHeaderTimeout); err != nil {
					return translate.Timer{}, false, fmt.Errorf("responseHeaderTimeout: %w", err)
				}
			}
		}
	}
	t := translate.Timer{Kind: translate.TimerNone}
	switch {
	case header > 0:
		// Go's ResponseHeaderTimeout runs from the end of writing the
		// request to the response headers; dialTimeout bounds connecting.
		t = translate.Timer{Kind: translate.TimerHeaders, Value: header}
	case dial > 0:
		t = translate.Timer{Kind: translate.TimerHeaders, Value: dial}
	}
	return t, idle >= 0, nil
}

// traefikDurationValue parses a duration as Traefik's file provider does:
// a bare integer is seconds, anything else a Go duration.
func traefikDurationValue(s string) (time.Duration, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %s", s)
	}
	return d, nil
}

// expandCodes expands Traefik status lists ("500", "500-599", "502,504")
// into sorted unique codes.
func expandCodes(list []string) ([]int, error) {
	var out []int
	for _, item := range list {
		for _, part := range strings.Split(item, ",") {
			lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("status %q: %w", item, err)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("status %q: %w", item, err)
				}
			}
			if a < 100 || b > 599 || a > b {
				return nil, fmt.Errorf("status %q is not a range of HTTP codes", item)
			}
			for c := a; c <= b; c++ {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// sameButRedirectCode reports whether a and b differ only in the status
// their redirects answer; it then sets a's redirect status to 0 (several).
func sameButRedirectCode(a *translate.Behaviour, b translate.Behaviour) bool {
	if a.Filters.Redirect == nil || b.Filters.Redirect == nil {
		return false
	}
	x, y := *a, b
	ra, rb := *x.Filters.Redirect, *y.Filters.Redirect
	ra.StatusCode, rb.StatusCode, x.Answer, y.Answer = 0, 0, 0, 0
	x.Filters.Redirect, y.Filters.Redirect = &ra, &rb
	if !reflect.DeepEqual(x, y) {
		return false
	}
	r := *a.Filters.Redirect
	r.StatusCode = 0
	a.Filters.Redirect = &r
	return true
}
