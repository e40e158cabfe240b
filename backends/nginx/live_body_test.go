//go:build unix

package nginx

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
)

// TestLiveBodiesOfAnySize: the Gateway API sets no limit on a request's
// body, and nginx answers 413 to a body over 1m unless told otherwise.
// Through the real nginx, a 5 MB GET, POST and PUT reach the backend whole
// on a route with retries, and a 5 MB PUT answered 503 is retried with its
// whole body (the second try gets the same 5 MB).
func TestLiveBodiesOfAnySize(t *testing.T) {
	proxytest.Require(t, "nginx")
	var mu sync.Mutex
	tries := map[string]int{}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		tries[r.URL.Path]++
		try := tries[r.URL.Path]
		mu.Unlock()
		if r.URL.Path == "/fail-once" && try == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "%d %d", try, n)
	}))
	t.Cleanup(backend.Close)

	_, addr := serveRoute(t, proxytest.Require(t, "nginx"), "1.22", testmodel.Route(`
  - backendRefs: [{name: svc, port: 8080}]
    retry: {codes: [503], attempts: 2}
`), backend.Listener.Addr().String())

	const size = 5 << 20
	for _, tc := range []struct {
		method, path, want string
	}{
		{http.MethodGet, "/get", fmt.Sprintf("1 %d", size)},
		{http.MethodPost, "/post", fmt.Sprintf("1 %d", size)},
		{http.MethodPut, "/put", fmt.Sprintf("1 %d", size)},
		{http.MethodPut, "/fail-once", fmt.Sprintf("2 %d", size)},
	} {
		req, err := http.NewRequest(tc.method, "http://"+addr+tc.path, bytes.NewReader(make([]byte, size)))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(got) != tc.want {
			t.Errorf("%s %s with a 5 MB body: %d %q, want 200 %q (try, bytes the backend read)", tc.method, tc.path, resp.StatusCode, got, tc.want)
		}
	}
}
