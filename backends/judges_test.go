package backends

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// formatFiles are, per target package, the files whose functions a judge
// may call besides its own (judge*.go): what the data plane's format is
// (its syntax, decoding, versions), never what gwretry decides to write.
// A judge that calls anything else checks the planner with the planner.
var formatFiles = map[string][]string{
	"envoy":     {"encode.go", "envoy.go", "headervalue.go", "read.go"},          // proto decoding, the version table, header-value syntax, the shared reader
	"grpc":      {"config.go"},                                                   // the service config's JSON and durations
	"haproxy":   {"crtlist.go", "tokens.go", "urlsyntax.go"},                     // crt-list, words, URL syntax
	"linkerd":   {"decode.go", "syntax.go", "versions.go", "service.go"},         // YAML decoding, annotation syntax, versions, a Service's own annotations
	"nginx":     {"guard.go", "names.go", "syntax.go", "text.go", "versions.go"}, // crossplane parsing, the file's names, path and host syntax, quoting, versions
	"openshift": {},                                                              //
	"traefik":   {"build.go", "rule.go", "verify.go", "versions.go"},             // file layout, rule syntax, strict decoding, versions
}

// TestJudgesCallNoPlanner: a judge reads the file back and derives
// behaviour; it calls no function of its package's planner or writer,
// only its own and those of the format files above. A target package
// missing from formatFiles fails: a new target says what its format is.
func TestJudgesCallNoPlanner(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		name, dir := e.Name(), e.Name()
		allowed, ok := formatFiles[name]
		if !ok {
			t.Errorf("backends/%s: not in formatFiles (judges_test.go): list the files its judge may call", name)
			continue
		}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		declared := map[string]string{} // function -> file
		for _, p := range pkgs {
			for path, f := range p.Files {
				for _, d := range f.Decls {
					if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
						declared[fd.Name.Name] = filepath.Base(path)
					}
				}
			}
		}
		for _, p := range pkgs {
			for path, f := range p.Files {
				if !strings.HasPrefix(filepath.Base(path), "judge") {
					continue
				}
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					id, ok := call.Fun.(*ast.Ident)
					if !ok {
						return true
					}
					file, ok := declared[id.Name]
					if ok && !strings.HasPrefix(file, "judge") && !slices.Contains(allowed, file) {
						t.Errorf("%s: the judge calls %s of %s, which is not a format file", fset.Position(call.Pos()), id.Name, file)
					}
					return true
				})
			}
		}
	}
	if n < 7 {
		t.Errorf("%d target packages read, want the 7 of the registry", n)
	}
}
