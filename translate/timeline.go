package translate

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Backoff is how a data plane draws the pause between a failed try and the
// next, as its judge reads it from the configuration. Retry n (from 1)
// waits interval(n) times a random factor in [JitterMin, JitterMax], where
// interval(1) is Base and interval(n+1) is interval(n) times Multiplier,
// capped at Max.
type Backoff struct {
	// Base is the interval before the first retry; 0 when retries start
	// at once.
	Base time.Duration
	// Multiplier grows the interval after each retry; 0 or 1 keeps it.
	Multiplier float64
	// Max caps the interval from the second retry on (0: no cap). A data
	// plane that caps the first interval too has Base at most Max.
	Max time.Duration
	// JitterMin and JitterMax bound the random factor: [0, 1] is full
	// jitter (Envoy), [0.5, 1.5] Traefik's, [0.8, 1.2] gRPC's; both 0
	// means no jitter (a factor of 1).
	JitterMin, JitterMax float64
	// MaxElapsed: a retry whose pause would end later than this after the
	// first try started is not made (Traefik's 15 minutes); 0: no limit.
	MaxElapsed time.Duration
	// MaxPause caps each pause, jitter included (Linkerd's 250 ms); 0:
	// no cap.
	MaxPause time.Duration
	// TurnAround is a further pause before a retry that follows a
	// connection that failed before its timeout, a refusal (HAProxy waits
	// min(timeout connect, 1s)); retries after other failures, an expired
	// timeout connect included, do not wait it. 0 when there is none.
	TurnAround time.Duration
}

// Window is an inclusive range of durations.
type Window struct{ Min, Max time.Duration }

// Waits returns the pause before each of n retries, without the
// turn-around.
func (b Backoff) Waits(n int) []Window {
	out := make([]Window, max(n, 0))
	iv := b.Base
	for i := range out {
		out[i] = b.window(iv)
		iv, _ = b.grow(iv)
	}
	return out
}

// window is the pause drawn from interval iv.
func (b Backoff) window(iv time.Duration) Window {
	lo, hi := b.JitterMin, b.JitterMax
	if lo == 0 && hi == 0 {
		lo, hi = 1, 1
	}
	// Rounded outwards, so that the window holds every pause.
	w := Window{Min: time.Duration(math.Floor(float64(iv) * lo)), Max: time.Duration(math.Ceil(float64(iv) * hi))}
	if b.MaxPause > 0 {
		w.Min, w.Max = min(w.Min, b.MaxPause), min(w.Max, b.MaxPause)
	}
	return w
}

// grow returns the interval after iv and whether it differs. An interval
// is never grown past MaxDuration, longer than any timer gwretry writes.
func (b Backoff) grow(iv time.Duration) (time.Duration, bool) {
	next := iv
	if b.Multiplier > 0 {
		f := float64(iv) * b.Multiplier
		if f > float64(MaxDuration) {
			f = float64(MaxDuration)
		}
		next = time.Duration(f)
	}
	if b.Max > 0 && next > b.Max {
		next = b.Max
	}
	return next, next != iv
}

// MinGap is the least pause before any of n retries (0 when n is 0).
func (b Backoff) MinGap(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	iv := b.Base
	least := b.window(iv).Min
	for i := 1; i < n; i++ {
		next, changed := b.grow(iv)
		if !changed {
			break // every later pause is drawn from the same interval
		}
		iv = next
		least = min(least, b.window(iv).Min)
	}
	return least
}

// Span is a duration in a timeline, or no bound at all. In JSON it is a
// number of milliseconds, or null when unbounded.
type Span struct {
	D         time.Duration
	Unbounded bool
}

// MarshalJSON writes milliseconds, or null.
func (s Span) MarshalJSON() ([]byte, error) {
	if s.Unbounded {
		return []byte("null"), nil
	}
	return json.Marshal(float64(s.D) / float64(time.Millisecond))
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Span) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*s = Span{Unbounded: true}
		return nil
	}
	var ms float64
	if err := json.Unmarshal(data, &ms); err != nil {
		return err
	}
	*s = Span{D: time.Duration(ms * float64(time.Millisecond))}
	return nil
}

func (s Span) String() string {
	if s.Unbounded {
		return "unbounded"
	}
	return roundText(s.D)
}

// add returns s+d; unbounded stays unbounded.
func (s Span) add(d time.Duration) Span {
	if s.Unbounded {
		return s
	}
	return Span{D: s.D + d}
}

// plus returns s+t; unbounded when either is.
func (s Span) plus(t Span) Span {
	if t.Unbounded {
		return t
	}
	return s.add(t.D)
}

// atMost caps s at d.
func (s Span) atMost(d time.Duration) Span {
	if s.Unbounded || s.D > d {
		return Span{D: d}
	}
	return s
}

// roundText writes d for people: whole milliseconds as they are, others
// to a tenth of a millisecond.
func roundText(d time.Duration) string {
	if d%time.Millisecond != 0 && d > time.Millisecond {
		d = d.Round(100 * time.Microsecond)
	}
	return d.String()
}

// Try is one try of a timeline. Times count from the start of the first
// try.
type Try struct {
	// Try numbers the tries from 1 (the first try; retry n is try n+1).
	Try int `json:"try"`
	// Pause is the least and the most the data plane waits between the
	// end of the previous try and this one (0 for the first).
	PauseMin Span `json:"pauseMinMs"`
	PauseMax Span `json:"pauseMaxMs"`
	// EarliestStart is when the try starts if every try before failed at
	// once and every pause was its shortest.
	EarliestStart Span `json:"earliestStartMs"`
	// LatestStart is when it starts at the latest: every try before ran
	// until its timer cut it and every pause was its longest. Unbounded
	// when nothing cuts a try.
	LatestStart Span `json:"latestStartMs"`
	// Timeout is the timer that cuts the try ("total 300ms", "idle 60s",
	// "headers 2s", "none").
	Timeout string `json:"timeout"`
	Note    string `json:"note,omitempty"`
}

// Never is a range of tries the rule asks for that the data plane never
// makes, and why.
type Never struct {
	FirstTry int    `json:"firstTry"`
	LastTry  int    `json:"lastTry"`
	Reason   string `json:"reason"`
}

// Timeline is what a data plane, as configured, does over time with the
// requests of one rule in one method class when every try fails.
type Timeline struct {
	Target   string      `json:"target"`
	Version  string      `json:"version"`
	Route    string      `json:"route"`
	Rule     int         `json:"rule"`
	RuleName string      `json:"ruleName,omitempty"`
	Methods  MethodClass `json:"methods"`
	// Unread: the target's judge does not read this rule back, so
	// nothing is said about it (Notes say why).
	Unread bool `json:"unread,omitempty"`
	// Answer is the status the data plane answers by itself, without any
	// try; 0 when it proxies.
	Answer int `json:"answer,omitempty"`
	// RequestedRetries is the rule's retry.attempts; Retries what the
	// configuration makes.
	RequestedRetries int `json:"requestedRetries"`
	Retries          int `json:"retries"`
	// RetriedOn lists the failures that are retried.
	RetriedOn []string `json:"retriedOn"`
	Tries     []Try    `json:"tries"`
	// WorstCase is the longest the request can take when every try fails
	// and is cut by its timer; unbounded when nothing bounds it.
	WorstCase Span     `json:"worstCaseMs"`
	Never     []Never  `json:"neverHappen"`
	Notes     []string `json:"notes"`
}

// Explanation is the output of Explain (gwretry explain -o json).
type Explanation struct {
	SchemaVersion int        `json:"schemaVersion"`
	Timelines     []Timeline `json:"timelines"`
}

// Explain generates each target's configuration for m, checks it against
// its report as Run does (the same generate, contract and judges), and
// builds the timeline of every rule and method class from what the judge
// read: the same facts the findings are checked with, not a second table.
func Explain(m *Model, targets []Target, retryNonIdempotent bool) (*Explanation, error) {
	ex := &Explanation{SchemaVersion: 1, Timelines: []Timeline{}}
	for _, t := range targets {
		name := t.Backend.Name()
		if _, ok := t.Backend.(Judge); !ok {
			return nil, fmt.Errorf("%s: gwretry cannot read its configuration back, so it cannot explain it", name)
		}
		_, observed, err := generate(m, t, retryNonIdempotent, "")
		if err != nil {
			return nil, err
		}
		scope := t.Backend.Scope()
		served := map[*Rule]bool{}
		for _, r := range scope.rules(m) {
			served[r] = true
		}
		explained := m.Rules
		if scope.MeshRoutes {
			explained = slices.Concat(m.Rules, m.MeshRules)
		}
		for _, r := range explained {
			for _, c := range r.MethodClasses() {
				var tl Timeline
				if b, ok := observed[r.Name][c]; ok && served[r] {
					tl = RuleTimeline(r, b)
				} else {
					note := fmt.Sprintf("gwretry's judge does not read what %s does with these requests back from its configuration, so it says nothing about them", name)
					if !served[r] {
						note = fmt.Sprintf("%s does not serve this rule (it serves %s), so it does nothing with these requests", name, scope)
					}
					tl = Timeline{RequestedRetries: requested(r), RetriedOn: []string{}, Tries: []Try{},
						WorstCase: Span{Unbounded: true}, Never: []Never{}, Unread: true, Notes: []string{note}}
				}
				tl.Target, tl.Version, tl.Route, tl.Rule, tl.RuleName, tl.Methods = name, t.Version, r.Route, r.Index, r.RuleName, c
				ex.Timelines = append(ex.Timelines, tl)
			}
		}
	}
	return ex, nil
}

func requested(r *Rule) int {
	if r.Retry == nil {
		return 0
	}
	return r.Retry.Attempts
}

// maxTimelineTries is the most tries a timeline lists.
const maxTimelineTries = 1000

// RuleTimeline builds the timeline of rule r from b, what a judge read
// from the configuration for one method class. It assumes every try fails
// in a way that is retried: at once for the earliest starts, and only when
// its timer cuts it for the latest.
func RuleTimeline(r *Rule, b Behaviour) Timeline {
	want := requested(r)
	tl := Timeline{RequestedRetries: want, Retries: b.Retries, RetriedOn: retriedOn(b),
		Tries: []Try{}, Never: []Never{}, Notes: []string{}}
	if b.Answer != 0 {
		tl.Answer, tl.Retries = b.Answer, 0
		tl.Notes = append(tl.Notes, fmt.Sprintf("the data plane answers %d itself and tries no backend", b.Answer))
		if want > 0 {
			tl.Never = append(tl.Never, Never{FirstTry: 2, LastTry: want + 1, Reason: fmt.Sprintf("no backend is tried: the data plane answers %d itself", b.Answer)})
		}
		return tl
	}
	timeout := b.TryTimeout.String()
	tryMax := Span{Unbounded: true}
	if !b.TryTimeout.Off() {
		tryMax = Span{D: b.TryTimeout.Value}
	}
	req := b.RequestTimeout
	reqCut := req.Kind == TimerTotal && !req.Off()
	retries := b.Retries
	if retries > 0 && len(tl.RetriedOn) == 0 {
		tl.Never = append(tl.Never, Never{FirstTry: 2, LastTry: retries + 1, Reason: "no failure is retried for these requests"})
		retries = 0
	}
	first := Try{Try: 1, LatestStart: Span{}, Timeout: timeout, Note: "first try"}
	tl.Tries = append(tl.Tries, first)
	listed := min(retries, maxTimelineTries-1)
	waits := b.Backoff.Waits(listed)
	turn := b.Backoff.TurnAround
	// Every retry follows a failed connection when nothing else is
	// retried. The turn-around follows a connection that failed before its
	// timeout (refused), not one whose timeout connect expired: HAProxy 2.6
	// retries that at once (seen live, 4 tries in 4 x timeout connect).
	// Either way the next try cannot start before the turn-around, which is
	// at most timeout connect.
	onlyConn := len(b.Codes) == 0 && !b.TimeoutRetried && b.ConnErrors == ConnRetryUnsent
	for k := 1; k <= listed; k++ {
		prev := tl.Tries[k-1]
		lo, hi := waits[k-1].Min, waits[k-1].Max
		soonest := lo
		if turn > 0 {
			hi += turn
			if onlyConn {
				soonest += turn
			}
		}
		earliest := prev.EarliestStart.add(soonest)
		why := ""
		switch {
		case reqCut && earliest.D >= req.Value:
			why = fmt.Sprintf("the request timeout (%s) has always passed: even if every try before failed at once, it could not start before %s", req, earliest)
		case b.RetryBudget > 0 && prev.EarliestStart.D >= b.RetryBudget:
			why = fmt.Sprintf("no retry starts once %s have passed, and the try before cannot end sooner than %s", roundText(b.RetryBudget), prev.EarliestStart)
		case b.Backoff.MaxElapsed > 0 && earliest.D > b.Backoff.MaxElapsed:
			why = fmt.Sprintf("the backoff stops retrying once a pause would end after %s, and this one cannot end before %s", roundText(b.Backoff.MaxElapsed), earliest)
		}
		if why != "" {
			tl.Never = append(tl.Never, Never{FirstTry: k + 1, LastTry: retries + 1, Reason: why})
			break
		}
		// The turn-around follows a try that ended at once (refused), not
		// one its timer cut (HAProxy retries that at once, seen live: 3
		// silent tries in 3 x timeout server with a 1s turn-around): the
		// try before ends by the later of the two, then the wait.
		cost := tryMax
		if turn > 0 && !tryMax.Unbounded && tryMax.D < turn {
			cost = Span{D: turn}
		}
		latest := prev.LatestStart.plus(cost).add(waits[k-1].Max)
		if reqCut {
			latest = latest.atMost(req.Value)
		}
		if b.RetryBudget > 0 {
			latest = latest.atMost(b.RetryBudget + hi)
		}
		if b.Backoff.MaxElapsed > 0 {
			latest = latest.atMost(b.Backoff.MaxElapsed)
		}
		note := "at once"
		switch {
		case hi == 0:
		case lo == hi:
			note = "after a pause of " + roundText(lo)
		default:
			note = fmt.Sprintf("after a pause of %s to %s", roundText(lo), roundText(hi))
		}
		if turn > 0 {
			note += fmt.Sprintf(" (%s of it only after a connection refused or failed before timeout connect)", roundText(turn))
		}
		tl.Tries = append(tl.Tries, Try{Try: k + 1, PauseMin: Span{D: lo}, PauseMax: Span{D: hi},
			EarliestStart: earliest, LatestStart: latest, Timeout: timeout, Note: note})
	}
	if b.Retries < want {
		why := fmt.Sprintf("the configuration makes at most %d retries", b.Retries)
		if b.RetriesSource != "" {
			why += " (" + b.RetriesSource + ")"
		}
		tl.Never = append(tl.Never, Never{FirstTry: b.Retries + 2, LastTry: want + 1, Reason: why})
	}
	last := tl.Tries[len(tl.Tries)-1]
	lastMax := tryMax
	if lt := b.LastTryTimeout; lt.Kind != "" && retries > 0 && last.Try == retries+1 {
		// The last try the retry policy allows has a timer of its own.
		lastMax = Span{Unbounded: true}
		if !lt.Off() {
			lastMax = Span{D: lt.Value}
		}
		tl.Tries[len(tl.Tries)-1].Timeout = lt.String()
		tl.Notes = append(tl.Notes, fmt.Sprintf("the last try is cut by %s, not by the others' timer (%s)", lt, timeout))
	}
	tl.WorstCase = last.LatestStart.plus(lastMax)
	if listed < retries && last.Try == listed+1 {
		tl.Notes = append(tl.Notes, fmt.Sprintf("only the first %d tries are worked out; the worst case counts the others as unbounded", maxTimelineTries))
		tl.WorstCase = Span{Unbounded: true}
	}
	if reqCut {
		tl.WorstCase = tl.WorstCase.atMost(req.Value)
	}
	tl.Notes = append(tl.Notes, timelineNotes(b, retries, tl.WorstCase)...)
	return tl
}

// retriedOn lists the failures b retries, in words.
func retriedOn(b Behaviour) []string {
	out := []string{}
	if b.Retries == 0 {
		return out
	}
	if len(b.Codes) > 0 {
		out = append(out, "responses "+codeRanges(b.Codes))
	}
	switch b.ConnErrors {
	case ConnRetryAll:
		out = append(out, "connection failures, also after the request was sent, until the response headers arrive")
	case ConnRetryUnsent:
		out = append(out, "connection failures before the request was sent")
	}
	if b.TimeoutRetried {
		out = append(out, "tries cut by their timer before the response headers")
	}
	return out
}

// codeRanges writes sorted codes with runs as ranges: "500-599".
func codeRanges(codes []int) string {
	var parts []string
	for i := 0; i < len(codes); {
		j := i
		for j+1 < len(codes) && codes[j+1] == codes[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d-%d", codes[i], codes[j]))
		} else {
			for _, c := range codes[i : j+1] {
				parts = append(parts, strconv.Itoa(c))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// timelineNotes are the caveats of a timeline.
func timelineNotes(b Behaviour, retries int, worst Span) []string {
	var out []string
	switch b.TryTimeout.Kind {
	case TimerIdle:
		out = append(out, fmt.Sprintf("each try's timer is an idle timer (%s): the latest starts assume a silent backend; one that keeps sending is not cut", roundText(b.TryTimeout.Value)))
	case TimerHeaders:
		out = append(out, fmt.Sprintf("each try's timer waits for the response headers (%s): the latest starts assume they never come; a slow body is not cut", roundText(b.TryTimeout.Value)))
	}
	// No data plane retries once the response has begun: a failure that
	// is retried before the headers ends the request after them.
	timerAfter := b.TimeoutRetried && b.TryTimeout.Kind != TimerHeaders && !b.TryTimeout.Off()
	var late string
	switch {
	case timerAfter && b.ConnErrors == ConnRetryAll:
		late = "cut by its timer or a broken connection"
	case timerAfter:
		late = "cut by its timer"
	case b.ConnErrors == ConnRetryAll:
		late = "a broken connection"
	}
	if retries > 0 && late != "" {
		out = append(out, fmt.Sprintf("a try that fails after its response headers arrived (%s) is the last: it is not retried, and the response already begun is cut short", late))
	}
	if worst.Unbounded {
		out = append(out, "nothing cuts a try or the request, so the worst case has no bound")
	}
	if b.RetryBudget > 0 && retries > 0 {
		out = append(out, fmt.Sprintf("no retry starts once %s have passed since the first try, but a try started before runs past it", roundText(b.RetryBudget)))
	}
	if b.ExtraRetries {
		out = append(out, "the data plane may also re-send a request once on its own (a kept-alive connection that closed), which is not shown")
	}
	if retries > 0 && b.MaxRetriedBody >= 0 {
		out = append(out, fmt.Sprintf("a request whose body is larger than %s is not retried", ByteSize(uint64(b.MaxRetriedBody))))
	}
	if b.Backoff.JitterMin != b.Backoff.JitterMax && retries > 0 {
		out = append(out, fmt.Sprintf("each pause is random: its interval times a factor between %g and %g", b.Backoff.JitterMin, b.Backoff.JitterMax))
	}
	return out
}

// Window returns the bounds of try n (from 1) of the timeline and whether
// the data plane makes it.
func (tl Timeline) Window(n int) (Try, bool) {
	i := slices.IndexFunc(tl.Tries, func(t Try) bool { return t.Try == n })
	if i < 0 {
		return Try{}, false
	}
	return tl.Tries[i], true
}
