// Package flaky is a scripted HTTP backend for end-to-end tests of retries
// and timeouts.
//
// A Server listens on a random 127.0.0.1 port. Each path follows a Script:
// fail with a status for the first N hits, always fail, close the connection
// before answering, delay past a timeout, or answer slowly. Every hit is
// recorded with its start and end time and the endpoint that served it, so a
// test can count tries and measure the gaps between them. Several servers are
// several endpoints of one backend; Merge puts their hits in one timeline.
//
// Keep-alive is off by default: every try arrives on a fresh connection, so
// a proxy cannot hide a retry by replaying a request on a reused connection.
// StartKeepAlive starts a server that keeps connections open, to test what
// a proxy does when a kept-alive upstream connection closes under it
// (Action.CloseIfReused).
package flaky

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RequestHeader is the header a test sets to tell its requests apart; its
// value is recorded in Hit.Request.
const RequestHeader = "X-E2e-Request"

// EndpointHeader is set on every answer to the name of the server.
const EndpointHeader = "X-Flaky-Endpoint"

// Hit is one request received by a server.
type Hit struct {
	// Endpoint is the name of the server that received it.
	Endpoint string
	Path     string
	// URI is the request target as the client sent it (RequestURI),
	// escapes and all.
	URI    string
	Method string
	// Request is the value of RequestHeader, if any.
	Request string
	// N counts the hits of this path on this server, from 0.
	N int
	// Action is what the script did.
	Action Action
	// Start is when the request headers were read; End when the answer
	// was written, the connection closed, or the client went away. End is
	// zero while the hit is in progress.
	Start, End time.Time
	// Cancelled is true when the client went away before the action was
	// complete (a proxy timeout cut the try).
	Cancelled bool
	// Reused is true when the request arrived on a connection that had
	// already carried one (keep-alive servers only).
	Reused bool
	// BodyBytes is the size of the request body received.
	BodyBytes int64
	// Host, RawQuery and Header are the request's Host header, query
	// string and headers as the backend received them (to check what a
	// proxy rewrote or added).
	Host     string
	RawQuery string
	Header   http.Header
}

// Duration is how long the hit lasted (0 while in progress).
func (h Hit) Duration() time.Duration {
	if h.End.IsZero() {
		return 0
	}
	return h.End.Sub(h.Start)
}

// String describes the hit for test output.
func (h Hit) String() string {
	s := fmt.Sprintf("%s %s %s #%d at %s: %s, %v", h.Endpoint, h.Method, h.Path, h.N,
		h.Start.Format("15:04:05.000"), h.Action, h.Duration().Round(time.Millisecond))
	if h.Cancelled {
		s += " (cut by the client)"
	}
	if h.Reused {
		s += " (reused connection)"
	}
	if h.BodyBytes > 0 {
		s += fmt.Sprintf(" (body %d bytes)", h.BodyBytes)
	}
	return s
}

// Server is one scripted endpoint.
type Server struct {
	name     string
	listener net.Listener
	http     *http.Server

	mu       sync.Mutex
	scripts  map[string]Script
	counts   map[string]int
	hits     []*Hit
	inFlight int
	idle     *sync.Cond
}

// TB is the part of testing.TB that New uses (so that the package, which
// `gwretry prove` runs too, does not import testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// New starts a server named name on a random loopback port. It is closed
// when the test ends.
func New(t TB, name string) *Server {
	t.Helper()
	s, err := Start(name)
	if err != nil {
		t.Fatalf("flaky: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Start starts a server named name on a random loopback port. The caller
// must Close it.
func Start(name string) (*Server, error) { return start(name, false) }

// StartKeepAlive is Start for a server that keeps connections alive.
func StartKeepAlive(name string) (*Server, error) { return start(name, true) }

// connKey is the context key of a connection's request counter.
type connKey struct{}

func start(name string, keepAlive bool) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s := &Server{name: name, listener: ln, scripts: map[string]Script{}, counts: map[string]int{}}
	s.idle = sync.NewCond(&s.mu)
	s.http = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, new(atomic.Int64))
		}}
	s.http.SetKeepAlivesEnabled(keepAlive)
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

// Close stops the server and the hits in progress.
func (s *Server) Close() { _ = s.http.Close() }

// Name is the endpoint name given to New.
func (s *Server) Name() string { return s.name }

// Addr is the "127.0.0.1:PORT" the server listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Port is the port the server listens on.
func (s *Server) Port() int { return s.listener.Addr().(*net.TCPAddr).Port }

// Handle sets the script of a path (the URL path, without query). A path
// without a script answers 200.
func (s *Server) Handle(path string, sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[path] = sc
}

// Hits returns the hits of a path, oldest first.
func (s *Server) Hits(path string) []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Hit
	for _, h := range s.hits {
		if h.Path == path {
			out = append(out, *h)
		}
	}
	return out
}

// AllHits returns every hit, oldest first.
func (s *Server) AllHits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Hit, len(s.hits))
	for i, h := range s.hits {
		out[i] = *h
	}
	return out
}

// WaitIdle waits until no hit is in progress, at most timeout. It reports
// whether the server became idle.
func (s *Server) WaitIdle(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.idle.Broadcast()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inFlight > 0 && time.Now().Before(deadline) {
		s.idle.Wait()
	}
	return s.inFlight == 0
}

// Merge returns the hits of several servers in one timeline, by start time.
func Merge(servers ...*Server) []Hit {
	var out []Hit
	for _, s := range servers {
		out = append(out, s.AllHits()...)
	}
	slices.SortStableFunc(out, func(a, b Hit) int { return a.Start.Compare(b.Start) })
	return out
}

// RefusedAddr returns a loopback address on which nothing listens, so that
// connecting to it is refused. (The port was free a moment ago; another
// process could take it, which on loopback in a test is unlikely.)
func RefusedAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a refused port: %w", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("find a refused port: %w", err)
	}
	return addr, nil
}

// begin records the start of a hit and returns it with the action to play.
func (s *Server) begin(r *http.Request, body int64) *Hit {
	reused := false
	if c, ok := r.Context().Value(connKey{}).(*atomic.Int64); ok {
		reused = c.Add(1) > 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.counts[r.URL.Path]
	s.counts[r.URL.Path] = n + 1
	h := &Hit{Endpoint: s.name, Path: r.URL.Path, URI: r.RequestURI, Method: r.Method, Request: r.Header.Get(RequestHeader),
		N: n, Action: s.scripts[r.URL.Path].action(n), Start: time.Now(), Reused: reused, BodyBytes: body,
		Host: r.Host, RawQuery: r.URL.RawQuery, Header: r.Header.Clone()}
	s.hits = append(s.hits, h)
	s.inFlight++
	return h
}

// end records the end of a hit.
func (s *Server) end(h *Hit, cancelled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h.End = time.Now()
	h.Cancelled = cancelled
	s.inFlight--
	if s.inFlight == 0 {
		s.idle.Broadcast()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// Read the body first: the server notices a client that goes away
	// only once the body is consumed.
	body, _ := io.Copy(io.Discard, r.Body)
	h := s.begin(r, body)
	a := h.Action
	cancelled := !wait(r, a.Delay)
	switch {
	case cancelled:
	case a.Close, a.CloseIfReused && h.Reused:
		closeConn(w)
	case a.Chunks > 0:
		cancelled = !s.writeChunks(w, r, h)
	default:
		s.writeHead(w, h)
		fmt.Fprintf(w, "%s: %d (hit %d)\n", s.name, a.status(), h.N)
	}
	s.end(h, cancelled)
}

func (s *Server) writeHead(w http.ResponseWriter, h *Hit) {
	for k, v := range h.Action.Header {
		w.Header().Set(k, v)
	}
	w.Header().Set(EndpointHeader, s.name)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(h.Action.status())
}

// writeChunks sends the headers, then the body in chunks. It reports false
// when the client went away first.
func (s *Server) writeChunks(w http.ResponseWriter, r *http.Request, h *Hit) bool {
	a := h.Action
	body := ChunkedBody(a.Chunks)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)*a.Chunks))
	s.writeHead(w, h)
	flusher, _ := w.(http.Flusher)
	for i := 0; i < a.Chunks; i++ {
		if i > 0 && !wait(r, a.ChunkEvery) {
			return false
		}
		if _, err := io.WriteString(w, body); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	return true
}

// ChunkedBody is the text of each chunk of a slow body of n chunks; the
// whole body is n copies.
func ChunkedBody(n int) string { return fmt.Sprintf("chunk of %d\n", n) }

// wait sleeps d unless the client goes away first; it reports whether the
// full time passed.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// closeConn hijacks the connection and closes it without answering.
func closeConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(errors.New("flaky: response writer cannot hijack"))
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = conn.Close()
}
