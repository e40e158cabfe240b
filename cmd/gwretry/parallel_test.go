package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/corpus"
)

// TestParallelDeterministic: documents are decoded and targets generated
// on every core, and the bytes written, the report and the messages are
// the same with one core as with two.
func TestParallelDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("a corpus translated many times: in the full tier (make test), not the fast one")
	}
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
		if code := run([]string{"translate", in, "--target", "all", "--output-dir", dir, "--report", "text"}, nil, &bytes.Buffer{}, &stderr); code != exitOK {
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
	// Wait for the line itself rather than a fixed time: the first show
	// may come before set (with no step) and the next only 500ms later,
	// and a loaded machine may not run the loop at all within a few ms.
	term := &watchedWriter{want: []byte("gwretry: reading"), seen: make(chan struct{})}
	p = startProgress(console{isTerminal: func(w io.Writer) bool { return true }}, term, 0)
	p.set("reading")
	select {
	case <-term.seen:
	case <-time.After(10 * time.Second):
		t.Errorf("no progress line naming the step within 10s: %q", term.String())
	}
	p.end()
	if got := term.String(); !strings.Contains(got, "gwretry: reading") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("progress on a terminal: %q", got)
	}
}

// watchedWriter records what is written and closes seen once it holds
// want.
type watchedWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want []byte
	seen chan struct{}
	done bool
}

func (w *watchedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(b)
	if !w.done && bytes.Contains(w.buf.Bytes(), w.want) {
		w.done = true
		close(w.seen)
	}
	return n, err
}

func (w *watchedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
