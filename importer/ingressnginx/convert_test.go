package ingressnginx

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// ingressDoc is an Ingress of host shop.example.com with one path.
func ingressDoc(name, created, tries, pathType, path, svc string, extra ...string) string {
	meta := ""
	if created != "" {
		meta = "\n  creationTimestamp: \"" + created + "\""
	}
	ann := fmt.Sprintf("    nginx.ingress.kubernetes.io/proxy-next-upstream-tries: %q\n", tries)
	for _, e := range extra {
		ann += "    " + e + "\n"
	}
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: %s
  namespace: default%s
  annotations:
%sspec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: %q, pathType: %s, backend: {service: {name: %s, port: {number: 80}}}}
`, name, meta, ann, path, pathType, svc)
}

// TestSharedPath checks that a host and path defined by several Ingresses
// is served as ingress-nginx serves it: by one Ingress only (the oldest,
// else the last by namespace/name), with its backend and settings.
func TestSharedPath(t *testing.T) {
	for _, tc := range []struct {
		name        string
		docs        []string
		wantBackend string
		wantRetries int
		// dropped is the Ingress whose backend the rule does not keep.
		dropped string
	}{
		{"no timestamps: last name wins, whatever the input order",
			[]string{ingressDoc("a", "", "5", "Prefix", "/api", "svc-a"), ingressDoc("b", "", "1", "Prefix", "/api", "svc-b")},
			"svc-b", 0, "default/a"},
		{"no timestamps, reversed input",
			[]string{ingressDoc("b", "", "1", "Prefix", "/api", "svc-b"), ingressDoc("a", "", "5", "Prefix", "/api", "svc-a")},
			"svc-b", 0, "default/a"},
		{"oldest wins",
			[]string{ingressDoc("a", "2024-01-01T00:00:00Z", "5", "Prefix", "/api", "svc-a"), ingressDoc("b", "2025-01-01T00:00:00Z", "1", "Prefix", "/api", "svc-b")},
			"svc-a", 4, "default/b"},
		{"empty path is /",
			[]string{ingressDoc("a", "", "5", "Prefix", "", "svc-a"), ingressDoc("b", "", "1", "Prefix", "/", "svc-b")},
			"svc-b", 0, "default/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Load([]string{"-"}, strings.NewReader(strings.Join(tc.docs, "---\n")), translate.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			res, err := Import(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Routes) != 1 || len(res.Routes[0].Spec.Rules) != 1 {
				t.Fatalf("want 1 route with 1 rule, got %+v", res.Routes)
			}
			rule := res.Routes[0].Spec.Rules[0]
			if len(rule.BackendRefs) != 1 || string(rule.BackendRefs[0].Name) != tc.wantBackend {
				t.Errorf("backendRefs = %+v, want %s only", rule.BackendRefs, tc.wantBackend)
			}
			if got := *rule.Retry.Attempts; got != tc.wantRetries {
				t.Errorf("attempts = %d, want %d", got, tc.wantRetries)
			}
			found := false
			for _, f := range res.Report.Findings {
				if f.Ingress == tc.dropped && strings.HasSuffix(f.Annotation, ".backend") {
					found = f.Status == NotCarried
				}
				if f.Ingress == tc.dropped && f.Annotation == Prefix+NextUpstreamTries && f.Status != NotCarried {
					t.Errorf("%s's tries: %s %q, want not-carried", tc.dropped, f.Status, f.Message)
				}
			}
			if !found {
				t.Errorf("no not-carried finding on the backend of %s: %+v", tc.dropped, res.Report.Findings)
			}
		})
	}
}

// TestRegexHostExactPath: use-regex on a host makes ingress-nginx match
// its Exact paths as case-insensitive prefix regular expressions too; the
// Exact match the rule keeps must say so.
func TestRegexHostExactPath(t *testing.T) {
	doc := ingressDoc("a", "", "3", "Exact", "/exact", "svc-a", `nginx.ingress.kubernetes.io/use-regex: "true"`)
	in, err := Load([]string{"-"}, strings.NewReader(doc), translate.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Import(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Report.Findings {
		if f.Rule == 0 && f.Annotation == Prefix+UseRegex {
			if f.Status != Approximated || !strings.Contains(f.Message, `~* "^/exact"`) {
				t.Errorf("finding %s %q, want approximated naming ~* \"^/exact\"", f.Status, f.Message)
			}
			return
		}
	}
	t.Errorf("no use-regex finding on the Exact rule: %+v", res.Report.Findings)
}
