package report

// Reasons and caveats first needed by the haproxy target.
const (
	ReasonCodesNeedLaterVersion       Reason = "CodesNeedLaterVersion"
	CaveatCodesRetriedByLaterVersion  Reason = "CodesRetriedByLaterVersion"
	CaveatRetryBufferLimitedByHeaders Reason = "RetryBufferLimitedByHeaders"
	CaveatKeepAliveClosedUnanswered   Reason = "KeepAliveClosedUnanswered"
	CaveatDisabledTimeoutIsLargest    Reason = "DisabledTimeoutIsLargest"
	CaveatBufferedBodyReadTimeout     Reason = "BufferedBodyReadTimeout"
	CaveatTimerPerTry                 Reason = "TimerPerTry"
	CaveatHeaderRulesUndoEachOther    Reason = "HeaderRulesUndoEachOther"
	CaveatHostReplacedByRewrite       Reason = "HostReplacedByRewrite"
	CaveatWildcardSNIOneLabel         Reason = "WildcardSNIOneLabel"
	CaveatMisdirectedRequestRouted    Reason = "MisdirectedRequestRouted"
	CaveatNoEffectSeenLive            Reason = "NoEffectSeenLive"
	CaveatDelayBoundsDecryptedRequest Reason = "DelayBoundsDecryptedRequest"
	CaveatDelayNeverHoldsRequest      Reason = "DelayNeverHoldsRequest"
)

// haproxyReasons are the reasons and caveats first needed by the haproxy target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func haproxyReasons() []Entry {
	return []Entry{
		{Reason: ReasonCodesNeedLaterVersion, Status: Unsupported, Params: []string{"codes", "versions"},
			Text: "this version cannot retry {codes}: those responses are returned as they are; later releases retry {versions} (generate for one with --target haproxy@VERSION; for a patch release x.y.z, the next branch's)"},
		{Reason: CaveatCodesRetriedByLaterVersion, Params: []string{"versions"},
			Text: "later releases retry {versions} (generate for one with --target haproxy@VERSION; for a patch release x.y.z, the next branch's)"},

		{Reason: CaveatRetryBufferLimitedByHeaders, Params: []string{"bufsize", "maxrewrite"},
			Text: "a request whose headers and body exceed {bufsize} bytes less {maxrewrite} is retried only after a connection failure"},
		{Reason: CaveatKeepAliveClosedUnanswered, Params: []string{"version"},
			Text: "version {version} closes a kept-alive client connection unanswered when its last try fails; clients re-send"},
		{Reason: CaveatDisabledTimeoutIsLargest, Params: []string{"timeout"},
			Text: "0s cannot turn the timer off: its largest value, {timeout}, applies instead"},
		{Reason: CaveatBufferedBodyReadTimeout, Params: []string{"timeout"},
			Text: "a retrying rule reads the request body before the first try: a client slower than {timeout} gets 408"},
		{Reason: CaveatTimerPerTry, Params: []string{"tries"},
			Text: "each of the {tries} tries gets its own timer: the request can last about {tries} times the timeout"},
		{Reason: CaveatHeaderRulesUndoEachOther, Params: []string{"headers"},
			Text: "rules for {headers} undo one another in a fixed order (remove, set, add); the Gateway API leaves it undefined"},
		{Reason: CaveatHostReplacedByRewrite, Params: []string{"hostname"},
			Text: "the URLRewrite filter then sets Host to {hostname}, replacing what this filter did to Host"},
		{Reason: CaveatWildcardSNIOneLabel, Params: []string{"hostnames"},
			Text: "SNI names more than one label below {hostnames} get the listener's default certificate"},
		{Reason: CaveatMisdirectedRequestRouted,
			Text: "a request whose Host and SNI name select different hostnames is routed by its Host, not answered 421"},
		{Reason: CaveatNoEffectSeenLive, Params: []string{"version"},
			Text: "no live test sees the timer act on HTTP traffic (tried with version {version})"},
		{Reason: CaveatDelayBoundsDecryptedRequest,
			Text: "on HTTPS listeners the delay bounds the wait for the decrypted request, not for the TLS ClientHello"},
		{Reason: CaveatDelayNeverHoldsRequest,
			Text: "the request head is read before the content rules run: the delay never holds or cuts a request"},
	}
}
