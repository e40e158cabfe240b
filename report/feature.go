package report

import "strings"

// Feature names one feature a rule or Gateway can set: retry, timeouts,
// backendRefs, a filter kind, a listener, a connection timeout. The names
// are those of report.json (docs/report.md).
type Feature string

// Retry, timeout and backend features, in the order they are reported.
const (
	// FeatureBackendRefs is set when some backendRef of a rule cannot
	// receive traffic, or none can (a dead rule): the Gateway API answers
	// that share of the requests with 500.
	FeatureBackendRefs           Feature = "backendRefs"
	FeatureRetryAttempts         Feature = "retry.attempts"
	FeatureRetryBackendTimeout   Feature = "retry.backendTimeout"
	FeatureRetryBackoff          Feature = "retry.backoff"
	FeatureRetryCodes            Feature = "retry.codes"
	FeatureRetryConnectionErrors Feature = "retry.connectionErrors"
	FeatureBackendRequestTimeout Feature = "timeouts.backendRequest"
	FeatureRequestTimeout        Feature = "timeouts.request"
)

// Filter features: one per filter kind of a rule, and the same prefixed
// with "backendRefs." for the filters of its backendRefs.
const (
	FeatureRequestHeaderModifier  Feature = "filters.requestHeaderModifier"
	FeatureResponseHeaderModifier Feature = "filters.responseHeaderModifier"
	FeatureRequestRedirect        Feature = "filters.requestRedirect"
	FeatureURLRewrite             Feature = "filters.urlRewrite"
	FeatureRequestMirror          Feature = "filters.requestMirror"
	FeatureExtensionRef           Feature = "filters.extensionRef"
	FeatureCORS                   Feature = "filters.cors"
	FeatureExternalAuth           Feature = "filters.externalAuth"
	// BackendRefFilterPrefix prefixes the features of filters set on
	// backendRefs ("backendRefs.filters.requestHeaderModifier").
	BackendRefFilterPrefix = "backendRefs."
)

// Listener and attachment features.
const (
	// FeatureListenerHTTPS: the route is also attached to an HTTPS
	// listener.
	FeatureListenerHTTPS Feature = "listener.https"
	// FeatureRouteAttachment: the route is attached to no listener that
	// gwretry generates, so none of its rules is served. Every rule of such
	// a route has it, so that a rule without retry or timeouts is reported
	// too.
	FeatureRouteAttachment Feature = "route.attachment"
)

// The connection.* features: one per ConnectionTimeoutPolicy field. Their
// findings are per (Gateway, target, feature): Finding.Gateway is set and
// Route, Rule and RuleName are empty.
const (
	FeatureConnClientTimeout    Feature = "connection.clientTimeout"
	FeatureConnClientFinTimeout Feature = "connection.clientFinTimeout"
	FeatureConnServerTimeout    Feature = "connection.serverTimeout"
	FeatureConnServerFinTimeout Feature = "connection.serverFinTimeout"
	FeatureConnTunnelTimeout    Feature = "connection.tunnelTimeout"
	FeatureConnTLSInspectDelay  Feature = "connection.tlsInspectDelay"
)

// ConnectionFeatures are the connection.* features in report order.
func ConnectionFeatures() []Feature {
	return []Feature{FeatureConnClientTimeout, FeatureConnClientFinTimeout, FeatureConnServerTimeout,
		FeatureConnServerFinTimeout, FeatureConnTunnelTimeout, FeatureConnTLSInspectDelay}
}

// IsRetry reports whether f is one of the retry.* features, which a rule
// with attempts 0 honours by not retrying at all.
func (f Feature) IsRetry() bool { return strings.HasPrefix(string(f), "retry.") }

// IsFilter reports whether f is a filter feature, of the rule
// ("filters.urlRewrite") or of its backendRefs
// ("backendRefs.filters.urlRewrite").
func (f Feature) IsFilter() bool {
	return strings.HasPrefix(strings.TrimPrefix(string(f), BackendRefFilterPrefix), "filters.")
}

// IsConnection reports whether f is one of the connection.* features.
func (f Feature) IsConnection() bool { return strings.HasPrefix(string(f), "connection.") }

// ServerSide reports whether a connection feature applies where the proxy
// talks to the backends (per rule: serverTimeout, serverFinTimeout,
// tunnelTimeout) rather than where it accepts clients (per listener).
func (f Feature) ServerSide() bool {
	return f == FeatureConnServerTimeout || f == FeatureConnServerFinTimeout || f == FeatureConnTunnelTimeout
}

// Field is the policy's spec field of a connection feature ("serverTimeout").
func (f Feature) Field() string { return strings.TrimPrefix(string(f), "connection.") }

// Features returns every feature a finding can have, in report order:
// backendRefs, retry and timeouts, the filters of a rule and of its
// backendRefs, listener.https, route.attachment and the connection.*
// features.
func Features() []Feature {
	filters := []Feature{FeatureRequestHeaderModifier, FeatureResponseHeaderModifier, FeatureRequestRedirect,
		FeatureURLRewrite, FeatureRequestMirror, FeatureExtensionRef, FeatureCORS, FeatureExternalAuth}
	fs := []Feature{FeatureBackendRefs, FeatureRetryAttempts, FeatureRetryBackendTimeout, FeatureRetryBackoff,
		FeatureRetryCodes, FeatureRetryConnectionErrors, FeatureBackendRequestTimeout, FeatureRequestTimeout}
	fs = append(fs, filters...)
	for _, f := range filters {
		fs = append(fs, BackendRefFilterPrefix+f)
	}
	fs = append(fs, FeatureListenerHTTPS, FeatureRouteAttachment)
	return append(fs, ConnectionFeatures()...)
}
