//gwretry:format
package envoy

import "strings"

// The syntax of Envoy's header values, which the generator writes and the
// judge reads back.

// envoyText is the header value Envoy sends as the text v: Envoy reads
// %COMMAND% operators in header values, and "%%" as one '%'.
func envoyText(v string) string { return strings.ReplaceAll(v, "%", "%%") }

// readEnvoyText reads a header value back into the text Envoy sends; false
// when it holds a %COMMAND% operator (a lone '%').
func readEnvoyText(v string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i+1 < len(v) && v[i+1] == '%' {
			b.WriteByte('%')
			i++
			continue
		}
		return "", false
	}
	return b.String(), true
}
