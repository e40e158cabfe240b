package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gwretry/gwretry/translate"
)

// verbosity is -v and -q: the notes of a run are its warnings, always
// printed, and its info lines (how to run a file, the defaults a target
// writes), the same on every run and so printed only with -v. -q prints
// no info line even with -v; it is kept for the scripts that pass it.
type verbosity struct {
	verbose, quiet bool
}

func (v *verbosity) addFlags(f *pflag.FlagSet) {
	f.BoolVarP(&v.verbose, "verbose", "v", false, "also print the info lines: how to run each file and the defaults each target writes")
	f.BoolVarP(&v.quiet, "quiet", "q", false, "print no info line, even with -v (the default prints none)")
}

// print writes notes to w, one line each, grouped and without repeats
// (translate.GroupNotes): every warning, and the info lines only with -v.
func (v verbosity) print(w io.Writer, notes []translate.Note) {
	for _, n := range translate.GroupNotes(notes) {
		if n.Severity == translate.SeverityInfo && (!v.verbose || v.quiet) {
			continue
		}
		fmt.Fprintln(w, n.String())
	}
}

// addFilenameFlag defines -f/--filename: kubectl's spelling of the PATH
// arguments, repeatable.
func addFilenameFlag(f *pflag.FlagSet, files *[]string) {
	f.StringArrayVarP(files, "filename", "f", nil, "`PATH` to read, as a PATH argument: a file, a directory or - for stdin (repeatable)")
}
