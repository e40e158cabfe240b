package proxytest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// SilentBackend starts an HTTP server that answers nothing for up to d
// (or until the client goes away) and returns its "host:port".
func SilentBackend(t testing.TB, d time.Duration) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

// StallBody sends a POST through the proxy at addr that announces a body of
// 10 bytes, sends 2 and stops, then reads until the proxy closes the
// connection (at most 30s). It returns what the proxy answered, how long
// after the request it closed, and the read's error.
func StallBody(t testing.TB, addr string) (reply string, took time.Duration, err error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab"); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(start.Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn)
	return string(b), time.Since(start), err
}
