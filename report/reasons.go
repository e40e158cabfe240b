package report

// Shared reasons and caveats (docs/report.md explains each).
const (
	ReasonConfigured                      Reason = "Configured"
	ReasonRetriesDisabled                 Reason = "RetriesDisabled"
	ReasonTimeoutDisabled                 Reason = "TimeoutDisabled"
	ReasonAnswers500                      Reason = "Answers500"
	ReasonRuleForwardsNothing             Reason = "RuleForwardsNothing"
	ReasonNotTranslated                   Reason = "NotTranslated"
	ReasonNotExpressible                  Reason = "NotExpressible"
	ReasonValueNotExpressible             Reason = "ValueNotExpressible"
	ReasonMatchNotExpressible             Reason = "MatchNotExpressible"
	ReasonNoBackoff                       Reason = "NoBackoff"
	ReasonCodesNotRetryable               Reason = "CodesNotRetryable"
	ReasonListenerNotGenerated            Reason = "ListenerNotGenerated"
	ReasonRuleNotTranslated               Reason = "RuleNotTranslated"
	ReasonPolicyBlocked                   Reason = "PolicyBlocked"
	ReasonMeshAttachmentOnly              Reason = "MeshAttachmentOnly"
	ReasonGatewayAttachmentOnly           Reason = "GatewayAttachmentOnly"
	ReasonRoutesNotServed                 Reason = "RoutesNotServed"
	ReasonNoProxyConnections              Reason = "NoProxyConnections"
	CaveatNonIdempotentExempt             Reason = "NonIdempotentExempt"
	CaveatBodyBufferLimit                 Reason = "BodyBufferLimit"
	CaveatAttemptsClamped                 Reason = "AttemptsClamped"
	CaveatDefaultRouteTimeout             Reason = "DefaultRouteTimeout"
	CaveatIdleTimer                       Reason = "IdleTimer"
	CaveatNoAnswerAfterHeaders            Reason = "NoAnswerAfterHeaders"
	CaveatCodesNotRetried                 Reason = "CodesNotRetried"
	CaveatNoTotalRequestTimeout           Reason = "NoTotalRequestTimeout"
	CaveatFullJitterBackoff               Reason = "FullJitterBackoff"
	CaveatTimeoutClamped                  Reason = "TimeoutClamped"
	CaveatSourceOnly                      Reason = "SourceOnly"
	CaveatNoRuleTakesIt                   Reason = "NoRuleTakesIt"
	CaveatHeaderInSeveralLists            Reason = "HeaderInSeveralLists"
	CaveatHeadersHandledByProxy           Reason = "HeadersHandledByProxy"
	CaveatMirrorShareRounded              Reason = "MirrorShareRounded"
	ReasonInvalidBackendsUnweighted       Reason = "InvalidBackendsUnweighted"
	CaveatTimerEndsAtResponseHeaders      Reason = "TimerEndsAtResponseHeaders"
	CaveatNotCheckedByJudge               Reason = "NotCheckedByJudge"
	ReasonPrefixRewriteWithoutPrefixMatch Reason = "PrefixRewriteWithoutPrefixMatch"
	CaveatPolicyConflict                  Reason = "PolicyConflict"
	CaveatInterimResponseIsFinal          Reason = "InterimResponseIsFinal"
	CaveatServerTimerRunsDuringUpload     Reason = "ServerTimerRunsDuringUpload"
)

// A BackendTrafficPolicy's retryOn decides which failures its retry
// retries, which can be fewer than the Gateway API's retry.
const (
	// ReasonConnErrorsAsPolicy: the data plane retries the connection
	// failures the policy's triggers name, as Envoy Gateway writes them.
	ReasonConnErrorsAsPolicy Reason = "ConnErrorsAsPolicy"
	// ReasonTimeoutNotRetriedAsPolicy: a try the per-try timeout cut is
	// not retried, as the policy's triggers (as Envoy Gateway writes
	// them) ask.
	ReasonTimeoutNotRetriedAsPolicy Reason = "TimeoutNotRetriedAsPolicy"
	// CaveatRetriesMoreThanPolicy: the data plane cannot narrow its retry
	// to the policy's triggers.
	CaveatRetriesMoreThanPolicy Reason = "RetriesMoreThanPolicy"
	// CaveatCodesBeyondGatewayAPI: codes below 400 the policy lists are
	// retried too.
	CaveatCodesBeyondGatewayAPI Reason = "CodesBeyondGatewayAPI"
)

// CaveatUpgradedConnectionIdle: a timeout's timer also ends upgraded
// (WebSocket) connections that stay idle that long.
const CaveatUpgradedConnectionIdle Reason = "UpgradedConnectionIdle"

// findingReasons are the finding reasons every target may give.
func findingReasons() []Entry {
	return []Entry{
		// Honoured when no caveat applies.
		{Reason: ReasonConfigured, Status: Honoured,
			Text: "configured as the Gateway API defines it"},
		{Reason: ReasonRetriesDisabled, Status: Honoured,
			Text: "attempts is 0: nothing is retried"},
		{Reason: ReasonTimeoutDisabled, Status: Honoured,
			Text: "the timeout is 0s: nothing cuts the request"},
		{Reason: ReasonAnswers500, Status: Honoured,
			Text: "requests to backendRefs that cannot receive traffic are answered 500 by the data plane itself"},

		// Unsupported: nothing is configured.
		{Reason: ReasonRuleForwardsNothing, Status: Unsupported,
			Text: "the rule forwards nothing (no usable backend, or a redirect), so the setting never takes effect"},
		{Reason: ReasonNotTranslated, Status: Unsupported,
			Text: "gwretry does not translate this for the target; requests are served without it"},
		{Reason: ReasonNotExpressible, Status: Unsupported,
			Text: "the data plane has no setting that does this"},
		{Reason: ReasonValueNotExpressible, Status: Unsupported, Params: []string{"field", "value", "why"},
			Text: "the target's format (or HTTP) cannot carry the rule's {field} \"{value}\" ({why}): the rule is not written, and the requests it matches are answered 500"},
		{Reason: ReasonMatchNotExpressible, Status: Unsupported, Params: []string{"field", "value", "why"},
			Text: "the target's format cannot carry the rule's match {field} \"{value}\" ({why}): that match is not written, so its requests reach the rules after it; the rule's other matches are answered 500"},
		{Reason: ReasonNoBackoff, Status: Unsupported,
			Text: "the data plane has no delay between tries: retries are immediate"},
		{Reason: ReasonCodesNotRetryable, Status: Unsupported, Params: []string{"codes"},
			Text: "the data plane cannot retry {codes}: those responses are returned as they are"},
		{Reason: ReasonListenerNotGenerated, Status: Unsupported,
			Text: "the route is attached to a listener gwretry does not generate: requests that arrive there are not served"},
		{Reason: ReasonRuleNotTranslated, Status: Unsupported,
			Text: "the rule is not translated (see the warning)"},
		{Reason: ReasonPolicyBlocked, Status: Unsupported,
			Text: "the policy's value cannot take effect on this target (see the message)"},

		{Reason: ReasonConnErrorsAsPolicy, Status: Honoured, Params: []string{"policy", "triggers", "retried"},
			Text: "retries {retried}, as {policy} asks (its retryOn as Envoy Gateway writes it: {triggers}), not all as the Gateway API's retry would"},
		{Reason: ReasonTimeoutNotRetriedAsPolicy, Status: Honoured, Params: []string{"policy", "triggers"},
			Text: "a try the per-try timeout cuts is not retried, as {policy} asks: its retryOn as Envoy Gateway writes it ({triggers}) has none of reset, 5xx, gateway-error"},

		{Reason: ReasonInvalidBackendsUnweighted, Status: Honoured, Text: "the backendRefs that cannot receive traffic have weight 0: no request is meant for them"},

		{Reason: ReasonPrefixRewriteWithoutPrefixMatch, Status: Unsupported, Text: "ReplacePrefixMatch needs the rule to match by one PathPrefix, which it does not: the path is left unchanged"},

		// Not applicable: outside what the target serves (its Scope).
		{Reason: ReasonMeshAttachmentOnly, Status: NotApplicable,
			Text: "the route is attached to Services only (GAMMA), which a mesh applies; this target serves Gateway listeners"},
		{Reason: ReasonGatewayAttachmentOnly, Status: NotApplicable,
			Text: "the route is attached to Gateways only; this target is a mesh, which implements no Gateway"},
		{Reason: ReasonRoutesNotServed, Status: NotApplicable,
			Text: "this target writes proxy-wide settings only; it serves no HTTPRoute rule"},
		{Reason: ReasonNoProxyConnections, Status: NotApplicable,
			Text: "this target configures clients' calls, not a proxy that accepts connections: connection timeouts have no place in it"},
	}
}

// caveats are the caveats every target may give.
func caveats() []Entry {
	return []Entry{
		{Reason: CaveatNonIdempotentExempt, Params: []string{"methods"},
			Text: "{methods} requests are retried only when the connection failed before the request was sent (--retry-non-idempotent lifts it)"},
		{Reason: CaveatBodyBufferLimit, Params: []string{"limit"},
			Text: "a request whose body exceeds {limit} is not retried"},
		{Reason: CaveatAttemptsClamped, Params: []string{"configured", "max"},
			Text: "only {configured} retries are configured: the data plane's limit is {max}"},
		{Reason: CaveatDefaultRouteTimeout, Params: []string{"timeout"},
			Text: "the data plane's default route timeout of {timeout} cuts the request"},
		{Reason: CaveatIdleTimer,
			Text: "the timer measures idle time per try (connect, between two writes, between two reads), not a total"},
		{Reason: CaveatNoAnswerAfterHeaders,
			Text: "a try cut after the response headers is neither retried nor answered 504: the body is truncated"},
		{Reason: CaveatCodesNotRetried, Params: []string{"codes"},
			Text: "{codes} cannot be retried and are returned as they are"},
		{Reason: CaveatNoTotalRequestTimeout,
			Text: "no timer bounds the whole request"},
		{Reason: CaveatFullJitterBackoff,
			Text: "the delay is drawn with full jitter from 0: a retry can come at once"},
		{Reason: CaveatTimeoutClamped, Params: []string{"max"},
			Text: "the value is clamped to {max}"},
		{Reason: CaveatNoRuleTakesIt,
			Text: "no rule served on the Gateway's listeners forwards to a backend without its own setting: the value applies to none"},
		{Reason: CaveatHeaderInSeveralLists, Params: []string{"headers"},
			Text: "{headers} is named in more than one of set, add and remove: they are not applied in the Gateway API's order"},
		{Reason: CaveatHeadersHandledByProxy, Params: []string{"headers"},
			Text: "the data plane writes, drops or handles {headers} itself, so changing them does not act as the Gateway API defines"},
		{Reason: CaveatMirrorShareRounded, Params: []string{"share", "rounded"},
			Text: "the mirrored share {share} is rounded to {rounded}, the nearest the data plane can write"},
		{Reason: CaveatTimerEndsAtResponseHeaders, Text: "the timer stops when a try's response headers arrive: a body that stalls or trickles later is not cut by it"},
		{Reason: CaveatNotCheckedByJudge, Text: "gwretry's judge does not read this back from the configuration, so the claim is not checked"},
		{Reason: CaveatPolicyConflict,
			Text: "the policies of the rule's backends or listeners disagree on this field: one value is written for the whole rule"},
		{Reason: CaveatInterimResponseIsFinal, Params: []string{"version"},
			Text: "version {version} takes a backend's 1xx (103, 100) as the final response: a listed code after it is not retried"},
		{Reason: CaveatServerTimerRunsDuringUpload, Params: []string{"version"},
			Text: "version {version} also times the backend while the client still sends its body: a stalled upload gets 504"},
		{Reason: CaveatUpgradedConnectionIdle, Params: []string{"timeout"},
			Text: "the timer also closes an upgraded (WebSocket) connection idle both ways for {timeout}"},
		{Reason: CaveatRetriesMoreThanPolicy, Params: []string{"policy", "triggers", "asks"},
			Text: "{policy}'s retryOn ({triggers}) asks for {asks}; the data plane cannot narrow its retry so and retries as the Gateway API's retry does, wider than Envoy Gateway"},
		{Reason: CaveatCodesBeyondGatewayAPI, Params: []string{"codes"},
			Text: "{codes} are retried too, as the policy lists them; the Gateway API retries codes 400-599 only"},
		{Reason: CaveatSourceOnly,
			Text: "the claim rests on the project's documentation and source: gwretry's tests do not run this data plane"},
	}
}
