//gwretry:format
package nginx

import (
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"
)

// Header values are complex values in nginx ('$' starts a variable) and
// its parser unescapes backslashes; nginx has no escape for '$'. A text is
// therefore written with each backslash doubled, each tab as \t (which
// nginx's parser unescapes; crossplane would write a raw one as \t anyway)
// and each '$' as the
// variable ${gwretry_dollar}; a leading '#' (which crossplane writes bare,
// where nginx would read a comment) gets the empty variable
// ${gwretry_empty} before it, which makes crossplane quote the argument.
// geo blocks at http level define both as constants (geo values are never
// interpolated). The braces keep whatever follows out of the variable's
// name.
const (
	dollarVar = "$gwretry_dollar"
	emptyVar  = "$gwretry_empty"
)

// textArg returns the argument nginx reads as the text v in a complex
// value (proxy_set_header, add_header, a map value).
func textArg(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '$':
			b.WriteString("${" + dollarVar[1:] + "}")
		case c == '#' && i == 0:
			b.WriteString("${" + emptyVar[1:] + "}#")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// readTextArg reads an argument back into the text nginx makes of it,
// as textArg writes it; false when the argument holds another variable or
// an escape nginx reads as a line break (\n, \r). It takes the
// constants' values from consts (see textConsts).
func readTextArg(arg string, consts map[string]string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(arg); i++ {
		c := arg[i]
		switch c {
		case '\\':
			if i+1 == len(arg) {
				return "", false
			}
			switch n := arg[i+1]; n {
			case '\\', '"', '\'':
				b.WriteByte(n)
				i++
			case 't':
				b.WriteByte('\t')
				i++
			case 'n', 'r':
				return "", false
			default:
				// nginx keeps a backslash that escapes nothing.
				b.WriteByte(c)
			}
		case '$':
			rest := arg[i:]
			matched := false
			for name, value := range consts {
				if ref := "${" + name[1:] + "}"; strings.HasPrefix(rest, ref) {
					b.WriteString(value)
					i += len(ref) - 1
					matched = true
					break
				}
			}
			if !matched {
				return "", false
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// textConstBlocks returns the geo blocks of the constants that http's
// directives use, to go before them.
func textConstBlocks(http crossplane.Directives) crossplane.Directives {
	return textConstBlocksFor(func(ref string) bool { return uses(http, ref) })
}

// textConstRefs are how arguments refer to the constants' variables.
var textConstRefs = []string{"${" + dollarVar[1:] + "}", "${" + emptyVar[1:] + "}"}

// textConstBlocksFor is textConstBlocks of directives some argument of
// which contains ref (one of textConstRefs) when used(ref).
func textConstBlocksFor(used func(ref string) bool) crossplane.Directives {
	var out crossplane.Directives
	for _, c := range []struct{ name, value string }{{dollarVar, "$"}, {emptyVar, ""}} {
		if used("${" + c.name[1:] + "}") {
			out = append(out, block("geo", []string{c.name}, crossplane.Directives{directive("default", c.value)}))
		}
	}
	return out
}

// uses reports whether any argument in ds contains s.
func uses(ds crossplane.Directives, s string) bool {
	for _, d := range ds {
		for _, a := range d.Args {
			if strings.Contains(a, s) {
				return true
			}
		}
		if uses(d.Block, s) {
			return true
		}
	}
	return false
}

// textConsts reads the constants' geo blocks from http: a geo block
// whose only entry is default and whose variable is one of textArg's.
func textConsts(http crossplane.Directives) map[string]string {
	out := map[string]string{}
	for _, d := range http {
		if d.Directive != "geo" || len(d.Args) != 1 || (d.Args[0] != dollarVar && d.Args[0] != emptyVar) {
			continue
		}
		if len(d.Block) == 1 && d.Block[0].Directive == "default" && len(d.Block[0].Args) == 1 {
			out[d.Args[0]] = d.Block[0].Args[0]
		}
	}
	return out
}
