//go:build unix

package nginx

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

// rawBackend answers the first try of each path with the bytes of replies[path]
// and closes the connection, and every later try with a plain 200 "ok"; it
// counts the tries per path.
type rawBackend struct {
	ln      net.Listener
	replies map[string]string
	mu      sync.Mutex
	tries   map[string]int
}

func newRawBackend(t *testing.T, replies map[string]string) *rawBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rb := &rawBackend{ln: ln, replies: replies, tries: map[string]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rb.serve(c)
		}
	}()
	return rb
}

func (rb *rawBackend) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return
	}
	io.Copy(io.Discard, req.Body)
	rb.mu.Lock()
	rb.tries[req.URL.Path]++
	n := rb.tries[req.URL.Path]
	rb.mu.Unlock()
	if reply, ok := rb.replies[req.URL.Path]; ok && n == 1 {
		io.WriteString(c, reply)
		return
	}
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
}

func (rb *rawBackend) count(path string) int {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.tries[path]
}

// TestLiveMalformedReplies proves what the connectionErrors finding and the
// notes say of replies that are not plain HTTP/1.x: a header nginx cannot
// parse is retried (invalid_header), but a reply without a valid status
// line is passed to the client as an HTTP/0.9 response and not retried, and
// an informational 1xx response is taken as the final one, so a listed code
// that follows it is not retried. The finding used to say that "invalid
// response headers are retried" with no exception.
func TestLiveMalformedReplies(t *testing.T) {
	proxytest.Require(t, "nginx")
	replies := map[string]string{
		"/bad-header":   "HTTP/1.1 500 Oops\r\nBad Header\r\nContent-Length: 2\r\n\r\nno",
		"/no-http":      "SSH-2.0-OpenSSH_9.2\r\n",
		"/bad-status":   "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nno",
		"/early-hints":  "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno",
		"/listed-code":  "HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno",
		"/empty-answer": "",
	}
	backend := newRawBackend(t, replies)
	res, addr := serveRoute(t, proxytest.Require(t, "nginx"), "1.22", retryOneManifest, backend.ln.Addr().String())
	for _, f := range res.Report.Findings {
		// The conditions nginx retries: a reply without a valid HTTP/1.x
		// status line is none of them (nginx passes it on as HTTP/0.9).
		if f.Feature == translate.FeatureRetryConnectionErrors && f.Configured != "proxy_next_upstream error timeout invalid_header" {
			t.Errorf("%s configures %q, want proxy_next_upstream error timeout invalid_header", f.Feature, f.Configured)
		}
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || strings.Contains(n.Text, "informational response (1xx")
	}
	if !noted {
		t.Errorf("no note says that nginx takes a backend's 1xx response as the final one")
	}

	for _, tc := range []struct {
		path       string
		wantTries  int
		wantStatus string // the client's status line starts with it
	}{
		{"/bad-header", 2, "HTTP/1.1 200"},
		{"/listed-code", 2, "HTTP/1.1 200"},
		{"/empty-answer", 2, "HTTP/1.1 200"},
		{"/no-http", 1, "SSH-2.0"},
		{"/bad-status", 1, "HTTP/1.1 2000"},
		{"/early-hints", 1, "HTTP/1.1 103"},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET "+tc.path+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			if got := backend.count(tc.path); !strings.HasPrefix(line, tc.wantStatus) || got != tc.wantTries {
				t.Errorf("client got %q after %d tries, want %s... after %d", line, got, tc.wantStatus, tc.wantTries)
			}
		})
	}
}
