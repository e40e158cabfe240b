package haproxy

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestConnectionTimeoutsCheck: the connection timeouts of
// testdata/conntimeout (the enhancement's values, a clamped 30d, a bare
// number and days) are written where they belong, every field has one
// finding, and haproxy -c accepts the file.
func TestConnectionTimeoutsCheck(t *testing.T) {
	m := testmodel.ConnectionTimeouts(t)
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: checkedVersion}}, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(res.Files[0].Data)
	for _, c := range []struct{ header, line string }{
		{"frontend fe_http-8080", "timeout client 45s"},
		{"frontend fe_http-8080", "timeout client-fin 3s"},
		{"frontend fe_http-8080", "tcp-request inspect-delay 5s"},
		{"frontend fe_http-8080", "tcp-request content accept if HTTP"},
		{"frontend fe_http-8081", "timeout client 2147483647ms"},
		{"backend be_shop_cart_r0", "timeout server 60s"},
		{"backend be_shop_cart_r0", "timeout server-fin 4s"},
		{"backend be_shop_cart_r0", "timeout tunnel 30m"},
		{"backend be_shop_cart_r1", "timeout server 10000ms"}, // the rule's own timeout wins
		{"backend be_shop_ws_r0", "timeout server 1d"},
		{"backend be_shop_ws_r0", "timeout tunnel 3000"},
	} {
		found := false
		for _, l := range section(cfg, c.header) {
			found = found || l == c.line
		}
		if !found {
			t.Errorf("%s: no %q in\n%s", c.header, c.line, cfg)
		}
	}
	n := 0
	for _, f := range res.Report.Findings {
		if f.Gateway == "" {
			continue
		}
		n++
		if f.Gateway == "shop/gw2" && f.Feature == translate.FeatureConnClientTimeout &&
			(f.Status != translate.Approximated || !hasCaveat(f, report.CaveatTimeoutClamped)) {
			t.Errorf("clamped clientTimeout: %+v", f)
		}
	}
	if n != 9 {
		t.Errorf("%d connection findings, want 9 (6 fields of shop/gw, 3 of shop/gw2)", n)
	}
	proxytest.HAProxyCheck(t, res.Files[0].Data)
}

// editedBackend is the HAProxy backend with its generated haproxy.cfg
// edited after the findings were written.
type editedBackend struct {
	*Backend
	from, to string
}

func (b editedBackend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	out, err := b.Backend.Generate(m, opts)
	if err != nil {
		return nil, err
	}
	out.Files[0].Data = []byte(strings.Replace(string(out.Files[0].Data), b.from, b.to, 1))
	return out, nil
}

// TestApproximatedServerTimeoutChecked: HAProxy 2.6's serverTimeout is
// approximated (ServerTimerRunsDuringUpload), a caveat that changes
// nothing in the configuration, so Run still compares the configured
// timeout server with the policy's: an edited value is an internal error.
func TestApproximatedServerTimeoutChecked(t *testing.T) {
	m := testmodel.ConnectionTimeouts(t)
	_, err := translate.Run(m, []translate.Target{{Backend: editedBackend{New(), "timeout server 60s", "timeout server 61s"}, Version: "2.6"}}, false)
	if err == nil || !strings.Contains(err.Error(), "connection.serverTimeout is claimed approximated (1m0s), but the configuration sets 1m1s") {
		t.Fatalf("Run of an edited timeout server: %v, want the judge to refuse the approximated claim", err)
	}
	if _, err := translate.Run(m, []translate.Target{{Backend: editedBackend{New(), "timeout server 60s", "timeout server 60s"}, Version: "2.6"}}, false); err != nil {
		t.Fatalf("unedited: %v", err)
	}
}
