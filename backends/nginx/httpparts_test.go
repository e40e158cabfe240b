package nginx

import (
	"slices"
	"testing"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestReadParts: a generated file read in parts (its server blocks a
// batch at a time) is the file parsed whole: the head is http's
// directives but the servers, the servers come in file order with their
// lines, and the shapes are those of the whole parse, for both layouts
// and more servers than one batch.
func TestReadParts(t *testing.T) {
	m := testmodel.Corpus(t, 700)
	v, err := lookupVersion("")
	if err != nil {
		t.Fatal(err)
	}
	for layout, b := range layouts(t) {
		t.Run(layout, func(t *testing.T) {
			out, err := b.Generate(m, translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			conf := out.Files[0].Data
			top, http, err := parseConfig(conf, layout, v)
			if err != nil {
				t.Fatal(err)
			}
			parts, err := readParts(conf, layout, v)
			if err != nil {
				t.Fatal(err)
			}
			var servers, others crossplane.Directives
			for _, d := range http {
				if d.Directive == "server" {
					servers = append(servers, d)
				} else {
					others = append(others, d)
				}
			}
			if len(servers) <= serverBatch {
				t.Fatalf("%d server blocks: want more than a batch", len(servers))
			}
			if !slices.Equal(sums(shapes(parts.http)), sums(shapes(others))) || len(parts.servers) != len(servers) {
				t.Fatalf("head: %d directives for %d; %d servers for %d", len(parts.http), len(others), len(parts.servers), len(servers))
			}
			var read crossplane.Directives
			if err := parts.eachServers(func(batch crossplane.Directives) error {
				read = append(read, batch...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			for i, s := range servers {
				if read[i].Line != s.Line || shapeOf(read[i]).sum != shapeOf(s).sum || read[i].Block[0].Line != s.Block[0].Line {
					t.Fatalf("server %d: line %d, want %d (or another shape)", i, read[i].Line, s.Line)
				}
			}
			got, err := parts.shapes()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sums(got), sums(shapes(top))) {
				t.Errorf("shapes in parts differ from the whole parse's: %s", firstDifference(shapes(top), got))
			}
		})
	}
	// A server block at another indentation stays in the head, and the
	// parts are put back in file order.
	mixed := []byte("events {\n}\nhttp {\n  server {\n    listen 80;\n  }\n    server {\n        listen 81;\n    }\n    map $a $b {\n        default 1;\n    }\n}\n")
	parts, err := readParts(mixed, LayoutFull, v)
	if err != nil {
		t.Fatal(err)
	}
	top, _, err := parseConfig(mixed, LayoutFull, v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := parts.shapes()
	if err != nil {
		t.Fatal(err)
	}
	if len(parts.servers) != 1 || parts.servers[0].line != 7 || !slices.Equal(sums(got), sums(shapes(top))) {
		t.Errorf("mixed indentation: %d servers cut (%v), shapes equal %v", len(parts.servers), parts.servers, slices.Equal(sums(got), sums(shapes(top))))
	}
	// An unclosed block is read whole, and fails as the whole file does.
	if _, err := readParts([]byte("events {\n}\nhttp {\n    server {\n        listen 80;\n}\n"), LayoutFull, v); err == nil {
		t.Error("an unclosed server block was read")
	}
}
