//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// Tolerances of the timeline check. The backend sees a try start a little
// after the proxy sends it and end a little before the proxy reads the
// answer, so an observed pause can only be longer than the proxy's, never
// shorter: earlySlack covers rounding alone. lateSlack is the scheduling
// delay allowed per try on a loaded machine (loopback, goroutines, the
// proxies' event loops), added up over the tries before.
const (
	earlySlack = 5 * time.Millisecond
	lateSlack  = 250 * time.Millisecond
)

// predict is gwretry explain's timeline of the scenario's rule on target
// (NAME@VERSION), computed by the library call the command makes, from the
// same manifest and flags the configuration was generated with.
func predict(t *testing.T, target string, sc prove.Scenario, run prove.Run) translate.Timeline {
	t.Helper()
	in, err := input.Load([]string{"-"}, strings.NewReader(sc.Manifest()), input.DefaultLimits())
	if err != nil {
		t.Fatalf("loading the manifest: %v", err)
	}
	ro, err := translate.ParseFlags(run.Listen, run.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	m, err := resolve.Build(in, ro)
	if err != nil {
		t.Fatalf("building the model: %v", err)
	}
	targets, err := translate.ParseTargets(target, backends.All())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := translate.Explain(m, targets, sc.RetryNonIdempotent)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	class := translate.Idempotent
	if translate.IsNonIdempotent(sc.RequestMethod()) {
		class = translate.NonIdempotent
	}
	for _, tl := range ex.Timelines {
		if tl.Route == sc.Route() && tl.Rule == 0 && tl.Methods == class {
			return tl
		}
	}
	t.Fatalf("explain has no timeline for %s rule 0 (%s)", sc.Route(), class)
	return translate.Timeline{}
}

// checkTimeline checks what the backend saw against gwretry explain: no
// more tries than the timeline has, every pause between two tries within
// the try's predicted pause, and every try's start (from the first try's)
// between its earliest and latest start, with the tolerances above.
// Scenarios whose tries the backend cannot all see are left out: a refused
// endpoint's tries are invisible, and a kept-alive connection may be
// re-sent on the proxy's own.
func checkTimeline(t *testing.T, target string, sc prove.Scenario, run prove.Run) {
	t.Helper()
	if sc.KeepAlive || sc.Dead {
		return
	}
	refused := 0
	for _, e := range sc.ScriptedEndpoints() {
		if e.Refused {
			refused++
		}
	}
	if refused > 0 && refused < len(sc.ScriptedEndpoints()) {
		return
	}
	tl := predict(t, target, sc, run)
	t.Logf("explain predicts %d tries: %+v", len(tl.Tries), tl.Tries)
	if tl.Unread {
		t.Errorf("explain cannot read %s back: %v", sc.Route(), tl.Notes)
		return
	}
	var errs []string
	switch {
	case refused > 0:
		errs = refusedErrors(tl, run.Obs)
	default:
		errs = timelineErrors(tl, run.Obs)
		if sc.Spec.EveryTryCut {
			errs = append(errs, worstCaseErrors(tl, run.Obs)...)
		}
	}
	for _, e := range errs {
		t.Errorf("%s", e)
	}
}

// refusedErrors checks requests to endpoints that all refuse connections:
// the backend sees no try, but every try fails at once, so the request
// makes every try of the timeline, each at its earliest start, and the
// client's wait runs from the earliest start of the last try to the worst
// case (HAProxy's turn-around, Traefik's backoff, nginx's immediate
// retries).
func refusedErrors(tl translate.Timeline, obs prove.Observation) []string {
	var errs []string
	last := tl.Tries[len(tl.Tries)-1]
	late := time.Duration(len(tl.Tries)) * lateSlack
	for _, r := range obs {
		if r.Duration < last.EarliestStart.D-earlySlack || !tl.WorstCase.Unbounded && r.Duration > tl.WorstCase.D+late {
			errs = append(errs, fmt.Sprintf("every try refused: the request took %v, explain predicts %s (try %d's earliest start) to %s (-%v, +%v):\n%s",
				r.Duration.Round(time.Millisecond), last.EarliestStart, last.Try, tl.WorstCase, earlySlack, late, r))
		}
	}
	return errs
}

// worstCaseErrors checks that a request whose every try was cut by its
// timer took no longer than the timeline's worst case.
func worstCaseErrors(tl translate.Timeline, obs prove.Observation) []string {
	var errs []string
	if tl.WorstCase.Unbounded {
		return nil
	}
	for _, r := range obs {
		late := time.Duration(len(r.Hits)+1) * lateSlack
		if r.Duration > tl.WorstCase.D+late {
			errs = append(errs, fmt.Sprintf("every try cut: the request took %v, explain's worst case is %s (+%v):\n%s",
				r.Duration.Round(time.Millisecond), tl.WorstCase, late, r))
		}
	}
	return errs
}

// timelineErrors compares the tries of each request with the timeline.
func timelineErrors(tl translate.Timeline, obs prove.Observation) []string {
	var errs []string
	for _, r := range obs {
		if len(r.Hits) > len(tl.Tries) {
			errs = append(errs, fmt.Sprintf("explain predicts at most %d tries, the backend saw %d:\n%s", len(tl.Tries), len(r.Hits), r))
			continue
		}
		gaps := r.Gaps()
		for i := 1; i < len(r.Hits); i++ {
			try := tl.Tries[i]
			g := gaps[i-1]
			if g < try.PauseMin.D-earlySlack || !try.PauseMax.Unbounded && g > try.PauseMax.D+lateSlack {
				errs = append(errs, fmt.Sprintf("try %d: pause %v, explain predicts %s to %s (-%v, +%v):\n%s",
					try.Try, g.Round(time.Millisecond), try.PauseMin, try.PauseMax, earlySlack, lateSlack, r))
			}
			start := r.Hits[i].Start.Sub(r.Hits[0].Start)
			late := try.LatestStart.D + time.Duration(i)*lateSlack
			if start < try.EarliestStart.D-earlySlack || !try.LatestStart.Unbounded && start > late {
				errs = append(errs, fmt.Sprintf("try %d: started %v after the first, explain predicts %s to %s (-%v, +%v per try):\n%s",
					try.Try, start.Round(time.Millisecond), try.EarliestStart, try.LatestStart, earlySlack, lateSlack, r))
			}
		}
	}
	return errs
}

// TestTimelineErrors: the check catches tries beyond the timeline, pauses
// outside the predicted ones and starts outside the window.
func TestTimelineErrors(t *testing.T) {
	tl := translate.Timeline{Tries: []translate.Try{
		{Try: 1},
		{Try: 2, PauseMin: translate.Span{D: 200 * time.Millisecond}, PauseMax: translate.Span{D: 600 * time.Millisecond},
			EarliestStart: translate.Span{D: 200 * time.Millisecond}, LatestStart: translate.Span{D: 900 * time.Millisecond}},
	}}
	for _, tc := range []struct {
		name string
		hits int
		gap  time.Duration
		want string
	}{
		{"inside", 2, 300 * time.Millisecond, ""},
		{"one try", 1, 0, ""},
		{"too many tries", 3, 300 * time.Millisecond, "at most 2 tries"},
		{"pause too short", 2, 100 * time.Millisecond, "try 2: pause 100ms"},
		{"pause too long", 2, 900 * time.Millisecond, "try 2: pause 900ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := timelineErrors(tl, prove.Observation{{Hits: tries(tc.hits, 10*time.Millisecond, tc.gap)}})
			got := strings.Join(errs, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRefusedAndWorstCaseErrors: a request to refusing endpoints must wait
// at least the last try's earliest start and at most the worst case; one
// whose every try was cut at most the worst case.
func TestRefusedAndWorstCaseErrors(t *testing.T) {
	ms := time.Millisecond
	tl := translate.Timeline{Tries: []translate.Try{
		{Try: 1},
		{Try: 2, PauseMin: translate.Span{D: 300 * ms}, PauseMax: translate.Span{D: 300 * ms},
			EarliestStart: translate.Span{D: 300 * ms}, LatestStart: translate.Span{D: 600 * ms}},
	}, WorstCase: translate.Span{D: 900 * ms}}
	for _, tc := range []struct {
		name      string
		refused   bool
		hits      int
		took      time.Duration
		want      string
		unbounded bool
	}{
		{"refused, inside", true, 0, 310 * ms, "", false},
		{"refused, no turn-around", true, 0, 20 * ms, "every try refused: the request took 20ms", false},
		{"refused, past the worst case", true, 0, 2 * time.Second, "every try refused: the request took 2s", false},
		{"refused, unbounded", true, 0, time.Hour, "", true},
		{"cut, inside", false, 2, 900 * ms, "", false},
		{"cut, past the worst case", false, 2, 2 * time.Second, "every try cut: the request took 2s", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := tl
			if tc.unbounded {
				tl.WorstCase = translate.Span{Unbounded: true}
			}
			obs := prove.Observation{{Duration: tc.took, Hits: tries(tc.hits, 300*ms, 0)}}
			var errs []string
			if tc.refused {
				errs = refusedErrors(tl, obs)
			} else {
				errs = worstCaseErrors(tl, obs)
			}
			got := strings.Join(errs, "\n")
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
}
