package report

// Reasons and caveats the envoy target first needed (docs/report.md
// explains the shared ones).
const (
	ReasonRuleOnNoListener           Reason = "RuleOnNoListener"
	ReasonNoTunnels                  Reason = "NoTunnels"
	CaveatHeaderNotModifiable        Reason = "HeaderNotModifiable"
	CaveatServerHeaderOverwritten    Reason = "ServerHeaderOverwritten"
	CaveatCertificateByRouteHostname Reason = "CertificateByRouteHostname"
	CaveatUnroutedListenerNotServed  Reason = "UnroutedListenerNotServed"
	CaveatIdleTimerSpansRequest      Reason = "IdleTimerSpansRequest"
	CaveatAnswers408WhileReceiving   Reason = "Answers408WhileReceiving"
	CaveatClosesWithoutClientHello   Reason = "ClosesWithoutClientHello"
	CaveatHTTPListenersNotDelayed    Reason = "HTTPListenersNotDelayed"
	CaveatEnvoyGatewayRouteRetry     Reason = "EnvoyGatewayRouteRetry"
)

// envoyReasons are the reasons and caveats first needed by the envoy target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func envoyReasons() []Entry {
	return []Entry{
		// Finding reasons.
		{Reason: ReasonRuleOnNoListener, Status: Unsupported,
			Text: "no listener of the generated configuration serves the rule there: no request reaches it"},
		{Reason: ReasonNoTunnels, Status: Unsupported,
			Text: "the generated configuration opens no WebSocket or CONNECT tunnel, so there is none to time"},

		// Caveats.
		{Reason: CaveatHeaderNotModifiable, Params: []string{"headers"},
			Text: "the data plane refuses route changes to {headers}: they are left out"},
		{Reason: CaveatServerHeaderOverwritten,
			Text: "the data plane writes its own Server response header last: the filter's or the backend's value is lost"},
		{Reason: CaveatCertificateByRouteHostname, Params: []string{"listeners"},
			Text: "{listeners} may serve several Gateway listeners: certificates follow route hostnames; one Secret's hosts get no 421"},
		{Reason: CaveatUnroutedListenerNotServed, Params: []string{"listeners"},
			Text: "{listeners}: no route attaches, so it is not generated; its SNI names get another certificate and reach this rule"},
		{Reason: CaveatIdleTimerSpansRequest,
			Text: "the idle timer also counts the client's silence and spans all tries of a request, not one backend connection"},
		{Reason: CaveatAnswers408WhileReceiving,
			Text: "a request still arriving when the timer fires is answered 408, not 504"},
		{Reason: CaveatClosesWithoutClientHello,
			Text: "a connection whose ClientHello has not arrived in time is closed, not served without an SNI"},
		{Reason: CaveatEnvoyGatewayRouteRetry, Params: []string{"triggers", "codes"},
			Text: "Envoy Gateway writes this HTTPRoute retry as retry_on {triggers}, codes {codes}: no reset, a try cut by backendRequest not retried"},
		{Reason: CaveatHTTPListenersNotDelayed,
			Text: "the Gateway's HTTP listeners have no listener filter: the delay applies to its HTTPS listeners only"},
	}
}
