package report

// Reasons and caveats first needed by the nginx target.
const (
	ReasonNoMatchExpressible          Reason = "NoMatchExpressible"
	ReasonNotServedOverHTTPS          Reason = "NotServedOverHTTPS"
	ReasonPrefixNotWritable           Reason = "PrefixNotWritable"
	ReasonTimeNotWritable             Reason = "TimeNotWritable"
	CaveatInvalidShareToValidBackends Reason = "InvalidShareToValidBackends"
	CaveatIdleTimerNotRearmed         Reason = "IdleTimerNotRearmed"
	CaveatOSConnectLimit              Reason = "OSConnectLimit"
	CaveatRoundedUp                   Reason = "RoundedUp"
	CaveatClientHeaderDropped         Reason = "ClientHeaderDropped"
	CaveatRepeatedHeaderFirstLineOnly Reason = "RepeatedHeaderFirstLineOnly"
	CaveatLongestPrefixReplaced       Reason = "LongestPrefixReplaced"
	CaveatMirrorGetsClientPath        Reason = "MirrorGetsClientPath"
	CaveatPathRebuiltNormalized       Reason = "PathRebuiltNormalized"
	CaveatHostNotCheckedAgainstSNI    Reason = "HostNotCheckedAgainstSNI"
	CaveatStalledBodyClosesConnection Reason = "StalledBodyClosesConnection"
	CaveatHandshakeTimedApart         Reason = "HandshakeTimedApart"
	CaveatResponseFramingNotChecked   Reason = "ResponseFramingNotChecked"
)

// nginxReasons are the reasons and caveats first needed by the nginx target.
// A reason another target also gives belongs in reasons.go; any target
// may give any reason of the catalogue.
func nginxReasons() []Entry {
	return []Entry{
		// Unsupported: nothing is configured.
		{Reason: ReasonNoMatchExpressible, Status: Unsupported,
			Text: "none of the rule's matches can be expressed in the data plane: no request reaches the rule"},
		{Reason: ReasonNotServedOverHTTPS, Status: Unsupported,
			Text: "the rule is on HTTPS listeners, but no generated HTTPS server routes to it"},
		{Reason: ReasonPrefixNotWritable, Status: Unsupported, Params: []string{"prefix"},
			Text: "the prefix {prefix} cannot be written in the data plane's configuration: the path is proxied unchanged"},
		{Reason: ReasonTimeNotWritable, Status: Unsupported, Params: []string{"value"},
			Text: "{value} is not a time gwretry writes for the data plane: nothing is configured"},

		// Caveats.
		{Reason: CaveatInvalidShareToValidBackends, Params: []string{"share", "total"},
			Text: "the share of the invalid backendRefs ({share} of a total weight of {total}) goes to the valid ones, not answered 500"},
		{Reason: CaveatIdleTimerNotRearmed, Params: []string{"interval"},
			Text: "reads less than {interval} apart do not re-arm the timer: a body trickling in can be cut at the timeout"},
		{Reason: CaveatOSConnectLimit, Params: []string{"limit"},
			Text: "the operating system usually ends a connect attempt after about {limit}, before the timer"},
		{Reason: CaveatRoundedUp, Params: []string{"value", "rounded"},
			Text: "{value} is rounded up to {rounded}, the data plane's granularity"},
		{Reason: CaveatClientHeaderDropped, Params: []string{"headers"},
			Text: "the data plane cannot read the client's {headers} header ('_' or '.' in the name), so add replaces its value"},
		{Reason: CaveatRepeatedHeaderFirstLineOnly, Params: []string{"headers", "version", "fixedIn"},
			Text: "version {version} keeps only the first line of {headers} sent on several lines ({fixedIn} joins them)"},
		{Reason: CaveatLongestPrefixReplaced,
			Text: "with nested prefixes, the longest that fits the path is replaced, not always the one of the match that selected it"},
		{Reason: CaveatPathRebuiltNormalized,
			Text: "a path that does not begin with the prefix as written, or has a dot segment, is rebuilt from the normalised path (decoded, slashes merged, dot segments resolved)"},
		{Reason: CaveatMirrorGetsClientPath,
			Text: "a mirror receives the path as the client sent it, not the URLRewrite's"},
		{Reason: CaveatHostNotCheckedAgainstSNI,
			Text: "the Host header is not compared with the SNI name: a misdirected request is served, not answered 421"},
		{Reason: CaveatStalledBodyClosesConnection,
			Text: "a client that stalls its request body before the backend answers is cut without a response (HAProxy: 504 or 400)"},
		{Reason: CaveatResponseFramingNotChecked, Params: []string{"version", "fixedIn"},
			Text: "version {version} does not check a response's framing headers (two Content-Length, Content-Length and Transfer-Encoding): such a response is passed on, not retried ({fixedIn} retries it)"},
		{Reason: CaveatHandshakeTimedApart, Params: []string{"timer"},
			Text: "on HTTPS listeners the TLS handshake is timed by {timer}, not by this timeout"},
	}
}
