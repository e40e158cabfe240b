package grpc

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// findings returns one finding per feature that r sets.
func findings(r *translate.Rule, p *rulePlan, throttling *RetryThrottling, shared *report.Interner) []translate.Finding {
	return translate.Assess(r, translate.Decisions{
		Shared: shared,
		// A service config expresses no filter and no listener, whatever
		// the rule says.
		First: func(f translate.Feature) (report.Decision, bool) {
			switch {
			case f == translate.FeatureListenerHTTPS:
				// TLS to the server is the channel's transport
				// credentials, chosen in the client's code.
				return report.Decide(report.ReasonClientHasNoListeners), true
			case f.IsFilter():
				// No metadata changes, redirects, rewrites, mirrors or
				// per-backend filters: a redirecting rule gets no
				// methodConfig.
				return report.Decide(report.ReasonNotExpressible), true
			}
			return report.Decision{}, false
		},
		Feature: func(f translate.Feature) report.Decision {
			switch {
			case f == translate.FeatureBackendRefs:
				return backendRefsDecision(r)
			case len(p.Names) == 0:
				return report.Decide(report.ReasonNoNameSelectsCalls, "unnamed", orNone(p.Unnamed),
					"names", orNone(nameStrings(p.LostNames)), "rules", orNone(p.LostTo))
			}
			d := assess(r, f, throttling)
			// An unsupported finding stays so; any other covers only the
			// calls the names select.
			if p.partial() && d.Status() != translate.Unsupported {
				d = d.With(p.caveats()...)
			}
			return d
		},
	})
}

// orNone joins s, or says "none".
func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// nameStrings are the names as data: the empty name as the service config
// writes it.
func nameStrings(ns []Name) []string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.String()
		if n == (Name{}) {
			s[i] = "{}"
		}
	}
	return s
}

// caveats are what the rule's methodConfig does not cover: the matches no
// name can express, the names another rule holds.
func (p *rulePlan) caveats() []report.Caveat {
	var cs []report.Caveat
	if len(p.Unnamed) > 0 {
		cs = append(cs, report.NewCaveat(report.CaveatMatchesNotSelectable, "causes", strings.Join(p.Unnamed, ", ")))
	}
	if len(p.LostNames) > 0 {
		cs = append(cs, report.NewCaveat(report.CaveatCallsTakenByOtherRule, "names", strings.Join(nameStrings(p.LostNames), ", "),
			"rules", strings.Join(p.LostTo, ", ")))
	}
	return cs
}

// backendRefsDecision: a service config does not route, so a dead rule's
// calls and the invalid backendRefs' share go to the target the client
// dials.
func backendRefsDecision(r *translate.Rule) report.Decision {
	switch {
	case r.Dead():
		return report.Decide(report.ReasonNotAnswered500)
	case r.InvalidWeight() == 0:
		return report.Decide(report.ReasonInvalidBackendsUnweighted).With(report.NewCaveat(report.CaveatRequestsNotRouted))
	}
	return report.Decide(report.ReasonTrafficNotSplit, "weight", strconv.Itoa(r.InvalidWeight()))
}

// assess decides feature f of rule r, which forwards and has names: how
// the client handles it with the rule's methodConfig. gRPC has no
// per-attempt timeout (gRFC A6; A44 ignores per_try_timeout), so no try is
// cut and none is retried for it.
func assess(r *translate.Rule, f translate.Feature, throttling *RetryThrottling) report.Decision {
	rt := r.Retry
	be := r.Timeouts.BackendRequest
	if f == translate.FeatureRetryBackendTimeout && !be.IsZero() {
		return report.Decide(report.ReasonNoPerTryTimeout)
	}
	if f.IsRetry() && rt.Attempts == 0 {
		// No retryPolicy (gRPC's transparent retry re-sends only a call
		// that the server reports it never processed).
		return report.Decide(report.ReasonRetriesDisabled)
	}
	switch f {
	case translate.FeatureRetryAttempts:
		// gRPC counts the first try; a larger maxAttempts is treated as 5
		// (grpc-go's grpc.WithMaxCallAttempts raises that limit, not the
		// file's value).
		n := min(rt.Attempts, maxAttemptsCap-1) + 1
		d := report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("maxAttempts %d", n)).With(uncommittedCaveats()...)
		if rt.Attempts > maxAttemptsCap-1 {
			d = d.With(report.NewCaveat(report.CaveatAttemptsClamped, "configured", strconv.Itoa(n-1), "max", strconv.Itoa(maxAttemptsCap-1)))
		}
		if throttling != nil {
			d = d.With(report.NewCaveat(report.CaveatRetriesThrottled, "maxTokens", strconv.Itoa(throttling.MaxTokens),
				"tokenRatio", strconv.FormatFloat(throttling.TokenRatio, 'f', -1, 64)))
		}
		return d
	case translate.FeatureRetryCodes:
		return codesDecision(rt.Codes)
	case translate.FeatureRetryConnectionErrors:
		// UNAVAILABLE is the status of a call whose connection fails
		// (refused, closed or reset, GOAWAY); a stream reset on its own
		// ends otherwise.
		return report.Decide(report.ReasonConfigured).Set("retryableStatusCodes UNAVAILABLE").
			With(report.NewCaveat(report.CaveatResetStreamsNotRetried)).With(uncommittedCaveats()...)
	case translate.FeatureRetryBackoff:
		return backoffDecision(rt)
	case translate.FeatureRetryBackendTimeout:
		return report.Decide(report.ReasonTimeoutDisabled)
	case translate.FeatureBackendRequestTimeout:
		if be.IsZero() {
			return report.Decide(report.ReasonTimeoutDisabled)
		}
		return report.Decide(report.ReasonNoPerTryTimeout)
	case translate.FeatureRequestTimeout:
		d := r.Timeouts.Request
		if d.IsZero() {
			// The methodConfig sets no timeout (a deadline the
			// application sets still applies).
			return report.Decide(report.ReasonTimeoutDisabled)
		}
		// The deadline of the whole call, every attempt included.
		return report.Decide(report.ReasonConfigured).Set("timeout "+protoDuration(d.Value)).
			With(report.NewCaveat(report.CaveatDeadlineExceededNot504), report.NewCaveat(report.CaveatApplicationDeadlineWins))
	}
	return report.Decide(report.ReasonNotTranslated)
}

// uncommittedCaveats: gRPC retries a call only while it is uncommitted:
// not once the server has sent response headers (only a trailers-only
// answer is retried), and not once its request messages, each with gRPC's
// 5-byte prefix, exceed the client's retry buffer (grpc-go: 256 KiB per
// call, compressed size, raised with the grpc.MaxRetryRPCBufferSize call
// option; other languages have their own limits).
func uncommittedCaveats() []report.Caveat {
	return []report.Caveat{report.NewCaveat(report.CaveatNotRetriedAfterHeaders),
		report.NewCaveat(report.CaveatBodyBufferLimit, "limit", "256 KiB")}
}

// backoffDecision: initialBackoff is 1.25 × the backoff, because gRPC
// multiplies each wait by a random factor in [0.8, 1.2] (gRFC A6), so the
// shortest first wait is the backoff; a zero backoff gets the least
// positive initialBackoff A6 allows.
func backoffDecision(rt *translate.Retry) report.Decision {
	b := rt.Backoff
	ib := initialBackoff(b)
	d := report.Decide(report.ReasonConfigured).Set("initialBackoff " + protoDuration(ib))
	if b.IsZero() {
		return d
	}
	return d.With(report.NewCaveat(report.CaveatExponentialBackoff, "multiplier", strconv.Itoa(multiplier), "max", protoDuration(10*ib)),
		report.NewCaveat(report.CaveatPushbackOverridesBackoff))
}

// codesDecision records the statuses the codes become through gRPC's
// HTTP-to-status mapping (for responses that are not gRPC) and each way
// that lossy mapping retries more than the codes.
func codesDecision(codes []int) report.Decision {
	list := retryableCodes(codes)
	d := report.Decide(report.ReasonConfigured).Set("retryableStatusCodes " + strings.Join(list, " ")).
		With(report.NewCaveat(report.CaveatServerStatusesRetried))
	if extra := unlistedUnavailable(codes); len(extra) > 0 {
		d = d.With(report.NewCaveat(report.CaveatUnlistedCodesRetried, "codes", strings.Join(extra, ", "), "status", "UNAVAILABLE"))
	}
	if slices.Contains(list, "UNKNOWN") {
		d = d.With(report.NewCaveat(report.CaveatUnknownStatusRetried))
	}
	if internalLossy(codes, list) {
		d = d.With(report.NewCaveat(report.CaveatInternalStatusRetried))
	}
	return d
}

// unlistedUnavailable are the HTTP codes that map to UNAVAILABLE, always
// listed, and that codes does not name.
func unlistedUnavailable(codes []int) []string {
	var extra []string
	for _, c := range []int{429, 502, 503, 504} {
		if !slices.Contains(codes, c) {
			extra = append(extra, strconv.Itoa(c))
		}
	}
	return extra
}

// internalLossy says whether INTERNAL is listed for only one of 400 and
// 431, which it merges (with the client's own errors).
func internalLossy(codes []int, list []string) bool {
	return slices.Contains(list, "INTERNAL") && !(slices.Contains(codes, 400) && slices.Contains(codes, 431))
}
