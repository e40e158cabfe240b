//gwretry:format
package haproxy

import (
	"fmt"
	"strings"
	"unicode"
)

// maxTokenLen bounds every value written as one configuration word. The
// translate allowlists already bound each kind; this is the backstop.
const maxTokenLen = 4096

// tokenChecker checks every value that comes from the Model before it is
// written as a word of haproxy.cfg, on top of translate.Model.Check:
// config-parser does no quoting or escaping, so a value must be one plain
// word. It records the first failure and lets the caller keep building.
type tokenChecker struct {
	err error
}

// word returns s after checking it is safe as one unquoted word; where says
// which Model field it comes from.
func (c *tokenChecker) word(where, s string) string {
	if c.err == nil && strings.HasPrefix(s, "-") {
		c.err = fmt.Errorf("%s: value %q starts with '-'", where, shorten(s))
	}
	return c.pattern(where, s)
}

// pattern is word for an ACL pattern, which may start with '-': the caller
// writes "--" (end of flags) before such a pattern.
func (c *tokenChecker) pattern(where, s string) string {
	if c.err == nil {
		if err := checkWord(s); err != nil {
			c.err = fmt.Errorf("%s: %w", where, err)
		}
	}
	return s
}

// quoted returns s as one word of haproxy.cfg for an ACL pattern: as it
// is when it is a plain word (checkWord), else in HAProxy's strong quotes
// ('...': "inside single quotes, nothing is interpreted, it's the efficient
// way to quote regexes"); a single quote in s closes them, is escaped
// (\') and reopens them (HAProxy concatenates the pieces), which readWord
// reads back.
// Only printable ASCII is quoted (checkQuotable).
func (c *tokenChecker) quoted(where, s string) string {
	if checkWord(s) == nil {
		return s
	}
	if err := checkQuotable(s); err != nil {
		c.fail(fmt.Errorf("%s: %w", where, err))
		return s
	}
	return quoteWord(s)
}

// quoteWord writes s in strong quotes. config-parser splits a line on
// runs of blanks and joins the words with one space, so a space that
// follows a space is written outside the quotes as HAProxy's escaped
// space ('\ ': close, "\ ", reopen; HAProxy's parse_line reads "\ " as a
// space and concatenates the pieces): no two blanks are ever next to
// each other in the line.
func quoteWord(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'':
			b.WriteString(`'\''`)
		case c == ' ' && i > 0 && s[i-1] == ' ':
			b.WriteString(`'\ '`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// checkQuotable accepts what quoteWord writes so that HAProxy and
// config-parser read it back as it was: no control character (a line or
// word break to config-parser), at most maxTokenLen bytes. Bytes that
// are not ASCII are written as they are (HAProxy compares them byte by
// byte).
func checkQuotable(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty value")
	case len(s) > maxTokenLen:
		return fmt.Errorf("value of %d bytes is longer than %d", len(s), maxTokenLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("value %q contains %q, which cannot be written safely", shorten(s), c)
		}
	}
	return nil
}

// checkWord rejects what HAProxy's tokenizer or config-parser treat
// specially: whitespace and control characters (word and line breaks),
// quotes and backslashes (quoting and escaping), '#' (comments), a lone
// brace (anonymous ACL delimiters), non-ASCII
// bytes, empty and oversized values.
func checkWord(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty value")
	case len(s) > maxTokenLen:
		return fmt.Errorf("value of %d bytes is longer than %d", len(s), maxTokenLen)
	case s == "{" || s == "}":
		return fmt.Errorf("value %q is an ACL delimiter", s)
	}
	for _, r := range s {
		if r > unicode.MaxASCII || unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("#\\\"'`", r) {
			return fmt.Errorf("value %q contains %q, which cannot be written safely", shorten(s), r)
		}
	}
	return nil
}

func shorten(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// fail records err unless an earlier error was recorded.
func (c *tokenChecker) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// checkText accepts a text that textFmt can quote: printable ASCII,
// spaces and tabs, at most maxTokenLen bytes.
func checkText(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty value")
	case len(s) > maxTokenLen:
		return fmt.Errorf("value of %d bytes is longer than %d", len(s), maxTokenLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("value %q contains %q, which cannot be written safely", shorten(s), c)
		}
	}
	return nil
}

// readWord reads one word of haproxy.cfg as HAProxy's tokenizer does:
// single quotes keep everything, double quotes keep all but '\' escapes
// and '$' (environment variables), a backslash outside quotes escapes the
// next character. ok is false for what would not be one constant word:
// an unquoted space or '#', a '$' in double quotes, an unterminated quote.
func readWord(s string) (string, bool) {
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				b.WriteByte(c)
			}
		case c == '\\':
			if i+1 == len(s) {
				return "", false
			}
			i++
			b.WriteByte(s[i])
		case quote == '"':
			switch c {
			case '"':
				quote = 0
			case '$':
				return "", false
			default:
				b.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ' ' || c == '\t' || c == '#':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), quote == 0
}
