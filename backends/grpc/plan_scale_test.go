package grpc

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestPlanScales: plan's search for names that a hostname-bound rule takes
// from a wider rule on other hosts compared every name of every rule with
// every name (sorting them all each time): 3,000 one-hostname routes and a
// catch-all took 69 CPU seconds. With four times the routes, plan must
// allocate at most five times as much (allocations do not depend on the
// machine's load).
func TestPlanScales(t *testing.T) {
	allocated := func(n int) uint64 {
		var b strings.Builder
		b.WriteString(testmodel.Route("  - backendRefs: [{name: svc, port: 8080}]\n    retry: {attempts: 0}\n"))
		for i := range n {
			fmt.Fprintf(&b, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r%d, namespace: ns}
spec:
  parentRefs: [{name: gw}]
  hostnames: [h%d.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /s%d.S/M}}, {path: {type: PathPrefix, value: /t%d.T}}]
    backendRefs: [{name: svc, port: 8080}]
    retry: {attempts: 2, codes: [503]}
`, i, i, i, i)
		}
		m := testmodel.LoadText(t, b.String(), translate.ResolveOptions{}, "svc:8080=127.0.0.1:9100")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p := plan(m)
		runtime.ReadMemStats(&after)
		if got := len(p[m.Rules[0]].LostNames); m.Rules[0].Route == "ns/r" && got != 2*n {
			t.Errorf("%d routes: the catch-all rule loses %d names, want %d", n, got, 2*n)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := allocated(100), allocated(400)
	if ratio := float64(large) / float64(small); ratio > 5 {
		t.Errorf("plan allocated %d bytes for 100 routes and %d for 400: %.1f×, want at most 5×", small, large, ratio)
	}
}
