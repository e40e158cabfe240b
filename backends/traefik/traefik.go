// Package traefik translates a gwretry Model into a Traefik v3 static
// configuration (traefik/traefik.yaml) and a file-provider dynamic
// configuration (traefik/dynamic.yaml).
//
// Every route match becomes a router whose explicit priority keeps the
// Model's precedence order; every rule becomes a service (a weighted service
// over per-backend load balancers when it has several backends), a Retry
// middleware when it retries, and a serversTransport with upstream
// keep-alive off (so that Go's transport never re-sends a request on its
// own) and the backendRequest timers. A rule with no usable backend is
// routed to noop@internal, whose 418 an errors middleware rewrites to 500;
// the share of invalid backendRefs goes there too. What Traefik can and
// cannot do per version is in versions.go; what each feature becomes is in
// findings.go; judge.go reads the files back and derives what Traefik does.
package traefik

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// Output file paths, and where traefik.yaml expects dynamic.yaml.
const (
	staticPath  = "traefik/traefik.yaml"
	dynamicPath = "traefik/dynamic.yaml"
	// DynamicFile is the default absolute path traefik.yaml gives the file
	// provider. /etc/traefik is where Traefik (and its official image)
	// looks for traefik.yaml by default; an absolute path does not depend
	// on Traefik's working directory, which a relative one would.
	DynamicFile = "/etc/traefik/dynamic.yaml"
)

// Config configures the backend.
type Config struct {
	// DynamicFile is the absolute path, written into traefik.yaml's
	// providers.file.filename, where Traefik will find dynamic.yaml. Empty
	// means DynamicFile. It must be absolute and clean, of letters, digits
	// and ._-/ only, and end in .yaml or .yml.
	DynamicFile string
}

// Backend generates Traefik configurations.
type Backend struct {
	dynamicFile string
}

// New returns the Traefik backend with dynamic.yaml at DynamicFile.
func New() *Backend { return &Backend{dynamicFile: DynamicFile} }

// NewWithConfig returns the Traefik backend configured by c, or an error
// when c.DynamicFile is not an allowed path.
func NewWithConfig(c Config) (*Backend, error) {
	f := c.DynamicFile
	if f == "" {
		f = DynamicFile
	}
	if err := checkDynamicFile(f); err != nil {
		return nil, err
	}
	return &Backend{dynamicFile: f}, nil
}

// Name returns "traefik".
func (*Backend) Name() string { return "traefik" }

// Versions returns the Traefik versions known, oldest first.
// Scope: the routes on the Gateway listeners it generates and their
// connection timeouts.
func (*Backend) Scope() translate.Scope { return translate.GatewayScope() }

// Expresses is translate.Expresser. The values of a match are written in
// the router rule, each a backtick string, which Traefik's rule parser
// (go/scanner's raw string) reads as it is: anything but a backtick and a
// control character, and no "{{" or "}}" (the file provider runs
// dynamic.yaml through text/template); checkRuleValue is that grammar. A
// regular expression must also compile (Traefik's are Go's). Query
// parameter names are backtick strings too, but for '+'. The paths
// filters write keep translate.Portable.
// A rule with a value outside is answered 500 here, and written by the
// other targets.
func (*Backend) Expresses(kind, s string) bool {
	switch kind {
	case translate.KindPath:
		// Written as Traefik compares it (rulePath): a percent-escape
		// that decodes to a control character but tab and line feed
		// (go/scanner drops \r and refuses NUL) or to bytes that are
		// not UTF-8 (YAML holds text) cannot be written.
		return checkRuleValue(rulePath(s)) == nil
	case translate.KindHeaderValue, translate.KindHeaderName:
		return checkRuleValue(s) == nil
	case translate.KindQueryName:
		// A backtick string holds every character the API allows but
		// the backtick; Traefik compares the name form-decoded
		// (url.ParseQuery), which reads a '+' the client sends as a
		// space: a name with '+' is not written.
		return checkRuleValue(s) == nil && !strings.Contains(s, "+")
	case translate.KindRegex:
		_, err := regexp.Compile(s)
		return err == nil && checkRuleValue(s) == nil
	case translate.KindFilterHeaderValue:
		// dynamic.yaml goes through text/template: no template action.
		// Any other value HTTP carries (non-ASCII too) is a YAML string
		// Traefik's headers middleware sets as it is.
		return !strings.Contains(s, "{{") && !strings.Contains(s, "}}")
	case translate.KindFilterHeaderName:
		// Any token the API allows ('!#$%&'*+^`|~' too): a YAML key
		// the headers middleware sets, adds or deletes as it is (no
		// brace, so no template action).
		return true
	case translate.KindFilterPath:
		// Any path HTTP carries (translate.HTTPExpresses: '$', '%XX',
		// '\'', ';' too), a YAML string: replacePath sets it as the raw
		// path, and redirectRegex's and replacePathRegex's replacement
		// holds it with each '$' doubled (replLiteral). A '//' stays
		// out, as for every target.
		return !strings.Contains(s, "//")
	}
	return translate.Portable(kind, s)
}

func (*Backend) Versions() []string {
	return translate.VersionNames(versionTable(), func(s support) string { return s.Version })
}

// Generate writes traefik.yaml and dynamic.yaml for m and reports, per rule
// and feature, what Traefik does with it.
func (b *Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	sup, err := lookupVersion(opts.Version)
	if err != nil {
		return nil, err
	}
	if err := m.CheckWith(translate.CheckExpressed(b)); err != nil {
		return nil, err
	}
	st, err := buildStatic(m, b.file())
	if err != nil {
		return nil, err
	}
	dyn, rules, err := buildDynamic(m, sup, opts)
	if err != nil {
		return nil, err
	}
	staticBack := &staticConfig{}
	staticYAML, err := encodeChecked(st, staticBack)
	if err != nil {
		return nil, &translate.InternalError{Err: fmt.Errorf("traefik.yaml: %w", err)}
	}
	readBack := &dynamicConfig{}
	// The judges read the files as decoded back here, not a second
	// decoding of the same bytes.
	var dynamicFile translate.File
	if opts.Spool != "" {
		// Written to disk as it goes and read back from there
		// (translate.Options.Spool): the file is not held.
		path, err := encodeDynamicSpooled(dyn, readBack, opts.Spool)
		if err != nil {
			return nil, &translate.InternalError{Err: fmt.Errorf("dynamic.yaml: %w", err)}
		}
		dynamicFile = translate.File{Path: dynamicPath, Spooled: path, Parsed: translate.NewSpooledParsed(path, readBack)}
	} else {
		dynamicYAML, err := encodeChecked(dyn, readBack)
		if err != nil {
			return nil, &translate.InternalError{Err: fmt.Errorf("dynamic.yaml: %w", err)}
		}
		dynamicFile = translate.File{Path: dynamicPath, Data: dynamicYAML, Parsed: translate.NewParsed(dynamicYAML, readBack)}
	}
	if err := checkDecodedRules(readBack, rules); err != nil {
		if dynamicFile.Spooled != "" {
			os.Remove(dynamicFile.Spooled)
		}
		return nil, &translate.InternalError{Err: fmt.Errorf("dynamic.yaml: %w", err)}
	}
	out := &translate.Output{
		Files: []translate.File{{Path: staticPath, Data: staticYAML, Parsed: translate.NewParsed(staticYAML, staticBack)},
			dynamicFile},
		Notes: notes(m, sup, b.file()),
	}
	sites := sitesOf(m)
	view := storeView(dyn.TLS, m.CertSource)
	for _, r := range m.Rules {
		out.Findings = append(out.Findings, findings(r, sup, opts, sites[r], view, readTimeouts(m, sites[r]))...)
	}
	out.Findings = append(out.Findings, connFindings(m)...)
	return out, nil
}

// file is the dynamic file path; the zero Backend uses DynamicFile.
func (b *Backend) file() string {
	if b == nil || b.dynamicFile == "" {
		return DynamicFile
	}
	return b.dynamicFile
}

// notes are the data-plane-wide lines of the report.
func notes(m *translate.Model, sup support, dynamicFile string) []translate.Note {
	where := "traefik.yaml loads dynamic.yaml from " + dynamicFile + " (providers.file.filename): put dynamic.yaml there"
	if dynamicFile == DynamicFile {
		where += " (e.g. docker run -v \"$PWD/traefik:/etc/traefik:ro\" traefik:v" + sup.Version +
			"), or choose another path with --traefik-dynamic-file"
	}
	n := []string{
		where,
		"Traefik's file provider rejects the whole dynamic.yaml on one unknown field (every request " +
			"then gets 404): use the file generated for the Traefik version you run (--target traefik@" +
			sup.Version + ")",
		"every rule's servers transport sets maxIdleConnsPerHost -1, turning upstream keep-alive off: " +
			"otherwise Go's HTTP transport re-sends an idempotent request once by itself when a reused " +
			"connection to the backend closes, whatever the Retry middleware says; the cost is a new " +
			"connection to the backend for every request",
		"rules without a retry stanza get no Retry middleware, and Traefik (with upstream keep-alive off) " +
			"never retries without one",
		"router priorities follow the Gateway API precedence order; regular expressions in path, " +
			"header and query matches must match the whole value",
		"paths are matched percent-decoded, with dot segments and repeated slashes removed (/p/%78, " +
			"/p/a/../x and /p//x match an Exact /p/x), except that the escapes of reserved characters and of '%' " +
			"stay encoded (/p/long%2Fz does not match a PathPrefix /p/long, nor /r/a%3Bb an Exact /r/a;b; " +
			"a match's own escapes are written the same way); query names and values are matched " +
			"percent-decoded, and a repeated query parameter matches when any of its values matches " +
			"(the Gateway API recommends the first)",
		"entry points keep Traefik's default respondingTimeouts (readTimeout 60s for reading the request, " +
			"no writeTimeout)",
	}
	out := translate.InfoNotes(n...)
	for _, r := range m.Rules {
		switch {
		case r.Dead():
			out = append(out, translate.Warning(translate.RuleObject(r), "%s; its routers send every request to %s (which "+
				"answers %d) through the errors middleware %s, which answers 500",
				r.DeadReason(), noopService, noopStatus, answerName(r)))
		case r.InvalidWeight() > 0:
			out = append(out, translate.Warning(translate.RuleObject(r), "the share of its invalid backendRefs (weight %d) goes "+
				"to %s and is answered 500 by the errors middleware %s",
				r.InvalidWeight(), noopService, answerName(r)))
		}
	}
	return out
}

// NotExpressed is translate.ExpressWhy: why Expresses refuses s.
func (*Backend) NotExpressed(kind, s string) string {
	const rule = "a Traefik rule's backtick string holds no backtick, carriage return, NUL or other control character but tab and line feed, no text that is not UTF-8, and no '{{' or '}}' (a template action in the file provider)"
	switch kind {
	case translate.KindPath:
		return "Traefik compares the path with its escapes decoded; " + rule
	case translate.KindHeaderValue, translate.KindHeaderName:
		return rule
	case translate.KindRegex:
		if _, err := regexp.Compile(s); err != nil {
			return translate.RE2Why
		}
		return rule
	case translate.KindQueryName:
		if strings.Contains(s, "+") {
			return "Traefik decodes query names as forms do, reading a '+' the client sends as a space"
		}
		return rule
	case translate.KindFilterHeaderValue:
		return "'{{' or '}}' starts a Go template action in Traefik's file provider"
	}
	return translate.PortableWhy(kind)
}
