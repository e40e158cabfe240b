package prove

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Result is what the client and the backend saw for one request.
type Result struct {
	Method, Path string
	// BodyBytes is the size of the request body.
	BodyBytes int
	// Status is the HTTP status the client got; 0 when it got no answer.
	Status int
	// Complete is true when the whole body arrived (and, for a slow body,
	// was the one the backend sent).
	Complete bool
	// Err is the client's transport or body error, if any.
	Err string
	// Duration runs from sending the request to the end of the body.
	Duration time.Duration
	// Hits are the tries the backend saw for this request, on every
	// endpoint, oldest first.
	Hits []flaky.Hit
	// Header is the answer's header as the client got it (nil without
	// an answer).
	Header http.Header
	// Mirrored are the copies of this request that the mirror endpoint
	// got (RequestMirror).
	Mirrored []flaky.Hit
	// PeerCert is the DER of the certificate an HTTPS listener served.
	PeerCert []byte
}

// Gaps returns the time between the end of each try and the start of the
// next.
func (r Result) Gaps() []time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(r.Hits); i++ {
		prev := r.Hits[i-1]
		end := prev.End
		if end.IsZero() {
			end = prev.Start
		}
		gaps = append(gaps, r.Hits[i].Start.Sub(end))
	}
	return gaps
}

// String describes the result in one line for failure messages.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s -> ", r.Method, r.Path)
	if r.Status == 0 {
		b.WriteString("no answer")
	} else {
		fmt.Fprint(&b, r.Status)
	}
	if !r.Complete && r.Status != 0 {
		b.WriteString(" (body incomplete)")
	}
	if r.Err != "" {
		fmt.Fprintf(&b, " [%s]", r.Err)
	}
	fmt.Fprintf(&b, " in %v, %d hit(s)", r.Duration.Round(time.Millisecond), len(r.Hits))
	for _, g := range r.Gaps() {
		fmt.Fprintf(&b, ", gap %v", g.Round(time.Millisecond))
	}
	for _, h := range r.Hits {
		fmt.Fprintf(&b, "\n      hit: %s", h)
	}
	return b.String()
}

// Observation is what one run of a scenario saw, one Result per request.
type Observation []Result

func (o Observation) String() string {
	var lines []string
	for _, r := range o {
		lines = append(lines, "    "+r.String())
	}
	return strings.Join(lines, "\n")
}

// Range is an inclusive range of counts; Max < 0 means no upper bound.
type Range struct{ Min, Max int }

// Exactly is the range holding only n.
func Exactly(n int) *Range { return &Range{n, n} }

// AtLeast is the range from n up.
func AtLeast(n int) *Range { return &Range{n, -1} }

// Between is the range from min to max.
func Between(min, max int) *Range { return &Range{min, max} }

func (r Range) has(n int) bool { return n >= r.Min && (r.Max < 0 || n <= r.Max) }

func (r Range) String() string {
	switch {
	case r.Min == r.Max:
		return fmt.Sprint(r.Min)
	case r.Max < 0:
		return fmt.Sprintf("at least %d", r.Min)
	}
	return fmt.Sprintf("%d to %d", r.Min, r.Max)
}

// Window is an inclusive range of durations; a zero Max means no upper
// bound.
type Window struct{ Min, Max time.Duration }

func (w Window) has(d time.Duration) bool { return d >= w.Min && (w.Max == 0 || d <= w.Max) }

func (w Window) String() string {
	if w.Max == 0 {
		return fmt.Sprintf("at least %v", w.Min)
	}
	return fmt.Sprintf("%v to %v", w.Min, w.Max)
}

// Expect is a set of conditions on one request's Result; zero fields are
// not checked.
type Expect struct {
	// Status is the status the client gets.
	Status int
	// Failed: the client gets no answer or a 5xx.
	Failed bool
	// Answered: the client gets an HTTP answer (whatever its status).
	Answered bool
	// NoAnswer: the connection closes without an HTTP answer.
	NoAnswer bool
	// Hits is the number of tries the backend sees.
	Hits *Range
	// LastEndpoint is the endpoint of the last try.
	LastEndpoint string
	// MinGap: every gap between two tries is at least this long.
	MinGap time.Duration
	// ShortGap: some gap between two tries is shorter than this.
	ShortGap time.Duration
	// Duration bounds how long the client waits.
	Duration *Window
	// FirstCut: the first try was cut by the proxy after a time in this
	// window.
	FirstCut *Window
	// EveryTryCut: every try was cut by the proxy.
	EveryTryCut bool
	// Complete, when set, is whether the whole body arrives.
	Complete *bool
}

// Mismatches lists the conditions r does not meet.
func (e Expect) Mismatches(r Result) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if e.Status != 0 && r.Status != e.Status {
		bad("status %d, want %d", r.Status, e.Status)
	}
	if e.Failed && r.Status != 0 && r.Status < 500 {
		bad("status %d, want a failure (5xx or no answer)", r.Status)
	}
	if e.Answered && r.Status == 0 {
		bad("no HTTP answer, want one")
	}
	if e.NoAnswer && r.Status != 0 {
		bad("status %d, want no HTTP answer", r.Status)
	}
	if e.Hits != nil && !e.Hits.has(len(r.Hits)) {
		bad("%d tries, want %v", len(r.Hits), e.Hits)
	}
	if e.LastEndpoint != "" && (len(r.Hits) == 0 || r.Hits[len(r.Hits)-1].Endpoint != e.LastEndpoint) {
		bad("last try not on endpoint %s", e.LastEndpoint)
	}
	gaps := r.Gaps()
	if e.MinGap > 0 {
		for i, g := range gaps {
			if g < e.MinGap {
				bad("gap %d is %v, want at least %v", i+1, g.Round(time.Millisecond), e.MinGap)
			}
		}
	}
	if e.ShortGap > 0 {
		short := false
		for _, g := range gaps {
			short = short || g < e.ShortGap
		}
		if !short {
			bad("no gap shorter than %v (gaps %v)", e.ShortGap, roundAll(gaps))
		}
	}
	if e.Duration != nil && !e.Duration.has(r.Duration) {
		bad("took %v, want %v", r.Duration.Round(time.Millisecond), e.Duration)
	}
	if e.FirstCut != nil {
		if len(r.Hits) == 0 || !r.Hits[0].Cancelled || !e.FirstCut.has(r.Hits[0].Duration()) {
			bad("first try not cut after %v", e.FirstCut)
		}
	}
	if e.EveryTryCut {
		for i, h := range r.Hits {
			if !h.Cancelled {
				bad("try %d not cut", i+1)
			}
		}
	}
	if e.Complete != nil && r.Complete != *e.Complete {
		bad("body complete %v, want %v", r.Complete, *e.Complete)
	}
	return out
}

// String describes the expectation ("status 200, 3 tries").
func (e Expect) String() string {
	var parts []string
	if e.Status != 0 {
		parts = append(parts, fmt.Sprintf("status %d", e.Status))
	}
	if e.Failed {
		parts = append(parts, "a failure (5xx or no answer)")
	}
	if e.Answered {
		parts = append(parts, "an HTTP answer")
	}
	if e.NoAnswer {
		parts = append(parts, "no HTTP answer")
	}
	if e.Hits != nil {
		parts = append(parts, fmt.Sprintf("%v tries", e.Hits))
	}
	if e.LastEndpoint != "" {
		parts = append(parts, "last try on "+e.LastEndpoint)
	}
	if e.MinGap > 0 {
		parts = append(parts, fmt.Sprintf("gaps of at least %v", e.MinGap))
	}
	if e.ShortGap > 0 {
		parts = append(parts, fmt.Sprintf("a gap shorter than %v", e.ShortGap))
	}
	if e.Duration != nil {
		parts = append(parts, fmt.Sprintf("taking %v", e.Duration))
	}
	if e.FirstCut != nil {
		parts = append(parts, fmt.Sprintf("first try cut after %v", e.FirstCut))
	}
	if e.EveryTryCut {
		parts = append(parts, "every try cut")
	}
	if e.Complete != nil {
		if *e.Complete {
			parts = append(parts, "complete body")
		} else {
			parts = append(parts, "incomplete body")
		}
	}
	if len(parts) == 0 {
		return "anything"
	}
	return strings.Join(parts, ", ")
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

// Claim is how a scenario tests one feature of its rule.
type Claim struct {
	Feature translate.Feature
	// Otherwise lists observations of a data plane that does not do what
	// the Gateway API says for this feature. A request matching one of them
	// contradicts "honoured", and an "approximated" finding's decision
	// record must then back Shortfall (see backing). Empty when the
	// scenario cannot show the feature failing.
	Otherwise []Expect
	// Shortfall is what an Otherwise observation shows, with the rule's
	// values that the record's parameters are checked against.
	Shortfall Shortfall
	// InEffect means that seeing the Gateway API behaviour proves the
	// feature worked, so an "unsupported" finding is wrong.
	InEffect bool
	// Requires lists features this claim can only be judged with: when
	// one of them is reported unsupported, the claim is not judged here.
	Requires []translate.Feature
}

// Test is what the judge needs from a scenario: the behaviour the Gateway
// API defines (every request must match Spec) and the features it tests,
// gates first (a feature not in effect hides the ones after it).
type Test struct {
	Spec Expect
	// SomeRequest, when set, must be met by at least one request too.
	SomeRequest *Expect
	Claims      []Claim
	// Checks are claims judged each on its own, after Claims: a filter's
	// effect on the request or the answer (see JudgeChecks).
	Checks []Check
}

// Outcome is a verdict's result.
type Outcome string

// Outcomes.
const (
	// Backed: the finding agrees with what the proxy did.
	Backed Outcome = "backed"
	// Contradicted: the finding and the proxy disagree; the test fails.
	Contradicted Outcome = "contradicted"
	// NotJudged: the scenario cannot tell (another feature hid it).
	NotJudged Outcome = "not judged"
)

// Verdict is the judgement of one finding by one scenario run.
type Verdict struct {
	Feature translate.Feature
	Status  translate.Status
	Outcome Outcome
	// Reason explains the outcome; for a contradiction it holds the
	// finding and the observation.
	Reason string
}

// Judge compares the findings a report gives for a scenario's rule with
// what the proxy did. It returns one verdict per claim; any Contradicted
// verdict fails the scenario.
//
//   - The Gateway API behaviour was seen: honoured and approximated are
//     backed; unsupported is contradicted when the claim is InEffect.
//   - Otherwise the first claim whose Otherwise was seen explains it:
//     honoured is contradicted, unsupported backed, approximated backed when
//     its decision record's reason or a caveat backs the claim's Shortfall
//     with parameters that agree with the request seen (the backing
//     table). Claims after it are not judged. No finding's message is
//     read.
//   - An observation that nothing explains contradicts every claim.
func Judge(test Test, findings []translate.Finding, obs Observation) []Verdict {
	return append(judgeClaims(test, findings, obs), JudgeChecks(test.Checks, findings, obs)...)
}

// judgeClaims judges test's Claims, gates first (see Judge).
func judgeClaims(test Test, findings []translate.Finding, obs Observation) []Verdict {
	if len(test.Claims) == 0 {
		return nil
	}
	byFeature := map[translate.Feature]translate.Finding{}
	for _, f := range findings {
		byFeature[f.Feature] = f
	}
	verdicts := make([]Verdict, len(test.Claims))
	for i, c := range test.Claims {
		verdicts[i] = Verdict{Feature: c.Feature, Outcome: NotJudged}
		if f, ok := byFeature[c.Feature]; ok {
			verdicts[i].Status = f.Status
		}
	}
	judged := make([]bool, len(test.Claims))
	for i, c := range test.Claims {
		if _, ok := byFeature[c.Feature]; !ok {
			verdicts[i].Outcome = Contradicted
			verdicts[i].Reason = fmt.Sprintf("the report has no finding for %s, which the rule sets", c.Feature)
			continue
		}
		judged[i] = true
		for _, r := range c.Requires {
			if f, ok := byFeature[r]; !ok || f.Status == translate.Unsupported {
				judged[i] = false
				verdicts[i].Reason = fmt.Sprintf("needs %s, which is unsupported here", r)
			}
		}
	}
	if hasContradiction(verdicts) {
		return verdicts
	}

	var specMisses []string
	for i, r := range obs {
		for _, m := range test.Spec.Mismatches(r) {
			specMisses = append(specMisses, fmt.Sprintf("request %d: %s", i+1, m))
		}
	}
	if len(obs) == 0 {
		specMisses = append(specMisses, "no request was sent")
	}
	if test.SomeRequest != nil {
		if _, _, ok := matchAny([]Expect{*test.SomeRequest}, obs); !ok {
			specMisses = append(specMisses, "no request saw "+test.SomeRequest.String())
		}
	}
	if len(specMisses) == 0 {
		for i, c := range test.Claims {
			f := byFeature[c.Feature]
			switch {
			case !judged[i]:
			case f.Status != translate.Unsupported:
				verdicts[i].Outcome = Backed
				verdicts[i].Reason = "behaves as the Gateway API says: " + test.Spec.String()
			case c.InEffect:
				verdicts[i].Outcome = Contradicted
				verdicts[i].Reason = contradiction(f, "the feature worked as the Gateway API says ("+test.Spec.String()+")", obs)
			default:
				verdicts[i].Reason = "the Gateway API behaviour does not show whether the feature is in effect"
			}
		}
		return verdicts
	}

	for i, c := range test.Claims {
		if !judged[i] {
			continue
		}
		seen, r, ok := matchAny(c.Otherwise, obs)
		if !ok {
			verdicts[i].Reason = "not the explanation: none of its shortfalls was seen"
			continue
		}
		f := byFeature[c.Feature]
		why := fmt.Sprintf("not as the Gateway API says (%s): %s", strings.Join(specMisses, "; "), seen)
		switch f.Status {
		case translate.Honoured:
			verdicts[i].Outcome = Contradicted
			verdicts[i].Reason = contradiction(f, why, obs)
		case translate.Unsupported:
			verdicts[i].Outcome = Backed
			verdicts[i].Reason = "indeed not in effect: " + seen
		default:
			if by, ok := backedBy(c.Shortfall, f.Decision, r); ok {
				verdicts[i].Outcome = Backed
				verdicts[i].Reason = fmt.Sprintf("the decision record states %s (%s): %s", c.Shortfall, report.WithParams(by.Reason, by.Params), seen)
			} else {
				verdicts[i].Outcome = Contradicted
				verdicts[i].Reason = contradiction(f, why+fmt.Sprintf("; that is %s, which no reason or caveat of the record backs (want one of %v, with parameters that agree)",
					c.Shortfall, backers(c.Shortfall)), obs)
			}
		}
		for j := i + 1; j < len(test.Claims); j++ {
			verdicts[j].Reason = fmt.Sprintf("hidden: %s is not in effect here", c.Feature)
		}
		return verdicts
	}
	for i := range verdicts {
		if !judged[i] {
			continue
		}
		f := byFeature[test.Claims[i].Feature]
		verdicts[i].Outcome = Contradicted
		verdicts[i].Reason = contradiction(f, "behaviour matches neither the Gateway API nor a known shortfall: "+
			strings.Join(specMisses, "; "), obs)
	}
	return verdicts
}

// matchAny returns the first Otherwise expectation that some request
// meets, and that request.
func matchAny(otherwise []Expect, obs Observation) (string, Result, bool) {
	for _, e := range otherwise {
		for i, r := range obs {
			if len(e.Mismatches(r)) == 0 {
				return fmt.Sprintf("request %d saw %s", i+1, e), r, true
			}
		}
	}
	return "", Result{}, false
}

func contradiction(f translate.Finding, why string, obs Observation) string {
	return fmt.Sprintf("REPORT AND PROXY DISAGREE\n  finding: %s %s rule %d %s = %s (%s)\n  proxy: %s\n  observed:\n%s",
		f.Target, f.Route, f.Rule, f.Feature, f.Status, RecordText(f.Decision), why, obs)
}

func hasContradiction(vs []Verdict) bool {
	for _, v := range vs {
		if v.Outcome == Contradicted {
			return true
		}
	}
	return false
}
