package resolve

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

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
	// envoyOnly says what only the Envoy target carries (Envoy's own
	// retry conditions), sorted.
	envoyOnly []string
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
		on := btpRetryOn(r.RetryOn)
		codes := btpCodes(on, lost, func(format string, args ...any) {
			out.envoyOnly = append(out.envoyOnly, fmt.Sprintf(format, args...))
		})
		out.retry[fieldCodes] = layerValue{value: codes, apiDefault: r.RetryOn == nil || r.RetryOn.Triggers == nil && r.RetryOn.HTTPStatusCodes == nil}
		out.retry[fieldRetryOn] = layerValue{value: on}
		if pr := r.PerRetry; pr != nil {
			if pr.Timeout != nil {
				out.retry[fieldBackendRequest] = layerValue{value: string(*pr.Timeout)}
			}
			if b := pr.BackOff; b != nil {
				if b.BaseInterval != nil {
					out.retry[fieldBackoff] = layerValue{value: string(*b.BaseInterval)}
				}
				if b.MaxInterval != nil {
					d, err := translate.ParseDuration(string(*b.MaxInterval))
					var base time.Duration
					if b.BaseInterval != nil {
						base, _ = translate.ParseDuration(string(*b.BaseInterval))
					}
					switch {
					case err == nil && b.BaseInterval != nil && d >= base && d > 0:
						// Envoy's retry_back_off max_interval, as Envoy
						// Gateway writes it.
						on.MaxInterval = &translate.Duration{Text: string(*b.MaxInterval), Value: d}
						out.envoyOnly = append(out.envoyOnly, fmt.Sprintf("spec.retry.perRetry.backOff.maxInterval %s: Envoy's retry_back_off max_interval; the Gateway API's backoff is a base interval, the curve and its cap are each other target's own", *b.MaxInterval))
					default:
						// Envoy requires a base_interval beside it, and no
						// larger.
						lost("spec.retry.perRetry.backOff.maxInterval %s: without a baseInterval no longer than it, Envoy's retry_back_off cannot take it; the Gateway API's backoff is a base interval", *b.MaxInterval)
					}
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
	slices.Sort(out.envoyOnly)
	return out
}

// egDefaultTriggers are Envoy Gateway's retry_on when a policy's retryOn
// lists no triggers (internal/xds/translator/route.go,
// retryDefaultRetryOn), in its order.
var egDefaultTriggers = []string{"connect-failure", "refused-stream", "unavailable", "cancelled", "retriable-status-codes"}

// Envoy's retry_on triggers by the failures they retry (Envoy's
// retry_state_impl.cc; reference envoy.md).
var (
	// resetTriggers retry a reset after the request was sent, and a try
	// per_try_timeout cut.
	resetTriggers = []string{"reset", "5xx", "gateway-error"}
	// unsentTriggers retry only failures before the request was sent.
	unsentTriggers = []string{"connect-failure", "refused-stream", "reset-before-request"}
	// grpcTriggers retry on a gRPC status.
	grpcTriggers = []string{"cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"}
)

// btpRetryOn is the retry condition Envoy Gateway v1.9 writes for a
// policy's retryOn (gatewayapi buildRetry, translator buildRetryPolicy):
// retryOn unset or empty keeps its default triggers and code 503; a
// retryOn that lists something replaces the codes with its
// httpStatusCodes (possibly none) and, when it lists triggers, the
// triggers with them, sorted and unique.
func btpRetryOn(on *translate.BTPRetryOn) *translate.RetryOn {
	out := &translate.RetryOn{Triggers: slices.Clone(egDefaultTriggers), StatusCodes: []int{503}}
	if on != nil && (on.Triggers != nil || on.HTTPStatusCodes != nil) {
		out.StatusCodes = slices.Compact(slices.Sorted(slices.Values(on.HTTPStatusCodes)))
		if out.StatusCodes == nil {
			out.StatusCodes = []int{}
		}
		if len(on.Triggers) > 0 {
			out.Triggers = slices.Compact(slices.Sorted(slices.Values(on.Triggers)))
		}
	}
	has := func(set []string) bool {
		return slices.ContainsFunc(out.Triggers, func(t string) bool { return slices.Contains(set, t) })
	}
	switch {
	case has(resetTriggers):
		out.ConnErrors = translate.ConnRetryAll
	case has(unsentTriggers):
		out.ConnErrors = translate.ConnRetryUnsent
	default:
		out.ConnErrors = translate.ConnRetryNone
	}
	out.Timeouts = has(resetTriggers)
	return out
}

// btpCodes are the status codes the condition retries, sorted: the
// Gateway API's codes of the policy's retry. Envoy retries them as its
// triggers say (5xx: 500-599, gateway-error: 502-504, retriable-4xx: 409,
// retriable-status-codes: the listed codes); what only Envoy can retry
// on (a gRPC status, a code below 400) goes to envoyOnly.
func btpCodes(on *translate.RetryOn, lost, envoyOnly func(string, ...any)) []int {
	codes := []int{}
	add := func(from, to int) {
		for c := from; c <= to; c++ {
			codes = append(codes, c)
		}
	}
	var grpc []string
	for _, t := range on.Triggers {
		switch {
		case t == "5xx":
			add(500, 599)
		case t == "gateway-error":
			add(502, 504)
		case t == "retriable-4xx":
			codes = append(codes, 409)
		case t == "retriable-status-codes":
			for _, c := range on.StatusCodes {
				if c < 400 || c > 599 {
					envoyOnly("spec.retry.retryOn.httpStatusCodes %d: Envoy retries it (retriable_status_codes), but the Gateway API retries codes 400-599 only, so no other target does", c)
					continue
				}
				codes = append(codes, c)
			}
		case slices.Contains(grpcTriggers, t):
			grpc = append(grpc, t)
		}
	}
	if len(grpc) > 0 {
		envoyOnly("spec.retry.retryOn.triggers %s: gRPC statuses, in Envoy's retry_on as Envoy Gateway writes them; the other targets do not carry them (the gRPC target retries UNAVAILABLE for connection failures, whatever the triggers)", strings.Join(grpc, ","))
	}
	if len(on.StatusCodes) > 0 && !slices.Contains(on.Triggers, "retriable-status-codes") {
		lost("spec.retry.retryOn.httpStatusCodes %s: without the retriable-status-codes trigger Envoy Gateway writes them but Envoy retries none of them, and so do the targets", intsText(on.StatusCodes))
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

func intsText(cs []int) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}
