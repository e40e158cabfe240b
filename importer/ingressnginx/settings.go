// Package ingressnginx imports Ingress objects (networking.k8s.io/v1)
// written for ingress-nginx into Gateway API HTTPRoutes and Gateways, and
// carries their retry and timeout annotations into rules[].retry and
// rules[].timeouts where the Gateway API can say the same thing. Every
// setting it reads gets a Finding: carried, approximated (the message says
// how the behaviour changes) or not carried. It knows no data plane: its
// output is input for gwretry translate.
//
// Hosts, paths and backends map as ingress2gateway (v1.1.0) maps them: one
// HTTPRoute per namespace, IngressClass and host, one rule per distinct
// path, one Gateway per namespace and IngressClass with a listener per host.
package ingressnginx

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

// Prefix is ingress-nginx's default annotation prefix
// (--annotations-prefix).
const Prefix = "nginx.ingress.kubernetes.io/"

// The settings gwretry carries: each is an annotation (Prefix + name) and a
// key of the controller's ConfigMap with the same name, except
// retry-non-idempotent, which only the ConfigMap has.
const (
	NextUpstream        = "proxy-next-upstream"
	NextUpstreamTries   = "proxy-next-upstream-tries"
	NextUpstreamTimeout = "proxy-next-upstream-timeout"
	ConnectTimeout      = "proxy-connect-timeout"
	ReadTimeout         = "proxy-read-timeout"
	SendTimeout         = "proxy-send-timeout"
	RetryNonIdempotent  = "retry-non-idempotent"
	UseRegex            = "use-regex"
	RewriteTarget       = "rewrite-target"
	Canary              = "canary"
)

// retrySettings are the per-Ingress settings, in report order.
var retrySettings = []string{NextUpstream, NextUpstreamTries, NextUpstreamTimeout, ConnectTimeout, ReadTimeout, SendTimeout}

// Defaults are ingress-nginx's built-in values of the ConfigMap keys
// (internal/ingress/controller/config/config.go, v1.15.1).
func Defaults() map[string]string {
	return map[string]string{
		NextUpstream:        "error timeout",
		NextUpstreamTries:   "3",
		NextUpstreamTimeout: "0",
		ConnectTimeout:      "5",
		ReadTimeout:         "60",
		SendTimeout:         "60",
		RetryNonIdempotent:  "false",
	}
}

// nextUpstreamRE is ingress-nginx's own validation of the annotation
// (internal/ingress/annotations/proxy/main.go). Its \s? lets tokens run
// together ("http_500http_502"), which nginx then refuses: parseSetting
// also checks each token (nextUpstreamTokens).
var nextUpstreamRE = regexp.MustCompile(`^((error|timeout|invalid_header|http_500|http_502|http_503|http_504|http_403|http_404|http_429|non_idempotent|off)\s?)+$`)

// nextUpstreamTokens are the tokens of nextUpstreamRE, each a whole word.
var nextUpstreamTokens = []string{"error", "timeout", "invalid_header", "http_500", "http_502", "http_503", "http_504", "http_403", "http_404", "http_429", "non_idempotent", "off"}

// rejectedByIngressNginx reports whether ingress-nginx's own annotation
// parser refuses raw for the setting name, so that it serves the
// ConfigMap's value or its default and keeps the Ingress
// (internal/ingress/annotations/proxy/main.go, Parse: every error falls
// back to the default backend's value; parser.checkAnnotation validates
// with ValidateInt or validUpstreamAnnotation, then parseInt and
// parseString refuse what Atoi cannot read and an empty string). Values it
// accepts but nginx or gwretry cannot use stay errors (parseSetting).
func rejectedByIngressNginx(name, raw string) bool {
	if raw == "" {
		return true
	}
	switch name {
	case NextUpstream:
		return !nextUpstreamRE.MatchString(raw)
	case NextUpstreamTries, NextUpstreamTimeout, ConnectTimeout, ReadTimeout, SendTimeout:
		_, err := strconv.Atoi(raw)
		return err != nil
	}
	return false
}

// validationOf says what ingress-nginx's validation of name wants (the
// accepts parameter of InvalidValueIgnored).
func validationOf(name string) string {
	switch name {
	case NextUpstream:
		return "its tokens, one space apart" // nextUpstreamTokens
	case NextUpstreamTries:
		return "a whole number"
	}
	return "whole seconds, no unit"
}

// Source says where a setting's value came from.
type Source string

// Sources.
const (
	FromAnnotation Source = "annotation"
	FromConfigMap  Source = "configmap"
	FromDefault    Source = "default"
	// FromSpec is a field of the Ingress spec, not an annotation.
	FromSpec Source = "spec"
)

// value is one setting's raw value and where it came from.
type value struct {
	raw    string
	source Source
}

// settings are one Ingress's effective retry and timeout settings, parsed.
type settings struct {
	values map[string]value
	// tokens of proxy-next-upstream, as written (non_idempotent included).
	tokens []string
	// nonIdempotent is true when non_idempotent is a token or the
	// ConfigMap's retry-non-idempotent is true (ingress-nginx's
	// buildNextUpstream adds it then).
	nonIdempotent bool
	tries         int
	nextTimeout   int // seconds, 0 = no limit
	connect       int // seconds
	read          int
	send          int
}

// has reports whether proxy-next-upstream lists tok.
func (s *settings) has(tok string) bool { return slices.Contains(s.tokens, tok) }

// codes returns the http_NNN tokens as status codes, ascending.
func (s *settings) codes() []int {
	var out []int
	for _, t := range s.tokens {
		if n, ok := strings.CutPrefix(t, "http_"); ok {
			c, _ := strconv.Atoi(n) // checked by nextUpstreamRE
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// maxSeconds bounds the timers: 99999 hours, the largest GEP-2257 value.
const maxSeconds = 99999 * 3600

// parseSetting checks one raw value against what ingress-nginx accepts and
// what gwretry can carry, and stores it in s. It returns the problem, or
// "".
func (s *settings) parseSetting(name, raw string) string {
	switch name {
	case NextUpstream:
		tokens := strings.Fields(raw)
		if !nextUpstreamRE.MatchString(raw) || slices.ContainsFunc(tokens, func(t string) bool { return !slices.Contains(nextUpstreamTokens, t) }) {
			return fmt.Sprintf("%q: want tokens separated by spaces among %s", raw, strings.Join(nextUpstreamTokens, ", "))
		}
		s.tokens = tokens
		if s.has("non_idempotent") {
			s.nonIdempotent = true
		}
	case RetryNonIdempotent:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Sprintf("%q: want true or false", raw)
		}
		if b {
			s.nonIdempotent = true
		}
	case NextUpstreamTries, NextUpstreamTimeout:
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 || n > maxSeconds {
			return fmt.Sprintf("%q: want a whole number from 0 to %d", raw, maxSeconds)
		}
		if name == NextUpstreamTries {
			s.tries = n
		} else {
			s.nextTimeout = n
		}
	case ConnectTimeout, ReadTimeout, SendTimeout:
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxSeconds {
			return fmt.Sprintf("%q: want a whole number of seconds from 1 to %d", raw, maxSeconds)
		}
		switch name {
		case ConnectTimeout:
			s.connect = n
		case ReadTimeout:
			s.read = n
		default:
			s.send = n
		}
	}
	return ""
}

// seconds writes n seconds as a GEP-2257 duration ("60s", "1m30s" is
// written "90s": the largest units, as translate writes them).
func seconds(n int) string {
	d, err := translate.FormatDuration(time.Duration(n) * time.Second)
	if err != nil {
		// n is bounded by maxSeconds.
		panic(fmt.Sprintf("ingressnginx: %d seconds: %v", n, err))
	}
	return d
}

// ConfigMap is the controller's ConfigMap: the defaults of every Ingress.
type ConfigMap struct {
	// Name is "namespace/name".
	Name string
	Pos  input.Position
	Data map[string]string
}

// defaultsFrom returns the values of the settings an Ingress does not
// annotate: the ConfigMap's, else ingress-nginx's built-in ones. A
// ConfigMap value that ingress-nginx would refuse is an error.
func defaultsFrom(cm *ConfigMap) (map[string]value, input.ErrorList) {
	out := map[string]value{}
	for k, v := range Defaults() {
		out[k] = value{raw: v, source: FromDefault}
	}
	if cm == nil {
		return out, nil
	}
	var errs input.ErrorList
	keys := append(slices.Clone(retrySettings), RetryNonIdempotent)
	for _, k := range keys {
		raw, ok := cm.Data[k]
		if !ok {
			continue
		}
		var probe settings
		if msg := probe.parseSetting(k, raw); msg != "" {
			errs = append(errs, &input.InputError{Pos: cm.Pos, Object: "ConfigMap " + cm.Name, Field: "data." + k, Msg: msg})
			continue
		}
		out[k] = value{raw: raw, source: FromConfigMap}
	}
	return out, errs
}
