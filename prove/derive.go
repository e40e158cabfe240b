package prove

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/translate"
)

// Unexercised is a feature of a user's rule that no derived scenario
// tests, and why.
type Unexercised struct {
	Route   string
	Rule    int
	Feature translate.Feature
	Why     string
}

// DeriveOptions bound the scenarios Derive writes.
type DeriveOptions struct {
	// RetryNonIdempotent is the --retry-non-idempotent the configuration
	// is generated with: POST, PATCH and LOCK are then expected to be
	// retried.
	RetryNonIdempotent bool
	// Longest is the longest a scenario may wait on the backend (a
	// timeout, a backoff); features that need longer are not exercised.
	Longest time.Duration
	// NoHTTPS, when set, says why the rules' listener.https claims are not
	// exercised (no --tls-dir, a data plane prove does not run HTTPS on);
	// when "", each rule served on an HTTPS listener gets a scenario over
	// TLS that checks the certificate served.
	NoHTTPS string
}

// maxDerivedAttempts is the most retries a derived scenario waits for.
const maxDerivedAttempts = 10

// Derive turns every claim of every rule of a user's model into scenarios:
// requests that the rule's first match selects, against a scripted backend
// standing in for the rule's Services. Listed and unlisted codes, closed
// and refused connections, slow first tries, a POST with a body and
// kept-alive connections each become one scenario where the rule's values
// make it meaningful. Features no scenario can test are returned as
// Unexercised, with the reason.
func Derive(m *translate.Model, opts DeriveOptions) ([]Scenario, []Unexercised) {
	if opts.Longest <= 0 {
		opts.Longest = 20 * time.Second
	}
	services := map[string]bool{}
	for _, r := range m.Rules {
		for _, b := range r.Backends {
			services[serviceKey(b)] = true
		}
		for _, mr := range r.Filters.Mirrors {
			if mr.Backend != nil {
				services[serviceKey(mr.Backend)] = true
			}
		}
	}
	var out []Scenario
	var skipped []Unexercised
	for _, r := range m.Rules {
		skip := func(f translate.Feature, why string) {
			skipped = append(skipped, Unexercised{Route: r.Route, Rule: r.Index, Feature: f, Why: why})
		}
		if len(r.TLSListeners) > 0 {
			if sc, why := httpsScenario(m, r, services, opts); sc != nil {
				out = append(out, *sc)
			} else {
				skip(translate.FeatureListenerHTTPS, why)
			}
		}
		feats := slices.Concat(retryTimeoutFeatures(r), filterFeatures(r))
		if len(feats) == 0 {
			continue
		}
		if !r.Forwards() && r.Filters.Redirect != nil {
			// A redirect answers every request itself: its retry and
			// timeouts have nothing to act on.
			var kept []translate.Feature
			for _, f := range feats {
				if f == translate.FeatureRequestRedirect || f == translate.FeatureRequestHeaderModifier {
					kept = append(kept, f)
				} else {
					skip(f, "the rule redirects every request it matches and forwards nothing")
				}
			}
			feats = kept
		}
		user, why := userRule(m, r, services, false)
		if user == nil {
			for _, f := range feats {
				skip(f, why)
			}
			continue
		}
		d := deriver{r: r, user: user, opts: opts, feats: feats}
		scs := d.scenarios()
		covered := map[translate.Feature]bool{}
		for _, sc := range scs {
			for _, c := range sc.Claims {
				covered[c.Feature] = true
			}
		}
		for _, f := range feats {
			if !covered[f] {
				skip(f, d.why[f])
			}
		}
		out = append(out, scs...)
	}
	return out, skipped
}

// retryTimeoutFeatures are the features of r that scenarios test.
func retryTimeoutFeatures(r *translate.Rule) []translate.Feature {
	var out []translate.Feature
	for _, f := range r.Features() {
		if f.IsRetry() || f == translate.FeatureBackendRequestTimeout || f == translate.FeatureRequestTimeout {
			out = append(out, f)
		}
	}
	return out
}

func serviceKey(b *translate.BackendRef) string {
	ns, name, _ := strings.Cut(b.Service, "/")
	return fmt.Sprintf("%s.%s:%d", name, ns, b.Port)
}

// userRule finds a request that the rule's first exercisable match
// selects, on the first listener and virtual host that serve it: an HTTPS
// one when tls is set, else an HTTP one.
func userRule(m *translate.Model, r *translate.Rule, services map[string]bool, tls bool) (*UserRule, string) {
	if !r.Forwards() && r.Filters.Redirect == nil {
		return nil, "the rule forwards nothing (" + r.NoForwardReason() + ")"
	}
	why := "the rule is not served by a listener gwretry generates"
	// The rule's places from the model's index, in listener, virtual host
	// and precedence order: a walk over every listener per rule grows
	// with the square of the rules.
	for _, pl := range m.PlacementsOf(r) {
		l, vh, rm := pl.Listener, pl.VirtualHost, pl.Match
		switch {
		case l.TLS && !tls:
			why = "the rule is served only on HTTPS listeners, where prove exercises the certificate only (listener.https)"
			continue
		case !l.TLS && tls:
			continue
		case tls && vh.Certificate == nil:
			why = "the HTTPS listener has no certificate gwretry generates"
			continue
		}
		path, reason := matchRequest(rm.Match)
		if path == "" {
			why = reason
			continue
		}
		u := &UserRule{Route: r.Route, Rule: r.Index, Path: path, Method: rm.Match.Method, Header: map[string]string{},
			MatchPath: rm.Match.Path, MatchType: rm.Match.PathType, TLS: tls}
		if tls {
			u.Secret, u.CertFile = vh.Certificate.Secret, vh.Certificate.CertFile
		}
		if rw := r.Filters.Rewrite; rw != nil && rw.Path != nil {
			p, _, _ := strings.Cut(path, "?")
			if bp, ok := replacedPath(rw.Path, u, p); ok && bp != p {
				u.BackendPath = bp
			}
		}
		if vh.Hostname != "" {
			u.Host = strings.Replace(vh.Hostname, "*", "prove", 1)
		}
		for _, h := range rm.Match.Headers {
			u.Header[http.CanonicalHeaderKey(h.Name)] = h.Value
		}
		method := u.Method
		if method == "" {
			method = http.MethodGet
		}
		// A rule earlier in precedence order that also selects the
		// request would answer it: what the scenarios observed would be
		// that rule's behaviour, not this one's.
		if other := takenBy(vh.Routes, rm, method, path, u.Header); other != nil {
			why = fmt.Sprintf("the request prove would send (%s %s%s) is taken by %s rule %d, which precedes this rule", method, u.Host, path, other.Route, other.Index)
			continue
		}
		if u.Method == "" && takenBy(vh.Routes, rm, http.MethodPost, path, u.Header) != nil {
			u.NoPost = true
		}
		mine, mirrors := map[string]bool{}, map[string]bool{}
		for _, b := range r.Backends {
			mine[serviceKey(b)] = true
		}
		for _, mr := range r.Filters.Mirrors {
			if mr.Backend != nil && !mine[serviceKey(mr.Backend)] {
				mirrors[serviceKey(mr.Backend)] = true
			}
		}
		for s := range services {
			switch {
			case mine[s]:
				u.Services = append(u.Services, s)
			case mirrors[s]:
				u.Mirrors = append(u.Mirrors, s)
			default:
				u.Others = append(u.Others, s)
			}
		}
		slices.Sort(u.Services)
		slices.Sort(u.Mirrors)
		slices.Sort(u.Others)
		return u, ""
	}
	return nil, why
}

// takenBy returns the rule of the first route before rm in routes
// (precedence order) that selects the request, or nil. A regular
// expression that does not compile in Go counts as selecting it.
func takenBy(routes []*translate.RouteMatch, rm *translate.RouteMatch, method, target string, header map[string]string) *translate.Rule {
	path, rawQuery, _ := strings.Cut(target, "?")
	query, _ := url.ParseQuery(rawQuery)
	for _, o := range routes {
		if o == rm {
			return nil
		}
		if o.Rule != rm.Rule && selects(o.Match, method, path, query, header) {
			return o.Rule
		}
	}
	return nil
}

// selects reports whether mt selects a request.
func selects(mt translate.Match, method, path string, query url.Values, header map[string]string) bool {
	if mt.Method != "" && mt.Method != method {
		return false
	}
	switch mt.PathType {
	case translate.PathExact:
		if path != mt.Path {
			return false
		}
	case translate.PathRegex:
		if !regexMatches(mt.Path, path) {
			return false
		}
	default:
		p := strings.TrimSuffix(mt.Path, "/")
		if p != "" && path != p && !strings.HasPrefix(path, p+"/") {
			return false
		}
	}
	value := func(v translate.ValueMatch, got string, ok bool) bool {
		if !ok {
			return false
		}
		if v.Type == translate.StringRegex {
			return regexMatches(v.Value, got)
		}
		return got == v.Value
	}
	for _, h := range mt.Headers {
		got, ok := header[http.CanonicalHeaderKey(h.Name)]
		if !value(h, got, ok) {
			return false
		}
	}
	for _, q := range mt.Query {
		got, ok := query[q.Name]
		if !value(q, strings.Join(got, ""), ok && len(got) > 0) {
			return false
		}
	}
	return true
}

// regexMatches reports whether re matches all of s; one that Go cannot
// compile is taken to match.
func regexMatches(re, s string) bool {
	r, err := regexp.Compile("^(?:" + re + ")$")
	return err != nil || r.MatchString(s)
}

// matchRequest returns the path (and query) of a request mt selects, or ""
// and why when prove cannot make one (a regular expression).
func matchRequest(mt translate.Match) (string, string) {
	if mt.PathType == translate.PathRegex {
		return "", "the rule's matches use a path regular expression, which prove does not invert"
	}
	for _, v := range slices.Concat(mt.Headers, mt.Query) {
		if v.Type == translate.StringRegex {
			return "", "the rule's matches use a header or query regular expression, which prove does not invert"
		}
	}
	path := mt.Path
	if path == "" {
		path = "/"
	}
	if len(mt.Query) > 0 {
		q := url.Values{}
		for _, v := range mt.Query {
			q.Set(v.Name, v.Value)
		}
		path += "?" + q.Encode()
	}
	return path, ""
}

// deriver writes the scenarios of one rule.
type deriver struct {
	r     *translate.Rule
	user  *UserRule
	opts  DeriveOptions
	feats []translate.Feature
	// why a feature got no scenario.
	why map[translate.Feature]string
	n   int
}

func (d *deriver) has(f translate.Feature) bool { return slices.Contains(d.feats, f) }

func (d *deriver) skip(f translate.Feature, why string) {
	if d.why == nil {
		d.why = map[translate.Feature]string{}
	}
	if d.why[f] == "" {
		d.why[f] = why
	}
}

// scenario names and places a scenario, keeping only the claims of
// features the rule sets; it returns false when none is left.
func (d *deriver) scenario(name, method string, sc Scenario) (Scenario, bool) {
	rule := fmt.Sprintf("%s rule %d", d.r.Route, d.r.Index)
	if d.r.RuleName != "" {
		rule += " (" + d.r.RuleName + ")"
	}
	sc.Name = rule + ": " + name
	sc.Method = method
	sc.User = d.user
	sc.RetryNonIdempotent = d.opts.RetryNonIdempotent
	var claims []Claim
	for _, c := range sc.Claims {
		if d.has(c.Feature) {
			claims = append(claims, c)
		}
	}
	var checks []Check
	for _, c := range sc.Checks {
		if d.has(c.Feature) {
			checks = append(checks, c)
		}
	}
	sc.Claims, sc.Checks = claims, checks
	return sc, len(claims)+len(checks) > 0
}

func (d *deriver) scenarios() []Scenario {
	var out []Scenario
	add := func(name, method string, sc Scenario) {
		if s, ok := d.scenario(name, method, sc); ok {
			out = append(out, s)
		}
	}
	// The method of the match the request was made from: a rule with
	// several matches may select other methods elsewhere.
	method := http.MethodGet
	if d.user.Method != "" {
		method = d.user.Method
	}
	if !d.r.Forwards() {
		d.filters(method, add)
		return out
	}
	retried := !translate.IsNonIdempotent(method) || d.opts.RetryNonIdempotent
	rt := d.r.Retry
	attempts, codes := 0, []int(nil)
	if rt != nil {
		attempts, codes = rt.Attempts, rt.Codes
	}
	if attempts > maxDerivedAttempts {
		d.skip(translate.FeatureRetryAttempts, fmt.Sprintf("attempts %d is more than the %d retries prove waits for", attempts, maxDerivedAttempts))
	}
	ep := func(s flaky.Script) []Endpoint { return []Endpoint{{Name: "a", Script: s}} }
	notRetried := func(f translate.Feature) Claim {
		return Claim{Feature: f, Shortfall: retriedByDefault, Otherwise: []Expect{{Hits: AtLeast(2)}}}
	}

	// Listed codes: each is retried once.
	for i, c := range codes {
		if i == 4 {
			break
		}
		switch {
		case attempts == 0:
			add(fmt.Sprintf("code %d with attempts 0 not retried", c), method, Scenario{Endpoints: ep(flaky.FailFirst(1, c)),
				Test: Test{Spec: Expect{Status: c, Hits: Exactly(1)}, Claims: []Claim{
					{Feature: translate.FeatureRetryAttempts, Shortfall: attemptsShort, Otherwise: []Expect{{Hits: AtLeast(2)}}}}}})
		case retried:
			add(fmt.Sprintf("code %d retried", c), method, Scenario{Endpoints: ep(flaky.FailFirst(1, c)),
				Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{codesClaim(c)}}})
		default:
			add(fmt.Sprintf("code %d on %s not retried", c, method), method, Scenario{Endpoints: ep(flaky.FailFirst(1, c)),
				Test: Test{Spec: Expect{Status: c, Hits: Exactly(1)}, Claims: []Claim{notRetried(translate.FeatureRetryCodes)}}})
		}
	}
	// An unlisted code is not retried.
	if rt != nil {
		for _, u := range []int{503, 500, 502, 504, 429} {
			if !slices.Contains(codes, u) {
				add(fmt.Sprintf("unlisted code %d not retried", u), method, Scenario{Endpoints: ep(flaky.AlwaysFail(u)),
					Test: Test{Spec: Expect{Status: u, Hits: Exactly(1)}, Claims: []Claim{
						{Feature: translate.FeatureRetryCodes, Shortfall: Shortfall{Class: UnlistedCodeRetried, Code: u}, Otherwise: []Expect{{Hits: AtLeast(2)}}},
						{Feature: translate.FeatureRetryAttempts, Shortfall: Shortfall{Class: UnlistedCodeRetried, Code: u}, Otherwise: []Expect{{Hits: AtLeast(2)}}},
					}}})
				break
			}
		}
	}
	// Every try fails: exactly attempts retries.
	if len(codes) > 0 && attempts >= 1 && attempts <= maxDerivedAttempts && retried {
		add(fmt.Sprintf("code %d every time: %s", codes[0], plural(attempts, "retry", "retries")), method, Scenario{Endpoints: ep(flaky.AlwaysFail(codes[0])),
			Test: Test{Spec: Expect{Status: codes[0], Hits: Exactly(attempts + 1)}, Claims: []Claim{
				codesClaim(codes[0]), attemptsClaim(attempts)}}})
	}
	// Connections closed before an answer, and refused.
	if rt != nil {
		switch {
		case attempts == 0:
			add("connection closed with attempts 0 not retried", method, Scenario{Endpoints: ep(flaky.CloseFirst(1)),
				Test: Test{Spec: Expect{Failed: true, Hits: Exactly(1)}, Claims: []Claim{
					{Feature: translate.FeatureRetryAttempts, Shortfall: attemptsShort, Otherwise: []Expect{{Hits: AtLeast(2)}}}}}})
		case retried:
			add("connection closed retried", method, Scenario{Endpoints: ep(flaky.CloseFirst(1)),
				Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
					{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: closedShort,
						Otherwise: []Expect{{Hits: Exactly(1), Failed: true}}}}}})
			add("connection refused retried on another endpoint", method, Scenario{
				Endpoints: []Endpoint{{Name: "broken", Refused: true}, {Name: "healthy"}}, Requests: 4,
				Test: Test{Spec: Expect{Status: 200, Hits: Exactly(1), LastEndpoint: "healthy"}, Claims: []Claim{
					{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: refusedShort,
						Otherwise: []Expect{{Failed: true}}}}}})
		default:
			add(fmt.Sprintf("connection closed on %s not retried", method), method, Scenario{Endpoints: ep(flaky.CloseFirst(1)),
				Test: Test{Spec: Expect{Failed: true, Hits: Exactly(1)}, Claims: []Claim{notRetried(translate.FeatureRetryConnectionErrors)}}})
		}
	}
	// Backoff between tries.
	if rt != nil && rt.Backoff != nil && rt.Backoff.Value > 0 {
		b := rt.Backoff.Value
		switch {
		case len(codes) == 0 || attempts == 0 || !retried:
			d.skip(translate.FeatureRetryBackoff, "the rule retries no listed code on "+method+", so no gap between tries can be measured")
		case 2*b > d.opts.Longest:
			d.skip(translate.FeatureRetryBackoff, fmt.Sprintf("backoff %s is longer than prove waits", rt.Backoff.Text))
		default:
			n := min(2, attempts)
			add(fmt.Sprintf("backoff of %s between tries", rt.Backoff.Text), method, Scenario{Endpoints: ep(flaky.FailFirst(n, codes[0])),
				Test: Test{Spec: Expect{Status: 200, Hits: Exactly(n + 1), MinGap: b}, Claims: []Claim{
					codesClaim(codes[0]),
					{Feature: translate.FeatureRetryBackoff, InEffect: true, Shortfall: Shortfall{Class: NoDelay, Timer: b}, Otherwise: []Expect{{ShortGap: b}}}}}})
		}
	}
	d.timeouts(method, retried, attempts, add)
	// A POST with a body on a rule that accepts any method.
	if d.user.Method == "" && d.user.NoPost && len(codes) > 0 && attempts >= 1 {
		d.skip(translate.FeatureRetryCodes, "a POST to the request's path is taken by a rule that precedes this one")
	}
	if d.user.Method == "" && !d.user.NoPost && len(codes) > 0 && attempts >= 1 {
		if d.opts.RetryNonIdempotent {
			add(fmt.Sprintf("POST with a 4 KiB body, code %d retried", codes[0]), http.MethodPost, Scenario{
				Endpoints: ep(flaky.FailFirst(1, codes[0])), BodyBytes: 4 << 10,
				Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2)}, Claims: []Claim{
					{Feature: translate.FeatureRetryCodes, InEffect: true, Shortfall: bodyShort,
						Otherwise: []Expect{{Status: codes[0], Hits: Exactly(1)}}}}}})
		} else {
			add(fmt.Sprintf("POST with a 4 KiB body, code %d not retried", codes[0]), http.MethodPost, Scenario{
				Endpoints: ep(flaky.FailFirst(1, codes[0])), BodyBytes: 4 << 10,
				Test: Test{Spec: Expect{Status: codes[0], Hits: Exactly(1)}, Claims: []Claim{notRetried(translate.FeatureRetryCodes)}}})
		}
	}
	// A kept-alive upstream connection that the backend closes as the
	// proxy reuses it.
	if rt != nil {
		switch {
		case attempts == 0:
			add("kept-alive connection closed, attempts 0", method, Scenario{KeepAlive: true,
				Endpoints: ep(flaky.Script{Then: flaky.Action{CloseIfReused: true}}),
				Test: Test{Spec: Expect{Answered: true, Hits: Exactly(1)}, Claims: []Claim{
					{Feature: translate.FeatureRetryAttempts, Shortfall: resentShort, Otherwise: []Expect{{Hits: AtLeast(2)}}},
					{Feature: translate.FeatureRetryConnectionErrors, Shortfall: closedUnanswered, Otherwise: []Expect{{NoAnswer: true}}}}}})
		case retried:
			add("kept-alive connection closed, retried", method, Scenario{KeepAlive: true,
				Endpoints: ep(flaky.Script{First: []flaky.Action{{}, {CloseIfReused: true}}}),
				Test: Test{Spec: Expect{Status: 200, Hits: Between(1, 2)}, Claims: []Claim{
					{Feature: translate.FeatureRetryConnectionErrors, InEffect: true, Shortfall: closedShort,
						Otherwise: []Expect{{Hits: Exactly(1), Failed: true}}},
					{Feature: translate.FeatureRetryAttempts, Shortfall: resentShort, Otherwise: []Expect{{Hits: AtLeast(3)}}}}}})
		}
	}
	d.filters(method, add)
	return out
}

// timeouts adds the scenarios of the rule's timeouts.
func (d *deriver) timeouts(method string, retried bool, attempts int, add func(string, string, Scenario)) {
	t := d.r.Timeouts
	var req, be time.Duration
	if t.Request != nil {
		req = t.Request.Value
	}
	if t.BackendRequest != nil {
		be = t.BackendRequest.Value
	}
	ep := func(s flaky.Script) []Endpoint { return []Endpoint{{Name: "a", Script: s}} }
	if be > 0 {
		slow := be + max(be/2, 500*time.Millisecond)
		switch {
		case 2*slow > d.opts.Longest:
			d.skip(translate.FeatureBackendRequestTimeout, fmt.Sprintf("backendRequest %s is longer than prove waits", t.BackendRequest.Text))
			d.skip(translate.FeatureRetryBackendTimeout, fmt.Sprintf("backendRequest %s is longer than prove waits", t.BackendRequest.Text))
		case req > 0 && req <= slow+500*time.Millisecond:
			d.skip(translate.FeatureBackendRequestTimeout, "the request timeout ends the request about when the backendRequest timeout would cut the try")
			d.skip(translate.FeatureRetryBackendTimeout, "the request timeout ends the request about when the backendRequest timeout would cut the try")
		case attempts >= 1 && retried:
			add(fmt.Sprintf("slow first try cut after %s and retried", t.BackendRequest.Text), method, Scenario{
				Endpoints: ep(flaky.DelayFirst(1, slow)),
				Test: Test{Spec: Expect{Status: 200, Hits: Exactly(2), FirstCut: cutWindow(be), Duration: &Window{Max: slow}}, Claims: []Claim{
					{Feature: translate.FeatureBackendRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: TryNotCut, Timer: be},
						Otherwise: []Expect{{Duration: &Window{Min: slow}}}},
					{Feature: translate.FeatureRetryBackendTimeout, InEffect: true, Shortfall: cutTryShort,
						Otherwise: []Expect{{Hits: Exactly(1)}}}}}})
		default:
			d.skip(translate.FeatureRetryBackendTimeout, "the rule does not retry "+method+" requests")
			add(fmt.Sprintf("slow try cut after %s", t.BackendRequest.Text), method, Scenario{
				Endpoints: ep(flaky.DelayAlways(slow)),
				Test: Test{Spec: Expect{Status: 504, Hits: Exactly(1), FirstCut: cutWindow(be)}, Claims: []Claim{
					{Feature: translate.FeatureBackendRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: TryNotCut, Timer: be},
						Otherwise: []Expect{{Status: 200}}}}}})
		}
	}
	if req > 0 {
		slow := req + 600*time.Millisecond
		switch {
		case slow > d.opts.Longest:
			d.skip(translate.FeatureRequestTimeout, fmt.Sprintf("request %s is longer than prove waits", t.Request.Text))
		case be > 0 && be < req:
			d.skip(translate.FeatureRequestTimeout, fmt.Sprintf("the backendRequest timeout (%s) cuts every try before the request timeout (%s)", t.BackendRequest.Text, t.Request.Text))
		default:
			add(fmt.Sprintf("slow backend: request ends after %s", t.Request.Text), method, Scenario{
				Endpoints: ep(flaky.DelayAlways(slow)),
				Test: Test{Spec: Expect{Status: 504, Hits: Exactly(1), Duration: cutWindow(req)}, Claims: []Claim{
					{Feature: translate.FeatureRequestTimeout, InEffect: true, Shortfall: Shortfall{Class: RequestNotCut, Timer: req},
						Otherwise: []Expect{{Status: 200}}}}}})
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
