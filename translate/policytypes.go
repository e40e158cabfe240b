package translate

// The policy objects gwretry reads, as the user wrote them: what package
// input decodes and validates and package resolve merges into the model.

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// RetryPolicy is gwretry.io/v1alpha1 RetryPolicy: a GEP-713 inherited
// policy whose default and override hold an HTTPRoute rule's retry and
// timeouts. Its CRD is config/crd/gwretry.io_retrypolicies.yaml.
type RetryPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RetryPolicySpec    `json:"spec"`
	Status            *gwv1.PolicyStatus `json:"status,omitempty"`
}

// RetryPolicySpec is GEP-713's inherited form: targetRefs, default and
// override (singular, as GEP-713's example policy).
type RetryPolicySpec struct {
	TargetRefs []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`
	Default    *PolicyValues                                    `json:"default,omitempty"`
	Override   *PolicyValues                                    `json:"override,omitempty"`
}

// PolicyValues are the fields of an HTTPRoute rule a RetryPolicy sets,
// with exactly the rule's types.
type PolicyValues struct {
	Retry    *gwv1.HTTPRouteRetry    `json:"retry,omitempty"`
	Timeouts *gwv1.HTTPRouteTimeouts `json:"timeouts,omitempty"`
}

// Policies are the policy objects of the input, one list per known kind
// (see input's policyKinds).
type Policies struct {
	Retry          []Object[RetryPolicy]
	BackendTraffic []Object[BackendTrafficPolicy]
}

// BackendTrafficPolicy is Envoy Gateway's gateway.envoyproxy.io/v1alpha1
// BackendTrafficPolicy, as far as gwretry reads it: its targets, retry and
// timeout. Its other fields are accepted (they are valid Envoy Gateway)
// and each one set is reported as not carried; a field Envoy Gateway does
// not know is an error, as everywhere else.
type BackendTrafficPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BTPSpec         `json:"spec"`
	Status            json.RawMessage `json:"status,omitempty"`
}

// BTPSpec is the spec of a BackendTrafficPolicy.
type BTPSpec struct {
	TargetRef       *gwv1.LocalPolicyTargetReferenceWithSectionName  `json:"targetRef,omitempty"`
	TargetRefs      []gwv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs,omitempty"`
	TargetSelectors json.RawMessage                                  `json:"targetSelectors,omitempty"`
	MergeType       *string                                          `json:"mergeType,omitempty"`
	Retry           *BTPRetry                                        `json:"retry,omitempty"`
	Timeout         *BTPTimeout                                      `json:"timeout,omitempty"`

	// Fields gwretry does not translate.
	CircuitBreaker    json.RawMessage `json:"circuitBreaker,omitempty"`
	Compression       json.RawMessage `json:"compression,omitempty"`
	Compressor        json.RawMessage `json:"compressor,omitempty"`
	Connection        json.RawMessage `json:"connection,omitempty"`
	DNS               json.RawMessage `json:"dns,omitempty"`
	FaultInjection    json.RawMessage `json:"faultInjection,omitempty"`
	HealthCheck       json.RawMessage `json:"healthCheck,omitempty"`
	HTTP2             json.RawMessage `json:"http2,omitempty"`
	HTTPUpgrade       json.RawMessage `json:"httpUpgrade,omitempty"`
	LoadBalancer      json.RawMessage `json:"loadBalancer,omitempty"`
	ProxyProtocol     json.RawMessage `json:"proxyProtocol,omitempty"`
	RateLimit         json.RawMessage `json:"rateLimit,omitempty"`
	RequestBuffer     json.RawMessage `json:"requestBuffer,omitempty"`
	ResponseOverride  json.RawMessage `json:"responseOverride,omitempty"`
	RoutingType       json.RawMessage `json:"routingType,omitempty"`
	TCPKeepalive      json.RawMessage `json:"tcpKeepalive,omitempty"`
	Telemetry         json.RawMessage `json:"telemetry,omitempty"`
	UseClientProtocol json.RawMessage `json:"useClientProtocol,omitempty"`
}

// BTPRetry is Envoy Gateway's Retry (api/v1alpha1/retry_types.go).
type BTPRetry struct {
	NumRetries             *int32          `json:"numRetries,omitempty"`
	NumAttemptsPerPriority *int32          `json:"numAttemptsPerPriority,omitempty"`
	RetryOn                *BTPRetryOn     `json:"retryOn,omitempty"`
	PerRetry               *BTPPerRetry    `json:"perRetry,omitempty"`
	CircuitBreaker         json.RawMessage `json:"circuitBreaker,omitempty"`
}

// BTPRetryOn is when Envoy retries.
type BTPRetryOn struct {
	Triggers        []string `json:"triggers,omitempty"`
	HTTPStatusCodes []int    `json:"httpStatusCodes,omitempty"`
}

// BTPPerRetry is the per-try timeout and backoff.
type BTPPerRetry struct {
	BackOff *BTPBackOff    `json:"backOff,omitempty"`
	Timeout *gwv1.Duration `json:"timeout,omitempty"`
}

// BTPBackOff is Envoy's retry_back_off.
type BTPBackOff struct {
	BaseInterval *gwv1.Duration `json:"baseInterval,omitempty"`
	MaxInterval  *gwv1.Duration `json:"maxInterval,omitempty"`
}

// BTPTimeout is Envoy Gateway's Timeout.
type BTPTimeout struct {
	TCP  *BTPTCPTimeout  `json:"tcp,omitempty"`
	HTTP *BTPHTTPTimeout `json:"http,omitempty"`
}

// BTPTCPTimeout is the TCP part of Timeout.
type BTPTCPTimeout struct {
	ConnectTimeout *gwv1.Duration `json:"connectTimeout,omitempty"`
}

// BTPHTTPTimeout is the HTTP part of Timeout.
type BTPHTTPTimeout struct {
	RequestTimeout        *gwv1.Duration `json:"requestTimeout,omitempty"`
	ConnectionIdleTimeout *gwv1.Duration `json:"connectionIdleTimeout,omitempty"`
	MaxConnectionDuration *gwv1.Duration `json:"maxConnectionDuration,omitempty"`
	MaxStreamDuration     *gwv1.Duration `json:"maxStreamDuration,omitempty"`
}

// ConnectionTimeoutPolicyAPIVersion and ConnectionTimeoutPolicyKind name
// gwretry's policy of proxy-wide connection timeouts (config/crd/).
const (
	ConnectionTimeoutPolicyAPIVersion = "gwretry.io/v1alpha1"
	ConnectionTimeoutPolicyKind       = "ConnectionTimeoutPolicy"
)

// ConnectionTimeoutPolicy sets the proxy-wide connection timeouts of the
// Gateways it targets, as the OpenShift router's IngressController
// spec.tuningOptions does (openshift/api operator/v1
// types_ingresscontroller.go). Values are in the HAProxy time format.
type ConnectionTimeoutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ConnectionTimeoutPolicySpec `json:"spec"`
}

// ConnectionTimeoutPolicySpec is the policy's spec.
type ConnectionTimeoutPolicySpec struct {
	// TargetRefs are the Gateways, in the policy's namespace (GEP-713's
	// LocalPolicyTargetReference).
	TargetRefs       []PolicyTargetRef `json:"targetRefs"`
	ClientTimeout    *string           `json:"clientTimeout,omitempty"`
	ClientFinTimeout *string           `json:"clientFinTimeout,omitempty"`
	ServerTimeout    *string           `json:"serverTimeout,omitempty"`
	ServerFinTimeout *string           `json:"serverFinTimeout,omitempty"`
	TunnelTimeout    *string           `json:"tunnelTimeout,omitempty"`
	TLSInspectDelay  *string           `json:"tlsInspectDelay,omitempty"`
}

// PolicyTargetRef is a local reference to the object a policy targets.
type PolicyTargetRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

func (s *ConnectionTimeoutPolicySpec) Fields() []*string {
	return []*string{s.ClientTimeout, s.ClientFinTimeout, s.ServerTimeout, s.ServerFinTimeout, s.TunnelTimeout, s.TLSInspectDelay}
}

// Targets returns the policy's targetRefs (targetRef, deprecated, first).
func (p *BackendTrafficPolicy) Targets() []gwv1.LocalPolicyTargetReferenceWithSectionName {
	var out []gwv1.LocalPolicyTargetReferenceWithSectionName
	if p.Spec.TargetRef != nil {
		out = append(out, *p.Spec.TargetRef)
	}
	return append(out, p.Spec.TargetRefs...)
}
