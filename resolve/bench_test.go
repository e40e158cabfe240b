package resolve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// BenchmarkLoadAndBuild measures loading, validating and resolving a
// manifest set of 200 routes with 4 rules each.
func BenchmarkLoadAndBuild(b *testing.B) {
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r%d, namespace: ns}
spec:
  hostnames: [h%d.example.com]
  rules:
  - matches: [{path: {value: /a}}]
    retry: {codes: [500, 502, 503], attempts: 2, backoff: 100ms}
    timeouts: {request: 5s, backendRequest: 1s}
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: Exact, value: /b}, method: GET}]
    backendRefs: [{name: svc, port: 8080, weight: 3}, {name: other, port: 80}]
  - matches: [{headers: [{name: x-v, value: "2"}]}]
    retry: {attempts: 0}
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: RegularExpression, value: "/c/[0-9]+"}}]
    timeouts: {request: 0s}
    backendRefs: [{name: svc, port: 8080}]
`, i, i)
	}
	p := filepath.Join(b.TempDir(), "routes.yaml")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		in, err := input.Load([]string{p}, nil, input.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Build(in, translate.ResolveOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
