package linkerd

import (
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/translate"
)

// TestServiceRouteBothTimeouts: a rule of a route attached to a Service
// that sets both timeouts.request and a shorter timeouts.backendRequest,
// without retries, translates on every Linkerd version (it was an
// internal error: the shared judge took the request timer to be
// backendRequest whenever a single try is cut sooner, although Linkerd's
// try timer, timeout.linkerd.io/response, waits for the headers only and
// the request timer is the total the Gateway API defines). The judge
// still refuses a request timer of another value.
func TestServiceRouteBothTimeouts(t *testing.T) {
	const timeouts = "    timeouts: {request: 10s, backendRequest: 1s}\n"
	for _, input := range []string{gammaRoute("a", rule("/x", timeouts)), route("a", rule("/x", timeouts))} {
		_, m := build(t, base+input)
		for _, v := range New().Versions() {
			res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: v}}, false)
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			got := map[translate.Feature]translate.Status{}
			for _, f := range res.Report.Findings {
				got[f.Feature] = f.Status
			}
			if got[translate.FeatureRequestTimeout] != translate.Honoured || got[translate.FeatureBackendRequestTimeout] != translate.Approximated {
				t.Errorf("%s: findings %v", v, got)
			}
		}
	}
	_, m := build(t, base+gammaRoute("a", rule("/x", timeouts)))
	out, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	observed, err := New().Observe(m, translate.Options{}, out.Files)
	if err != nil {
		t.Fatal(err)
	}
	r := m.MeshRules[0]
	for _, tt := range []struct {
		request time.Duration
		ok      bool
	}{{10 * time.Second, true}, {5 * time.Second, false}} {
		obs := map[translate.MethodClass]translate.Behaviour{}
		for c, b := range observed[r.Name] {
			b.RequestTimeout.Value = tt.request
			obs[c] = b
		}
		errs := translate.CheckClaims(r, out.Findings, obs)
		if (len(errs) == 0) != tt.ok {
			t.Errorf("request timer %s: %v", tt.request, errs)
		}
		for _, e := range errs {
			if !strings.Contains(e.Error(), "timeouts.request") {
				t.Errorf("request timer %s: %v", tt.request, e)
			}
		}
	}
}
