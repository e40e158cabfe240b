package report

// Reasons and caveats first needed by the traefik target.
const (
	ReasonNeedsNewerVersion        Reason = "NeedsNewerVersion"
	ReasonOnlyExemptMethods        Reason = "OnlyExemptMethods"
	ReasonTimedOutTryNeedsCode     Reason = "TimedOutTryNeedsCode"
	ReasonRetriesImmediate         Reason = "RetriesImmediate"
	ReasonRedirectBesideBackends   Reason = "RedirectBesideBackends"
	ReasonPrefixRewriteNeedsPrefix Reason = "PrefixRewriteNeedsPrefixMatch"
	ReasonNoRequestReachesRule     Reason = "NoRequestReachesRule"

	CaveatSentRequestNotRetried       Reason = "SentRequestNotRetried"
	CaveatLateRetriesDropped          Reason = "LateRetriesDropped"
	CaveatInferredFromSource          Reason = "InferredFromSource"
	CaveatRandomizedBackoff           Reason = "RandomizedBackoff"
	CaveatBackoffIntervalCapped       Reason = "BackoffIntervalCapped"
	CaveatReadTimeoutCutsUpload       Reason = "ReadTimeoutCutsUpload"
	CaveatStatusRewriteCoversRule     Reason = "StatusRewriteCoversRule"
	CaveatHeaderAddReplaces           Reason = "HeaderAddReplaces"
	CaveatHostHeaderIsRequestHost     Reason = "HostHeaderIsRequestHost"
	CaveatForwardedForAppended        Reason = "ForwardedForAppended"
	CaveatReplacedPathHeaderDeleted   Reason = "ReplacedPathHeaderDeleted"
	CaveatRedirectStatusByMethod      Reason = "RedirectStatusByMethod"
	CaveatHostRewrittenTwice          Reason = "HostRewrittenTwice"
	CaveatRetriesMirroredAgain        Reason = "RetriesMirroredAgain"
	CaveatCertificateChosenByNames    Reason = "CertificateChosenByNames"
	CaveatNoMisdirectedAnswer         Reason = "NoMisdirectedAnswer"
	CaveatUngeneratedListenerSNI      Reason = "UngeneratedListenerSNI"
	CaveatSNINotChecked               Reason = "SNINotChecked"
	CaveatSNIRefused                  Reason = "SNIRefused"
	CaveatListenerCertificateShadowed Reason = "ListenerCertificateShadowed"
	CaveatTotalInsteadOfIdle          Reason = "TotalInsteadOfIdle"
	CaveatResponseReadNotTimed        Reason = "ResponseReadNotTimed"
	CaveatRestartToApply              Reason = "RestartToApply"
)

// traefikReasons are the reasons and caveats first needed by the traefik target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func traefikReasons() []Entry {
	return []Entry{
		// Finding reasons.
		{Reason: ReasonNeedsNewerVersion, Status: Unsupported, Params: []string{"version", "needs"},
			Text: "version {version} cannot do this; version {needs} can"},
		{Reason: ReasonOnlyExemptMethods, Status: Unsupported, Params: []string{"methods"},
			Text: "the rule matches only {methods} requests, which are not retried on a response code (--retry-non-idempotent lifts it)"},
		{Reason: ReasonTimedOutTryNeedsCode, Status: Unsupported, Params: []string{"code"},
			Text: "a try cut by its timeout ends in {code}, which is retried only when {code} is in codes"},
		{Reason: ReasonRetriesImmediate, Status: Honoured,
			Text: "backoff is 0s: retries are immediate"},
		{Reason: ReasonRedirectBesideBackends, Status: Unsupported,
			Text: "the Gateway API allows no redirect beside backendRefs: no redirect is written and requests are forwarded"},
		{Reason: ReasonPrefixRewriteNeedsPrefix, Status: Unsupported, Params: []string{"match"},
			Text: "ReplacePrefixMatch needs a PathPrefix match and the rule's is {match}: it is not written"},
		{Reason: ReasonNoRequestReachesRule, Status: Honoured,
			Text: "more precise rules take every request of these listeners: none reaches this rule there"},

		// Caveats.
		{Reason: CaveatSentRequestNotRetried,
			Text: "only a request that could not be sent is retried: one that failed after it was sent is tried once"},
		{Reason: CaveatLateRetriesDropped, Params: []string{"after"},
			Text: "no retry starts {after} after the first try, and the waits and timed tries can last longer"},
		{Reason: CaveatInferredFromSource, Params: []string{"version"},
			Text: "inferred from the source of version {version}: gwretry's tests have not verified it"},
		{Reason: CaveatRandomizedBackoff, Params: []string{"min", "max"},
			Text: "each wait is drawn between {min} and {max}, not the backoff itself"},
		{Reason: CaveatBackoffIntervalCapped, Params: []string{"max"},
			Text: "the interval is capped at {max}: later waits can be shorter than the backoff"},
		{Reason: CaveatReadTimeoutCutsUpload, Params: []string{"timeout"},
			Text: "the listener's read timeout ({timeout}) cuts a request whose head and body are not all read by then"},
		{Reason: CaveatStatusRewriteCoversRule, Params: []string{"status"},
			Text: "the rewrite of {status} to 500 covers the whole rule: a {status} from a valid backend is answered 500 too"},
		{Reason: CaveatHeaderAddReplaces, Params: []string{"headers"},
			Text: "add of {headers} is written as a set: a value already there is replaced, not kept"},
		{Reason: CaveatHostHeaderIsRequestHost,
			Text: "Host is the request's host: a set replaces it as a hostname rewrite does, and a remove does nothing"},
		{Reason: CaveatForwardedForAppended,
			Text: "the proxy appends the client's address to the X-Forwarded-For value set"},
		{Reason: CaveatReplacedPathHeaderDeleted, Params: []string{"header"},
			Text: "the path rewrite deletes any {header} header the client sent"},
		{Reason: CaveatRedirectStatusByMethod, Params: []string{"status", "get", "other"},
			Text: "not every request gets {status}: the redirect answers {get} to GET and {other} to other methods"},
		{Reason: CaveatHostRewrittenTwice,
			Text: "a RequestHeaderModifier also changes Host, and the one applied last wins"},
		{Reason: CaveatRetriesMirroredAgain,
			Text: "each retry is mirrored again: a retried request can be mirrored more than once"},
		{Reason: CaveatCertificateChosenByNames, Params: []string{"sni"},
			Text: "the certificate is picked by the names it holds, not per listener hostname: SNI {sni} gets another certificate"},
		{Reason: CaveatNoMisdirectedAnswer,
			Text: "a request whose Host and SNI name select different listeners is routed by its Host, not answered 421"},
		{Reason: CaveatSNINotChecked, Params: []string{"sni"},
			Text: "the SNI name is not matched against the listener's hostnames: a handshake with SNI {sni} (\"any\": any name, or none) completes and its requests reach the rule by their Host header"},
		{Reason: CaveatSNIRefused, Params: []string{"sni"},
			Text: "strict SNI refuses the handshake for SNI {sni}, which the listener serves but no certificate names"},
		{Reason: CaveatUngeneratedListenerSNI, Params: []string{"listeners"},
			Text: "nothing is generated for {listeners}: their SNI names get another certificate and their requests reach this rule"},
		{Reason: CaveatListenerCertificateShadowed, Params: []string{"listeners"},
			Text: "the certificate of {listeners} is not served: another listener at the address has its hostname first"},
		{Reason: CaveatTotalInsteadOfIdle,
			Text: "the timer is a total, not an inactivity timer: a transfer that keeps going is cut too"},
		{Reason: CaveatResponseReadNotTimed,
			Text: "a client that stops reading the response is not timed"},
		{Reason: CaveatRestartToApply,
			Text: "the value is static configuration: a change needs a restart"},
	}
}
