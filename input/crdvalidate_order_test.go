package input

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

func TestComparePaths(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"spec.rules[2]", "spec.rules[10]", -1},
		{"spec.rules[10].filters", "spec.rules[9].filters", 1},
		{"spec.rules[1]", "spec.rules[1]", 0},
		{"spec.rules[01]", "spec.rules[1]", 0},
		{"spec.hostnames", "spec.rules", -1},
		{"spec.rules", "spec.rules[0]", -1},
		{"", "spec", -1},
	} {
		if got := comparePaths(tt.a, tt.b); got != tt.want {
			t.Errorf("comparePaths(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := comparePaths(tt.b, tt.a); got != -tt.want {
			t.Errorf("comparePaths(%q, %q) = %d, want %d", tt.b, tt.a, got, -tt.want)
		}
	}
}

// TestValidationOrderStable: the API server's validators walk Go maps, so
// an object with several problems used to list them in a different order
// from one run to the next (bytes on stderr must not change).
func TestValidationOrderStable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.yaml")
	route := `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad, namespace: default}
spec:
  rules:
  - filters:
    - {type: RequestRedirect, requestRedirect: {scheme: https}}
    - {type: URLRewrite, urlRewrite: {hostname: x.example.com}}
    timeouts: {request: 1s, backendRequest: 2s}
  - filters:
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: A, value: b}]}}
    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: B, value: b}]}}
    backendRefs: [{name: s, port: 80}]
  - timeouts: {request: 1s, backendRequest: 3s}
  - timeouts: {request: 1s, backendRequest: 4s}
  - timeouts: {request: 1s, backendRequest: 5s}
  - timeouts: {request: 1s, backendRequest: 6s}
  - timeouts: {request: 1s, backendRequest: 7s}
  - timeouts: {request: 1s, backendRequest: 8s}
  - timeouts: {request: 1s, backendRequest: 9s}
  - timeouts: {request: 1s, backendRequest: 10s}
  - timeouts: {request: 1s, backendRequest: 11s}
`
	if err := os.WriteFile(p, []byte(route), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{p}, nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for i := range 30 {
		var got []string
		for _, e := range Validate(in, translate.ChannelStandard) {
			got = append(got, e.Error())
		}
		if len(got) < 12 {
			t.Fatalf("want at least 12 problems, got %d: %q", len(got), got)
		}
		if i == 0 {
			first = got
			continue
		}
		if !slices.Equal(got, first) {
			t.Fatalf("run %d listed the problems in another order:\n%q\nfirst run:\n%q", i, got, first)
		}
	}
}
