package prove

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Class names one way a data plane can fall short of a feature in a
// scenario: what a claim's Otherwise observations show it did instead of
// what the Gateway API defines.
type Class string

// Shortfall classes. Each has its entry in the backing table.
const (
	// ListedCodeNotRetried: an answer with a listed code was not retried
	// (or fewer times than attempts).
	ListedCodeNotRetried Class = "a listed code not retried"
	// UnlistedCodeRetried: an answer with a code the rule does not list
	// was retried.
	UnlistedCodeRetried Class = "an unlisted code retried"
	// AttemptsNotKept: a request whose every try failed was retried
	// fewer or more times than attempts.
	AttemptsNotKept Class = "retries other than attempts"
	// ConnectionNotRetried: a connection closed after the request was
	// sent was not retried.
	ConnectionNotRetried Class = "a closed connection not retried"
	// RefusedNotRetried: a connection refused before the request was
	// sent was not retried.
	RefusedNotRetried Class = "a refused connection not retried"
	// CutTryNotRetried: a try cut by the backendRequest timeout was not
	// retried.
	CutTryNotRetried Class = "a cut try not retried"
	// NonIdempotentNotRetried: a POST, PATCH or LOCK request was not
	// retried after it reached the backend (gwretry's default).
	NonIdempotentNotRetried Class = "a non-idempotent request not retried"
	// NonIdempotentRetried: a POST, PATCH or LOCK request was retried
	// after it reached the backend without --retry-non-idempotent. No
	// decision record can back it: gwretry's default never retries them.
	NonIdempotentRetried Class = "a non-idempotent request retried by default"
	// BodyNotRetried: a request with a body was not retried.
	BodyNotRetried Class = "a request body not retried"
	// NoDelay: a retry started sooner than backoff after the try before.
	NoDelay Class = "a retry sooner than backoff"
	// TryNotCut: a try whose backend stayed silent past backendRequest
	// was not cut.
	TryNotCut Class = "a silent try not cut"
	// BodyNotCut: a response body that kept arriving, but took longer
	// than backendRequest in all, was not cut.
	BodyNotCut Class = "a slow body not cut"
	// RequestNotCut: the request outlived the request timeout.
	RequestNotCut Class = "a request not cut at the request timeout"
	// CutWhileDisabled: a timeout set to 0s (disabled) cut the request.
	CutWhileDisabled Class = "a disabled timeout cut"
	// Resent: a request was sent again after a kept-alive connection
	// closed under it, more often than attempts allows.
	Resent Class = "a request re-sent"
	// ClosedUnanswered: the client's connection closed without an HTTP
	// answer.
	ClosedUnanswered Class = "a connection closed unanswered"
	// NotAnswered500: a request of a rule without a usable backend was
	// not answered 500 by the data plane (it reached a backend, or got
	// another status).
	NotAnswered500 Class = "a dead rule not answered 500"
	// RequestHeaderNotModified: a header the backend got was not set,
	// added to or removed as the RequestHeaderModifier says.
	RequestHeaderNotModified Class = "a request header not modified as configured"
	// ResponseHeaderNotModified: a header of the answer was not set,
	// added to or removed as the ResponseHeaderModifier says.
	ResponseHeaderNotModified Class = "a response header not modified as configured"
	// HostNotRewritten: the backend got another Host than the URLRewrite's.
	HostNotRewritten Class = "a host not rewritten"
	// PathNotRewritten: the backend got another path than the URLRewrite's.
	PathNotRewritten Class = "a path not rewritten"
	// RedirectStatusOther: the redirect's status is not the filter's.
	RedirectStatusOther Class = "a redirect with another status"
	// RedirectLocationOther: the redirect's Location is not the filter's.
	RedirectLocationOther Class = "a redirect to another location"
	// NotMirrored: the mirror's Service got no copy of the request.
	NotMirrored Class = "a request not mirrored"
	// CertificateOther: an HTTPS listener served another certificate
	// than its Secret's, or none.
	CertificateOther Class = "another certificate served"
)

// Shortfall is a claim's class with the values of the rule that a
// decision record's parameters are checked against.
type Shortfall struct {
	Class Class
	// Code is the status code of ListedCodeNotRetried and
	// UnlistedCodeRetried.
	Code int
	// Timer is the rule's timeout (TryNotCut, BodyNotCut, RequestNotCut)
	// or backoff (NoDelay).
	Timer time.Duration
	// Name is the header of RequestHeaderNotModified and
	// ResponseHeaderNotModified.
	Name string
}

func (s Shortfall) String() string {
	switch {
	case s.Name != "":
		return fmt.Sprintf("%s (%s)", s.Class, s.Name)
	case s.Code != 0:
		return fmt.Sprintf("%s (%d)", s.Class, s.Code)
	case s.Timer != 0:
		return fmt.Sprintf("%s (%v)", s.Class, s.Timer)
	}
	return string(s.Class)
}

// backer is a reason or caveat of the catalogue that backs a shortfall.
type backer struct {
	Reason report.Reason
	// Agrees, when set, checks the record's parameters against the
	// shortfall and the request that showed it; without it the reason
	// alone backs the shortfall.
	Agrees func(p report.Params, s Shortfall, r Result) bool
}

// exemptions are the caveats that back every shortfall of a retry not
// made: the request's method is one the data plane does not retry by
// default, or its body is larger than the data plane buffers for a retry.
var exemptions = []backer{
	{report.CaveatNonIdempotentExempt, methodListed},
	{report.CaveatBodyBufferLimit, bodyOverLimit},
	{report.CaveatRetryBufferLimitedByHeaders, bodyOverBuffer},
}

// timerChanged are the caveats that back a timer that did not fire when
// the rule's value had passed: the data plane wrote a longer one.
var timerChanged = []backer{
	{report.CaveatTimeoutClamped, durationParam("max", longer)},
	{report.CaveatRoundedUp, durationParam("rounded", longer)},
}

// backing is the table of the judge: for each shortfall class, the
// reasons and caveats of a decision record that back it. When a shortfall
// of its claim is seen, an approximated finding is backed only if its
// reason or one of its caveats is listed for the class and, where the
// entry checks them, its parameters agree with what was seen. Nothing else
// of the finding is read: not its message.
var backing = map[Class][]backer{
	ListedCodeNotRetried: slices.Concat([]backer{
		{report.CaveatCodesNotRetried, codeListed},
		{report.ReasonCodesNotRetryable, codeListed},
		{report.CaveatSentRequestNotRetried, triedOnce},
	}, exemptions),
	UnlistedCodeRetried: {
		{report.CaveatUnlistedCodesRetried, codeListed},
	},
	AttemptsNotKept: slices.Concat([]backer{
		{report.CaveatAttemptsClamped, clampedToSeen},
		{report.CaveatSentRequestNotRetried, triedOnce},
		{report.CaveatLateRetriesDropped, durationParam("after", reached)},
		{report.CaveatRetriesThrottled, nil},
	}, exemptions),
	ConnectionNotRetried: slices.Concat([]backer{
		{report.CaveatSentRequestNotRetried, triedOnce},
		{report.CaveatConnectionFailuresNotRetried, nil},
		{report.ReasonConnectionFailuresNotRetryable, nil},
		{report.CaveatResetStreamsNotRetried, nil},
	}, exemptions),
	RefusedNotRetried: {
		{report.CaveatConnectionFailuresNotRetried, nil},
		{report.ReasonConnectionFailuresNotRetryable, nil},
	},
	CutTryNotRetried: slices.Concat([]backer{
		{report.CaveatSentRequestNotRetried, triedOnce},
		{report.ReasonTimedOutTryNeedsCode, nil},
		{report.CaveatLateRetriesDropped, durationParam("after", reached)},
	}, exemptions),
	NonIdempotentNotRetried: {
		{report.CaveatNonIdempotentExempt, methodListed},
	},
	NonIdempotentRetried: nil,
	BodyNotRetried: {
		{report.CaveatBodyBufferLimit, bodyOverLimit},
		{report.CaveatRetryBufferLimitedByHeaders, bodyOverBuffer},
	},
	NoDelay: {
		{report.ReasonNoBackoff, nil},
		{report.ReasonRetriesImmediate, nil},
		{report.ReasonFixedBackoff, nil},
		{report.CaveatFullJitterBackoff, nil},
		{report.CaveatRandomizedBackoff, durationParam("min", shorter)},
		{report.CaveatBackoffIntervalCapped, durationParam("max", shorter)},
		{report.CaveatPushbackOverridesBackoff, nil},
	},
	TryNotCut: timerChanged,
	BodyNotCut: slices.Concat([]backer{
		{report.CaveatIdleTimer, nil},
		{report.CaveatIdleTimerSpansRequest, nil},
		{report.CaveatTimerEndsAtResponseHeaders, nil},
		{report.CaveatTimerEndsAtResponseHeaders, nil},
		{report.CaveatTimerEndsAtResponseHeaders, nil},
	}, timerChanged),
	RequestNotCut: slices.Concat([]backer{
		{report.CaveatNoTotalRequestTimeout, noTrySilentPast},
		{report.CaveatTimerPerTry, noTrySilentPast},
		{report.CaveatIdleTimer, noTrySilentPast},
	}, timerChanged),
	CutWhileDisabled: {
		{report.CaveatDefaultRouteTimeout, durationParam("timeout", cutBy)},
		{report.CaveatReadTimeoutCutsUpload, durationParam("timeout", cutBy)},
		{report.CaveatDisabledTimeoutIsLargest, durationParam("timeout", cutBy)},
	},
	Resent: {
		{report.CaveatKeepAliveClosedUnanswered, nil},
	},
	ClosedUnanswered: {
		{report.CaveatKeepAliveClosedUnanswered, nil},
	},
	NotAnswered500: {
		{report.CaveatInvalidShareToValidBackends, nil},
		{report.CaveatFailedShareStatusUnknown, nil},
	},
	RequestHeaderNotModified:  headerCaveats,
	ResponseHeaderNotModified: headerCaveats,
	HostNotRewritten: {
		{report.CaveatHostReplacedByRewrite, nil},
		{report.CaveatHostRewrittenTwice, nil},
		{report.CaveatHostHeaderIsRequestHost, nil},
	},
	PathNotRewritten: nil,
	RedirectStatusOther: {
		{report.CaveatRedirectStatusByMethod, statusByMethod},
	},
	RedirectLocationOther: nil,
	NotMirrored:           nil,
	CertificateOther:      certificateCaveats,
}

// headerCaveats back a header not modified as a filter says: each names
// the header it concerns.
var headerCaveats = []backer{
	{report.CaveatHeaderAddReplaces, namesHeader},
	{report.CaveatHeaderNotModifiable, namesHeader},
	{report.CaveatClientHeaderDropped, namesHeader},
	{report.CaveatRepeatedHeaderFirstLineOnly, namesHeader},
	{report.CaveatHeaderInSeveralLists, namesHeader},
	{report.CaveatHeaderRulesUndoEachOther, namesHeader},
	{report.CaveatHeadersHandledByProxy, namesHeader},
}

// backedBy returns the reason or caveat of d that backs s as seen in r.
func backedBy(s Shortfall, d report.Decision, r Result) (report.Caveat, bool) {
	stated := append([]report.Caveat{{Reason: d.Reason, Params: d.Params}}, d.Caveats...)
	for _, b := range backing[s.Class] {
		for _, c := range stated {
			if c.Reason == b.Reason && (b.Agrees == nil || b.Agrees(c.Params, s, r)) {
				return c, true
			}
		}
	}
	return report.Caveat{}, false
}

// backers lists the reasons that can back s, for messages.
func backers(s Shortfall) []report.Reason {
	var out []report.Reason
	for _, b := range backing[s.Class] {
		if !slices.Contains(out, b.Reason) {
			out = append(out, b.Reason)
		}
	}
	return out
}

// codeListed: the codes parameter names the shortfall's code.
func codeListed(p report.Params, s Shortfall, _ Result) bool {
	return slices.Contains(paramInts(p["codes"]), s.Code)
}

// methodListed: the methods parameter names the request's method.
func methodListed(p report.Params, _ Shortfall, r Result) bool {
	return slices.Contains(paramList(p["methods"]), r.Method)
}

// bodyOverLimit: the request body is larger than the limit parameter.
func bodyOverLimit(p report.Params, _ Shortfall, r Result) bool {
	limit, ok := parseByteSize(p["limit"])
	return ok && uint64(r.BodyBytes) > limit
}

// headRoom is more than the head of any request the scenarios send.
const headRoom = 1 << 10

// bodyOverBuffer: the request's head and body can exceed bufsize less
// maxrewrite.
func bodyOverBuffer(p report.Params, _ Shortfall, r Result) bool {
	bufsize, err1 := strconv.Atoi(p["bufsize"])
	maxrewrite, err2 := strconv.Atoi(p["maxrewrite"])
	return err1 == nil && err2 == nil && r.BodyBytes+headRoom > bufsize-maxrewrite
}

// clampedToSeen: the configured parameter is the number of retries seen.
func clampedToSeen(p report.Params, _ Shortfall, r Result) bool {
	n, err := strconv.Atoi(p["configured"])
	return err == nil && len(r.Hits) > 0 && n == len(r.Hits)-1
}

// triedOnce: the request was tried once.
func triedOnce(_ report.Params, _ Shortfall, r Result) bool { return len(r.Hits) == 1 }

// timerSlack is how much later than its value a proxy timer may be seen
// to fire on loopback.
const timerSlack = 400 * time.Millisecond

// noTrySilentPast: no try lasted past the shortfall's timer uncut, so a
// timer of each try, or of each silence, would not have fired.
func noTrySilentPast(_ report.Params, s Shortfall, r Result) bool {
	for _, h := range r.Hits {
		if !h.Cancelled && h.Duration() >= s.Timer {
			return false
		}
	}
	return true
}

// durationParam checks the duration parameter name with cmp.
func durationParam(name string, cmp func(d time.Duration, s Shortfall, r Result) bool) func(report.Params, Shortfall, Result) bool {
	return func(p report.Params, s Shortfall, r Result) bool {
		d, err := time.ParseDuration(p[name])
		return err == nil && cmp(d, s, r)
	}
}

// longer: the data plane's timer is longer than the rule's.
func longer(d time.Duration, s Shortfall, _ Result) bool { return d > s.Timer }

// shorter: the data plane's wait can be shorter than the rule's backoff.
func shorter(d time.Duration, s Shortfall, _ Result) bool { return d < s.Timer }

// reached: the request lasted at least d.
func reached(d time.Duration, _ Shortfall, r Result) bool { return r.Duration >= d }

// cutBy: a timer of d can have cut the request when it ended.
func cutBy(d time.Duration, _ Shortfall, r Result) bool { return d <= r.Duration+timerSlack }

// paramList splits a list parameter ("POST, PATCH, LOCK").
func paramList(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}

// paramInts reads the numbers of a list parameter ("429, 501").
func paramInts(v string) []int {
	var out []int
	for _, f := range paramList(v) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// parseByteSize reads a size as translate.ByteSize writes it ("1 MiB",
// "64 KiB", "100 bytes"), or a bare number of bytes.
func parseByteSize(v string) (uint64, bool) {
	num, unit, _ := strings.Cut(strings.TrimSpace(v), " ")
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, false
	}
	switch unit {
	case "", "bytes", "B":
		return n, true
	case "KiB":
		return n << 10, true
	case "MiB":
		return n << 20, true
	case "GiB":
		return n << 30, true
	}
	return 0, false
}

// featureClasses are the shortfall classes the claims of each feature
// use; JudgeEnvoy, which sees no traffic, asks an approximated finding
// for a caveat that backs one of them.
var featureClasses = map[translate.Feature][]Class{
	translate.FeatureRetryAttempts:          {AttemptsNotKept, NonIdempotentNotRetried, BodyNotRetried, Resent},
	translate.FeatureRetryCodes:             {ListedCodeNotRetried, UnlistedCodeRetried, NonIdempotentNotRetried, BodyNotRetried},
	translate.FeatureRetryConnectionErrors:  {ConnectionNotRetried, RefusedNotRetried, ClosedUnanswered},
	translate.FeatureRetryBackendTimeout:    {CutTryNotRetried},
	translate.FeatureRetryBackoff:           {NoDelay},
	translate.FeatureBackendRequestTimeout:  {TryNotCut, BodyNotCut, CutWhileDisabled},
	translate.FeatureRequestTimeout:         {RequestNotCut, CutWhileDisabled},
	translate.FeatureBackendRefs:            {NotAnswered500},
	translate.FeatureRequestHeaderModifier:  {RequestHeaderNotModified},
	translate.FeatureResponseHeaderModifier: {ResponseHeaderNotModified},
	translate.FeatureURLRewrite:             {HostNotRewritten, PathNotRewritten},
	translate.FeatureRequestRedirect:        {RedirectStatusOther, RedirectLocationOther},
	translate.FeatureRequestMirror:          {NotMirrored},
}

// statesShortfall reports whether d names a reason or caveat that backs
// some shortfall class of feature f, parameters unchecked.
func statesShortfall(f translate.Feature, d report.Decision) bool {
	for _, class := range featureClasses[f] {
		for _, b := range backing[class] {
			if b.Reason == d.Reason || slices.ContainsFunc(d.Caveats, func(c report.Caveat) bool { return c.Reason == b.Reason }) {
				return true
			}
		}
	}
	return false
}

// RecordText shows a decision record in one line for failure messages:
// reason, configured fact and caveats with their parameters.
func RecordText(d report.Decision) string {
	var b strings.Builder
	b.WriteString(report.WithParams(d.Reason, d.Params))
	if d.Configured != "" {
		fmt.Fprintf(&b, ", configured %q", d.Configured)
	}
	if len(d.Caveats) > 0 {
		var cs []string
		for _, c := range d.Caveats {
			cs = append(cs, report.WithParams(c.Reason, c.Params))
		}
		fmt.Fprintf(&b, ", caveats %s", strings.Join(cs, ", "))
	}
	return b.String()
}
