package main

import (
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
	want := map[string][]byte{}
	owned := map[string]bool{}
	for _, t := range targets {
		owned[t] = true
	}
	for _, f := range files {
		want[f.Path] = f.Data
		if top, _, ok := strings.Cut(f.Path, "/"); ok {
			owned[top] = true
		}
	}
	// Every path of either side, sorted, so that the output is the same
	// byte for byte from one run to the next.
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	for _, top := range sortedKeys(owned) {
		stale, err := filesUnder(dir, top)
		if err != nil {
			return 0, err
		}
		for _, p := range stale {
			if _, ok := want[p]; !ok {
				paths = append(paths, p)
			}
		}
	}
	slices.Sort(paths)
	n := 0
	for _, p := range paths {
		have, exists, err := readExisting(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return n, err
		}
		data, generated := want[p]
		if exists && generated && string(have) == string(data) {
			continue
		}
		n++
		from, to := "a/"+p, "b/"+p
		if !exists {
			from = "/dev/null"
		}
		if !generated {
			to = "/dev/null"
		}
		d, err := udiff.ToUnified(from, to, string(have), udiff.Bytes(have, data), udiff.DefaultContextLines)
		if err != nil {
			return n, &translate.InternalError{Err: fmt.Errorf("diff of %s: %w", p, err)}
		}
		if d == "" {
			// Equal text cannot get here; an empty file created or
			// removed has no hunk, so say so.
			d = fmt.Sprintf("--- %s\n+++ %s\n", from, to)
		}
		if _, err := io.WriteString(w, d); err != nil {
			return n, err
		}
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
