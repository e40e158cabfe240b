package ingressnginx

import "slices"

// Reason is a stable CamelCase code for why an ingress-nginx setting has
// its status in the import's report.
type Reason string

// The import's reasons (Reasons lists them with their status and text).
const (
	ReasonNotServed                      Reason = "NotServed"
	ReasonCanaryNotImported              Reason = "CanaryNotImported"
	ReasonPathTypesKept                  Reason = "PathTypesKept"
	ReasonPathsBecomeRegexes             Reason = "PathsBecomeRegexes"
	ReasonAnnotationNotCarried           Reason = "AnnotationNotCarried"
	ReasonOtherNamespaceServes           Reason = "OtherNamespaceServes"
	ReasonOtherIngressServes             Reason = "OtherIngressServes"
	ReasonImplementationSpecificAsPrefix Reason = "ImplementationSpecificAsPrefix"
	ReasonExactMatchedAsRegex            Reason = "ExactMatchedAsRegex"
	ReasonRegexSemanticsDiffer           Reason = "RegexSemanticsDiffer"
	ReasonDefaultBackendCarried          Reason = "DefaultBackendCarried"
	ReasonDefaultBackendUnused           Reason = "DefaultBackendUnused"
	ReasonCatchAllHost                   Reason = "CatchAllHost"
	ReasonRetriesOff                     Reason = "RetriesOff"
	ReasonNothingRetried                 Reason = "NothingRetried"
	ReasonConditionsCarried              Reason = "ConditionsCarried"
	ReasonConditionsChange               Reason = "ConditionsChange"
	ReasonUnlimitedTries                 Reason = "UnlimitedTries"
	ReasonTriesCarried                   Reason = "TriesCarried"
	ReasonNoLimit                        Reason = "NoLimit"
	ReasonRequestTimeoutEndsAll          Reason = "RequestTimeoutEndsAll"
	ReasonRetryWindowDropped             Reason = "RetryWindowDropped"
	ReasonNoConnectTimeout               Reason = "NoConnectTimeout"
	ReasonIdleTimerBecomesTotal          Reason = "IdleTimerBecomesTotal"
	ReasonNoSendTimeout                  Reason = "NoSendTimeout"
	ReasonSeeNextUpstream                Reason = "SeeNextUpstream"
	ReasonInvalidValueIgnored            Reason = "InvalidValueIgnored"
	ReasonHTTPSRedirectCarried           Reason = "HTTPSRedirectCarried"
	ReasonHTTPSRedirectKeepsSlash        Reason = "HTTPSRedirectKeepsSlash"
	ReasonHTTPSRedirectNotCarried        Reason = "HTTPSRedirectNotCarried"
	ReasonBarePathRedirected             Reason = "BarePathRedirected"
)

// ReasonEntry is one reason of the import's catalogue.
type ReasonEntry struct {
	Reason Reason
	Status Status
	Text   string
}

// Reasons is the import's catalogue, sorted by code.
func Reasons() []ReasonEntry {
	es := []ReasonEntry{
		{ReasonNotServed, NotCarried, "the controller the flags describe does not serve this Ingress: not imported"},
		{ReasonCanaryNotImported, NotCarried, "a canary Ingress is a weight on the main Ingress's backendRefs: not imported"},
		{ReasonPathTypesKept, Carried, "paths are matched as their pathType says"},
		{ReasonPathsBecomeRegexes, Approximated, "use-regex makes every path of the host a case-insensitive regular expression"},
		{ReasonAnnotationNotCarried, NotCarried, "the annotation has no Gateway API equivalent: dropped"},
		{ReasonOtherNamespaceServes, NotCarried, "ingress-nginx served this host and path from an Ingress of another namespace"},
		{ReasonOtherIngressServes, NotCarried, "ingress-nginx served this host and path with another Ingress's settings"},
		{ReasonImplementationSpecificAsPrefix, Approximated, "an ImplementationSpecific path becomes PathPrefix"},
		{ReasonExactMatchedAsRegex, Approximated, "with use-regex, ingress-nginx matched this Exact path as a case-insensitive prefix regex"},
		{ReasonRegexSemanticsDiffer, Approximated, "a RegularExpression match may differ from nginx's case-insensitive PCRE from the start of the path"},
		{ReasonDefaultBackendCarried, Carried, "the defaultBackend becomes a PathPrefix / rule on the Ingress's hosts"},
		{ReasonDefaultBackendUnused, NotCarried, "ingress-nginx served nothing from this defaultBackend"},
		{ReasonCatchAllHost, Approximated, "a route with no hostnames takes more than ingress-nginx's catch-all server did"},
		{ReasonRetriesOff, Carried, "proxy-next-upstream off: retry.attempts 0"},
		{ReasonNothingRetried, Carried, "nothing is retried: retry.attempts 0"},
		{ReasonConditionsCarried, Carried, "every retry condition maps to the retry stanza"},
		{ReasonConditionsChange, Approximated, "some retry conditions have no exact Gateway API equivalent"},
		{ReasonUnlimitedTries, Approximated, "0 tries is no limit in ingress-nginx; the Gateway API has no unlimited attempts"},
		{ReasonTriesCarried, Carried, "the tries become retry.attempts (the retries after the first try)"},
		{ReasonNoLimit, Carried, "0 is no limit: timeouts.request is not set"},
		{ReasonRequestTimeoutEndsAll, Approximated, "timeouts.request ends the whole request, where ingress-nginx only stopped starting tries"},
		{ReasonRetryWindowDropped, NotCarried, "the retry window cannot become timeouts.request (it must be at least backendRequest)"},
		{ReasonNoConnectTimeout, NotCarried, "the Gateway API has no connect timeout"},
		{ReasonIdleTimerBecomesTotal, Approximated, "an idle timer between reads becomes backendRequest, a total per try"},
		{ReasonNoSendTimeout, NotCarried, "the Gateway API has no timer on sending the request"},
		{ReasonSeeNextUpstream, Carried, "carried with proxy-next-upstream"},
		{ReasonHTTPSRedirectCarried, Carried, "plain HTTP is redirected to HTTPS, as ingress-nginx redirected it"},
		{ReasonHTTPSRedirectKeepsSlash, Approximated, "plain HTTP is redirected to HTTPS; ingress-nginx dropped a trailing / from the Location"},
		{ReasonHTTPSRedirectNotCarried, NotCarried, "ingress-nginx redirected plain HTTP to HTTPS; the output serves plain HTTP"},
		{ReasonBarePathRedirected, Carried, "the path without its trailing / answers 301 to it, as nginx did for Prefix /foo/"},
		{ReasonInvalidValueIgnored, NotCarried, "ingress-nginx refuses the value and serves the ConfigMap's or the default one; so does the import"},
	}
	slices.SortFunc(es, func(a, b ReasonEntry) int {
		if a.Reason < b.Reason {
			return -1
		}
		if a.Reason > b.Reason {
			return 1
		}
		return 0
	})
	return es
}
