//gwretry:format
package traefik

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// expr is a Traefik router rule: a matcher call such as Host(`a.example`),
// or an && / || of sub-expressions. Trees are kept normalized by allOf and
// anyOf (no single-child or nested same-operator nodes), so a rendered rule
// parses back to an equal tree.
type expr struct {
	// Op is "&&" or "||" for a combination, "" for a matcher call.
	Op   string
	Subs []expr
	// Func and Args describe a matcher call.
	Func string
	Args []string
}

func call(fn string, args ...string) expr { return expr{Func: fn, Args: args} }

func allOf(xs ...expr) expr { return combine("&&", xs) }

func anyOf(xs ...expr) expr { return combine("||", xs) }

func combine(op string, xs []expr) expr {
	var subs []expr
	for _, x := range xs {
		if x.Op == op {
			subs = append(subs, x.Subs...)
		} else {
			subs = append(subs, x)
		}
	}
	if len(subs) == 1 {
		return subs[0]
	}
	return expr{Op: op, Subs: subs}
}

// checkRuleValue rejects anything that could end a backtick string, change
// the rule's structure, or start a Go template action: the file provider
// runs dynamic.yaml through text/template before decoding it. Inside
// backticks Traefik's rule parser (go/scanner's raw string) keeps every
// other character as it is, quotes, backslashes, spaces, tabs and line
// feeds included (a path whose %0A Traefik decodes); a carriage return it
// would drop and NUL it refuses, so the other control characters are
// refused. What is not ASCII it keeps as it is when it is valid UTF-8
// (the scanner refuses invalid UTF-8 and a byte order mark; Traefik's
// matchers compare Go strings, and its regular expressions are Go's, as
// RE2 reads them). This is the backend's own guard, and its grammar
// (Expresses).
func checkRuleValue(s string) error {
	if len(s) > 4096 {
		return fmt.Errorf("rule value of %d bytes is too long", len(s))
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, '\uFEFF') {
		return fmt.Errorf("rule value %q is not valid UTF-8 without a byte order mark", short(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c == '`' {
			return fmt.Errorf("rule value %q: character %q is not allowed in a Traefik rule", short(s), c)
		}
	}
	if strings.Contains(s, "{{") || strings.Contains(s, "}}") {
		return fmt.Errorf("rule value %q: %q would be read as a template action", short(s), "{{")
	}
	return nil
}

func short(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// checkExpr checks every matcher argument in x.
func checkExpr(x expr) error {
	for _, a := range x.Args {
		if err := checkRuleValue(a); err != nil {
			return err
		}
	}
	for _, s := range x.Subs {
		if err := checkExpr(s); err != nil {
			return err
		}
	}
	return nil
}

// render writes x in Traefik's v3 rule syntax.
func render(x expr) string {
	if x.Op == "" {
		quoted := make([]string, len(x.Args))
		for i, a := range x.Args {
			quoted[i] = "`" + a + "`"
		}
		return x.Func + "(" + strings.Join(quoted, ", ") + ")"
	}
	parts := make([]string, len(x.Subs))
	for i, s := range x.Subs {
		parts[i] = render(s)
		if s.Op != "" {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, " "+x.Op+" ")
}

// parseRule parses a rule written by render. It knows the subset of the
// syntax gwretry writes (matcher calls with backtick arguments, &&, || and
// parentheses) and is used to prove that a rendered rule means what was
// intended.
func parseRule(s string) (expr, error) {
	p := &ruleParser{src: s}
	x, err := p.or()
	if err != nil {
		return expr{}, err
	}
	p.space()
	if p.pos != len(p.src) {
		return expr{}, fmt.Errorf("rule %q: unexpected %q at %d", short(s), p.src[p.pos:], p.pos)
	}
	return x, nil
}

type ruleParser struct {
	src string
	pos int
}

func (p *ruleParser) space() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

func (p *ruleParser) take(tok string) bool {
	p.space()
	if strings.HasPrefix(p.src[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *ruleParser) or() (expr, error) {
	return p.list("||", p.and)
}

func (p *ruleParser) and() (expr, error) {
	return p.list("&&", p.primary)
}

func (p *ruleParser) list(op string, next func() (expr, error)) (expr, error) {
	var xs []expr
	for {
		x, err := next()
		if err != nil {
			return expr{}, err
		}
		xs = append(xs, x)
		if !p.take(op) {
			return combine(op, xs), nil
		}
	}
}

func (p *ruleParser) primary() (expr, error) {
	if p.take("(") {
		x, err := p.or()
		if err != nil {
			return expr{}, err
		}
		if !p.take(")") {
			return expr{}, p.errorf("missing )")
		}
		return x, nil
	}
	p.space()
	start := p.pos
	for p.pos < len(p.src) && isLetter(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return expr{}, p.errorf("matcher name expected")
	}
	fn := p.src[start:p.pos]
	if !p.take("(") {
		return expr{}, p.errorf("( expected after %s", fn)
	}
	var args []string
	for {
		p.space()
		if p.pos >= len(p.src) || p.src[p.pos] != '`' {
			return expr{}, p.errorf("backtick string expected")
		}
		end := strings.IndexByte(p.src[p.pos+1:], '`')
		if end < 0 {
			return expr{}, p.errorf("unterminated string")
		}
		args = append(args, p.src[p.pos+1:p.pos+1+end])
		p.pos += end + 2
		if p.take(")") {
			return call(fn, args...), nil
		}
		if !p.take(",") {
			return expr{}, p.errorf(", or ) expected")
		}
	}
}

func (p *ruleParser) errorf(format string, args ...any) error {
	return errors.New("rule " + fmt.Sprintf("%q", short(p.src)) + ": " + fmt.Sprintf(format, args...) +
		fmt.Sprintf(" at %d", p.pos))
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }
