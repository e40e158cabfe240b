//go:build unix

package nginx

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestLiveConnectionTimeouts runs a ConnectionTimeoutPolicy of 1s in the
// real nginx: a backend that stays silent is cut after serverTimeout (504),
// for a GET and for a POST with a body the backend never reads, and a
// client that stops sending its body is cut after clientTimeout (nginx
// closes the connection), all long before nginx's 60s defaults.
func TestLiveConnectionTimeouts(t *testing.T) {
	proxytest.Require(t, "nginx")
	port := proxytest.FreePort(t)
	m := testmodel.LoadText(t, testmodel.ConnectionPolicy("clientTimeout: 1s", "serverTimeout: 1s"),
		translate.ResolveOptions{Listen: &translate.Bind{Address: "127.0.0.1", Port: port}},
		"svc:8080="+proxytest.SilentBackend(t, 10*time.Second))
	b, err := NewWithConfig(Config{Layout: LayoutConfD})
	if err != nil {
		t.Fatal(err)
	}
	res, err := translate.Run(m, []translate.Target{{Backend: b, Version: "1.22"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if f.Feature == translate.FeatureConnServerTimeout && f.Status != translate.Honoured {
			t.Fatalf("%s is %s, the test proves an honoured claim: %+v", f.Feature, f.Status, f.Decision)
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startConfD(t, &translate.Output{Files: res.Files}, addr)

	// serverTimeout: the backend never answers.
	start := time.Now()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusGatewayTimeout || took > 8*time.Second {
		t.Errorf("silent backend: %d after %v, want 504 after about 1s", resp.StatusCode, took)
	}

	// serverTimeout with a body: a 900 KB POST to a backend that neither
	// reads it nor answers.
	start = time.Now()
	resp, err = (&http.Client{Timeout: 20 * time.Second}).Post("http://"+addr+"/", "application/octet-stream",
		bytes.NewReader(make([]byte, 900<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != http.StatusGatewayTimeout || took > 8*time.Second {
		t.Errorf("unread POST body: %d after %v, want 504 after about 1s", resp.StatusCode, took)
	}

	// clientTimeout: the client sends 2 of 10 body bytes and stops.
	// nginx logs the 408 but closes without a response (the connection
	// is marked in error when the body times out).
	rest, took, err := proxytest.StallBody(t, addr)
	if err != nil || took > 8*time.Second {
		t.Errorf("stalled body: connection closed after %v (%v, read %q), want about 1s", took, err, rest)
	}
}

// TestLiveServerTimeoutStalledUpload shows, on every installed nginx, that
// serverTimeout (proxy_send/read_timeout) does not end an upload the
// client stalls: nginx reads the whole request body before it contacts the
// backend, so only clientTimeout (client_body_timeout, 3s here) ends it,
// closing the connection without an answer, and the backend gets nothing;
// HAProxy 2.6 answers 504 after serverTimeout instead (the HAProxy
// backend's TestLiveServerTimeoutStalledUpload). The finding stays
// honoured.
func TestLiveServerTimeoutStalledUpload(t *testing.T) {
	installedNginx(t, func(t *testing.T, bin string, v version) {
		backend := newRawBackend(t, nil)
		res, addr := serveRoute(t, bin, v.Name, testmodel.ConnectionPolicy("clientTimeout: 3s", "serverTimeout: 1s"), backend.ln.Addr().String())
		for _, f := range res.Report.Findings {
			if f.Feature == translate.FeatureConnServerTimeout && f.Status != translate.Honoured {
				t.Errorf("nginx %s: %s is %s with %v, want honoured", v.Name, f.Feature, f.Status, f.Caveats)
			}
		}
		rest, took, _ := proxytest.StallBody(t, addr)
		if strings.HasPrefix(rest, "HTTP/1.1 504") || took < 2500*time.Millisecond || took > 10*time.Second || backend.count("/") != 0 {
			t.Errorf("nginx %s: client got %q after %v, the backend %d requests; want no 504 from serverTimeout (1s), a close after clientTimeout (3s), and nothing sent to the backend",
				v.Name, rest, took, backend.count("/"))
		}
	})
}
