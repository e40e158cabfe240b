package prove

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Check is a claim judged on its own, without the gates of a Test's
// Claims: a filter's effect on the request the backend gets or on the
// answer the client gets. Each condition is what the Gateway API defines
// for one part of the filter (one header, the path, the status).
type Check struct {
	Feature translate.Feature
	Conds   []Cond
}

// Cond is one condition of a Check on a request's Result.
type Cond struct {
	// Want is what the Gateway API defines, for messages.
	Want string
	// Shortfall is what a miss shows, with the header Name it concerns.
	Shortfall Shortfall
	// Seen describes what r shows and reports whether it meets Want.
	Seen func(r Result) (string, bool)
}

// oldValue is the value prove sends in (or has the backend answer with) a
// header that a filter sets, adds to or removes.
const oldValue = "prove-old"

// MirrorEndpoint names the endpoint that stands in for the Services a
// rule's RequestMirror filters copy requests to.
const MirrorEndpoint = "mirror"

// JudgeChecks judges each check on its own against every request:
//
//   - every condition met on every request: honoured and approximated are
//     backed, unsupported contradicted (the filter is in effect);
//   - a condition missed: honoured is contradicted, unsupported backed,
//     approximated backed only when its decision record's reason or a
//     caveat backs the miss's shortfall with parameters that agree (a
//     caveat naming the header, the status seen), else contradicted.
//
// No finding's message is read.
func JudgeChecks(checks []Check, findings []translate.Finding, obs Observation) []Verdict {
	var out []Verdict
	for _, c := range checks {
		v := Verdict{Feature: c.Feature}
		i := slices.IndexFunc(findings, func(f translate.Finding) bool { return f.Feature == c.Feature })
		if i < 0 {
			v.Outcome = Contradicted
			v.Reason = fmt.Sprintf("the report has no finding for %s, which the rule sets", c.Feature)
			out = append(out, v)
			continue
		}
		f := findings[i]
		v.Status = f.Status
		var met, missed, unbacked []string
		for _, cond := range c.Conds {
			for n, r := range obs {
				seen, ok := cond.Seen(r)
				line := fmt.Sprintf("request %d: %s (want %s)", n+1, seen, cond.Want)
				switch {
				case ok:
					met = append(met, cond.Want)
				case f.Status == translate.Unsupported:
					missed = append(missed, line)
				default:
					if by, ok := backedBy(cond.Shortfall, f.Decision, r); ok {
						missed = append(missed, fmt.Sprintf("%s; the decision record states %s (%s)", line, cond.Shortfall, report.WithParams(by.Reason, by.Params)))
					} else {
						unbacked = append(unbacked, fmt.Sprintf("%s: that is %s, which no reason or caveat of the record backs (want one of %v, with parameters that agree)",
							line, cond.Shortfall, backers(cond.Shortfall)))
					}
				}
			}
		}
		if len(obs) == 0 {
			unbacked = append(unbacked, "no request was sent")
		}
		switch {
		case len(unbacked) > 0 && f.Status != translate.Unsupported:
			v.Outcome = Contradicted
			v.Reason = contradiction(f, "not as the Gateway API says: "+strings.Join(unbacked, "; "), obs)
		case f.Status == translate.Unsupported && len(missed) == 0:
			v.Outcome = Contradicted
			v.Reason = contradiction(f, "the filter is in effect: "+strings.Join(slices.Compact(met), "; "), obs)
		case len(missed) > 0:
			v.Outcome = Backed
			v.Reason = "as the record states: " + strings.Join(missed, "; ")
		default:
			v.Outcome = Backed
			v.Reason = "behaves as the Gateway API says: " + strings.Join(slices.Compact(met), "; ")
		}
		out = append(out, v)
	}
	return out
}

// filterFeatures are the features of the rule's own filters that prove
// exercises.
func filterFeatures(r *translate.Rule) []translate.Feature {
	var out []translate.Feature
	for _, f := range r.Filters.Features() {
		switch f {
		case translate.FeatureRequestHeaderModifier, translate.FeatureResponseHeaderModifier,
			translate.FeatureRequestRedirect, translate.FeatureURLRewrite, translate.FeatureRequestMirror:
			out = append(out, f)
		}
	}
	return out
}

// filters adds the scenario of the rule's filters: one request whose
// headers, path and host the filters change, against a backend that
// answers 200 with the response headers the rule's response modifier
// touches.
func (d *deriver) filters(method string, add func(string, string, Scenario)) {
	fl := &d.r.Filters
	u := d.user
	var checks []Check
	reqHeader := map[string]string{}
	respHeader := map[string]string{}
	if hm := fl.RequestHeaders; hm != nil {
		var conds []Cond
		for _, name := range touched(hm) {
			if _, matched := u.Header[http.CanonicalHeaderKey(name)]; !matched {
				reqHeader[http.CanonicalHeaderKey(name)] = oldValue
			}
		}
		old := func(name string) string {
			if v, ok := u.Header[http.CanonicalHeaderKey(name)]; ok {
				return v
			}
			return oldValue
		}
		for _, c := range headerConds(hm, old, RequestHeaderNotModified, "at the backend", func(r Result) (http.Header, string) {
			if len(r.Hits) == 0 {
				return nil, "no try reached the backend"
			}
			return r.Hits[len(r.Hits)-1].Header, ""
		}) {
			conds = append(conds, c)
		}
		checks = append(checks, Check{Feature: translate.FeatureRequestHeaderModifier, Conds: conds})
	}
	if hm := fl.ResponseHeaders; hm != nil && d.r.Forwards() {
		for _, name := range touched(hm) {
			respHeader[http.CanonicalHeaderKey(name)] = oldValue
		}
		checks = append(checks, Check{Feature: translate.FeatureResponseHeaderModifier,
			Conds: headerConds(hm, func(string) string { return oldValue }, ResponseHeaderNotModified, "in the answer", func(r Result) (http.Header, string) {
				if r.Status == 0 {
					return nil, "no answer"
				}
				return r.Header, ""
			})})
	}
	path, _, _ := strings.Cut(u.Path, "?")
	if rw := fl.Rewrite; rw != nil {
		var conds []Cond
		if rw.Hostname != "" {
			conds = append(conds, Cond{Want: "Host " + rw.Hostname + " at the backend", Shortfall: Shortfall{Class: HostNotRewritten, Name: "Host"},
				Seen: func(r Result) (string, bool) {
					if len(r.Hits) == 0 {
						return "no try reached the backend", false
					}
					h := r.Hits[len(r.Hits)-1].Host
					return "Host " + h, hostOnly(h) == rw.Hostname
				}})
		}
		if rw.Path != nil {
			want, ok := replacedPath(rw.Path, u, path)
			if ok {
				conds = append(conds, Cond{Want: "path " + want + " at the backend", Shortfall: Shortfall{Class: PathNotRewritten},
					Seen: func(r Result) (string, bool) {
						if len(r.Hits) == 0 {
							return "no try reached the backend", false
						}
						p := r.Hits[len(r.Hits)-1].Path
						return "path " + p, p == want
					}})
			} else {
				d.skip(translate.FeatureURLRewrite, "a prefix rewrite of a rule whose request prove makes from a match that is not a PathPrefix")
			}
		}
		if len(conds) > 0 {
			checks = append(checks, Check{Feature: translate.FeatureURLRewrite, Conds: conds})
		}
	}
	if rd := fl.Redirect; rd != nil {
		if c, ok := d.redirectCheck(rd, method, path); ok {
			checks = append(checks, c)
		}
	}
	if len(fl.Mirrors) > 0 {
		switch {
		case len(u.Mirrors) == 0:
			d.skip(translate.FeatureRequestMirror, "the mirror's Service is the rule's own backend, or cannot receive traffic: prove cannot tell a copy from the request")
		case slices.ContainsFunc(fl.Mirrors, func(m *translate.Mirror) bool { return m.Numerator != m.Denominator }):
			d.skip(translate.FeatureRequestMirror, "the rule mirrors a share of the requests, which prove does not measure")
		default:
			checks = append(checks, Check{Feature: translate.FeatureRequestMirror, Conds: []Cond{{
				Want: "a copy at the mirror's Service", Shortfall: Shortfall{Class: NotMirrored},
				Seen: func(r Result) (string, bool) {
					return plural(len(r.Mirrored), "copy", "copies") + " at the mirror's Service", len(r.Mirrored) > 0
				}}}})
		}
	}
	if len(checks) == 0 {
		return
	}
	var names []string
	for _, c := range checks {
		names = append(names, strings.TrimPrefix(string(c.Feature), "filters."))
	}
	script := flaky.Script{Then: flaky.Action{Header: respHeader}}
	sc := Scenario{Endpoints: []Endpoint{{Name: "a", Script: script}}, Test: Test{Checks: checks}, Header: reqHeader}
	add("filters "+strings.Join(names, ", "), method, sc)
}

// redirectCheck is the check of a RequestRedirect on a request to path:
// the status, and the Location's scheme, hostname and path. The port is
// not checked: prove serves the listener on another port than the
// Gateway's.
func (d *deriver) redirectCheck(rd *translate.Redirect, method, path string) (Check, bool) {
	code := rd.StatusCode
	if code == 0 {
		code = http.StatusFound
	}
	want := url.URL{Scheme: rd.Scheme, Host: rd.Hostname, Path: path}
	if want.Scheme == "" {
		want.Scheme = "http"
	}
	if want.Host == "" {
		want.Host = d.user.Host
	}
	if rd.Path != nil {
		p, ok := replacedPath(rd.Path, d.user, path)
		if !ok {
			d.skip(translate.FeatureRequestRedirect, "a prefix redirect of a rule whose request prove makes from a match that is not a PathPrefix")
			return Check{}, false
		}
		want.Path = p
	}
	conds := []Cond{{Want: fmt.Sprintf("status %d", code), Shortfall: Shortfall{Class: RedirectStatusOther, Code: code},
		Seen: func(r Result) (string, bool) { return fmt.Sprintf("status %d", r.Status), r.Status == code }}}
	host := want.Host
	conds = append(conds, Cond{Want: "Location " + describeLocation(want, host), Shortfall: Shortfall{Class: RedirectLocationOther},
		Seen: func(r Result) (string, bool) {
			loc := r.Header.Get("Location")
			u, err := url.Parse(loc)
			if loc == "" || err != nil {
				return fmt.Sprintf("Location %q", loc), false
			}
			ok := u.Scheme == want.Scheme && u.Path == want.Path && (host == "" || u.Hostname() == hostOnly(host))
			return fmt.Sprintf("Location %q", loc), ok
		}})
	return Check{Feature: translate.FeatureRequestRedirect, Conds: conds}, true
}

func describeLocation(u url.URL, host string) string {
	if host == "" {
		host = "(the request's host)"
	}
	return u.Scheme + "://" + hostOnly(host) + "[:port]" + u.Path
}

// hostOnly drops the port of a host.
func hostOnly(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		return h[:i]
	}
	return h
}

// replacedPath is path as the modifier pm changes it, for a request made
// from u's match; false when a prefix replacement meets a match that is
// not a PathPrefix.
func replacedPath(pm *translate.PathModifier, u *UserRule, path string) (string, bool) {
	if pm.Type == translate.ReplaceFullPath {
		return pm.Value, true
	}
	if u.MatchType != translate.PathPrefix {
		return "", false
	}
	rest := strings.TrimPrefix(path, strings.TrimSuffix(u.MatchPath, "/"))
	value := strings.TrimSuffix(pm.Value, "/")
	out := value + rest
	if out == "" {
		out = "/"
	}
	return out, true
}

// touched lists the header names a modifier sets, adds or removes.
func touched(hm *translate.HeaderModifier) []string {
	var out []string
	for _, h := range slices.Concat(hm.Set, hm.Add) {
		out = append(out, h.Name)
	}
	return append(out, hm.Remove...)
}

// headerConds are the conditions of a header modifier on the header that
// get returns: a set header has its value alone, an added one the value it
// had (old) and then the added one, a removed one is absent.
func headerConds(hm *translate.HeaderModifier, old func(string) string, class Class, where string, get func(Result) (http.Header, string)) []Cond {
	var out []Cond
	values := func(r Result, name string) ([]string, string) {
		h, missing := get(r)
		if missing != "" {
			return nil, missing
		}
		var vs []string
		for _, v := range h.Values(name) {
			for _, part := range strings.Split(v, ",") {
				vs = append(vs, strings.TrimSpace(part))
			}
		}
		if len(vs) == 0 {
			return nil, name + " absent " + where
		}
		return vs, fmt.Sprintf("%s: %s %s", name, strings.Join(vs, ", "), where)
	}
	for _, h := range hm.Set {
		want := []string{strings.TrimSpace(h.Value)}
		if strings.TrimSpace(h.Value) == "" {
			want = nil
		}
		out = append(out, Cond{Want: fmt.Sprintf("%s: %s %s", h.Name, h.Value, where), Shortfall: Shortfall{Class: class, Name: h.Name},
			Seen: func(r Result) (string, bool) {
				vs, seen := values(r, h.Name)
				return seen, slices.Equal(vs, want) && (want != nil || seen == h.Name+" absent "+where)
			}})
	}
	for _, h := range hm.Add {
		want := []string{old(h.Name), strings.TrimSpace(h.Value)}
		out = append(out, Cond{Want: fmt.Sprintf("%s: %s %s", h.Name, strings.Join(want, ", "), where), Shortfall: Shortfall{Class: class, Name: h.Name},
			Seen: func(r Result) (string, bool) {
				vs, seen := values(r, h.Name)
				return seen, slices.Equal(vs, want)
			}})
	}
	for _, name := range hm.Remove {
		out = append(out, Cond{Want: name + " absent " + where, Shortfall: Shortfall{Class: class, Name: name},
			Seen: func(r Result) (string, bool) {
				vs, seen := values(r, name)
				return seen, len(vs) == 0 && seen == name+" absent "+where
			}})
	}
	return out
}

// namesHeader: some list parameter of the record names the shortfall's
// header (case-insensitively).
func namesHeader(p report.Params, s Shortfall, _ Result) bool {
	for _, v := range p {
		for _, n := range paramList(v) {
			if strings.EqualFold(n, s.Name) {
				return true
			}
		}
	}
	return false
}

// statusByMethod: the record's status for the request's method (get, or
// other) is the status seen.
func statusByMethod(p report.Params, _ Shortfall, r Result) bool {
	key := "other"
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		key = "get"
	}
	return p[key] == fmt.Sprint(r.Status)
}
