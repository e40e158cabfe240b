package resolve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// btpValues is what a BackendTrafficPolicy carries into the Gateway API
// model: the retry part (applied whole, or not at all when the rule has
// its own retry) and the timeout part, each a layer of field values; and
// what it sets that no HTTPRoute field can carry.
type btpValues struct {
	retry    map[string]layerValue
	timeouts map[string]layerValue
	// notCarried says, per field path, why it is not carried to any
	// target, sorted.
	notCarried []string
	// wider says what the targets do beyond what Envoy Gateway
	// configures, sorted.
	wider []string
}

// convertBTP maps a BackendTrafficPolicy onto HTTPRoute fields, as Envoy
// Gateway configures Envoy with it, and lists what it cannot carry.
func convertBTP(p *translate.BackendTrafficPolicy) btpValues {
	out := btpValues{retry: map[string]layerValue{}, timeouts: map[string]layerValue{}}
	lost := func(format string, args ...any) {
		out.notCarried = append(out.notCarried, fmt.Sprintf(format, args...))
	}
	if r := p.Spec.Retry; r != nil {
		if r.NumRetries != nil {
			out.retry[fieldAttempts] = layerValue{value: int(*r.NumRetries)}
		} else {
			out.retry[fieldAttempts] = layerValue{value: 2, apiDefault: true}
		}
		codes, apiDefault := btpCodes(r.RetryOn, lost)
		if codes != nil {
			out.retry[fieldCodes] = layerValue{value: codes, apiDefault: apiDefault}
		}
		if r.NumRetries == nil || *r.NumRetries > 0 {
			btpRetriedFailures(r, lost, func(format string, args ...any) {
				out.wider = append(out.wider, fmt.Sprintf(format, args...))
			})
		}
		if pr := r.PerRetry; pr != nil {
			if pr.Timeout != nil {
				out.retry[fieldBackendRequest] = layerValue{value: string(*pr.Timeout)}
			}
			if b := pr.BackOff; b != nil {
				if b.BaseInterval != nil {
					out.retry[fieldBackoff] = layerValue{value: string(*b.BaseInterval)}
				}
				if b.MaxInterval != nil {
					lost("spec.retry.perRetry.backOff.maxInterval %s: the Gateway API's backoff is a base interval; the curve and its cap are each target's own", *b.MaxInterval)
				}
			}
		}
		if r.NumAttemptsPerPriority != nil {
			lost("spec.retry.numAttemptsPerPriority: Envoy's priority selection has no Gateway API equivalent")
		}
		if len(r.CircuitBreaker) > 0 {
			lost("spec.retry.circuitBreaker: Envoy's retry circuit breaker has no Gateway API equivalent")
		}
	}
	if t := p.Spec.Timeout; t != nil {
		if h := t.HTTP; h != nil {
			if h.RequestTimeout != nil {
				out.timeouts[fieldRequest] = layerValue{value: string(*h.RequestTimeout)}
			}
			for _, x := range []struct {
				name string
				d    *gwv1.Duration
			}{{"connectionIdleTimeout", h.ConnectionIdleTimeout}, {"maxConnectionDuration", h.MaxConnectionDuration}, {"maxStreamDuration", h.MaxStreamDuration}} {
				if x.d != nil {
					lost("spec.timeout.http.%s %s: a connection-level timeout, which no HTTPRoute field carries", x.name, *x.d)
				}
			}
		}
		if t.TCP != nil && t.TCP.ConnectTimeout != nil {
			lost("spec.timeout.tcp.connectTimeout %s: no HTTPRoute field sets a connect timeout, so no target gets it", *t.TCP.ConnectTimeout)
		}
	}
	if len(p.Spec.TargetSelectors) > 0 {
		lost("spec.targetSelectors: gwretry does not select targets by label; list them in targetRefs")
	}
	for _, x := range []struct {
		name string
		raw  json.RawMessage
	}{{"circuitBreaker", p.Spec.CircuitBreaker}, {"compression", p.Spec.Compression}, {"compressor", p.Spec.Compressor},
		{"connection", p.Spec.Connection}, {"dns", p.Spec.DNS}, {"faultInjection", p.Spec.FaultInjection},
		{"healthCheck", p.Spec.HealthCheck}, {"http2", p.Spec.HTTP2}, {"httpUpgrade", p.Spec.HTTPUpgrade},
		{"loadBalancer", p.Spec.LoadBalancer}, {"proxyProtocol", p.Spec.ProxyProtocol}, {"rateLimit", p.Spec.RateLimit},
		{"requestBuffer", p.Spec.RequestBuffer}, {"responseOverride", p.Spec.ResponseOverride}, {"routingType", p.Spec.RoutingType},
		{"tcpKeepalive", p.Spec.TCPKeepalive}, {"telemetry", p.Spec.Telemetry}, {"useClientProtocol", p.Spec.UseClientProtocol}} {
		if len(x.raw) > 0 {
			lost("spec.%s: gwretry translates retry and timeouts only", x.name)
		}
	}
	slices.Sort(out.notCarried)
	slices.Sort(out.wider)
	return out
}

// btpRetriedFailures says what the Gateway API's retry does that the
// policy's triggers do not (Envoy's retry_on, reference envoy.md): it
// retries a failed connection whenever attempts > 0, which Envoy does only
// with connect-failure, reset-before-request, reset, 5xx or gateway-error;
// and the targets retry a try that backendRequest cut, which Envoy does
// only with reset, 5xx or gateway-error.
func btpRetriedFailures(r *translate.BTPRetry, lost, wider func(string, ...any)) {
	triggers := btpTriggers(r.RetryOn)
	has := func(ts ...string) bool {
		return slices.ContainsFunc(ts, func(t string) bool { return slices.Contains(triggers, t) })
	}
	if !has("connect-failure", "reset-before-request", "reset", "5xx", "gateway-error") {
		lost("spec.retry.retryOn.triggers: none retries a failed connection (connect-failure, reset-before-request, reset, 5xx or gateway-error), but the Gateway API retries connection errors whenever attempts > 0, and so do the targets (each retry.connectionErrors finding says how far)")
	}
	if !has("reset", "5xx", "gateway-error") {
		// The Gateway API retry the policy becomes retries a connection
		// reset after the request was sent (Envoy: retry_on reset), and
		// retries a try its backendRequest cut, on every target.
		wider("spec.retry.retryOn.triggers %s: none of reset, 5xx or gateway-error is among them, so Envoy Gateway retries neither a connection reset after the request was sent nor a try its per-try timeout cut, but the Gateway API retry they become retries both on every target (Envoy: retry_on connect-failure,refused-stream,reset)", strings.Join(triggers, ","))
	}
}

// egDefaultTriggers are Envoy Gateway's retry_on when a policy's retryOn
// lists no triggers (internal/xds/translator/route.go, retryDefaultRetryOn).
var egDefaultTriggers = []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "retriable-status-codes"}

// btpTriggers are the triggers Envoy Gateway writes for retryOn: its
// default when retryOn is unset or lists none (httpStatusCodes alone keep
// the default triggers), else the policy's.
func btpTriggers(on *translate.BTPRetryOn) []string {
	if on == nil || len(on.Triggers) == 0 {
		return egDefaultTriggers
	}
	return on.Triggers
}

// btpCodes maps retryOn to the Gateway API's codes: the status codes it
// retries, sorted. Connection failures need no code (the Gateway API
// always retries them); what has no equivalent goes to lost. apiDefault
// is true when retryOn is unset and Envoy Gateway's default applies.
func btpCodes(on *translate.BTPRetryOn, lost func(string, ...any)) (codes []int, apiDefault bool) {
	if on == nil || (len(on.Triggers) == 0 && len(on.HTTPStatusCodes) == 0) {
		// connect-failure, refused-stream, unavailable, cancelled,
		// retriable-status-codes with 503 (Envoy Gateway's buildRetry
		// leaves an empty retryOn unset).
		lost("spec.retry.retryOn (unset): Envoy Gateway's default triggers unavailable and cancelled are gRPC statuses, which no target retries on")
		return []int{503}, true
	}
	if len(on.Triggers) == 0 {
		// httpStatusCodes alone: Envoy Gateway keeps its default
		// triggers, retriable-status-codes among them, with these codes.
		lost("spec.retry.retryOn.triggers (unset): Envoy Gateway's default triggers unavailable and cancelled are gRPC statuses, which no target retries on")
	}
	triggers := btpTriggers(on)
	add := func(from, to int) {
		for c := from; c <= to; c++ {
			codes = append(codes, c)
		}
	}
	statusCodes := false
	for _, t := range triggers {
		switch t {
		case "5xx":
			add(500, 599)
			lost("spec.retry.retryOn.triggers 5xx: Envoy also retries a reset after the request was sent, which the Gateway API says not to; only its status codes 500-599 are carried")
		case "gateway-error":
			codes = append(codes, 502, 503, 504)
		case "retriable-4xx":
			codes = append(codes, 409)
		case "connect-failure", "refused-stream", "reset-before-request", "unavailable", "cancelled":
			// The Gateway API retries connection errors whenever attempts > 0;
			// unavailable and cancelled (gRPC statuses) were said above when
			// they are Envoy Gateway's default.
			if (t == "unavailable" || t == "cancelled") && len(on.Triggers) > 0 {
				lost("spec.retry.retryOn.triggers %s: no Gateway API retry condition matches it", t)
			}
		case "retriable-status-codes":
			statusCodes = true
		default: // reset, deadline-exceeded, internal, resource-exhausted
			lost("spec.retry.retryOn.triggers %s: no Gateway API retry condition matches it", t)
		}
	}
	if statusCodes {
		for _, c := range on.HTTPStatusCodes {
			if c < 400 || c > 599 {
				lost("spec.retry.retryOn.httpStatusCodes %d: the Gateway API retries codes 400-599 only", c)
				continue
			}
			codes = append(codes, c)
		}
	} else if len(on.HTTPStatusCodes) > 0 {
		lost("spec.retry.retryOn.httpStatusCodes: ignored by Envoy Gateway without the retriable-status-codes trigger, and so by gwretry")
	}
	slices.Sort(codes)
	codes = slices.Compact(codes)
	if codes == nil {
		codes = []int{}
	}
	return codes, false
}
