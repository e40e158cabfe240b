package report

// Reasons and caveats first needed by the linkerd target.
const (
	ReasonNoServiceParentAttaches         Reason = "NoServiceParentAttaches"
	ReasonRouteRefusedForFilter           Reason = "RouteRefusedForFilter"
	ReasonBundledCRDLacksField            Reason = "BundledCRDLacksField"
	ReasonMeshServesNoListener            Reason = "MeshServesNoListener"
	ReasonNoBackendRefsGoToParent         Reason = "NoBackendRefsGoToParent"
	ReasonBackendFilterInvalidatesBackend Reason = "BackendFilterInvalidatesBackend"
	ReasonConnectionFailuresNotRetryable  Reason = "ConnectionFailuresNotRetryable"
	ReasonFixedBackoff                    Reason = "FixedBackoff"
	CaveatFailedShareStatusUnknown        Reason = "FailedShareStatusUnknown"
	CaveatConnectionFailuresNotRetried    Reason = "ConnectionFailuresNotRetried"
	CaveatTimerStartsAfterRequestBody     Reason = "TimerStartsAfterRequestBody"
	CaveatHostnamesRestrictRoute          Reason = "HostnamesRestrictRoute"
	CaveatServiceAnnotationsApply         Reason = "ServiceAnnotationsApply"
)

// linkerdReasons are the reasons and caveats first needed by the linkerd target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func linkerdReasons() []Entry {
	return []Entry{
		{Reason: ReasonNoServiceParentAttaches, Status: Unsupported,
			Text: "none of the route's Service parentRefs attaches (Service or port not in the input): the mesh does not apply it"},
		{Reason: ReasonRouteRefusedForFilter, Status: Unsupported, Params: []string{"filter"},
			Text: "the data plane refuses a route with a {filter} filter: the rule's own route is ignored, the others apply"},
		{Reason: ReasonBundledCRDLacksField, Status: Unsupported, Params: []string{"field"},
			Text: "the Gateway API CRDs the data plane version installs lack the rule's {field}, so the API server would refuse its route: the rule's own route is not written, the others apply"},
		{Reason: ReasonMeshServesNoListener, Status: Unsupported,
			Text: "the mesh implements no Gateway listener: clients reach the route over its mTLS, never the listener's certificate"},
		{Reason: ReasonNoBackendRefsGoToParent, Status: Unsupported,
			Text: "the requests of a rule with no backendRefs go to the parent Service instead of being answered 500"},
		{Reason: ReasonBackendFilterInvalidatesBackend, Status: Unsupported, Params: []string{"filter"},
			Text: "a backendRef with a {filter} filter is invalid to the data plane: its share of the requests fails"},
		{Reason: ReasonConnectionFailuresNotRetryable, Status: Unsupported,
			Text: "the data plane cannot be configured to retry connection failures (refused, reset, closed)"},
		{Reason: ReasonFixedBackoff, Status: Unsupported, Params: []string{"min", "max"},
			Text: "the data plane waits by its own fixed backoff ({min} to {max}, jittered): backoff cannot be set"},

		{Reason: CaveatFailedShareStatusUnknown,
			Text: "the share of unusable backendRefs fails with the data plane's own error response, not known to be 500"},
		{Reason: CaveatConnectionFailuresNotRetried,
			Text: "connection failures (refused, reset, closed) are not retried"},
		{Reason: CaveatHostnamesRestrictRoute, Params: []string{"hostnames"},
			Text: "the route applies only to requests whose host matches {hostnames}: others to the Service (its cluster IP, its other names) get none of its rules"},
		{Reason: CaveatTimerStartsAfterRequestBody,
			Text: "the timer starts once the request body has been sent: the time a client takes to upload is not counted"},
		{Reason: CaveatServiceAnnotationsApply, Params: []string{"services", "annotations"},
			Text: "{annotations} of {services} also apply: the route sets no retry policy or no timeout of its own"},
	}
}
