package nginx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// checkArgs rejects any directive name or argument that nginx-go-crossplane
// cannot write safely: a backslash (it can escape the closing quote), a
// leading '#' (written bare, it starts a comment), a control character or a
// non-ASCII byte. Values come from an allowlisted Model; this is the second
// line of defence.
func checkArgs(ds crossplane.Directives) error {
	for _, d := range ds {
		for _, s := range append([]string{d.Directive}, d.Args...) {
			if err := checkArg(s); err != nil {
				return fmt.Errorf("internal error: directive %q: %w", d.Directive, err)
			}
		}
		if err := checkArgs(d.Block); err != nil {
			return err
		}
	}
	return nil
}

func checkArg(s string) error {
	if len(s) > 4096 {
		return fmt.Errorf("argument of %d bytes is too long", len(s))
	}
	if strings.HasPrefix(s, "#") {
		return fmt.Errorf("argument %q starts with '#'", s)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c < 0x20 || c >= 0x7f {
			return fmt.Errorf("argument %q has a backslash, control or non-ASCII character", s)
		}
	}
	return nil
}

// render writes the directives with crossplane and parses the text back
// with the version's directive table: an unknown directive, a wrong
// context or argument count, or any difference from what was meant is an
// internal error, and no configuration is returned.
func render(ds crossplane.Directives, v version) ([]byte, error) {
	var buf bytes.Buffer
	if err := crossplane.Build(&buf, crossplane.Config{File: "nginx.conf", Parsed: ds}, &crossplane.BuildOptions{Indent: 4}); err != nil {
		return nil, fmt.Errorf("internal error: writing nginx.conf: %w", err)
	}
	buf.WriteByte('\n')
	conf := buf.Bytes()
	payload, err := crossplane.Parse("nginx.conf", &crossplane.ParseOptions{
		Open: func(string) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(conf)), nil
		},
		Glob:                     func(string) ([]string, error) { return nil, errors.New("include is not allowed") },
		SingleFile:               true,
		StopParsingOnError:       true,
		ErrorOnUnknownDirectives: true,
		ParseComments:            true,
		DirectiveSources:         []crossplane.MatchFunc{v.Directives},
	})
	if err != nil {
		return nil, fmt.Errorf("internal error: generated nginx.conf does not parse: %w", err)
	}
	if len(payload.Errors) > 0 {
		return nil, fmt.Errorf("internal error: generated nginx.conf does not parse: %v", payload.Errors[0].Error)
	}
	if len(payload.Config) != 1 {
		return nil, fmt.Errorf("internal error: generated nginx.conf parsed into %d files", len(payload.Config))
	}
	if diff := cmp.Diff(simplify(ds), simplify(payload.Config[0].Parsed)); diff != "" {
		return nil, fmt.Errorf("internal error: generated nginx.conf does not read back as written (-meant +read):\n%s", diff)
	}
	return conf, nil
}

// node is a directive without position information, for comparison.
type node struct {
	Name    string
	Args    []string
	Block   []node
	IsBlock bool
	Comment bool
}

func simplify(ds crossplane.Directives) []node {
	out := []node{}
	for _, d := range ds {
		n := node{Name: d.Directive, Args: d.Args, IsBlock: d.IsBlock(), Comment: d.IsComment()}
		if n.Args == nil {
			n.Args = []string{}
		}
		if d.IsBlock() {
			n.Block = simplify(d.Block)
		}
		out = append(out, n)
	}
	return out
}

// quantifierRE is the only use of braces allowed in a regular expression:
// a repetition count such as {3}, {2,} or {1,5}.
var quantifierRE = regexp.MustCompile(`\{[0-9]{1,4}(,[0-9]{0,4})?\}`)

// checkRegexes rejects regular expressions with a brace that is not part of
// a repetition count. The allowlist admits braces for counts; a bare '{' or
// '}' is legal RE2 (a literal) but is the start of a block in nginx syntax,
// so gwretry refuses it rather than rely on quoting alone.
func checkRegexes(m *translate.Model) error {
	check := func(where, re string) error {
		if strings.ContainsAny(quantifierRE.ReplaceAllString(re, ""), "{}") {
			return fmt.Errorf("%s: regular expression %q has a '{' or '}' that is not a repetition count like {2,5}", where, re)
		}
		return nil
	}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			for _, rm := range vh.Routes {
				where := "virtual host " + vh.Name + " rule " + rm.Rule.Name
				if rm.Match.PathType == translate.PathRegex {
					if err := check(where+" path", rm.Match.Path); err != nil {
						return err
					}
				}
				for _, v := range slices.Concat(rm.Match.Headers, rm.Match.Query) {
					if v.Type == translate.StringRegex {
						if err := check(where+" "+v.Name, v.Value); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}
