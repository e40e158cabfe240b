package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/gwretry/gwretry/translate"
)

// console is what decides whether the text report is coloured: the
// environment and whether a writer is a terminal. Tests give their own.
type console struct {
	getenv     func(string) string
	isTerminal func(io.Writer) bool
}

// realConsole looks at the process's environment and file descriptors.
func realConsole() console {
	return console{getenv: os.Getenv, isTerminal: isTerminal}
}

// isTerminal tells whether w is a terminal (a file whose descriptor is a
// tty); a buffer, pipe or regular file is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colour tells whether text written to w may carry colour: only on a
// terminal, and never when NO_COLOR is set to a non-empty value
// (https://no-color.org).
func (c console) colour(w io.Writer) bool {
	if c.getenv == nil || c.isTerminal == nil {
		return false
	}
	return c.getenv("NO_COLOR") == "" && c.isTerminal(w)
}

// ANSI colours of the statuses. Every code has the same length (the
// header's bold included), so that text/tabwriter, which counts the escape
// bytes as width, still aligns the columns.
const (
	ansiReset = "\x1b[0m"
	ansiBold  = "\x1b[01m"
)

// statusColour returns the escape that colours s: green, yellow or red.
func statusColour(s translate.Status) string {
	switch s {
	case translate.Honoured:
		return "\x1b[32m"
	case translate.Approximated:
		return "\x1b[33m"
	default:
		return "\x1b[31m"
	}
}
