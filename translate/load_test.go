package translate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeInput writes content to a temporary file named name and returns its
// path.
func writeInput(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

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

func TestLoadAccepts(t *testing.T) {
	tests := []struct {
		name, file, content string
		routes, services    int
		note                string
	}{
		{name: "single", file: "a.yaml", content: minimalRoute, routes: 1},
		{name: "multi-document with empty and comment-only documents", file: "a.yaml",
			content: "---\n# only a comment\n---\n" + minimalRoute + "---\n---\n" + strings.Replace(minimalRoute, "name: r", "name: r2", 1), routes: 2},
		{name: "json", file: "a.json",
			content: `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"r","namespace":"ns"},"spec":{"rules":[{"backendRefs":[{"name":"svc","port":8080}]}]}}`, routes: 1},
		{name: "v1beta1", file: "a.yaml", content: strings.Replace(minimalRoute, "/v1\n", "/v1beta1\n", 1), routes: 1},
		{name: "List", file: "a.yaml", content: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: svc, namespace: ns}\n  spec: {ports: [{port: 8080}]}\n", services: 1},
		{name: "other kinds are skipped with a note", file: "a.yaml", content: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n", note: "skipped 1 Deployment (apps/v1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Load([]string{writeInput(t, tt.file, tt.content)}, nil, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if len(in.Routes) != tt.routes || len(in.Services) != tt.services {
				t.Errorf("got %d routes, %d services; want %d, %d", len(in.Routes), len(in.Services), tt.routes, tt.services)
			}
			if tt.note != "" && !strings.Contains(NotesText(in.Notes), tt.note) {
				t.Errorf("notes %q lack %q", in.Notes, tt.note)
			}
		})
	}
}

func TestLoadStdinAndDirectories(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"b/route.yaml": minimalRoute,
		"a/route.yml":  strings.Replace(minimalRoute, "name: r", "name: r0", 1),
		"a/notes.txt":  "not a manifest",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	in, err := Load([]string{dir, "-"}, strings.NewReader(strings.Replace(minimalRoute, "name: r", "name: r9", 1)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range in.Routes {
		got = append(got, filepath.Base(r.Pos.File)+":"+r.Obj.Name)
	}
	want := "route.yml:r0 route.yaml:r <stdin>:r9"
	if strings.Join(got, " ") != want {
		t.Errorf("routes read in order %q, want %q", strings.Join(got, " "), want)
	}
}

func TestLoadRejects(t *testing.T) {
	bomb := "a: &a [\"" + strings.Repeat("x", 100) + "\"]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n"
	tests := []struct {
		name, content string
		lim           Limits
		want          []string // substrings of the error
	}{
		{name: "unknown field", content: strings.Replace(minimalRoute, "attempts: 2", "atempts: 2", 1),
			want: []string{"document 1", "HTTPRoute ns/r", `unknown field "spec.rules[0].retry.atempts"`}},
		{name: "duplicate key", content: minimalRoute + "  hostnames: [a.example.com]\n  hostnames: [b.example.com]\n",
			want: []string{"document 1", "hostnames", "already set"}},
		{name: "wrong case", content: strings.Replace(minimalRoute, "attempts: 2", "Attempts: 2", 1),
			want: []string{"spec.rules[0].retry.Attempts"}},
		{name: "alias", content: "---\n" + minimalRoute + "---\n" + bomb, want: []string{"document 2", "are not accepted"}},
		{name: "missing kind", content: "apiVersion: v1\nmetadata: {name: x}\n", want: []string{"kind: required"}},
		{name: "not an object", content: "- a\n- b\n", want: []string{"not a Kubernetes object"}},
		{name: "invalid YAML", content: "a: [\n", want: []string{"document 1"}},
		{name: "document too big", content: minimalRoute, lim: Limits{MaxInputBytes: 1 << 20, MaxDocumentBytes: 100, MaxDocuments: 10},
			want: []string{"more than the limit of 100", "--max-document-bytes"}},
		{name: "too many documents", content: minimalRoute + "---\n" + minimalRoute, lim: Limits{MaxInputBytes: 1 << 20, MaxDocumentBytes: 1 << 20, MaxDocuments: 1},
			want: []string{"more than 1 documents", "--max-documents"}},
		{name: "input too big", content: minimalRoute, lim: Limits{MaxInputBytes: 10, MaxDocumentBytes: 1 << 20, MaxDocuments: 10},
			want: []string{"exceeds 10 bytes", "--max-input-bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := tt.lim
			if lim == (Limits{}) {
				lim = DefaultLimits()
			}
			p := writeInput(t, "in.yaml", tt.content)
			_, err := Load([]string{p}, nil, lim)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range append(tt.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadReportsEveryError(t *testing.T) {
	bad := strings.Replace(minimalRoute, "attempts: 2", "atempts: 2", 1)
	p := writeInput(t, "in.yaml", bad+"---\n"+bad)
	_, err := Load([]string{p}, nil, DefaultLimits())
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 2 {
		t.Fatalf("got %v, want an ErrorList of 2", err)
	}
	if l[0].Pos.Doc != 1 || l[1].Pos.Doc != 2 {
		t.Errorf("documents %d and %d, want 1 and 2", l[0].Pos.Doc, l[1].Pos.Doc)
	}
}
