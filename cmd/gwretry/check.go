package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/gwretry/gwretry/translate"
)

// drift compares files, what translate -o dir would write, with what dir
// holds, and prints a unified diff per differing file to w, in path order.
// Paths in the diff are relative to dir ("a/nginx/nginx.conf",
// "b/nginx/nginx.conf"), so that the diff is the same wherever dir is and
// `patch -p1 -d DIR` brings DIR up to date. A file that translate would
// not write under a target's directory (each name of targets, and each
// top-level directory that files write into: "nginx/") is stale: drift
// too. It returns the number of files that differ and writes nothing under
// dir.
func drift(dir string, files []translate.File, targets []string, w io.Writer) (int, error) {
	d := newDrifter(dir, targets)
	if err := d.add(files); err != nil {
		return 0, err
	}
	return d.finish(w)
}

// drifter is drift one target's files at a time: add compares each file
// as it comes and keeps only the diffs, finish adds the stale files and
// prints the diffs in path order.
type drifter struct {
	dir string
	// want is every path compared, owned the top-level directories whose
	// other files are stale.
	want  map[string]bool
	owned map[string]bool
	// diffs are the unified diffs of the files that differ, by path.
	diffs map[string]string
}

func newDrifter(dir string, targets []string) *drifter {
	d := &drifter{dir: dir, want: map[string]bool{}, owned: map[string]bool{}, diffs: map[string]string{}}
	for _, t := range targets {
		d.owned[t] = true
	}
	return d
}

// add compares files with what dir holds.
func (d *drifter) add(files []translate.File) error {
	for _, f := range files {
		d.want[f.Path] = true
		if top, _, ok := strings.Cut(f.Path, "/"); ok {
			d.owned[top] = true
		}
		have, exists, err := readExisting(filepath.Join(d.dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return err
		}
		if err := d.compare(f.Path, have, exists, f.Data, true); err != nil {
			return err
		}
	}
	return nil
}

// addStream compares the file at p with what fill writes, without holding
// the whole of it unless it differs.
func (d *drifter) addStream(p string, fill func(io.Writer) error) error {
	full := filepath.Join(d.dir, filepath.FromSlash(p))
	same, err := sameAsFile(full, fill)
	if err != nil {
		return err
	}
	if same {
		d.want[p] = true
		return nil
	}
	var buf bytes.Buffer
	if err := fill(&buf); err != nil {
		return err
	}
	return d.add([]translate.File{{Path: p, Data: buf.Bytes()}})
}

// compare keeps the diff of the file at p when it differs.
func (d *drifter) compare(p string, have []byte, exists bool, data []byte, generated bool) error {
	if exists && generated && string(have) == string(data) {
		return nil
	}
	from, to := "a/"+p, "b/"+p
	if !exists {
		from = "/dev/null"
	}
	if !generated {
		to = "/dev/null"
	}
	diff, err := udiff.ToUnified(from, to, string(have), udiff.Bytes(have, data), udiff.DefaultContextLines)
	if err != nil {
		return &translate.InternalError{Err: fmt.Errorf("diff of %s: %w", p, err)}
	}
	if diff == "" {
		// Equal text cannot get here; an empty file created or
		// removed has no hunk, so say so.
		diff = fmt.Sprintf("--- %s\n+++ %s\n", from, to)
	}
	d.diffs[p] = diff
	return nil
}

// finish compares the stale files (under a directory a target owns, not
// written) and prints every diff in path order. It returns the number of
// files that differ.
func (d *drifter) finish(w io.Writer) (int, error) {
	for _, top := range sortedKeys(d.owned) {
		stale, err := filesUnder(d.dir, top)
		if err != nil {
			return 0, err
		}
		for _, p := range stale {
			if d.want[p] {
				continue
			}
			have, _, err := readExisting(filepath.Join(d.dir, filepath.FromSlash(p)))
			if err != nil {
				return 0, err
			}
			if err := d.compare(p, have, true, nil, false); err != nil {
				return 0, err
			}
		}
	}
	paths := make([]string, 0, len(d.diffs))
	for p := range d.diffs {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for i, p := range paths {
		if _, err := io.WriteString(w, d.diffs[p]); err != nil {
			return i, err
		}
	}
	return len(paths), nil
}

// sameAsFile reports whether the file at p holds exactly what fill writes;
// a missing file is not.
func sameAsFile(p string, fill func(io.Writer) error) (bool, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("--check: %w", err)
	}
	defer f.Close()
	c := &comparer{r: bufio.NewReaderSize(f, 1<<16), same: true}
	if err := fill(c); err != nil {
		return false, err
	}
	if c.err != nil {
		return false, fmt.Errorf("--check: %w", c.err)
	}
	if !c.same {
		return false, nil
	}
	// Equal so far: the file must end there too.
	_, err = c.r.ReadByte()
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("--check: %w", err)
	}
	return false, nil
}

// comparer is a writer that compares what is written with what r reads.
type comparer struct {
	r    *bufio.Reader
	buf  []byte
	same bool
	err  error
}

func (c *comparer) Write(p []byte) (int, error) {
	n := len(p)
	for c.same && c.err == nil && len(p) > 0 {
		chunk := p[:min(len(p), 1<<16)]
		if cap(c.buf) < len(chunk) {
			c.buf = make([]byte, len(chunk))
		}
		got, err := io.ReadFull(c.r, c.buf[:len(chunk)])
		if !bytes.Equal(c.buf[:got], chunk[:got]) || got < len(chunk) {
			c.same = false
		}
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			c.err = err
		}
		p = p[len(chunk):]
	}
	return n, nil
}

// readExisting reads a file of DIR; a missing one is not an error.
func readExisting(p string) ([]byte, bool, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("--check: %w", err)
	}
	return data, true, nil
}

// filesUnder lists, slash-separated and relative to dir, the files under
// dir/top; nothing when dir/top does not exist.
func filesUnder(dir, top string) ([]string, error) {
	root := filepath.Join(dir, top)
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out = append(out, path.Clean(filepath.ToSlash(rel)))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--check: %w", err)
	}
	return out, nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
