package nginx

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/translate"
)

// TestReadParts: a generated file read in parts (its server blocks,
// upstreams and routing maps a batch at a time) is the file parsed whole:
// the head is http's other directives (a map of another variable that
// starts $gw_s among them), each kind's blocks come in file order with
// their lines, and the shapes are those of the whole parse, for both
// layouts and more blocks of each kind than one batch.
func TestReadParts(t *testing.T) {
	// A server's routing variables: $gw_s, its index, '_' and a name.
	routeVar := regexp.MustCompile(`^\$gw_s[0-9]+_[a-z0-9_]+$`)
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
			// Under a spool the file is written to disk as it goes and
			// read back from there: the same bytes, read as the same
			// parts.
			spooled, err := b.Generate(m, translate.Options{Spool: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if written, err := spooled.Files[0].Bytes(); err != nil || spooled.Files[0].Data != nil || !bytes.Equal(written, conf) {
				t.Fatalf("spooled file differs from the one in memory (%v)", err)
			}
			fromDisk, err := translate.FileParsed(spooled.Files, b.path(), func([]byte) (*httpParts, error) {
				t.Fatal("the spooled file was parsed again")
				return nil, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			inMemory, err1 := parts.shapes()
			onDisk, err2 := fromDisk.shapes()
			if err1 != nil || err2 != nil || !slices.Equal(sums(onDisk), sums(inMemory)) {
				t.Fatalf("read back from disk: %d shapes for %d (%v, %v)", len(onDisk), len(inMemory), err1, err2)
			}
			var parted [partKinds]crossplane.Directives
			var others crossplane.Directives
			for _, d := range http {
				switch {
				case d.Directive == "server":
					parted[partServer] = append(parted[partServer], d)
				case d.Directive == "upstream":
					parted[partUpstream] = append(parted[partUpstream], d)
				case d.Directive == "map" && routeVar.MatchString(d.Args[1]):
					parted[partRouteMap] = append(parted[partRouteMap], d)
				default:
					others = append(others, d)
				}
			}
			if !slices.Equal(sums(shapes(parts.http)), sums(shapes(others))) {
				t.Fatalf("head: %d directives for %d", len(parts.http), len(others))
			}
			for k, want := range parted {
				if len(want) <= batchSize {
					t.Fatalf("%d %s blocks: want more than a batch", len(want), partKind(k).directive())
				}
				var read crossplane.Directives
				if err := parts.each(partKind(k), func(batch crossplane.Directives) error {
					read = append(read, batch...)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if len(read) != len(want) {
					t.Fatalf("%d %s blocks read, want %d", len(read), partKind(k).directive(), len(want))
				}
				for i, s := range want {
					if read[i].Line != s.Line || shapeOf(read[i]).sum != shapeOf(s).sum || read[i].Block[0].Line != s.Block[0].Line {
						t.Fatalf("%s %d: line %d, want %d (or another shape)", s.Directive, i, read[i].Line, s.Line)
					}
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
	if servers := parts.spans[partServer]; len(servers) != 1 || servers[0].line != 7 || !slices.Equal(sums(got), sums(shapes(top))) {
		t.Errorf("mixed indentation: %d servers cut (%v), shapes equal %v", len(servers), servers, slices.Equal(sums(got), sums(shapes(top))))
	}
	// A line longer than the reader's buffer, in the head and in a part,
	// and a file that does not end with a newline.
	long := strings.Repeat("x", 150_000)
	longConf := []byte("events {\n}\nhttp {\n    map $a $b {\n        default \"" + long + "\";\n    }\n    server {\n        listen 80;\n        set $c \"" + long + "\";\n    }\n}")
	top, _, err = parseConfig(longConf, LayoutFull, v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nginx.conf")
	if err := os.WriteFile(path, longConf, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]source{"memory": memory(longConf), "disk": onDisk(path)} {
		parts, err := readPartsFrom(src, LayoutFull, v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := parts.shapes()
		if err != nil || len(parts.spans[partServer]) != 1 || !slices.Equal(sums(got), sums(shapes(top))) {
			t.Errorf("%s, long lines: %v, %d servers cut, shapes equal %v", name, err, len(parts.spans[partServer]), slices.Equal(sums(got), sums(shapes(top))))
		}
	}
	// An unclosed block is read whole, and fails as the whole file does.
	if _, err := readParts([]byte("events {\n}\nhttp {\n    server {\n        listen 80;\n}\n"), LayoutFull, v); err == nil {
		t.Error("an unclosed server block was read")
	}
}
