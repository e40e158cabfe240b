package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/corpus"
)

// TestParallelDeterministic: documents are decoded and targets generated
// on every core, and the bytes written, the report and the messages are
// the same with one core as with two.
func TestParallelDeterministic(t *testing.T) {
	data, err := corpus.Generate(corpus.Defaults(120))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "routes.yaml")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	runWith := func(procs int) (map[string][]byte, string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dir := t.TempDir()
		var stderr bytes.Buffer
		if code := run([]string{"translate", in, "--target", "all", "-o", dir, "--report", "text"}, nil, &bytes.Buffer{}, &stderr); code != exitOK {
			t.Fatalf("GOMAXPROCS=%d: exit %d: %s", procs, code, stderr.String())
		}
		files := map[string][]byte{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			files[rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files, stderr.String()
	}
	one, oneErr := runWith(1)
	two, twoErr := runWith(2)
	if len(one) != len(two) || len(one) < 7 {
		t.Fatalf("GOMAXPROCS=1 wrote %d files, =2 wrote %d", len(one), len(two))
	}
	for p, b := range one {
		if !bytes.Equal(b, two[p]) {
			t.Errorf("%s differs between GOMAXPROCS=1 and 2", p)
		}
	}
	if oneErr != twoErr {
		t.Errorf("stderr differs between GOMAXPROCS=1 and 2")
	}
}

// TestProgress: the progress line goes to a terminal only, after the
// delay, and is erased at the end.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	p := startProgress(console{isTerminal: func(w io.Writer) bool { return false }}, &buf, 0)
	p.set("x")
	p.end()
	if buf.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", buf.String())
	}
	p = startProgress(console{isTerminal: func(w io.Writer) bool { return true }}, &buf, 0)
	p.set("reading")
	time.Sleep(50 * time.Millisecond)
	p.end()
	if got := buf.String(); !bytes.Contains(buf.Bytes(), []byte("gwretry: reading")) || !bytes.HasSuffix(buf.Bytes(), []byte("\r\x1b[K")) {
		t.Errorf("progress on a terminal: %q", got)
	}
}
