package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/input"
)

func TestStrip(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{
			"name": "s", "namespace": "ns", "uid": "u", "resourceVersion": "7", "generation": int64(2),
			"selfLink": "/x", "creationTimestamp": "2026-01-01T00:00:00Z",
			"managedFields": []any{map[string]any{"manager": "kubectl"}},
			"labels":        map[string]any{"app": "a"},
			"annotations":   map[string]any{LastApplied: "{}"},
		},
		"spec":   map[string]any{"type": "ClusterIP"},
		"status": map[string]any{"loadBalancer": map[string]any{}},
	}
	Strip(obj)
	want := map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "s", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z",
			"labels": map[string]any{"app": "a"}},
		"spec": map[string]any{"type": "ClusterIP"},
	}
	got, _ := yaml.Marshal(obj)
	w, _ := yaml.Marshal(want)
	if string(got) != string(w) {
		t.Errorf("Strip:\n%s\nwant:\n%s", got, w)
	}
}

// TestKindsRead checks that every kind listed is one package input reads
// (none is skipped), so that what is read from a cluster is used.
func TestKindsRead(t *testing.T) {
	objs := input.NewObjects(input.DefaultLimits())
	for _, k := range TranslateKinds {
		apiVersion := k.Versions[0]
		if k.Group != "" {
			apiVersion = k.Group + "/" + apiVersion
		}
		if err := objs.Add(input.Position{Cluster: "cluster test"}, []byte(`{"apiVersion":"`+apiVersion+`","kind":"`+k.Kind+`","metadata":{"name":"x"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	in, _ := objs.Input()
	if len(in.Skipped) > 0 {
		t.Errorf("kinds input does not read: %v", in.Skipped)
	}
}

// TestClusterRole checks that config/rbac/clusterrole.yaml allows every
// request gwretry makes, and nothing but get and list.
func TestClusterRole(t *testing.T) {
	raw, err := os.ReadFile("../config/rbac/clusterrole.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(raw, &role); err != nil {
		t.Fatal(err)
	}
	allows := func(group, resource, verb, name string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) &&
				(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name)) {
				return true
			}
		}
		return false
	}
	for _, k := range append(slices.Clone(TranslateKinds), ImportKinds...) {
		for _, verb := range []string{"list", "get"} {
			if !allows(k.Group, k.Resource, verb, "") {
				t.Errorf("the ClusterRole does not allow %s %s", verb, k.GroupResource())
			}
		}
	}
	if !allows("", "configmaps", "get", "ingress-nginx-controller") {
		t.Errorf("the ClusterRole does not allow get configmaps/ingress-nginx-controller")
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" {
				t.Errorf("rule %v: verb %s: gwretry only gets and lists", r, v)
			}
		}
		if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*") {
			t.Errorf("rule %v: gwretry reads no Secret", r)
		}
	}
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: dev
  context: {cluster: c, user: u, namespace: shop}
- name: prod
  context: {cluster: c, user: u}
current-context: dev
`

// TestConnect resolves kubeconfigs as kubectl: the current context and its
// namespace, --context, -n, -A; no kubeconfig at all is NoConfigError.
func TestConnect(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "config")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, c := range []struct {
		o     Options
		scope string
	}{
		{Options{Kubeconfig: kc}, "cluster dev, namespace shop"},
		{Options{Kubeconfig: kc, Context: "prod"}, "cluster prod, namespace default"},
		{Options{Kubeconfig: kc, Namespace: "web"}, "cluster dev, namespace web"},
		{Options{Kubeconfig: kc, AllNamespaces: true, Selector: "app=a"}, "cluster dev, all namespaces, selector app=a"},
	} {
		cl, err := Connect(c.o)
		if err != nil {
			t.Fatal(err)
		}
		if cl.Scope() != c.scope {
			t.Errorf("%+v: %q, want %q", c.o, cl.Scope(), c.scope)
		}
	}
	t.Setenv("KUBECONFIG", kc)
	if cl, err := Connect(Options{}); err != nil || cl.Scope() != "cluster dev, namespace shop" {
		t.Errorf("KUBECONFIG: %v %v", cl, err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "absent"))
	t.Setenv("HOME", dir)
	var nc *NoConfigError
	if _, err := Connect(Options{}); !errors.As(err, &nc) {
		t.Errorf("no kubeconfig: %v, want NoConfigError", err)
	}
	if _, err := Connect(Options{Kubeconfig: kc, Context: "nope"}); err == nil {
		t.Errorf("unknown context: no error")
	}
}

// TestPosition: an object read from a cluster is named by the cluster
// and its kind, namespace and name, never a file.
func TestPosition(t *testing.T) {
	e := &input.InputError{Pos: input.Position{Cluster: "cluster dev"}, Object: "HTTPRoute shop/r", Field: "spec.rules[0].retry.attempts", Msg: "bad"}
	if got, want := e.Error(), "cluster dev: HTTPRoute shop/r: spec.rules[0].retry.attempts: bad"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
