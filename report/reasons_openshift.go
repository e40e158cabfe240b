package report

// Reasons and caveats first needed by the openshift target (the OpenShift
// router, configured by an IngressController's tuning options).
const (
	ReasonOneValueForAllGateways    Reason = "OneValueForAllGateways"
	CaveatGatewayListenersNotServed Reason = "GatewayListenersNotServed"
	CaveatHalfCloseTimerUnobserved  Reason = "HalfCloseTimerUnobserved"
)

// openshiftReasons are the reasons and caveats first needed by the openshift target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func openshiftReasons() []Entry {
	return []Entry{
		{Reason: ReasonOneValueForAllGateways, Status: Unsupported, Params: []string{"policy", "value"},
			Text: "the data plane has one value for all Gateways: policy {policy} ({value}), older or first by name, wins"},
		{Reason: CaveatGatewayListenersNotServed,
			Text: "the value applies to the routes the data plane serves, not to this Gateway's listeners, which it does not serve"},
		{Reason: CaveatHalfCloseTimerUnobserved, Params: []string{"version"},
			Text: "no live test sees HAProxy {version} time anything with this half-close timer in an HTTP proxy"},
	}
}
