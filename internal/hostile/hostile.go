// Package hostile holds inputs that some data plane's configuration
// format would read as something other than text if they were written
// naively: nginx variables and escapes, HAProxy and Envoy format
// directives, quotes, comments and YAML scalars. Tests use them to prove
// that each backend writes them literally.
package hostile

import "strings"

// HeaderValues returns header values that the Gateway API and gwretry's
// allowlist accept (printable ASCII, spaces and tabs inside; the
// experimental CRD allows only one between visible characters), each of which some
// configuration format would interpret. The list is new on every call.
func HeaderValues() []string {
	return []string{
		// The Gateway API's own example (examples/experimental/http-response-header.yaml).
		`attachment; filename="example_file.txt"`,
		// nginx variables and its escapes.
		`$host`, `${host}`, `$`, `a$`, `$$`, `${gwretry_dollar}`, `$http_x_add0,x`, `${`, `$1`,
		`\`, `a\b`, `\n`, `\\`, `\"`, `\'`, `end\`, `\t`,
		// HAProxy log-format and sample fetches; Envoy's formatter.
		`%[src]`, `%%`, `%`, `100%`, `%{+Q}o`, `%Y`, `%REQ(:path)%`, `%DOWNSTREAM_REMOTE_ADDRESS%`, `%ci:%cp`,
		// Quotes, comments, statement ends, blocks.
		`'`, `it's`, `"`, `"quoted"`, `'single'`, `both ' and "`, `#`, `#comment`, `a #b`, `;`, `a;b`,
		`{`, `}`, `{}`, `a{b}c`, "`", "`cmd`", `<>`, `a=b&c=d`,
		// Spacing, leading dashes, YAML-looking scalars.
		`a  b`, `x   y  z`, "a\tb", "a \t b", `-x`, `--`, `- a`, `: a`, `a: b`, `? x`, `|`, `>`, `!x`, `&x`, `*x`, `@x`,
		`true`, `null`, `~`, `0x1F`, `1e3`, `012`, `[a, b]`,
		// Not ASCII: HTTP's obs-text, UTF-8 as the API gives it.
		`café`, `日本語 テスト`, `naïve  ü`, `€%[src]$x`,
		// Long: more than one HAProxy or nginx token buffer would suggest.
		strings.Repeat("long-", 400),
	}
}
