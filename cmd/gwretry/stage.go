package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/gwretry/gwretry/translate"
)

// stage writes what -o DIR holds as each target's files come, without
// touching DIR's files until commit: each file goes first into a
// temporary directory inside DIR (on DIR's file system, so that moving it
// is a rename), and commit moves them all into place once every target
// has succeeded. An error before commit leaves DIR as it was (abort).
// This way a target's files need not be held in memory until the last
// target is done, and DIR is never half updated by a failed run.
type stage struct {
	dir string
	tmp string
	// created is the first directory of dir's path that did not exist
	// (dir itself, or a parent): abort removes it again when empty.
	created string
	// paths are the staged files, slash-separated and relative to dir.
	paths []string
}

// newStage creates dir when it does not exist, and a temporary directory
// in it.
func newStage(dir string) (*stage, error) {
	s := &stage{dir: dir}
	for p := filepath.Clean(dir); ; {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		s.created = p
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".gwretry-")
	if err != nil {
		s.abort()
		return nil, err
	}
	s.tmp = tmp
	return s, nil
}

// spool returns the directory, inside the temporary one, where a target
// writes a large file as it makes it (translate.Options.Spool): add moves
// it into place by a rename.
func (s *stage) spool() (string, error) {
	dir := filepath.Join(s.tmp, ".spool")
	return dir, os.MkdirAll(dir, 0o755)
}

// add writes files into the temporary directory, moving a spooled one
// there.
func (s *stage) add(files []translate.File) error {
	for _, f := range files {
		if f.Spooled != "" {
			p := filepath.Join(s.tmp, filepath.FromSlash(f.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Rename(f.Spooled, p); err != nil {
				return fmt.Errorf("writing %s: %w", filepath.Join(s.dir, filepath.FromSlash(f.Path)), err)
			}
			s.paths = append(s.paths, f.Path)
			continue
		}
		if err := s.write(f.Path, func(w io.Writer) error {
			_, err := w.Write(f.Data)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// write writes the file at path (slash-separated, relative to dir) into the
// temporary directory with what fill writes.
func (s *stage) write(path string, fill func(io.Writer) error) error {
	p := filepath.Join(s.tmp, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := translate.WriteAndClose(f, fill); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(s.dir, filepath.FromSlash(path)), err)
	}
	s.paths = append(s.paths, path)
	return nil
}

// commit moves every staged file into dir, in path order, and removes the
// temporary directory.
func (s *stage) commit() error {
	paths := slices.Clone(s.paths)
	slices.Sort(paths)
	for _, rel := range paths {
		from := filepath.Join(s.tmp, filepath.FromSlash(rel))
		to := filepath.Join(s.dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.Rename(from, to); err != nil {
			// A directory of DIR may be another file system (a mount):
			// copy the file there, then rename it into place.
			if cerr := replaceByCopy(from, to); cerr != nil {
				return fmt.Errorf("moving %s into place: %w (copying it there: %v)", to, err, cerr)
			}
		}
	}
	return os.RemoveAll(s.tmp)
}

// abort removes the temporary directory, and dir (and the parents that
// newStage created) when they are empty.
func (s *stage) abort() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
	if s.created == "" {
		return
	}
	for p := filepath.Clean(s.dir); ; p = filepath.Dir(p) {
		if os.Remove(p) != nil || p == s.created {
			return
		}
	}
}

// replaceByCopy puts a copy of from at to as a rename would: the copy is
// written into a temporary directory next to to (on to's file system,
// with os.WriteFile's mode, 0644 less the umask) and renamed over it, so
// that a symlink at to is replaced rather than written through, and to is
// never half written.
func replaceByCopy(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.MkdirTemp(filepath.Dir(to), ".gwretry-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p := filepath.Join(tmp, filepath.Base(to))
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(p, to)
}
