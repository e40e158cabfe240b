package resolve

import (
	"strings"
	"testing"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// An --endpoint that names no Service port of the input was ignored
// without a word: it is refused, naming the ports that exist.
func TestCheckEndpoints(t *testing.T) {
	doc := minimalRoute + `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: m, namespace: other}
spec:
  rules:
  - filters:
    - type: RequestMirror
      requestMirror: {backendRef: {name: shadow, port: 9090}}
    backendRefs: [{name: api, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: db, namespace: ns}
spec: {ports: [{port: 5432}]}
`
	in, err := input.Load([]string{"-"}, strings.NewReader(doc), input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		flag string
		ok   bool
	}{
		{"svc:8080=127.0.0.1:1", true},
		{"svc.ns:8080=127.0.0.1:1", true},
		{"shadow:9090=127.0.0.1:1", true},
		{"api.other:80=127.0.0.1:1", true},
		{"db:5432=127.0.0.1:1", true},
		{"svc:8081=127.0.0.1:1", false},
		{"svc.other:8080=127.0.0.1:1", false},
		{"svcc:8080=127.0.0.1:1", false},
	} {
		ep, err := translate.ParseEndpoint(tt.flag)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckEndpoints(in, []translate.EndpointOverride{ep})
		if (err == nil) != tt.ok {
			t.Errorf("--endpoint %s: %v, want ok=%v", tt.flag, err, tt.ok)
			continue
		}
		if err != nil {
			for _, p := range []string{"svc.ns:8080", "shadow.other:9090", "api.other:80", "db.ns:5432"} {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("--endpoint %s: %q does not name %s", tt.flag, err, p)
				}
			}
		}
	}
}
