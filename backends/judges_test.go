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

// formatDirective marks a file of a target package whose functions a judge
// may call besides its own (judge*.go): the file holds what the data
// plane's format is (its syntax, decoding, versions, the names the file
// gives things), never what gwretry decides to write. It stands on a line
// of its own before the package clause, so a target says it in its own
// folder.
const formatDirective = "//gwretry:format"

// TestJudgesCallNoPlanner: a judge reads the file back and derives
// behaviour; it calls no function of its package's planner or writer,
// only its own and those of the files marked with formatDirective.
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
		dir := e.Name()
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		declared := map[string]string{} // function -> file
		var allowed []string            // the format files
		for _, p := range pkgs {
			for path, f := range p.Files {
				for _, cg := range f.Comments {
					for _, c := range cg.List {
						if c.Text == formatDirective && c.Pos() < f.Package {
							allowed = append(allowed, filepath.Base(path))
						}
					}
				}
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
