package report

// Reasons and caveats first needed by the grpc target (a proxyless gRPC
// client configured by a service config).
const (
	ReasonNotAnswered500           Reason = "NotAnswered500"
	ReasonTrafficNotSplit          Reason = "TrafficNotSplit"
	ReasonClientHasNoListeners     Reason = "ClientHasNoListeners"
	ReasonNoNameSelectsCalls       Reason = "NoNameSelectsCalls"
	ReasonNoPerTryTimeout          Reason = "NoPerTryTimeout"
	CaveatRequestsNotRouted        Reason = "RequestsNotRouted"
	CaveatMatchesNotSelectable     Reason = "MatchesNotSelectable"
	CaveatCallsTakenByOtherRule    Reason = "CallsTakenByOtherRule"
	CaveatNotRetriedAfterHeaders   Reason = "NotRetriedAfterHeaders"
	CaveatRetriesThrottled         Reason = "RetriesThrottled"
	CaveatUnlistedCodesRetried     Reason = "UnlistedCodesRetried"
	CaveatUnknownStatusRetried     Reason = "UnknownStatusRetried"
	CaveatInternalStatusRetried    Reason = "InternalStatusRetried"
	CaveatServerStatusesRetried    Reason = "ServerStatusesRetried"
	CaveatResetStreamsNotRetried   Reason = "ResetStreamsNotRetried"
	CaveatExponentialBackoff       Reason = "ExponentialBackoff"
	CaveatPushbackOverridesBackoff Reason = "PushbackOverridesBackoff"
	CaveatDeadlineExceededNot504   Reason = "DeadlineExceededNot504"
	CaveatApplicationDeadlineWins  Reason = "ApplicationDeadlineWins"
)

// grpcReasons are the reasons and caveats first needed by the grpc target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func grpcReasons() []Entry {
	return []Entry{
		// Finding reasons.
		{Reason: ReasonNotAnswered500, Status: Unsupported,
			Text: "the data plane cannot answer a request itself: requests the Gateway API answers 500 go to the target the client dials"},
		{Reason: ReasonTrafficNotSplit, Status: Unsupported, Params: []string{"weight"},
			Text: "traffic is not routed or split: the share (weight {weight}) of unusable backendRefs is not answered 500"},
		{Reason: ReasonClientHasNoListeners, Status: Unsupported,
			Text: "the data plane is a client and has no listeners: TLS to the server is a setting of the client's channel"},
		{Reason: ReasonNoNameSelectsCalls, Status: Unsupported, Params: []string{"unnamed", "names", "rules"},
			Text: "no service config name selects the rule's calls, so nothing is written for the rule: matches no name can express ({unnamed}); names {names} held by {rules}"},
		{Reason: ReasonNoPerTryTimeout, Status: Unsupported,
			Text: "the data plane has no per-try timeout: no try is cut, and none is retried for it"},

		// Caveats.
		{Reason: CaveatRequestsNotRouted,
			Text: "the client sends every call to the target it dials, not to the rule's backendRefs"},
		{Reason: CaveatMatchesNotSelectable, Params: []string{"causes"},
			Text: "some of the rule's matches cannot be named in a service config ({causes}): their calls do not get its methodConfig"},
		{Reason: CaveatCallsTakenByOtherRule, Params: []string{"names", "rules"},
			Text: "calls to {names} get the methodConfig of {rules} (a name is given once and has no hostnames)"},
		{Reason: CaveatNotRetriedAfterHeaders,
			Text: "a call is not retried once response headers arrived: only a trailers-only answer is retried"},
		{Reason: CaveatRetriesThrottled, Params: []string{"maxTokens", "tokenRatio"},
			Text: "retry throttling (maxTokens {maxTokens}, tokenRatio {tokenRatio}) stops the channel's retries while its tokens are low"},
		{Reason: CaveatUnlistedCodesRetried, Params: []string{"codes", "status"},
			Text: "{codes} are retried too: they map to {status}, which is listed"},
		{Reason: CaveatUnknownStatusRetried,
			Text: "UNKNOWN is listed: every HTTP code without a mapping, and every call a server ends UNKNOWN, is retried"},
		{Reason: CaveatInternalStatusRetried,
			Text: "INTERNAL is listed: 400 and 431 alike, and the client's own protocol and decoding errors, are retried"},
		{Reason: CaveatServerStatusesRetried,
			Text: "the listed statuses are also retried when a gRPC server ends a call with them, no HTTP error sent"},
		{Reason: CaveatResetStreamsNotRetried,
			Text: "a stream reset by the server or a proxy ends INTERNAL, CANCELLED or RESOURCE_EXHAUSTED: retried only if listed"},
		{Reason: CaveatExponentialBackoff, Params: []string{"multiplier", "max"},
			Text: "later waits grow {multiplier}× each, up to {max}"},
		{Reason: CaveatPushbackOverridesBackoff,
			Text: "a server's retry pushback overrides the wait, shorter or longer"},
		{Reason: CaveatDeadlineExceededNot504,
			Text: "the call ends with status DEADLINE_EXCEEDED from the client itself, not a 504"},
		{Reason: CaveatApplicationDeadlineWins,
			Text: "a shorter deadline set by the application wins"},
	}
}
