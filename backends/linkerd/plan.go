package linkerd

import (
	"fmt"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// rulePlan is what one rule needs on the route that holds it.
type rulePlan struct {
	rule *translate.Rule
	// ann are the Linkerd annotations the rule needs. They apply to a
	// whole route, so only rules with equal ann share a route.
	ann map[string]string
	// rejected names the rule-level filter for which Linkerd's policy
	// controller refuses the whole route ("" when none): such a rule gets
	// a route of its own, so that the others are still applied.
	rejected string
	// crdLacks names the first field of the rule as written (writtenRule)
	// that the Gateway API CRDs bundled with the version lack ("" when
	// none): the API server would refuse a route holding it, so the rule
	// gets a route of its own, which is not written.
	crdLacks string
	// clamped: attempts is more than retry.linkerd.io/limit can hold.
	clamped bool
	// hosts are the route's hostnames: the proxy applies the route only
	// to requests whose host matches one (linkerd-http-route's find skips
	// it otherwise), although on a Service parent GAMMA has every request
	// to the Service match.
	hosts []string
}

// retries reports whether Linkerd retries the rule: attempts > 0 and
// something Linkerd can retry on (a status code or a try timeout).
func retries(r *translate.Rule) bool {
	if r.Retry == nil || r.Retry.Attempts == 0 {
		return false
	}
	be := r.Timeouts.BackendRequest
	return len(r.Retry.Codes) > 0 || (be != nil && !be.IsZero())
}

// plan computes the annotations of rule r on Linkerd version sup.
func plan(r *translate.Rule, src gwv1.HTTPRouteRule, sup support) rulePlan {
	p := rulePlan{rule: r, ann: map[string]string{}}
	be, req := r.Timeouts.BackendRequest, r.Timeouts.Request
	if retries(r) {
		limit := r.Retry.Attempts
		if limit > maxLimit {
			limit, p.clamped = maxLimit, true
		}
		p.ann[annRetryLimit] = fmt.Sprint(limit)
		if len(r.Retry.Codes) > 0 {
			p.ann[annRetryHTTP] = codesText(r.Retry.Codes)
		}
		if be != nil && !be.IsZero() {
			// The proxy's response-headers timer: a try whose headers
			// have not come is cut and retried, but the timer is
			// removed on the last try (retry.rs, set_extensions).
			p.ann[annRetryTimeout] = durationText(be.Value)
		}
	}
	if be != nil && !be.IsZero() {
		// The proxy's end-of-response timer, on every try, the last
		// included: with the equal headers timer above, every try is cut
		// once backendRequest has passed, and one cut before its headers
		// (not the last) is retried (stream-timeouts, ResponseFuture).
		p.ann[annResponseTimeout] = durationText(be.Value)
	}
	if req != nil && !req.IsZero() && !(sup.ReadsRequestField && fieldReadable(src)) {
		p.ann[annRequestTimeout] = durationText(req.Value)
	}
	p.rejected = rejectedFilter(src.Filters)
	p.crdLacks = sup.lacks(writtenRule(src, sup))
	return p
}

// fieldReadable reports whether Linkerd's duration parser reads the rule's
// timeouts.request as written (one integer and one unit; "1m30s" is
// ignored by Linkerd).
func fieldReadable(rule gwv1.HTTPRouteRule) bool {
	if rule.Timeouts == nil || rule.Timeouts.Request == nil {
		return false
	}
	_, err := parseDuration(string(*rule.Timeouts.Request))
	return err == nil
}

// rejectedFilter returns the type of the first rule-level filter Linkerd's
// policy controller does not convert (it then drops the whole route:
// "Failed to convert route"), or "".
func rejectedFilter(fs []gwv1.HTTPRouteFilter) string {
	for _, f := range fs {
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier, gwv1.HTTPRouteFilterRequestRedirect:
		default:
			return string(f.Type)
		}
	}
	return ""
}

// groupKey is equal for rules that can share a route.
func (p rulePlan) groupKey() string {
	keys := make([]string, 0, len(p.ann))
	for k := range p.ann {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + p.ann[k] + "\n")
	}
	if p.rejected != "" {
		b.WriteString("rejected\n")
	}
	if p.crdLacks != "" {
		b.WriteString("crd-lacks\n")
	}
	return b.String()
}
