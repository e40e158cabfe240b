package translate

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

func span(d time.Duration) Span { return Span{D: d} }

// TestBackoffWaits: the pause before each retry for each data plane's
// backoff as its judge reads it.
func TestBackoffWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Backoff
		n    int
		want []Window
	}{
		{"none (nginx, HAProxy, Linkerd)", Backoff{}, 2, []Window{{}, {}}},
		{"Traefik: 2× the backoff, ±50%, doubling over the attempts", Backoff{Base: 400 * ms, Multiplier: math.Pow(2, 1.0/2),
			Max: time.Minute, JitterMin: 0.5, JitterMax: 1.5}, 2,
			[]Window{{200 * ms, 600 * ms}, {282842712, 848528136}}},
		{"Traefik: the cap applies from the second interval", Backoff{Base: 100 * time.Second, Multiplier: 2,
			Max: time.Minute, JitterMin: 0.5, JitterMax: 1.5}, 2,
			[]Window{{50 * time.Second, 150 * time.Second}, {30 * time.Second, 90 * time.Second}}},
		{"Envoy: full jitter, doubling to max", Backoff{Base: 25 * ms, Multiplier: 2, Max: 60 * ms, JitterMax: 1}, 3,
			[]Window{{0, 25 * ms}, {0, 50 * ms}, {0, 60 * ms}}},
		{"gRPC: ±20%", Backoff{Base: 125 * ms, Multiplier: 2, Max: 1250 * ms, JitterMin: 0.8, JitterMax: 1.2}, 2,
			[]Window{{100 * ms, 150 * ms}, {200 * ms, 300 * ms}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.b.Waits(tc.n)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			least := time.Duration(math.MaxInt64)
			for _, w := range tc.want {
				least = min(least, w.Min)
			}
			if got := tc.b.MinGap(tc.n); got != least {
				t.Errorf("MinGap %v, want %v", got, least)
			}
		})
	}
	// A huge retry count (Envoy's num_retries is a uint32) does not
	// allocate a pause per retry.
	if got := (Backoff{Base: ms, Multiplier: 2, JitterMin: 0.5, JitterMax: 1}).MinGap(math.MaxInt32); got != ms/2 {
		t.Errorf("MinGap of a growing backoff over MaxInt32 retries: %v", got)
	}
}

func timelineRule(attempts int) *Rule {
	return &Rule{Route: "ns/r", Retry: &Retry{Attempts: attempts}}
}

// TestRuleTimeline: the timeline of each data plane's Behaviour forms.
func TestRuleTimeline(t *testing.T) {
	none := Timer{Kind: TimerNone}
	idle300 := Timer{Kind: TimerIdle, Value: 300 * ms}
	for _, tc := range []struct {
		name      string
		attempts  int
		b         Behaviour
		want      []Try
		worst     Span
		never     []Never
		noteParts []string
		// retriedOn, when set, is the list of retried failures; notNotes
		// are parts no note may say.
		retriedOn []string
		notNotes  []string
	}{
		{
			name: "nginx: immediate retries, idle timers, no request timeout", attempts: 2,
			b: Behaviour{Retries: 2, Codes: []int{500}, ConnErrors: ConnRetryAll, MaxRetriedBody: -1, TryTimeout: idle300,
				TimeoutRetried: true, RequestTimeout: none},
			want: []Try{
				{Try: 1, Timeout: "idle 300ms", Note: "first try"},
				{Try: 2, EarliestStart: span(0), LatestStart: span(300 * ms), Timeout: "idle 300ms", Note: "at once"},
				{Try: 3, EarliestStart: span(0), LatestStart: span(600 * ms), Timeout: "idle 300ms", Note: "at once"},
			},
			worst: span(900 * ms), noteParts: []string{"idle timer (300ms)", "after its response headers arrived (cut by its timer or a broken connection) is the last: it is not retried"},
			// nginx 1.22 and HAProxy 2.6 do not retry a try their timer
			// cuts after the response headers (seen live: a backend that
			// sends headers then stalls is tried once, 200 truncated).
			retriedOn: []string{"responses 500", "connection failures, also after the request was sent, until the response headers arrive",
				"tries cut by their timer before the response headers"},
		},
		{
			name: "nginx: proxy_next_upstream_timeout is a budget, not a cut", attempts: 3,
			b: Behaviour{Retries: 3, Codes: []int{500}, ConnErrors: ConnRetryAll, MaxRetriedBody: -1, TryTimeout: idle300,
				TimeoutRetried: true, RequestTimeout: none, RetryBudget: 400 * ms},
			want: []Try{
				{Try: 1, Timeout: "idle 300ms", Note: "first try"},
				{Try: 2, LatestStart: span(300 * ms), Timeout: "idle 300ms", Note: "at once"},
				{Try: 3, LatestStart: span(400 * ms), Timeout: "idle 300ms", Note: "at once"},
				{Try: 4, LatestStart: span(400 * ms), Timeout: "idle 300ms", Note: "at once"},
			},
			worst: span(700 * ms), noteParts: []string{"no retry starts once 400ms have passed"},
		},
		{
			name: "nginx: entries cap the retries", attempts: 5,
			b: Behaviour{Retries: 1, ConnErrors: ConnRetryAll, MaxRetriedBody: -1, TryTimeout: idle300, RequestTimeout: none,
				RetriesSource: "the upstream's 2 entries, each tried at most once (proxy_next_upstream_tries 6)"},
			want: []Try{
				{Try: 1, Timeout: "idle 300ms", Note: "first try"},
				{Try: 2, LatestStart: span(300 * ms), Timeout: "idle 300ms", Note: "at once"},
			},
			worst: span(600 * ms),
			never: []Never{{FirstTry: 3, LastTry: 6, Reason: "the configuration makes at most 1 retries (the upstream's 2 entries, each tried at most once (proxy_next_upstream_tries 6))"}},
		},
		{
			name: "HAProxy POST: only failed connections, each after the turn-around", attempts: 2,
			b: Behaviour{Retries: 2, ConnErrors: ConnRetryUnsent, MaxRetriedBody: -1, TryTimeout: idle300, RequestTimeout: none,
				Backoff: Backoff{TurnAround: time.Second}},
			want: []Try{
				{Try: 1, Timeout: "idle 300ms", Note: "first try"},
				// No turn-around after an expired timeout connect (HAProxy
				// 2.6, live: 4 tries in 4 x 300ms against a full backlog),
				// but that try took at least the turn-around; none after a
				// try its timer cut: each try before ends by the later of
				// its timer and the turn-around.
				{Try: 2, PauseMax: span(time.Second), EarliestStart: span(time.Second),
					LatestStart: span(time.Second), Timeout: "idle 300ms", Note: "after a pause of 0s to 1s (1s of it only after a connection refused or failed before timeout connect)"},
				{Try: 3, PauseMax: span(time.Second), EarliestStart: span(2 * time.Second),
					LatestStart: span(2 * time.Second), Timeout: "idle 300ms", Note: "after a pause of 0s to 1s (1s of it only after a connection refused or failed before timeout connect)"},
			},
			worst: span(2300 * ms), retriedOn: []string{"connection failures before the request was sent"},
			notNotes: []string{"is the last"},
		},
		{
			name: "HAProxy GET: L7 retries at once, the turn-around only after a failed connection", attempts: 1,
			b: Behaviour{Retries: 1, Codes: []int{503}, ConnErrors: ConnRetryAll, MaxRetriedBody: 16 << 10, TryTimeout: idle300,
				RequestTimeout: none, Backoff: Backoff{TurnAround: time.Second}},
			want: []Try{
				{Try: 1, Timeout: "idle 300ms", Note: "first try"},
				{Try: 2, PauseMax: span(time.Second), LatestStart: span(time.Second), Timeout: "idle 300ms",
					Note: "after a pause of 0s to 1s (1s of it only after a connection refused or failed before timeout connect)"},
			},
			worst: span(1300 * ms), noteParts: []string{"larger than 16 KiB is not retried"},
		},
		{
			name: "Traefik: jittered backoff, headers timer", attempts: 2,
			b: Behaviour{Retries: 2, ConnErrors: ConnRetryUnsent, MaxRetriedBody: -1, TryTimeout: Timer{Kind: TimerHeaders, Value: 300 * ms},
				RequestTimeout: none, Backoff: Backoff{Base: 400 * ms, Multiplier: math.Sqrt2, Max: time.Minute, JitterMin: 0.5,
					JitterMax: 1.5, MaxElapsed: 15 * time.Minute}},
			want: []Try{
				{Try: 1, Timeout: "headers 300ms", Note: "first try"},
				{Try: 2, PauseMin: span(200 * ms), PauseMax: span(600 * ms), EarliestStart: span(200 * ms),
					LatestStart: span(900 * ms), Timeout: "headers 300ms", Note: "after a pause of 200ms to 600ms"},
				{Try: 3, PauseMin: span(282842712), PauseMax: span(848528136), EarliestStart: span(482842712),
					LatestStart: span(2048528136), Timeout: "headers 300ms", Note: "after a pause of 282.8ms to 848.5ms"},
			},
			worst: span(2348528136), noteParts: []string{"response headers", "between 0.5 and 1.5"},
		},
		{
			name: "gRPC: the request timeout cuts the late retries and the cap the rest", attempts: 6,
			b: Behaviour{Retries: 4, ConnErrors: ConnRetryAll, Codes: []int{503}, MaxRetriedBody: 256 << 10, TryTimeout: none,
				RequestTimeout: Timer{Kind: TimerTotal, Value: 500 * ms},
				Backoff:        Backoff{Base: 250 * ms, Multiplier: 2, Max: 2500 * ms, JitterMin: 0.8, JitterMax: 1.2},
				RetriesSource:  "maxAttempts 7, which gRPC clients treat as 5"},
			want: []Try{
				{Try: 1, Timeout: "none", Note: "first try"},
				{Try: 2, PauseMin: span(200 * ms), PauseMax: span(300 * ms), EarliestStart: span(200 * ms),
					LatestStart: span(500 * ms), Timeout: "none", Note: "after a pause of 200ms to 300ms"},
			},
			worst: span(500 * ms),
			never: []Never{
				{FirstTry: 3, LastTry: 5, Reason: "the request timeout (total 500ms) has always passed: even if every try before failed at once, it could not start before 600ms"},
				{FirstTry: 6, LastTry: 7, Reason: "the configuration makes at most 4 retries (maxAttempts 7, which gRPC clients treat as 5)"},
			},
		},
		{
			name: "Envoy: full jitter, per-try and route timeouts", attempts: 2,
			b: Behaviour{Retries: 2, ConnErrors: ConnRetryAll, MaxRetriedBody: 1 << 20, TryTimeout: Timer{Kind: TimerTotal, Value: 300 * ms},
				TimeoutRetried: true, RequestTimeout: Timer{Kind: TimerTotal, Value: time.Second},
				Backoff: Backoff{Base: 25 * ms, Multiplier: 2, Max: 250 * ms, JitterMax: 1}},
			want: []Try{
				{Try: 1, Timeout: "total 300ms", Note: "first try"},
				{Try: 2, PauseMax: span(25 * ms), LatestStart: span(325 * ms), Timeout: "total 300ms", Note: "after a pause of 0s to 25ms"},
				{Try: 3, PauseMax: span(50 * ms), LatestStart: span(675 * ms), Timeout: "total 300ms", Note: "after a pause of 0s to 50ms"},
			},
			worst: span(975 * ms),
		},
		{
			name: "a headers timer cannot cut after the headers: only a broken connection is named", attempts: 1,
			b: Behaviour{Retries: 1, Codes: []int{504}, ConnErrors: ConnRetryAll, MaxRetriedBody: -1, TimeoutRetried: true,
				TryTimeout: Timer{Kind: TimerHeaders, Value: 300 * ms}, RequestTimeout: none},
			want: []Try{
				{Try: 1, Timeout: "headers 300ms", Note: "first try"},
				{Try: 2, LatestStart: span(300 * ms), Timeout: "headers 300ms", Note: "at once"},
			},
			worst: span(600 * ms), noteParts: []string{"arrived (a broken connection) is the last"},
		},
		{
			name: "Linkerd: no retries, nothing cuts", attempts: 0,
			b:    Behaviour{ConnErrors: ConnRetryNone, MaxRetriedBody: -1, TryTimeout: none, RequestTimeout: none},
			want: []Try{{Try: 1, Timeout: "none", Note: "first try"}}, worst: Span{Unbounded: true},
			noteParts: []string{"no bound"},
		},
		{
			name: "nothing bounds a try: later starts are unbounded", attempts: 1,
			b: Behaviour{Retries: 1, Codes: []int{500}, MaxRetriedBody: -1, ConnErrors: ConnRetryNone, TryTimeout: none, RequestTimeout: none},
			want: []Try{
				{Try: 1, Timeout: "none", Note: "first try"},
				{Try: 2, LatestStart: Span{Unbounded: true}, Timeout: "none", Note: "at once"},
			},
			worst: Span{Unbounded: true},
		},
		{
			name: "retries with no condition never happen", attempts: 2,
			b:    Behaviour{Retries: 2, ConnErrors: ConnRetryNone, MaxRetriedBody: -1, TryTimeout: idle300, RequestTimeout: none},
			want: []Try{{Try: 1, Timeout: "idle 300ms", Note: "first try"}}, worst: span(300 * ms),
			never: []Never{{FirstTry: 2, LastTry: 3, Reason: "no failure is retried for these requests"}},
		},
		{
			name: "a rule answered by the data plane", attempts: 2, b: Behaviour{Answer: 500},
			want:  []Try{},
			never: []Never{{FirstTry: 2, LastTry: 3, Reason: "no backend is tried: the data plane answers 500 itself"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := RuleTimeline(timelineRule(tc.attempts), tc.b)
			if diff := cmp.Diff(tc.want, tl.Tries); diff != "" {
				t.Errorf("tries (-want +got):\n%s", diff)
			}
			if tl.WorstCase != tc.worst {
				t.Errorf("worst case %v, want %v", tl.WorstCase, tc.worst)
			}
			if tc.never == nil {
				tc.never = []Never{}
			}
			if diff := cmp.Diff(tc.never, tl.Never); diff != "" {
				t.Errorf("never (-want +got):\n%s", diff)
			}
			notes := strings.Join(tl.Notes, "\n")
			for _, p := range tc.noteParts {
				if !strings.Contains(notes, p) {
					t.Errorf("notes do not say %q:\n%s", p, notes)
				}
			}
			for _, p := range tc.notNotes {
				if strings.Contains(notes, p) {
					t.Errorf("notes say %q:\n%s", p, notes)
				}
			}
			if tc.retriedOn != nil {
				if diff := cmp.Diff(tc.retriedOn, tl.RetriedOn); diff != "" {
					t.Errorf("retried on (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestTimelineJSON: spans are milliseconds, null when unbounded, and read
// back as they were.
func TestTimelineJSON(t *testing.T) {
	in := Try{Try: 2, PauseMin: span(1500 * time.Microsecond), LatestStart: Span{Unbounded: true}, Timeout: "none"}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"try":2,"pauseMinMs":1.5,"pauseMaxMs":0,"earliestStartMs":0,"latestStartMs":null,"timeout":"none"}`
	if string(data) != want {
		t.Errorf("got %s\nwant %s", data, want)
	}
	var back Try
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back != in {
		t.Errorf("read back %+v, want %+v", back, in)
	}
}
