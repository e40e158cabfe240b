package input

import (
	"errors"
	"strings"
	"testing"
)

// A kind its API group does not have is what kubectl refuses with "no
// matches for kind": an input error at the object's line naming the
// group's kinds, not a skipped kind.
func TestLoadRefusesAKindItsGroupHasNot(t *testing.T) {
	tests := []struct {
		name, apiVersion, kind string
		want                   []string // kinds the error names
		suggest                string
	}{
		{name: "HttpRoute", apiVersion: "gateway.networking.k8s.io/v1", kind: "HttpRoute", want: []string{"HTTPRoute", "GRPCRoute", "Gateway"}, suggest: "HTTPRoute"},
		{name: "plural", apiVersion: "gateway.networking.k8s.io/v1", kind: "HTTPRoutes", suggest: "HTTPRoute"},
		{name: "gwretry.io typo", apiVersion: "gwretry.io/v1alpha1", kind: "RetryPolicies", want: []string{"RetryPolicy", "ConnectionTimeoutPolicy"}, suggest: "RetryPolicy"},
		{name: "gwretry.io unknown", apiVersion: "gwretry.io/v1alpha1", kind: "TimeoutPolicy", want: []string{"RetryPolicy", "ConnectionTimeoutPolicy"}},
		{name: "Envoy Gateway typo", apiVersion: "gateway.envoyproxy.io/v1alpha1", kind: "BackendTrafficPolicys", want: []string{"BackendTrafficPolicy", "ClientTrafficPolicy"}},
		{name: "Envoy Gateway case", apiVersion: "gateway.envoyproxy.io/v1alpha1", kind: "backendTrafficPolicy", suggest: "BackendTrafficPolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := minimalRoute + "---\n# a comment\napiVersion: " + tt.apiVersion + "\nkind: " + tt.kind + "\nmetadata: {name: x, namespace: ns}\nspec: {}\n"
			p := writeInput(t, "in.yaml", content)
			_, err := Load([]string{p}, nil, DefaultLimits())
			var l ErrorList
			if !errors.As(err, &l) || len(l) != 1 {
				t.Fatalf("got %v, want one input error", err)
			}
			e := l[0]
			if e.Pos.File != p || e.Pos.Line != 15 || e.Field != "kind" || e.Object != tt.kind+" ns/x" {
				t.Errorf("error at %+v, object %q, field %q; want %s:15, %s ns/x, kind", e.Pos, e.Object, e.Field, p, tt.kind)
			}
			for _, k := range tt.want {
				if !strings.Contains(e.Msg, k) {
					t.Errorf("%q does not name the kind %s", e.Msg, k)
				}
			}
			if tt.suggest != "" && !strings.Contains(e.Msg, "did you mean "+tt.suggest+"?") {
				t.Errorf("%q does not suggest %s", e.Msg, tt.suggest)
			}
		})
	}
}

// The group's other kinds and their lists are skipped as before: a
// GRPCRoute is a kind gwretry does not read, not a mistake.
func TestLoadSkipsOtherKindsOfKnownGroups(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRoute\nmetadata: {name: g}\nspec: {}\n",
		"apiVersion: gateway.networking.k8s.io/v1\nkind: GRPCRouteList\nitems:\n- apiVersion: gateway.networking.k8s.io/v1\n  kind: GRPCRoute\n  metadata: {name: g}\n  spec: {}\n",
		"apiVersion: gateway.envoyproxy.io/v1alpha1\nkind: ClientTrafficPolicy\nmetadata: {name: c}\nspec: {}\n",
		"apiVersion: example.com/v1\nkind: HttpRoute\nmetadata: {name: c}\nspec: {}\n",
	} {
		in, err := Load([]string{writeInput(t, "in.yaml", minimalRoute+"---\n"+doc)}, nil, DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if len(in.Skipped) != 1 {
			t.Errorf("%s: skipped %v, want one kind", doc, in.Skipped)
		}
	}
}
