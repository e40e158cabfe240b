package translate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileParsed(t *testing.T) {
	data := []byte("written")
	spool := t.TempDir()
	spooled := filepath.Join(spool, "f")
	if err := os.WriteFile(spooled, data, 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(b []byte) (string, error) { return "parsed " + string(b), nil }
	tests := []struct {
		name  string
		files []File
		want  string
		err   bool
	}{
		{"the backend's parse of these bytes", []File{{Path: "a", Data: data, Parsed: NewParsed(data, "kept")}}, "kept", false},
		{"bytes replaced after the parse", []File{{Path: "a", Data: bytes.Clone(data), Parsed: NewParsed(data, "kept")}}, "parsed written", false},
		{"a parse of another type", []File{{Path: "a", Data: data, Parsed: NewParsed(data, 1)}}, "parsed written", false},
		{"no parse", []File{{Path: "a", Data: data}}, "parsed written", false},
		{"no such file", []File{{Path: "b", Data: data}}, "", true},
		{"the backend's parse of its spooled file", []File{{Path: "a", Spooled: spooled, Parsed: NewSpooledParsed(spooled, "kept")}}, "kept", false},
		{"a spooled file, parsed elsewhere", []File{{Path: "a", Spooled: spooled, Parsed: NewSpooledParsed(filepath.Join(spool, "g"), "kept")}}, "parsed written", false},
		{"bytes given for a spooled parse", []File{{Path: "a", Data: data, Parsed: NewSpooledParsed(spooled, "kept")}}, "parsed written", false},
		{"a spooled file gone", []File{{Path: "a", Spooled: filepath.Join(spool, "gone")}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FileParsed(tt.files, "a", parse)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("got %q, %v; want %q, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}

// TestSpooledFile: a spooled file's Bytes and WriteTo are its file's, and
// CreateSpooled makes a new file each time with an output file's mode.
func TestSpooledFile(t *testing.T) {
	spool := t.TempDir()
	f1, err := CreateSpooled(spool, "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f2, err := CreateSpooled(spool, "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f1.Name() == f2.Name() || !strings.HasSuffix(f1.Name(), "x.yaml") {
		t.Errorf("names %s and %s", f1.Name(), f2.Name())
	}
	if _, err := f1.WriteString("spooled\n"); err != nil {
		t.Fatal(err)
	}
	f1.Close()
	f2.Close()
	plain := filepath.Join(spool, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st1, err1 := os.Stat(f1.Name())
	st2, err2 := os.Stat(plain)
	if err1 != nil || err2 != nil || st1.Mode() != st2.Mode() {
		t.Errorf("mode %v, want os.WriteFile's %v (%v, %v)", st1.Mode(), st2.Mode(), err1, err2)
	}
	for _, f := range []File{{Path: "a", Spooled: f1.Name()}, {Path: "a", Data: []byte("spooled\n")}} {
		b, err := f.Bytes()
		var w bytes.Buffer
		n, werr := f.WriteTo(&w)
		if err != nil || werr != nil || string(b) != "spooled\n" || w.String() != "spooled\n" || n != 8 {
			t.Errorf("%+v: Bytes %q, %v; WriteTo %q, %d, %v", f, b, err, w.String(), n, werr)
		}
	}
}
