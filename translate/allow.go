package translate

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Two grammars per value kind. CheckValue is what a Model may hold: what
// the Gateway API accepts (every value the API server accepts is
// translated, never refused). Portable is narrower: every string it allows
// can be written literally by every target's format without escaping (a
// trailing backslash in crossplane, a quote or newline in config-parser, a
// backtick in a Traefik rule). A target whose writer relies on it declares
// so (Expresser), and a rule with a value outside its grammar is not
// written by that target (ForTarget), on that target only.
var (
	// The API's grammars, for what CheckValue allows beyond Portable.
	apiPathRE  = regexp.MustCompile(`^/[-A-Za-z0-9/._~!$&'()*+,;=:@%]*$`)
	apiTokenRE = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+\\-.^_`|~]{1,256}$")

	nameRE        = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$`)
	dnsNameRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	pathRE        = regexp.MustCompile(`^/[A-Za-z0-9._~!$&()*+,=:@%/-]*$`)
	regexValueRE  = regexp.MustCompile(`^[A-Za-z0-9._~!$&()*+,=:@%/?^|\[\]{}<>-]+$`)
	headerNameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,255}$`)
	headerValueRE = regexp.MustCompile(`^[A-Za-z0-9._~!$&()*+,=:@%/?-]*$`)
	methodRE      = regexp.MustCompile(`^(GET|HEAD|POST|PUT|DELETE|CONNECT|OPTIONS|TRACE|PATCH)$`)
	// filterHeaderValueRE is for values a filter writes into a header:
	// printable ASCII, spaces and tabs inside but not at either end (HTTP
	// trims them; the experimental CRD allows one between visible
	// characters). Every backend writes each character literally in its own
	// format (quoting, and escaping what it would interpret: nginx's '$',
	// HAProxy's and Envoy's '%'); the live filter tests prove it for each
	// character.
	filterHeaderValueRE = regexp.MustCompile(`^[!-~]([\t -~]*[!-~])?$`)
	// filterPathRE is for paths a redirect or rewrite writes: no '$' or
	// '%', which nginx rewrite and HAProxy set-path would interpret.
	filterPathRE = regexp.MustCompile(`^/[A-Za-z0-9._~!&()*+,=:@/-]*$`)
)

// Value kinds checked by CheckValue.
const (
	KindName        = "name"
	KindHost        = "host"
	KindHostname    = "hostname match"
	KindPath        = "path"
	KindRegex       = "regular expression"
	KindHeaderName  = "header name"
	KindHeaderValue = "header value"
	KindQueryName   = "query parameter name"
	KindMethod      = "method"
	// KindFilterHeaderValue is a header value a filter sets or adds.
	KindFilterHeaderValue = "filter header value"
	// KindPreciseHostname is a hostname a redirect or rewrite writes.
	KindPreciseHostname = "redirect or rewrite hostname"
	// KindFilterPath is a path a redirect or rewrite writes.
	KindFilterPath = "redirect or rewrite path"
	// KindFilterHeaderName is a header name a filter sets, adds or
	// removes (a match's is KindHeaderName).
	KindFilterHeaderName = "filter header name"
)

// CheckValue reports whether s is allowed as a value of the given kind in a
// generated configuration. Its error blames gwretry, not the input: callers
// check the Gateway API's own rules first, so that a value the API refuses
// is reported as invalid input.
func CheckValue(kind, s string) error {
	ok := false
	switch kind {
	case KindPath:
		ok = len(s) <= 1024 && apiPathRE.MatchString(s) && !strings.Contains(s, "//")
	case KindRegex:
		// A path is at most 1024 bytes, a header or query value 4096.
		ok = len(s) <= 4096 && utf8.ValidString(s)
	case KindHeaderName, KindQueryName, KindFilterHeaderName:
		ok = apiTokenRE.MatchString(s)
	case KindHeaderValue:
		ok = len(s) <= 4096 && utf8.ValidString(s)
	case KindFilterPath:
		ok = len(s) <= 1024 && utf8.ValidString(s)
	case KindFilterHeaderValue:
		ok = s != "" && len(s) <= 4096 && utf8.ValidString(s)
	default:
		return checkPortable(kind, s)
	}
	if !ok {
		return fmt.Errorf("%s %s is not one the Gateway API accepts", kind, QuoteShort(s))
	}
	return nil
}

// Portable reports whether every target's format can hold s, a value of
// the given kind, written literally (see CheckValue).
func Portable(kind, s string) bool { return checkPortable(kind, s) == nil }

func checkPortable(kind, s string) error {
	ok := false
	switch kind {
	case KindName:
		ok = nameRE.MatchString(s)
	case KindHost:
		ok = isHost(s)
	case KindHostname:
		ok = s == "" || isDNSName(strings.TrimPrefix(s, "*."))
	case KindPath:
		ok = len(s) <= 1024 && pathRE.MatchString(s) && !strings.Contains(s, "//")
	case KindRegex:
		ok = len(s) <= 1024 && regexValueRE.MatchString(s)
		if ok {
			_, err := regexp.Compile(s)
			ok = err == nil
		}
	case KindHeaderName, KindQueryName, KindFilterHeaderName:
		ok = headerNameRE.MatchString(s)
	case KindHeaderValue:
		ok = len(s) <= 4096 && headerValueRE.MatchString(s)
	case KindMethod:
		ok = methodRE.MatchString(s)
	case KindFilterHeaderValue:
		ok = len(s) <= 4096 && filterHeaderValueRE.MatchString(s)
	case KindPreciseHostname:
		ok = isDNSName(s)
	case KindFilterPath:
		ok = len(s) <= 1024 && filterPathRE.MatchString(s) && !strings.Contains(s, "//")
	default:
		return fmt.Errorf("internal error: unknown value kind %q", kind)
	}
	if !ok {
		return fmt.Errorf("gwretry does not write the %s %s into a generated configuration because not every data plane's format can quote it safely (allowed: %s)", kind, QuoteShort(s), allowedText(kind))
	}
	return nil
}

func allowedText(kind string) string {
	switch kind {
	case KindName:
		return "letters, digits, '_', '.', '-', at most 253"
	case KindHost:
		return "an IPv4 or IPv6 address or a lower-case DNS name"
	case KindHostname:
		return "a lower-case DNS name, optionally starting with '*.'"
	case KindPath:
		return "'/' then letters, digits and ._~!$&()*+,=:@%/- with no '//'"
	case KindRegex:
		return "a valid RE2 expression of letters, digits and ._~!$&()*+,=:@%/?^|[]{}<>- (no backslash, quote, '#', ';', backtick or space)"
	case KindHeaderName, KindQueryName, KindFilterHeaderName:
		return "letters, digits, '_', '.', '-'"
	case KindHeaderValue:
		return "letters, digits and ._~!$&()*+,=:@%/?- (no space, quote, backslash, '#', ';' or backtick)"
	case KindMethod:
		return "an upper-case HTTP method"
	case KindFilterHeaderValue:
		return "printable ASCII characters, with spaces and tabs inside but not at either end (no line break, control or non-ASCII character)"
	case KindPreciseHostname:
		return "a lower-case DNS name"
	case KindFilterPath:
		return "'/' then letters, digits and ._~!&()*+,=:@/- with no '//' (no '$' or '%')"
	}
	return ""
}

func isDNSName(s string) bool {
	return len(s) <= 253 && dnsNameRE.MatchString(s)
}

func isHost(s string) bool {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Zone() == ""
	}
	return isDNSName(s)
}

// QuoteShort quotes s for an error message, shortened to 60 characters.
func QuoteShort(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q (%d bytes)", s[:60]+"...", len(s))
	}
	return fmt.Sprintf("%q", s)
}

// Check re-validates every string in the model against the allowlists. Every
// backend calls it before it writes anything, so a Model built by hand (or by
// a future input path) cannot inject into a configuration.
func (m *Model) Check() error { return m.CheckWith(CheckValue) }

// CheckPortable is CheckValue for a target whose writer relies on the
// Portable grammar: its error names the value no format of gwretry's
// quotes.
func CheckPortable(kind, s string) error { return checkPortable(kind, s) }

// CheckWith is Check with another grammar: a target that writes values
// literally passes CheckPortable, and gets a model ForTarget made.
func (m *Model) CheckWith(value func(kind, s string) error) error {
	var errs []string
	check := func(where, kind, s string) {
		if err := value(kind, s); err != nil {
			errs = append(errs, where+": "+err.Error())
		}
	}
	// Generated names become upstream, backend and cluster names: two
	// objects with one name would merge or clash in every data plane.
	seen := map[string]string{}
	unique := func(what, name string) {
		if prev, dup := seen[name]; dup {
			errs = append(errs, fmt.Sprintf("%s and %s have the same name %q", prev, what, name))
			return
		}
		seen[name] = what
	}
	for _, l := range m.Listeners {
		unique("listener", l.Name)
		for _, vh := range l.VirtualHosts {
			unique("virtual host "+vh.Hostname, vh.Name)
		}
	}
	for _, r := range slices.Concat(m.Rules, m.MeshRules) {
		unique(RuleObject(r), r.Name)
	}
	for _, l := range m.Listeners {
		for _, vh := range l.VirtualHosts {
			switch {
			case l.TLS && vh.Certificate == nil:
				errs = append(errs, fmt.Sprintf("TLS listener %s host %q has no certificate", l.Name, vh.Hostname))
			case !l.TLS && vh.Certificate != nil:
				errs = append(errs, fmt.Sprintf("plain listener %s host %q has a certificate", l.Name, vh.Hostname))
			case vh.Certificate != nil:
				for _, p := range []string{vh.Certificate.CertFile, vh.Certificate.KeyFile} {
					if err := CheckFilePath(p); err != nil {
						errs = append(errs, fmt.Sprintf("listener %s host %q: %v", l.Name, vh.Hostname, err))
					}
				}
			}
		}
	}
	for _, l := range m.Listeners {
		check("listener", KindName, l.Name)
		check("listener "+l.Name, KindHost, l.Address)
		if l.Port < 1 || l.Port > 65535 {
			errs = append(errs, fmt.Sprintf("listener %s: port %d out of range", l.Name, l.Port))
		}
		for _, vh := range l.VirtualHosts {
			check("virtual host", KindName, vh.Name)
			check("virtual host "+vh.Name, KindHostname, vh.Hostname)
			for _, rm := range vh.Routes {
				where := "virtual host " + vh.Hostname + " " + RuleObject(rm.Rule)
				checkMatch(rm.Match, where, check, &errs)
			}
		}
	}
	for _, a := range m.Mesh {
		for _, rm := range a.Routes {
			checkMatch(rm.Match, a.String()+" "+RuleObject(rm.Rule), check, &errs)
		}
	}
	for _, r := range slices.Concat(m.Rules, m.MeshRules) {
		rule := RuleObject(r)
		check(rule, KindName, r.Name)
		for _, p := range r.MeshParents {
			ns, name, _ := strings.Cut(p.Service, "/")
			check(rule+" parent Service", KindName, ns)
			check(rule+" parent Service", KindName, name)
		}
		if r.Retry != nil && r.Retry.Attempts < 0 {
			errs = append(errs, fmt.Sprintf("%s: negative attempts", rule))
		}
		for _, b := range r.Backends {
			backend := fmt.Sprintf("%s backend Service %s port %d", rule, b.Service, b.Port)
			if b.Weight < 0 {
				errs = append(errs, fmt.Sprintf("%s: negative weight %d", backend, b.Weight))
			}
			checkBackend(b, backend, check, &errs)
			checkFilters(&b.Filters, backend, check, &errs)
		}
		checkFilters(&r.Filters, rule, check, &errs)
		if r.Filters.Redirect != nil && len(r.Backends) > 0 {
			errs = append(errs, fmt.Sprintf("%s: a redirect beside backends", rule))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("model failed the allowlist: %s", strings.Join(errs, "; "))
	}
	return nil
}

func checkMatch(mt Match, where string, check func(where, kind, s string), errs *[]string) {
	switch mt.PathType {
	case PathExact, PathPrefix:
		check(where+" path", KindPath, mt.Path)
	case PathRegex:
		check(where+" path", KindRegex, mt.Path)
	default:
		*errs = append(*errs, fmt.Sprintf("%s: unknown path type %q", where, mt.PathType))
	}
	if mt.Method != "" {
		check(where+" method", KindMethod, mt.Method)
	}
	for _, h := range mt.Headers {
		check(where+" header", KindHeaderName, h.Name)
		checkValueMatch(h, where+" header "+h.Name, check, errs)
	}
	for _, q := range mt.Query {
		check(where+" query", KindQueryName, q.Name)
		checkValueMatch(q, where+" query "+q.Name, check, errs)
	}
}

func checkValueMatch(v ValueMatch, where string, check func(where, kind, s string), errs *[]string) {
	switch v.Type {
	case StringExact:
		check(where, KindHeaderValue, v.Value)
	case StringRegex:
		check(where, KindRegex, v.Value)
	default:
		*errs = append(*errs, fmt.Sprintf("%s: unknown match type %q", where, v.Type))
	}
}

// checkBackend re-validates a backend's name and endpoints.
// checkBackend checks a backend's name and endpoints; where names it
// ("HTTPRoute ns/r rule 0 backend Service ns/s port 80").
func checkBackend(b *BackendRef, where string, check func(where, kind, s string), errs *[]string) {
	check(where, KindName, b.Name)
	if len(b.Endpoints) == 0 {
		*errs = append(*errs, fmt.Sprintf("%s: no endpoints", where))
	}
	for _, e := range b.Endpoints {
		check(where+" endpoint", KindHost, e.Host)
		if e.Port < 1 || e.Port > 65535 {
			*errs = append(*errs, fmt.Sprintf("%s: endpoint port %d out of range", where, e.Port))
		}
	}
}
