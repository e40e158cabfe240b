package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The statuses of `gwretry import ingress-nginx`'s findings, with
// Approximated: how much of an ingress-nginx setting's behaviour the
// Gateway API output carries.
const (
	// ImportCarried: the HTTPRoute says what ingress-nginx did.
	ImportCarried Status = "carried"
	// ImportNotCarried: the Gateway API cannot say it; the reason says
	// what the output does instead.
	ImportNotCarried Status = "not-carried"
)

// The reasons of `gwretry import ingress-nginx` (importer/ingressnginx),
// a catalogue of their own: ImportCatalogue. A finding's params carry
// the facts; the finding's ingress, annotation, source and value are
// fields of the finding itself.
const (
	ImportNotServed                      Reason = "NotServed"
	ImportClassNotServed                 Reason = "ClassNotServed"
	ImportClassOfOtherController         Reason = "ClassOfOtherController"
	ImportClassServedByName              Reason = "ClassServedByName"
	ImportClassNotInInput                Reason = "ClassNotInInput"
	ImportCanaryNotImported              Reason = "CanaryNotImported"
	ImportInvalidValueIgnored            Reason = "InvalidValueIgnored"
	ImportPathTypesKept                  Reason = "PathTypesKept"
	ImportPathsBecomeRegexes             Reason = "PathsBecomeRegexes"
	ImportAnnotationNotCarried           Reason = "AnnotationNotCarried"
	ImportRewriteTargetDropped           Reason = "RewriteTargetDropped"
	ImportOtherNamespaceServes           Reason = "OtherNamespaceServes"
	ImportOtherIngressServes             Reason = "OtherIngressServes"
	ImportOtherIngressSettings           Reason = "OtherIngressSettings"
	ImportImplementationSpecificAsPrefix Reason = "ImplementationSpecificAsPrefix"
	ImportExactMatchedAsRegex            Reason = "ExactMatchedAsRegex"
	ImportRegexSemanticsDiffer           Reason = "RegexSemanticsDiffer"
	ImportDefaultBackendCarried          Reason = "DefaultBackendCarried"
	ImportDefaultBackendUnused           Reason = "DefaultBackendUnused"
	ImportDefaultBackendNotFirst         Reason = "DefaultBackendNotFirst"
	ImportDefaultBackendNotForCatchAll   Reason = "DefaultBackendNotForCatchAll"
	ImportDefaultBackendOtherServer      Reason = "DefaultBackendOtherServer"
	ImportDefaultBackendReplaced         Reason = "DefaultBackendReplaced"
	ImportCatchAllHost                   Reason = "CatchAllHost"
	ImportCatchAllOtherNamespaces        Reason = "CatchAllOtherNamespaces"
	ImportRetriesOff                     Reason = "RetriesOff"
	ImportNoRetryCondition               Reason = "NoRetryCondition"
	ImportNothingRetried                 Reason = "NothingRetried"
	ImportConditionsCarried              Reason = "ConditionsCarried"
	ImportConditionsCarriedAllMethods    Reason = "ConditionsCarriedAllMethods"
	ImportUnlimitedTries                 Reason = "UnlimitedTries"
	ImportTriesCarried                   Reason = "TriesCarried"
	ImportNoLimit                        Reason = "NoLimit"
	ImportRequestTimeoutEndsAll          Reason = "RequestTimeoutEndsAll"
	ImportRetryWindowDropped             Reason = "RetryWindowDropped"
	ImportNoConnectTimeout               Reason = "NoConnectTimeout"
	ImportIdleTimerBecomesTotal          Reason = "IdleTimerBecomesTotal"
	ImportNoSendTimeout                  Reason = "NoSendTimeout"
	ImportSeeNextUpstream                Reason = "SeeNextUpstream"
	ImportHTTPSRedirectCarried           Reason = "HTTPSRedirectCarried"
	ImportHTTPSRedirectKeepsSlash        Reason = "HTTPSRedirectKeepsSlash"
	ImportHTTPSRedirectNotCarried        Reason = "HTTPSRedirectNotCarried"
	ImportHTTPSRedirectWithoutTLS        Reason = "HTTPSRedirectWithoutTLS"
	ImportBarePathRedirected             Reason = "BarePathRedirected"

	// Caveats: each makes a carried finding approximated.
	ImportCaveatErrorNotListed         Reason = "ErrorNotListed"
	ImportCaveatTimeoutNotListed       Reason = "TimeoutNotListed"
	ImportCaveatInvalidHeaderUnmapped  Reason = "InvalidHeaderUnmapped"
	ImportCaveatNonIdempotentNotListed Reason = "NonIdempotentNotListed"
)

// importReasons is the import's catalogue.
func importReasons() []Entry {
	return []Entry{
		// Which Ingresses are imported.
		{Reason: ImportNotServed, Status: ImportNotCarried,
			Text: "the Ingress names no class: ingress-nginx serves it only with --watch-ingress-without-class; not imported"},
		{Reason: ImportClassNotServed, Status: ImportNotCarried, Params: []string{"ingressClass"},
			Text: "ingress-nginx serves the class annotation's value {ingressClass} (--ingress-class) only: not imported"},
		{Reason: ImportClassOfOtherController, Status: ImportNotCarried, Params: []string{"controller", "controllerClass"},
			Text: "the IngressClass has spec.controller {controller}, not {controllerClass} (--controller-class): not imported"},
		{Reason: ImportClassServedByName, Status: ImportNotCarried, Params: []string{"controller"},
			Text: "the IngressClass has spec.controller {controller}; --ingress-class-by-name would serve it: not imported"},
		{Reason: ImportClassNotInInput, Status: ImportNotCarried, Params: []string{"controllerClass", "ingressClass"},
			Text: "the IngressClass, not in the input, is not {ingressClass}: served only if its spec.controller is {controllerClass}"},
		{Reason: ImportCanaryNotImported, Status: ImportNotCarried,
			Text: "a canary is a weight on the main Ingress's backendRefs: not imported (ingress2gateway converts it)"},
		{Reason: ImportInvalidValueIgnored, Status: ImportNotCarried, Params: []string{"accepts", "fallback", "fallbackSource"},
			Text: "ingress-nginx refuses it (wants {accepts}) and serves the {fallbackSource} value {fallback}; so does the import"},

		// Annotations outside the import's scope.
		{Reason: ImportAnnotationNotCarried, Status: ImportNotCarried,
			Text: "the import reads the retry, timeout, redirect and path annotations only: dropped"},
		{Reason: ImportRewriteTargetDropped, Status: ImportNotCarried,
			Text: "the rewrite is dropped (a URLRewrite filter does part of it); it makes the host's paths regular expressions"},

		// Paths and hosts.
		{Reason: ImportPathTypesKept, Status: ImportCarried,
			Text: "paths are matched as their pathType says"},
		{Reason: ImportPathsBecomeRegexes, Status: Approximated,
			Text: "each Prefix and ImplementationSpecific path of the Ingress's hosts becomes RegularExpression (?i)PATH.*"},
		{Reason: ImportOtherNamespaceServes, Status: ImportNotCarried, Params: []string{"host", "path", "pathType", "servedBy"},
			Text: "no rule: ingress-nginx served {pathType} {path} of host {host} from Ingress {servedBy} only (one server per host)"},
		{Reason: ImportOtherIngressServes, Status: ImportNotCarried, Params: []string{"servedBy"},
			Text: "ingress-nginx served this host and path from Ingress {servedBy} only: this backend got none of its traffic"},
		{Reason: ImportOtherIngressSettings, Status: ImportNotCarried, Params: []string{"ruleValue", "servedBy"},
			Text: "ingress-nginx served this host and path with Ingress {servedBy}'s settings: the rule has {ruleValue}"},
		{Reason: ImportImplementationSpecificAsPrefix, Status: Approximated, Params: []string{"alsoMatched", "path"},
			Text: "PathPrefix {path}: ingress-nginx matched a string prefix ({alsoMatched} too), PathPrefix whole segments"},
		{Reason: ImportExactMatchedAsRegex, Status: Approximated, Params: []string{"path"},
			Text: `Exact {path}: on a regex host ingress-nginx matched ~* "^{path}", any case and as a prefix`},
		{Reason: ImportRegexSemanticsDiffer, Status: Approximated, Params: []string{"path", "regex", "setBy"},
			Text: `RegularExpression {regex} (regex paths from Ingress {setBy}): ingress-nginx matched ~* "^{path}"; anchoring may differ`},
		{Reason: ImportBarePathRedirected, Status: ImportCarried, Params: []string{"bare", "path"},
			Text: "Exact {bare} answers 301 to {path}, as nginx's location {path} did (PathPrefix {path} also matches {bare})"},

		// Default backends and the catch-all server.
		{Reason: ImportDefaultBackendCarried, Status: ImportCarried, Params: []string{"host"},
			Text: "PathPrefix / of host {host}: the / location of the server this Ingress created"},
		{Reason: ImportDefaultBackendUnused, Status: ImportNotCarried,
			Text: "ingress-nginx uses a defaultBackend that is a Service only: this one served nothing"},
		{Reason: ImportDefaultBackendNotFirst, Status: ImportNotCarried, Params: []string{"servedBy"},
			Text: "the catch-all server _ took the defaultBackend of {servedBy}, the first Ingress without rules: this one served nothing"},
		{Reason: ImportDefaultBackendNotForCatchAll, Status: ImportNotCarried,
			Text: `host "": the catch-all server _ never took this defaultBackend: no rule carries it there`},
		{Reason: ImportDefaultBackendOtherServer, Status: ImportNotCarried, Params: []string{"host", "servedBy"},
			Text: "host {host}: Ingress {servedBy} created its server, whose defaultBackend got the unmatched paths: not carried there"},
		{Reason: ImportDefaultBackendReplaced, Status: ImportNotCarried, Params: []string{"host", "replacedBy"},
			Text: "host {host}: the Prefix / path of Ingress {replacedBy} replaced this defaultBackend's location"},
		{Reason: ImportCatchAllHost, Status: Approximated, Params: []string{"gateway", "hosts"},
			Text: "no hostnames: on Gateway {gateway} it also takes the paths no rule of {hosts} matches (ingress-nginx: 404)"},
		{Reason: ImportCatchAllOtherNamespaces, Status: Approximated, Params: []string{"hosts"},
			Text: "no hostnames: requests for {hosts}, on other namespaces' Gateways, do not reach it (ingress-nginx: one server set)"},

		// Retries.
		{Reason: ImportRetriesOff, Status: ImportCarried,
			Text: "off: retry.attempts 0"},
		{Reason: ImportNoRetryCondition, Status: ImportCarried,
			Text: "no error, timeout, invalid_header or http_NNN: nothing is retried, retry.attempts 0"},
		{Reason: ImportNothingRetried, Status: ImportCarried,
			Text: "nothing is retried: retry.attempts 0"},
		{Reason: ImportConditionsCarried, Status: ImportCarried, Params: []string{"codes"},
			Text: "the conditions become the retry stanza, retry.codes [{codes}]"},
		{Reason: ImportConditionsCarriedAllMethods, Status: ImportCarried, Params: []string{"codes"},
			Text: "the conditions become the retry stanza, retry.codes [{codes}] (non_idempotent: translate with --retry-non-idempotent)"},
		{Reason: ImportUnlimitedTries, Status: Approximated,
			Text: "0 is no limit, which the Gateway API lacks: retry.attempts 1; raise it to the bound you want"},
		{Reason: ImportTriesCarried, Status: ImportCarried, Params: []string{"attempts"},
			Text: "retry.attempts {attempts}: the retries after the first try, however many endpoints there are"},
		{Reason: ImportSeeNextUpstream, Status: ImportCarried,
			Text: "carried with proxy-next-upstream (see its finding)"},

		// Timeouts.
		{Reason: ImportNoLimit, Status: ImportCarried,
			Text: "0 is no limit: timeouts.request is not set"},
		{Reason: ImportRequestTimeoutEndsAll, Status: Approximated, Params: []string{"request"},
			Text: "timeouts.request {request} ends the whole request; ingress-nginx only stopped starting new tries then"},
		{Reason: ImportRetryWindowDropped, Status: ImportNotCarried, Params: []string{"backendRequest"},
			Text: "timeouts.request is not set: it must be at least backendRequest ({backendRequest}); retry.attempts bounds retries"},
		{Reason: ImportNoConnectTimeout, Status: ImportNotCarried,
			Text: "the Gateway API has no connect timeout: the data plane's own applies"},
		{Reason: ImportIdleTimerBecomesTotal, Status: Approximated, Params: []string{"backendRequest"},
			Text: "timeouts.backendRequest {backendRequest}: an idle timer between reads becomes a total per try"},
		{Reason: ImportNoSendTimeout, Status: ImportNotCarried, Params: []string{"backendRequest"},
			Text: "the Gateway API has no send timer: backendRequest ({backendRequest}) bounds the whole try"},

		// The redirect to HTTPS.
		{Reason: ImportHTTPSRedirectCarried, Status: ImportCarried, Params: []string{"code", "route"},
			Text: "plain HTTP answers {code} to https (route {route}); the rule serves HTTPS only"},
		{Reason: ImportHTTPSRedirectKeepsSlash, Status: Approximated, Params: []string{"code", "route"},
			Text: "plain HTTP answers {code} to https (route {route}), keeping a trailing / ingress-nginx dropped"},
		{Reason: ImportHTTPSRedirectNotCarried, Status: ImportNotCarried,
			Text: "other paths of the host did not redirect to HTTPS, and one route serves both listeners: plain HTTP is served"},
		{Reason: ImportHTTPSRedirectWithoutTLS, Status: ImportNotCarried,
			Text: "no tls, so no HTTPS listener: plain HTTP is served (ingress-nginx redirected, with its default certificate)"},

		// Caveats of the retry conditions.
		{Reason: ImportCaveatErrorNotListed,
			Text: "without error ingress-nginx did not retry a refused or reset connection, which the retry stanza does"},
		{Reason: ImportCaveatTimeoutNotListed,
			Text: "without timeout ingress-nginx did not retry a timed-out try, where the retry stanza retries a try backendRequest cuts"},
		{Reason: ImportCaveatInvalidHeaderUnmapped,
			Text: "invalid_header has no Gateway API condition: the data plane decides whether such a try is retried"},
		{Reason: ImportCaveatNonIdempotentNotListed, Params: []string{"methods"},
			Text: "ingress-nginx did not retry {methods} once sent, where the Gateway API retries every method"},
	}
}

// ImportCatalogue returns the reasons of `gwretry import ingress-nginx`,
// sorted by code; docs/report.md lists them (TestCatalogueDoc). An entry
// with no status is a caveat.
func ImportCatalogue() []Entry {
	es := importReasons()
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Compare(a.Reason, b.Reason) })
	return es
}

var importIndex = sync.OnceValue(func() map[Reason]Entry {
	m := map[Reason]Entry{}
	for _, e := range ImportCatalogue() {
		m[e.Reason] = e
	}
	return m
})

// LookupImport returns the import catalogue's entry of r.
func LookupImport(r Reason) (Entry, bool) {
	e, ok := importIndex()[r]
	return e, ok
}

// ImportStatus is the status an import finding with reason r and the
// caveats cs has: the reason's, approximated when a carried one has
// caveats; not-carried for a reason not in the catalogue.
func ImportStatus(r Reason, cs []Caveat) Status {
	e, ok := LookupImport(r)
	switch {
	case !ok || e.IsCaveat():
		return ImportNotCarried
	case e.Status == ImportCarried && len(cs) > 0:
		return Approximated
	}
	return e.Status
}

// RenderImport is an import finding in words: its reason's text, then
// each caveat's.
func RenderImport(r Reason, p Params, cs []Caveat) string {
	e, _ := LookupImport(r)
	parts := []string{e.Render(p)}
	for _, c := range cs {
		ce, _ := LookupImport(c.Reason)
		parts = append(parts, ce.Render(c.Params))
	}
	return strings.Join(parts, "; ")
}

// CheckImport reports whether an import finding's record is whole: a
// reason of the import catalogue with exactly its parameters, known
// caveats, sorted, with theirs, and caveats on carried reasons only.
func CheckImport(r Reason, p Params, cs []Caveat) error {
	e, ok := LookupImport(r)
	switch {
	case !ok:
		return fmt.Errorf("reason %q is not in the import catalogue", r)
	case e.IsCaveat():
		return fmt.Errorf("reason %s is a caveat", r)
	case len(cs) > 0 && e.Status != ImportCarried:
		return fmt.Errorf("reason %s is %s: it takes no caveats", r, e.Status)
	}
	if err := checkParams(r, e, p); err != nil {
		return err
	}
	for i, c := range cs {
		ce, ok := LookupImport(c.Reason)
		switch {
		case !ok || !ce.IsCaveat():
			return fmt.Errorf("caveat %q is not an import caveat", c.Reason)
		case i > 0 && cs[i-1].Reason >= c.Reason:
			return fmt.Errorf("caveats not sorted or repeated at %s", c.Reason)
		}
		if err := checkParams(c.Reason, ce, c.Params); err != nil {
			return err
		}
	}
	return nil
}
