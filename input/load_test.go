package input

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/gwretry/gwretry/translate"
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
		{name: "document end markers", file: "a.yaml",
			content: minimalRoute + "...\n---\n" + strings.Replace(minimalRoute, "name: r", "name: r2", 1) + "...\n# a comment\n", routes: 2},
		{name: "UTF-8 byte order mark", file: "a.yaml", content: "\ufeff" + minimalRoute, routes: 1},
		{name: "CRLF line ends", file: "a.yaml", content: strings.ReplaceAll(minimalRoute+"---\n"+strings.Replace(minimalRoute, "name: r", "name: r2", 1), "\n", "\r\n"), routes: 2},
		{name: "other kinds are skipped with a note", file: "a.yaml", content: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {}\n", note: "info: skipped 1 Deployment (apps/v1)"},
		{name: "a skipped retry budget is a warning", file: "a.yaml",
			content: "apiVersion: gateway.networking.x-k8s.io/v1alpha1\nkind: XBackendTrafficPolicy\nmetadata: {name: b, namespace: ns}\nspec:\n  targetRefs: [{group: '', kind: Service, name: svc}]\n  retryConstraint: {budget: {percent: 20}}\n",
			note:    "warning: skipped 1 XBackendTrafficPolicy (gateway.networking.x-k8s.io/v1alpha1) object(s), not carried to any target: its retryConstraint (GEP-3388 retry budget"},
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
			if tt.note != "" && !strings.Contains(translate.NotesText(in.Notes), tt.note) {
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
		lim           translate.Limits
		want          []string // substrings of the error
	}{
		{name: "unknown field", content: strings.Replace(minimalRoute, "attempts: 2", "atempts: 2", 1),
			want: []string{"document 1", "HTTPRoute ns/r", "spec.rules[0].retry.atempts: unknown field"}},
		{name: "duplicate key", content: minimalRoute + "  hostnames: [a.example.com]\n  hostnames: [b.example.com]\n",
			want: []string{"document 1", "hostnames", "already set"}},
		{name: "wrong case", content: strings.Replace(minimalRoute, "attempts: 2", "Attempts: 2", 1),
			want: []string{"spec.rules[0].retry.Attempts: unknown field"}},
		{name: "alias", content: "---\n" + minimalRoute + "---\n" + bomb, want: []string{"document 2", "are not accepted"}},
		{name: "missing kind", content: "apiVersion: v1\nmetadata: {name: x}\n", want: []string{"kind: required"}},
		{name: "not an object", content: "- a\n- b\n", want: []string{"not a Kubernetes object"}},
		{name: "invalid YAML", content: "a: [\n", want: []string{"document 1"}},
		// Split on "---" lines only, the second document was dropped.
		{name: "a document after ... without ---", content: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n...\n" + minimalRoute,
			want: []string{"document 1", "follows the first YAML document without a \"---\" line"}},
		{name: "JSON objects one after another", content: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}` + "\n" + `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}` + "\n",
			want: []string{"document 1", "follows the first YAML document without a \"---\" line"}},
		{name: "UTF-16LE", content: utf16Text(binary.LittleEndian, "\ufeff"+minimalRoute+"---\n"+strings.Replace(minimalRoute, "name: r", "name: r2", 1)),
			want: []string{"document 1", "the file is UTF-16LE", "iconv"}},
		{name: "UTF-16BE", content: utf16Text(binary.BigEndian, "\ufeff"+minimalRoute),
			want: []string{"document 1", "the file is UTF-16BE"}},
		{name: "document too big", content: minimalRoute, lim: translate.Limits{MaxInputBytes: 1 << 20, MaxDocumentBytes: 100, MaxDocuments: 10},
			want: []string{"more than the limit of 100", "--max-document-bytes"}},
		{name: "too many documents", content: minimalRoute + "---\n" + minimalRoute, lim: translate.Limits{MaxInputBytes: 1 << 20, MaxDocumentBytes: 1 << 20, MaxDocuments: 1},
			want: []string{"more than 1 documents", "--max-documents"}},
		{name: "input too big", content: minimalRoute, lim: translate.Limits{MaxInputBytes: 10, MaxDocumentBytes: 1 << 20, MaxDocuments: 10},
			want: []string{"exceeds 10 bytes", "--max-input-bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := tt.lim
			if lim.MaxDocuments == 0 {
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

// TestLoadDecodeErrorsNameTheField: a value of the wrong type is named by
// its field path with list indices, never by Go's struct field names.
func TestLoadDecodeErrorsNameTheField(t *testing.T) {
	route := func(rules string) string {
		return "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: r, namespace: ns}\nspec:\n  rules:\n" + rules
	}
	tests := []struct {
		name, content, want string
	}{
		{"string for integer", route("  - backendRefs: [{name: svc, port: 8080}]\n    retry: {attempts: three}\n"),
			`spec.rules[0].retry.attempts: expected integer, got string "three"`},
		{"second rule", route("  - backendRefs: [{name: svc, port: 8080}]\n  - backendRefs: [{name: svc, port: 8080}]\n    retry: {codes: [500, \"503\"]}\n"),
			`spec.rules[1].retry.codes[1]: expected integer, got string "503"`},
		{"fraction for integer", route("  - backendRefs: [{name: svc, port: 80.5}]\n"),
			"spec.rules[0].backendRefs[0].port: expected integer, got number 80.5"},
		{"object for list", route("  - backendRefs: {name: svc, port: 8080}\n"),
			"spec.rules[0].backendRefs: expected list, got an object"},
		{"list for string", route("  - backendRefs: [{name: [svc], port: 8080}]\n"),
			"spec.rules[0].backendRefs[0].name: expected string, got a list"},
		{"boolean for string", "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns}\nspec: {type: true}\n",
			"Service ns/s: spec.type: expected string, got boolean true"},
		{"type meta", "apiVersion: v1\nkind: Service\nmetadata: {name: 5}\n",
			"metadata.name: expected string, got number 5"},
		{"List item", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: s}\n  spec: {ports: [{port: http}]}\n",
			`items[0]: Service default/s: spec.ports[0].port: expected integer, got string "http"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeInput(t, "in.yaml", tt.content)
			_, err := Load([]string{p}, nil, DefaultLimits())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "Go struct") || strings.Contains(err.Error(), "unmarshal") {
				t.Errorf("error speaks Go: %v", err)
			}
		})
	}
}

// TestLoadSameObjectTwice: the same object read twice is an error naming
// both places, unless both copies decode to the same JSON.
func TestLoadSameObjectTwice(t *testing.T) {
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80}]}\n"
	svcReordered := "kind: Service\napiVersion: v1\nspec:\n  ports:\n  - port: 80\nmetadata:\n  name: s\n"
	svcNS := strings.Replace(svc, "{name: s}", "{name: s, namespace: default}", 1)
	svcOther := strings.Replace(svc, "port: 80", "port: 81", 1)
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(svcOther), "\n", "\n  ") + "\n"
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n"
	tests := []struct {
		name     string
		files    map[string]string
		services int
		errs     []string // substrings of the error; none: no error
		note     string
	}{
		{"identical in two files", map[string]string{"a.yaml": svc, "b.yaml": svcReordered}, 1, nil,
			"info: Service default/s: read twice, identically, in DIR/a.yaml: document 1 and in DIR/b.yaml: document 1: used once"},
		{"namespace defaulted", map[string]string{"a.yaml": svc + "---\n" + svcNS}, 1, []string{"DIR/a.yaml: document 2: Service default/s: also read from DIR/a.yaml: document 1, with different content"}, ""},
		{"different in two files", map[string]string{"a.yaml": svc, "b.yaml": svcOther}, 1,
			[]string{"DIR/b.yaml: document 1: Service default/s: also read from DIR/a.yaml: document 1, with different content"}, ""},
		{"a List item", map[string]string{"a.yaml": svc, "b.yaml": list}, 1,
			[]string{"DIR/b.yaml: document 1: items[0]: Service default/s: also read from DIR/a.yaml: document 1"}, ""},
		{"other namespace is another object", map[string]string{"a.yaml": svc, "b.yaml": strings.Replace(svcOther, "{name: s}", "{name: s, namespace: x}", 1)}, 2, nil, ""},
		{"cluster-scoped", map[string]string{"a.yaml": ns, "b.yaml": strings.Replace(ns, "{name: shop}", "{name: shop, labels: {a: b}}", 1)}, 0,
			[]string{"DIR/b.yaml: document 1: Namespace shop: also read from DIR/a.yaml: document 1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			in, err := Load([]string{dir}, nil, DefaultLimits())
			if len(tt.errs) == 0 && err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.errs {
				if w = strings.ReplaceAll(w, "DIR", dir); err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want it to contain %q", err, w)
				}
			}
			if len(tt.errs) > 0 && !IsInputError(err) {
				t.Errorf("%v is not an input error", err)
			}
			if in == nil || len(in.Services) != tt.services {
				t.Fatalf("input %+v, want %d Services", in, tt.services)
			}
			if w := strings.ReplaceAll(tt.note, "DIR", dir); !strings.Contains(translate.NotesText(in.Notes), w) {
				t.Errorf("notes %q lack %q", translate.NotesText(in.Notes), w)
			}
		})
	}
}

// TestLoadKeepsWhatDecoded: an invalid document does not hide the others,
// which the caller can still validate.
func TestLoadKeepsWhatDecoded(t *testing.T) {
	bad := strings.Replace(minimalRoute, "attempts: 2", "attempts: two", 1)
	good := strings.Replace(minimalRoute, "name: r\n", "name: r2\n", 1)
	in, err := Load([]string{writeInput(t, "in.yaml", bad+"---\n"+good)}, nil, DefaultLimits())
	if !IsInputError(err) || in == nil || len(in.Routes) != 1 || in.Routes[0].Obj.Name != "r2" {
		t.Fatalf("got %+v, %v; want the second route and the error of the first", in, err)
	}
}

func TestInputFound(t *testing.T) {
	content := "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\n---\n" +
		"apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec: {gatewayClassName: x, listeners: [{name: http, port: 80, protocol: HTTP}]}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	in, err := Load([]string{writeInput(t, "in.yaml", content)}, nil, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Found(in), "1 Gateway, 2 Services, 1 skipped ConfigMap (v1) object"; got != want {
		t.Errorf("Found() = %q, want %q", got, want)
	}
	if got := Found(&Input{}); got != "no Kubernetes object" {
		t.Errorf("empty Found() = %q", got)
	}
}

// utf16Text is s in UTF-16 with the byte order o.
func utf16Text(o binary.AppendByteOrder, s string) string {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = o.AppendUint16(b, u)
	}
	return string(b)
}
