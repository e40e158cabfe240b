package flaky

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Action is what the server does for one hit.
type Action struct {
	// Status is the response status; 0 means 200.
	Status int
	// Delay is waited before answering (or closing). The wait ends early
	// when the client goes away, and the hit is then recorded as
	// cancelled.
	Delay time.Duration
	// Close hijacks the connection and closes it without writing a byte,
	// so the client sees an empty response or a reset.
	Close bool
	// CloseIfReused closes like Close when the request came on a kept-alive
	// connection that already carried a request, and answers otherwise: a
	// backend that drops idle connections as a proxy reuses them.
	CloseIfReused bool
	// Chunks, when positive, sends the headers at once and then the body in
	// that many chunks, ChunkEvery apart (a slow body).
	Chunks     int
	ChunkEvery time.Duration
	// Header are headers of the answer besides the endpoint's own.
	Header map[string]string
}

// status returns the status the action answers with.
func (a Action) status() int {
	if a.Status == 0 {
		return http.StatusOK
	}
	return a.Status
}

// String describes the action ("500", "close", "delay 1s then 200").
func (a Action) String() string {
	var parts []string
	if a.Delay > 0 {
		parts = append(parts, "delay "+a.Delay.String())
	}
	switch {
	case a.Close:
		parts = append(parts, "close")
	case a.CloseIfReused:
		parts = append(parts, "close if reused, else "+fmt.Sprint(a.status()))
	case a.Chunks > 0:
		parts = append(parts, fmt.Sprintf("%d in %d chunks every %v", a.status(), a.Chunks, a.ChunkEvery))
	default:
		parts = append(parts, fmt.Sprint(a.status()))
	}
	return strings.Join(parts, " then ")
}

// Script is the behaviour of one path: the Nth hit (counted from 0) does
// First[N], and every hit past First does Then.
type Script struct {
	First []Action
	Then  Action
}

// action returns what hit number n (from 0) does.
func (s Script) action(n int) Action {
	if n < len(s.First) {
		return s.First[n]
	}
	return s.Then
}

// String describes the script ("500, 500, then 200").
func (s Script) String() string {
	var parts []string
	for _, a := range s.First {
		parts = append(parts, a.String())
	}
	then := s.Then.String()
	if len(parts) == 0 {
		return "always " + then
	}
	return strings.Join(parts, ", ") + ", then " + then
}

// OK answers 200 to every hit.
func OK() Script { return Script{} }

// FailFirst answers status to the first n hits, then 200.
func FailFirst(n, status int) Script {
	return Script{First: repeat(n, Action{Status: status})}
}

// AlwaysFail answers status to every hit.
func AlwaysFail(status int) Script {
	return Script{Then: Action{Status: status}}
}

// CloseFirst closes the connection without answering on the first n hits,
// then answers 200.
func CloseFirst(n int) Script {
	return Script{First: repeat(n, Action{Close: true})}
}

// CloseAlways closes the connection without answering on every hit.
func CloseAlways() Script {
	return Script{Then: Action{Close: true}}
}

// DelayFirst delays the first n hits by d, then answers 200 at once.
func DelayFirst(n int, d time.Duration) Script {
	return Script{First: repeat(n, Action{Delay: d})}
}

// DelayAlways delays every hit by d before answering 200.
func DelayAlways(d time.Duration) Script {
	return Script{Then: Action{Delay: d}}
}

// Steps plays the given actions in order, then answers 200.
func Steps(actions ...Action) Script {
	return Script{First: actions}
}

func repeat(n int, a Action) []Action {
	out := make([]Action, n)
	for i := range out {
		out[i] = a
	}
	return out
}
