package backends

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/translate"
)

// Every row of the registry is a complete target: a unique name that its
// backend answers to and that --target all runs, defaults its constructor
// takes, its own files and flags, and a binary (when it has one) that runs
// files it writes.
func TestRegistry(t *testing.T) {
	rows := Targets()
	all := All()
	if len(all) != len(rows) {
		t.Fatalf("All has %d backends, the registry %d rows", len(all), len(rows))
	}
	everything, err := translate.ParseTargets("all", all)
	if err != nil {
		t.Fatal(err)
	}
	var inAll []string
	for _, tg := range everything {
		inAll = append(inAll, tg.Backend.Name())
	}
	names := map[string]bool{}
	flags := map[string]bool{}
	for i, r := range rows {
		if r.Name == "" || names[r.Name] {
			t.Errorf("row %d: name %q is empty or not unique", i, r.Name)
		}
		names[r.Name] = true
		if all[i].Name() != r.Name {
			t.Errorf("row %s: its backend is named %q", r.Name, all[i].Name())
		}
		if !slices.Contains(inAll, r.Name) {
			t.Errorf("row %s: not in --target all (%v)", r.Name, inAll)
		}
		if got, ok := Lookup(r.Name); !ok || got.Name != r.Name {
			t.Errorf("Lookup(%q) does not find its row", r.Name)
		}
		defaults := Settings{}
		for _, f := range r.Flags {
			if !strings.HasPrefix(f.Name, r.Name+"-") || flags[f.Name] || f.Usage == "" {
				t.Errorf("row %s: flag %q is not named after the target, is not unique, or has no usage", r.Name, f.Name)
			}
			flags[f.Name] = true
			defaults[f.Name] = f.Default
		}
		if b, err := r.New(defaults); err != nil || b.Name() != r.Name {
			t.Errorf("row %s: New refuses its flags' defaults: %v", r.Name, err)
		}
		if len(r.Files) == 0 {
			t.Errorf("row %s: no files", r.Name)
		}
		for _, f := range r.Files {
			if !strings.HasPrefix(f, r.Name+"/") || filepath.ToSlash(filepath.Clean(f)) != f {
				t.Errorf("row %s: file %q is not under %s/", r.Name, f, r.Name)
			}
		}
		if r.Live == nil {
			continue
		}
		if r.Live.Name != r.Name || dataplane.KindOf(r.Name) != r.Live {
			t.Errorf("row %s: its binary is %s's", r.Name, r.Live.Name)
		}
		for _, f := range r.Live.Files {
			if !slices.Contains(r.Files, f) {
				t.Errorf("row %s: its binary runs %s, which the target does not write", r.Name, f)
			}
		}
	}
	var live []string
	for _, r := range Live() {
		live = append(live, r.Name)
	}
	var kinds []string
	for _, k := range dataplane.Kinds() {
		kinds = append(kinds, k.Name)
	}
	if !slices.Equal(live, kinds) {
		t.Errorf("targets with a binary %v, binaries %v: a binary without its target, or a target without its binary", live, kinds)
	}
	if _, err := Configured(Settings{"nginx-layout": "no-such-layout"}); err == nil {
		t.Error("Configured took a setting its target refuses")
	}
}

// Every file the goldens hold under a target's directory is one of its
// row's Files.
func TestRegistryFiles(t *testing.T) {
	cases, err := filepath.Glob("../testdata/*")
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]bool{}
	for _, c := range cases {
		for _, r := range Targets() {
			_ = filepath.WalkDir(filepath.Join(c, r.Name), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(c, p)
					written[filepath.ToSlash(rel)] = true
					if !slices.Contains(r.Files, filepath.ToSlash(rel)) {
						t.Errorf("%s holds %s, which is not among %s's Files %v", c, rel, r.Name, r.Files)
					}
				}
				return nil
			})
		}
	}
	if len(written) == 0 {
		t.Fatal("no golden file found under ../testdata")
	}
}

// targetsBehindRegistry are the targets whose package only the registry
// (and the package's own folder) imports. Add a target once its last
// other importer is gone.
var targetsBehindRegistry = []string{"openshift"}

// No file outside a target's folder and the registry imports a package in
// targetsBehindRegistry.
func TestTargetsOnlyThroughRegistry(t *testing.T) {
	for _, name := range targetsBehindRegistry {
		if _, ok := Lookup(name); !ok {
			t.Fatalf("%s has no row", name)
		}
	}
	const module = "github.com/gwretry/gwretry/"
	forEachGoFile(t, "..", true, func(path string, _ *token.FileSet, f *ast.File) {
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, name := range targetsBehindRegistry {
				own := filepath.Join("..", "backends", name) + string(filepath.Separator)
				if p == module+"backends/"+name && path != filepath.Join("..", "backends", "registry.go") && !strings.HasPrefix(path, own) {
					t.Errorf("%s imports backends/%s: reach it through its registry row", path, name)
				}
			}
		}
	})
}

// No non-test file of the commands, the end-to-end suite or the data plane
// machinery switches on a target's name (a case, == or != with the name
// as a string literal): what differs between targets is a registry row or
// a dataplane.Kind.
func TestNoSwitchOnTargetNames(t *testing.T) {
	names := map[string]bool{}
	for _, r := range Targets() {
		names[r.Name] = true
	}
	isName := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return false
		}
		s, _ := strconv.Unquote(lit.Value)
		return names[s]
	}
	for _, dir := range []string{"../cmd", "../e2e", "../prove", "../internal/dataplane"} {
		forEachGoFile(t, dir, false, func(path string, fs *token.FileSet, f *ast.File) {
			ast.Inspect(f, func(n ast.Node) bool {
				var hit ast.Expr
				switch n := n.(type) {
				case *ast.CaseClause:
					for _, e := range n.List {
						if isName(e) {
							hit = e
						}
					}
				case *ast.BinaryExpr:
					if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
						hit = n
					}
				}
				if hit != nil {
					t.Errorf("%s:%d switches on a target name: put what differs in its registry row", path, fs.Position(hit.Pos()).Line)
				}
				return true
			})
		})
	}
}

// forEachGoFile parses every .go file under root (test files too when
// tests) and calls fn with its path and syntax tree.
func forEachGoFile(t *testing.T, root string, tests bool, fn func(path string, fs *token.FileSet, f *ast.File)) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || (!tests && strings.HasSuffix(p, "_test.go")) {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fs := token.NewFileSet()
		f, err := parser.ParseFile(fs, p, src, 0)
		if err != nil {
			return err
		}
		n++
		fn(p, fs, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no Go file under %s", root)
	}
}

// TestDefaultVersions: --target NAME without a version assumes, for a
// target with a live binary, the newest version the live tests run (the
// source builds of the Makefile, the Traefik oracle), not the newest
// gwretry knows; the others assume their newest. Every default is one of
// the target's versions, so the newer ones stay available with @.
func TestDefaultVersions(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	built := func(v string) string {
		for _, line := range strings.Split(string(mk), "\n") {
			if name, val, ok := strings.Cut(line, ":="); ok && strings.TrimSpace(name) == v {
				parts := strings.Split(strings.TrimSpace(val), ".")
				return parts[0] + "." + parts[1]
			}
		}
		t.Fatalf("the Makefile sets no %s", v)
		return ""
	}
	traefik := strings.Split(strings.TrimPrefix(dataplane.TraefikVersion, "v"), ".")
	want := map[string]string{
		"nginx":   built("NGINX_SRC_VERSION"),
		"haproxy": built("HAPROXY_SRC_VERSION"),
		"traefik": traefik[0] + "." + traefik[1],
	}
	for _, b := range All() {
		vs := b.Versions()
		w, ok := want[b.Name()]
		if !ok {
			w = vs[len(vs)-1]
		}
		if got := translate.DefaultVersion(b); got != w || !slices.Contains(vs, got) {
			t.Errorf("%s: default version %s, want %s (of %v)", b.Name(), got, w, vs)
		}
		ts, err := translate.ParseTargets(b.Name(), []translate.Backend{b})
		if err != nil || len(ts) != 1 || ts[0].Version != w {
			t.Errorf("--target %s: %v %v, want version %s", b.Name(), ts, err, w)
		}
		newest := vs[len(vs)-1]
		if ts, err := translate.ParseTargets(b.Name()+"@"+newest, []translate.Backend{b}); err != nil || ts[0].Version != newest {
			t.Errorf("--target %s@%s: %v %v", b.Name(), newest, ts, err)
		}
	}
}
