package input

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/translate"
)

// writeTree writes files (path relative to a new directory: content) and
// returns the directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const helmTemplate = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {{ include "app.fullname" . }}
  labels:
    {{- include "app.labels" . | nindent 4 }}
spec:
  rules:
  - backendRefs: [{name: svc, port: 8080}]
`

// A directory as real repositories have it: a Helm chart, a kustomization,
// a GitHub workflow, a values file, gwretry's own output. Each failed the
// whole run; each is now skipped with one note, and the manifests are read.
func TestLoadDirectoryOfARepository(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"deploy/route.yaml":               minimalRoute,
		"deploy/kustomization.yaml":       "resources:\n- route.yaml\n",
		"charts/app/Chart.yaml":           "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"charts/app/values.yaml":          "replicas: 2\n",
		"charts/app/templates/route.yaml": helmTemplate,
		"other/templated.yaml":            helmTemplate,
		".github/workflows/ci.yml":        "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: [{run: make}]\n",
		"package.json":                    `{"name": "x", "version": "1.0.0"}`,
		"out/report.json":                 `{"schemaVersion": 3, "targets": [{"name": "envoy"}], "routes": 1, "rules": 1}`,
		"out/envoy/envoy.yaml":            "static_resources: {}\n",
		".git/config.yaml":                "x: 1\n",
		"skipme/route.yaml":               "not: [valid",
		"deploy/local-values.yaml":        "not: [valid",
	})
	lim := DefaultLimits()
	lim.Exclude = []string{"skipme", "*-values.yaml"}
	in, err := Load([]string{dir}, nil, lim)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Routes) != 1 || in.Routes[0].Obj.Name != "r" {
		t.Fatalf("read %d routes, want the one of deploy/route.yaml", len(in.Routes))
	}
	var got []string
	for _, n := range in.Notes {
		got = append(got, string(n.Severity)+" "+strings.TrimPrefix(strings.SplitN(n.Text, ": skipped", 2)[0], dir+string(filepath.Separator)))
	}
	sort.Strings(got)
	want := []string{
		"info .github/workflows/ci.yml",
		"info out",
		"info package.json",
		"warning charts/app",
		"warning deploy/kustomization.yaml",
		"warning other/templated.yaml",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s\n(all: %s)", strings.Join(got, "\n"), strings.Join(want, "\n"), translate.NotesText(in.Notes))
	}
}

// A file named on the command line is read strictly: a workflow or a
// template given by name is an error, as before.
func TestLoadNamedFileIsStrict(t *testing.T) {
	dir := writeTree(t, map[string]string{"t.yaml": helmTemplate, "ci.yml": "name: ci\non: [push]\n"})
	for _, f := range []string{"t.yaml", "ci.yml"} {
		_, err := Load([]string{filepath.Join(dir, f)}, nil, DefaultLimits())
		var l ErrorList
		if !errors.As(err, &l) {
			t.Errorf("%s: got %v, want an input error", f, err)
		}
	}
}

// A walked file that is a Kubernetes object with a mistake is still an
// error: only files with no object at all are skipped.
func TestLoadWalkKeepsMistakes(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": strings.Replace(minimalRoute, "kind: HTTPRoute\n", "", 1),
		"b.yaml": minimalRoute + "---\nfoo: bar\n",
		"c.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]\n",
	})
	_, err := Load([]string{dir}, nil, DefaultLimits())
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 3 {
		t.Fatalf("got %v, want an error for each of a.yaml, b.yaml and c.yaml", err)
	}
}

func TestCheckExclude(t *testing.T) {
	if err := CheckExclude([]string{"charts", "*.tpl", "a/[b-c]"}); err != nil {
		t.Error(err)
	}
	if err := CheckExclude([]string{"[a"}); err == nil {
		t.Error("--exclude [a accepted")
	}
}
