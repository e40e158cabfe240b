package resolve

import (
	"os"
	"path/filepath"
	"testing"
)

// routeWithRule and writeInput are the helpers of input's tests: an HTTPRoute
// with one rule to Service svc, then rule; and a file in a test directory.
func routeWithRule(rule string) string {
	return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: r
  namespace: ns
spec:
  rules:
  - backendRefs:
    - name: svc
      port: 8080
` + rule
}

func writeInput(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// minimalRoute is the smallest HTTPRoute, as in input's tests.
const minimalRoute = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: r
  namespace: ns
spec:
  rules:
  - backendRefs:
    - name: svc
      port: 8080
    retry:
      attempts: 2
`
