package backends

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/hostile"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// ruleFromBytes turns fuzz bytes into one valid HTTPRoute rule: a retry
// stanza (attempts, codes, backoff), timeouts, a match with or without a
// method, and backendRefs that may be weight 0, invalid or missing.
func ruleFromBytes(b []byte) string {
	at := func(i int) int {
		if i < len(b) {
			return int(b[i])
		}
		return 0
	}
	var r strings.Builder
	methods := []string{"", "GET", "POST", "PATCH", "PUT", "DELETE"}
	path := []string{"/", "/a", "/a/b", "/x"}[at(0)%4]
	fmt.Fprintf(&r, "  - matches: [{path: {type: PathPrefix, value: %s}", path)
	if m := methods[at(1)%len(methods)]; m != "" {
		fmt.Fprintf(&r, ", method: %s", m)
	}
	r.WriteString("}")
	if at(2)%3 == 0 {
		r.WriteString(", {path: {type: Exact, value: /e}, method: POST}")
	}
	r.WriteString("]\n")
	durations := []string{"", "0s", "1ms", "100ms", "1s", "30s", "20m", "99999h"}
	if at(3)%4 != 0 {
		var parts []string
		switch at(4) % 6 {
		case 0:
		case 1:
			parts = append(parts, "attempts: 0")
		case 2:
			parts = append(parts, fmt.Sprintf("attempts: %d", at(5)%8))
		case 3:
			parts = append(parts, "attempts: 4294967297")
		case 4:
			parts = append(parts, fmt.Sprintf("attempts: %d", 100+at(5)*1000))
		default:
			parts = append(parts, "attempts: 2147483647")
		}
		all := []int{400, 401, 403, 404, 408, 409, 421, 425, 429, 500, 501, 502, 503, 504, 505, 599}
		var codes []string
		for i := range at(6) % 5 {
			codes = append(codes, fmt.Sprint(all[(at(7)+i*at(8)+i)%len(all)]))
		}
		if len(codes) > 0 {
			seen := map[string]bool{}
			var uniq []string
			for _, c := range codes {
				if !seen[c] {
					seen[c] = true
					uniq = append(uniq, c)
				}
			}
			parts = append(parts, "codes: ["+strings.Join(uniq, ", ")+"]")
		}
		if d := durations[at(9)%len(durations)]; d != "" && d != "0s" {
			parts = append(parts, "backoff: "+d)
		}
		fmt.Fprintf(&r, "    retry: {%s}\n", strings.Join(parts, ", "))
	}
	req, be := durations[at(10)%len(durations)], durations[at(11)%len(durations)]
	if req != "" && be != "" && req != "0s" && durationIndex(be, durations) > durationIndex(req, durations) {
		be = req
	}
	var ts []string
	if req != "" {
		ts = append(ts, fmt.Sprintf("request: %q", req))
	}
	if be != "" {
		ts = append(ts, fmt.Sprintf("backendRequest: %q", be))
	}
	if len(ts) > 0 {
		fmt.Fprintf(&r, "    timeouts: {%s}\n", strings.Join(ts, ", "))
	}
	refs := []string{
		"{name: svc, port: 8080}",
		"{name: svc2, port: 8080, weight: 3}",
		"{name: svc, port: 8080, weight: 0}",
		"{name: b, group: example.com, kind: Bucket, port: 1}",
		"{name: svc, namespace: other, port: 8080}",
	}
	exact := at(2)%3 == 0
	var filters []string
	// Header values: plain, or one that some format would interpret.
	hostileValues := hostile.HeaderValues()
	value := func(i int) string {
		if at(i)%2 == 0 {
			return "v"
		}
		q, _ := json.Marshal(hostileValues[at(i+1)%len(hostileValues)])
		return string(q)
	}
	if at(14)%2 == 1 {
		filters = append(filters, []string{
			"{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: " + value(16) + "}], add: [{name: X-B, value: " + value(18) + "}], remove: [X-C]}}",
			"{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: Accept, value: " + value(18) + "}]}}",
		}[at(15)%2])
	}
	if at(14)%3 == 1 {
		filters = append(filters, "{type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: X-R, value: "+value(20)+"}], add: [{name: X-Q, value: "+value(16)+"}], remove: [X-S]}}")
	}
	redirect := at(14)%7 == 3
	switch {
	case redirect:
		rd := []string{
			"{scheme: https}",
			"{hostname: r.example.com, statusCode: 301}",
			"{port: 8443, statusCode: 307}",
			"{path: {type: ReplaceFullPath, replaceFullPath: /full}, statusCode: 308}",
			"{scheme: https, port: 443, statusCode: 303}",
		}[at(15)%5]
		if !exact && at(15)%3 == 0 {
			rd = "{path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}"
		}
		filters = append(filters, "{type: RequestRedirect, requestRedirect: "+rd+"}")
	case at(14)%5 == 2:
		rw := []string{"{hostname: rw.example.com}", "{path: {type: ReplaceFullPath, replaceFullPath: /rw}}"}[at(15)%2]
		if !exact && at(15)%3 == 0 {
			rw = "{hostname: rw.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}"
		}
		filters = append(filters, "{type: URLRewrite, urlRewrite: "+rw+"}")
	}
	if !redirect && at(14)%11 == 4 {
		filters = append(filters, []string{
			"{type: RequestMirror, requestMirror: {backendRef: {name: mirror, port: 8080}}}",
			"{type: RequestMirror, requestMirror: {backendRef: {name: mirror, port: 8080}, percent: 25}}",
			"{type: RequestMirror, requestMirror: {backendRef: {name: mirror, port: 8080}, fraction: {numerator: 1, denominator: 3}}}",
		}[at(15)%3])
	}
	if len(filters) > 0 {
		fmt.Fprintf(&r, "    filters: [%s]\n", strings.Join(filters, ", "))
	}
	if redirect {
		return r.String() // a redirect forwards nothing: no backendRefs
	}
	var use []string
	for i := range at(12) % 4 {
		use = append(use, refs[(at(13)+i*7)%len(refs)])
	}
	fmt.Fprintf(&r, "    backendRefs: [%s]\n", strings.Join(use, ", "))
	return r.String()
}

func durationIndex(d string, ds []string) int {
	for i, x := range ds {
		if x == d {
			return i
		}
	}
	return 0
}

// FuzzRunAllTargets builds random valid models and runs every backend at
// every version, with and without --retry-non-idempotent, through
// translate.Run: the contract check and every backend's judge (which reads
// the configuration back and checks every honoured claim) must pass, and no
// backend may fail. `make fuzz` runs it for longer.
func FuzzRunAllTargets(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 2, 3, 2, 9, 1, 3, 4, 3, 1, 0}, []byte{})
	f.Add([]byte{1, 2, 0, 1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7})
	f.Add([]byte{2, 1, 3, 2, 2, 5, 4, 9, 3, 2, 5, 4, 2, 3}, []byte{0, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Add([]byte{3, 3, 0, 3, 5, 7, 2, 11, 4, 4, 1, 1, 3, 1}, []byte{1, 4, 1, 1, 4, 7, 3, 1, 2, 6, 7, 6, 2, 4})
	f.Add([]byte{0, 4, 1, 1, 1, 0, 3, 12, 5, 7, 7, 6, 1, 2}, []byte{2, 5, 2, 2, 2, 1, 1, 1, 1, 1, 2, 1, 3, 2})
	f.Fuzz(func(t *testing.T, a, b []byte) { runAllTargets(t, "", a, b) })
}

// runAllTargets builds the manifest of two random rules and runs it through
// every backend (or only the one named target) at every version.
func runAllTargets(t *testing.T, target string, a, b []byte) {
	t.Helper()
	manifest := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: my-route.v1, namespace: ns}
spec:
  hostnames: [a.example.com]
  rules:
` + ruleFromBytes(a) + ruleFromBytes(b)
	in, err := input.Load([]string{"-"}, strings.NewReader(manifest), translate.DefaultLimits())
	if err != nil {
		t.Fatalf("generated manifest does not load: %v\n%s", err, manifest)
	}
	m, err := resolve.Build(in, translate.ResolveOptions{})
	if err != nil {
		t.Fatalf("generated manifest does not build: %v\n%s", err, manifest)
	}
	for _, be := range All() {
		if target != "" && be.Name() != target {
			continue
		}
		for _, v := range be.Versions() {
			for _, optIn := range []bool{false, true} {
				if _, err := translate.Run(m, []translate.Target{{Backend: be, Version: v}}, optIn); err != nil {
					t.Fatalf("%s@%s (retry-non-idempotent %v): %v\nmanifest:\n%s", be.Name(), v, optIn, err, manifest)
				}
			}
		}
	}
}

var (
	randomFor    = flag.Duration("random-for", 0, "run TestRandomModels for this long (make fuzz)")
	randomTarget = flag.String("random-target", "", "only this backend in TestRandomModels")
	randomSeed   = flag.Int64("random-seed", 0, "seed of TestRandomModels (default: the time)")
)

// TestRandomModels is the long run of FuzzRunAllTargets's property with
// pseudo-random inputs, for `make fuzz` (Go's coverage-guided engine
// stalls in some sandboxes). Without -random-for it runs 200 models.
func TestRandomModels(t *testing.T) {
	seed := *randomSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (reproduce with -random-seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	deadline := time.Now().Add(*randomFor)
	n := 0
	least := 200
	if testing.Short() {
		least = 20 // the full tier runs 200, make fuzz many more
	}
	for ; n < least || time.Now().Before(deadline); n++ {
		a, b := make([]byte, 24), make([]byte, 24)
		for i := range a {
			a[i], b[i] = byte(rng.IntN(256)), byte(rng.IntN(256))
		}
		runAllTargets(t, *randomTarget, a, b)
		if t.Failed() {
			break
		}
	}
	t.Logf("%d random models, every version, with and without --retry-non-idempotent", n)
}

// TestEveryBackendJudgesItsOutput: every backend implements translate.Judge,
// so that Run checks its honoured claims against its own files.
func TestEveryBackendJudgesItsOutput(t *testing.T) {
	for _, b := range All() {
		if _, ok := b.(translate.Judge); !ok {
			t.Errorf("backend %s does not implement translate.Judge", b.Name())
		}
	}
}
