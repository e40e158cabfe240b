// Package openshift writes the OpenShift router's proxy-wide connection
// timeouts for a gwretry Model: a merge patch of an IngressController's
// spec.tuningOptions and the router environment variables the ingress
// operator sets from it.
//
// Checked against the sources (snapshots of August 2026):
//   - openshift/api operator/v1/types_ingresscontroller.go: clientTimeout,
//     clientFinTimeout, serverTimeout, serverFinTimeout, tunnelTimeout and
//     tlsInspectDelay are *metav1.Duration with
//     +kubebuilder:validation:Format=duration (Go duration strings such as
//     "45s", "1h"; no "d" unit). They were added by commit 282951db0
//     (July 2021).
//   - openshift/cluster-ingress-operator
//     pkg/operator/controller/ingress/deployment.go: each positive field
//     becomes ROUTER_DEFAULT_CLIENT_TIMEOUT, ROUTER_CLIENT_FIN_TIMEOUT,
//     ROUTER_DEFAULT_SERVER_TIMEOUT, ROUTER_DEFAULT_SERVER_FIN_TIMEOUT,
//     ROUTER_DEFAULT_TUNNEL_TIMEOUT and ROUTER_INSPECT_DELAY, written by
//     durationToHAProxyTimespec (largest whole unit up to hours, clamped to
//     2147483647ms); a zero field is ignored.
//   - openshift/router images/router/haproxy/conf/haproxy-config.template:
//     the defaults section reads the first five into timeout client,
//     client-fin, server, server-fin and tunnel, and the public and
//     public_ssl frontends read ROUTER_INSPECT_DELAY into tcp-request
//     inspect-delay. The enhancement's test plan calls it
//     ROUTER_TLS_INSPECT_DELAY, a name neither the template nor the
//     operator uses. Each value must match the template's
//     `[1-9][0-9]*(us|ms|s|m|h|d)?` (firstMatch anchors it) or the default
//     is used.
package openshift

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// Output paths, relative to the output directory.
const (
	PatchPath = "openshift/ingresscontroller-patch.yaml"
	EnvPath   = "openshift/router-env.yaml"
)

// Backend is the OpenShift router target.
type Backend struct{}

// New returns the OpenShift router target.
func New() *Backend { return &Backend{} }

// Name returns "openshift".
func (*Backend) Name() string { return "openshift" }

// Versions are the OpenShift releases whose IngressController has the six
// tuning options (added in July 2021, between 4.8 and 4.9) and whose router
// reads the variables above.
// Scope: a Gateway's proxy-wide connection timeouts only; the router
// serves Routes and Ingresses, never an HTTPRoute rule.
func (*Backend) Scope() translate.Scope { return translate.Scope{Connections: true} }

func (*Backend) Versions() []string {
	return []string{"4.9", "4.10", "4.11", "4.12", "4.13", "4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20"}
}

// field is one tuning option: its JSON name and the router variable.
type field struct {
	feature translate.Feature
	env     string
}

func fields() []field {
	return []field{
		{translate.FeatureConnClientTimeout, "ROUTER_DEFAULT_CLIENT_TIMEOUT"},
		{translate.FeatureConnClientFinTimeout, "ROUTER_CLIENT_FIN_TIMEOUT"},
		{translate.FeatureConnServerTimeout, "ROUTER_DEFAULT_SERVER_TIMEOUT"},
		{translate.FeatureConnServerFinTimeout, "ROUTER_DEFAULT_SERVER_FIN_TIMEOUT"},
		{translate.FeatureConnTunnelTimeout, "ROUTER_DEFAULT_TUNNEL_TIMEOUT"},
		{translate.FeatureConnTLSInspectDelay, "ROUTER_INSPECT_DELAY"},
	}
}

// TuningOptions is the part of operator/v1 IngressControllerTuningOptions
// gwretry writes; each value is a metav1.Duration string.
type TuningOptions struct {
	ClientTimeout    string `json:"clientTimeout,omitempty"`
	ClientFinTimeout string `json:"clientFinTimeout,omitempty"`
	ServerTimeout    string `json:"serverTimeout,omitempty"`
	ServerFinTimeout string `json:"serverFinTimeout,omitempty"`
	TunnelTimeout    string `json:"tunnelTimeout,omitempty"`
	TLSInspectDelay  string `json:"tlsInspectDelay,omitempty"`
}

func (t *TuningOptions) ptr(f translate.Feature) *string {
	return map[translate.Feature]*string{translate.FeatureConnClientTimeout: &t.ClientTimeout,
		translate.FeatureConnClientFinTimeout: &t.ClientFinTimeout, translate.FeatureConnServerTimeout: &t.ServerTimeout,
		translate.FeatureConnServerFinTimeout: &t.ServerFinTimeout, translate.FeatureConnTunnelTimeout: &t.TunnelTimeout,
		translate.FeatureConnTLSInspectDelay: &t.TLSInspectDelay}[f]
}

// Patch is the merge patch: kubectl patch ingresscontroller/default -n
// openshift-ingress-operator --type=merge --patch-file PATCH.
type Patch struct {
	Spec struct {
		TuningOptions TuningOptions `json:"tuningOptions"`
	} `json:"spec"`
}

// routerTimeSpec is the router template's $timeSpecPattern, anchored as its
// firstMatch does.
var routerTimeSpec = regexp.MustCompile(`\A(?:[1-9][0-9]*(us|ms|s|m|h|d)?)\z`)

// goDuration is the API's duration format as gwretry writes it: one integer
// and one unit.
var goDuration = regexp.MustCompile(`\A[1-9][0-9]*(us|ms|s|m|h)\z`)

// apiDuration writes a timeout as a metav1.Duration string: the value as
// written with a unit ("d" becomes hours; no unit is ms), or 2147483647ms
// when it was clamped.
func apiDuration(c translate.ConnectionTimeout) string {
	if c.Clamped {
		return "2147483647ms"
	}
	unit := strings.TrimLeft(c.Text, "0123456789")
	switch unit {
	case "", "ms":
		return fmt.Sprintf("%dms", c.Value/time.Millisecond)
	case "us":
		return fmt.Sprintf("%dus", c.Value/time.Microsecond)
	case "s":
		return fmt.Sprintf("%ds", c.Value/time.Second)
	case "m":
		return fmt.Sprintf("%dm", c.Value/time.Minute)
	}
	return fmt.Sprintf("%dh", c.Value/time.Hour) // h, and d as hours
}

// operatorTimeSpec is cluster-ingress-operator's durationToHAProxyTimespec:
// the largest unit (up to hours) that loses nothing.
func operatorTimeSpec(d time.Duration) string {
	const maxD = 2147483647 * time.Millisecond
	switch {
	case d <= 0:
		return "0s"
	case d > maxD:
		return "2147483647ms"
	case d.Microseconds()%1000 != 0:
		return fmt.Sprintf("%dus", d.Microseconds())
	case d.Milliseconds()%1000 != 0:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d.Milliseconds()%time.Minute.Milliseconds() != 0:
		return fmt.Sprintf("%ds", int(math.Round(d.Seconds())))
	case d.Milliseconds()%time.Hour.Milliseconds() != 0:
		return fmt.Sprintf("%dm", int(math.Round(d.Minutes())))
	}
	return fmt.Sprintf("%dh", int(math.Round(d.Hours())))
}

// choice is the router's one value of a field: the first in GEP-713 order
// among the Gateways whose value nothing blocks.
func choices(m *translate.Model) map[translate.Feature]translate.ConnectionTimeout {
	out := map[translate.Feature]translate.ConnectionTimeout{}
	for _, g := range m.ConnectionTimeouts {
		for _, c := range g.Timeouts {
			if c.Blocked != "" {
				continue
			}
			if old, ok := out[c.Feature]; !ok || c.Order < old.Order {
				out[c.Feature] = c
			}
		}
	}
	return out
}

// Generate writes the patch and the environment, one finding per
// connection field of each Gateway and an unsupported finding for every
// feature of every rule.
func (*Backend) Generate(m *translate.Model, opts translate.Options) (*translate.Output, error) {
	if _, err := translate.LookupVersion((&Backend{}).Versions(), func(s string) string { return s }, opts.Version); err != nil {
		return nil, err
	}
	chosen := choices(m)
	var patch Patch
	var env []corev1.EnvVar
	for _, f := range fields() {
		c, ok := chosen[f.feature]
		if !ok {
			continue
		}
		v := apiDuration(c)
		d, err := time.ParseDuration(v)
		if err != nil || !goDuration.MatchString(v) || d != c.Value {
			return nil, &translate.InternalError{Err: fmt.Errorf("%s: %q is not the API duration of %s", f.feature, v, c.Value)}
		}
		*patch.Spec.TuningOptions.ptr(f.feature) = v
		e := operatorTimeSpec(d)
		if !routerTimeSpec.MatchString(e) {
			return nil, &translate.InternalError{Err: fmt.Errorf("%s: %q does not match the router's time pattern", f.env, e)}
		}
		env = append(env, corev1.EnvVar{Name: f.env, Value: e})
	}
	patchYAML, err := yaml.Marshal(patch)
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = []corev1.EnvVar{}
	}
	envYAML, err := yaml.Marshal(env)
	if err != nil {
		return nil, err
	}
	files := []translate.File{{Path: PatchPath, Data: patchYAML}, {Path: EnvPath, Data: envYAML}}
	if _, err := readBack(files); err != nil {
		return nil, &translate.InternalError{Err: err}
	}
	out := &translate.Output{Files: files, Notes: translate.InfoNotes(
		"apply "+PatchPath+" with `oc patch ingresscontroller/default -n openshift-ingress-operator --type=merge --patch-file "+PatchPath+"`; "+EnvPath+" lists the router environment variables the ingress operator then sets (for review: the operator owns the router Deployment and overwrites manual edits)",
		"the tuning options are proxy-wide: they apply to every Route and Ingress the IngressController serves, not only to one Gateway's traffic",
		"the router serves OpenShift Routes and Ingresses, not Gateway API HTTPRoutes: every route rule gets unsupported findings on this target",
	)}
	out.Findings = append(out.Findings, translate.ConnectionDecisions(m, func(g *translate.GatewayTimeouts, c translate.ConnectionTimeout) report.Decision {
		if win := chosen[c.Feature]; win.Value != c.Value {
			return report.Decide(report.ReasonOneValueForAllGateways, "policy", win.Policy, "value", win.Text)
		}
		// The patch is as written (the operator turns it into the router
		// variable, which the router's template writes as the HAProxy
		// line), but the router accepts no connection of this Gateway: it
		// serves Routes and Ingresses, never a Gateway's listeners (and
		// gwretry writes no Routes), so the value times the router's own
		// traffic, not the Gateway's; and the chain rests on the
		// operator's and the template's source (no test runs a router).
		d := report.Decide(report.ReasonConfigured).Set(fmt.Sprintf("spec.tuningOptions.%s %s", c.Feature.Field(), apiDuration(c))).
			With(report.NewCaveat(report.CaveatGatewayListenersNotServed), report.NewCaveat(report.CaveatSourceOnly))
		if c.Feature == translate.FeatureConnClientFinTimeout || c.Feature == translate.FeatureConnServerFinTimeout {
			// The line is written as asked, but the haproxy target's live
			// tests see HAProxy never wait on it in an HTTP proxy: it
			// closes a WebSocket tunnel as soon as either side shuts down
			// its own (seen with HAProxy 2.6).
			d = d.With(report.NewCaveat(report.CaveatHalfCloseTimerUnobserved, "version", "2.6"))
		}
		return d
	})...)
	// The rules are outside the router's scope (translate reports them
	// not applicable); one note says where their nearest settings are.
	if len(m.Rules) > 0 {
		out.Notes = append(out.Notes, translate.Info("", "%s", routesNote))
	}
	return out, nil
}

// routesNote says what the router does with the rules of HTTPRoutes: it
// serves none, and names the nearest per-route settings.
const routesNote = "the OpenShift router (HAProxy, configured by IngressControllers) serves Routes and Ingresses, not Gateway API HTTPRoutes, and gwretry writes no Routes: " +
	"it has no per-route retry setting at all (its template sets only option redispatch and HAProxy's default connection retries); " +
	"the nearest per-route timeout is a Route's haproxy.router.openshift.io/timeout annotation (timeout server, an inactivity timer)"

// readBack strictly decodes both files and checks that the environment is
// what the operator derives from the patch.
func readBack(files []translate.File) (map[string]string, error) {
	data, err := translate.FileData(files, PatchPath)
	if err != nil {
		return nil, err
	}
	var p Patch
	if err := strictYAML(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", PatchPath, err)
	}
	if data, err = translate.FileData(files, EnvPath); err != nil {
		return nil, err
	}
	var env []corev1.EnvVar
	if err := strictYAML(data, &env); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPath, err)
	}
	got := map[string]string{}
	for _, e := range env {
		if _, dup := got[e.Name]; dup || e.ValueFrom != nil {
			return nil, fmt.Errorf("%s: %s set twice or from a source", EnvPath, e.Name)
		}
		got[e.Name] = e.Value
	}
	want := map[string]string{}
	for _, f := range fields() {
		v := *p.Spec.TuningOptions.ptr(f.feature)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || !goDuration.MatchString(v) || d <= 0 {
			return nil, fmt.Errorf("%s: tuningOptions.%s %q is not a positive duration", PatchPath, f.feature.Field(), v)
		}
		want[f.env] = operatorTimeSpec(d)
	}
	if !maps.Equal(got, want) {
		return nil, fmt.Errorf("%s holds %v, but the operator would set %v from %s", EnvPath, got, want, PatchPath)
	}
	for k, v := range got {
		if !routerTimeSpec.MatchString(v) {
			return nil, fmt.Errorf("%s: %s=%q does not match the router template's time pattern", EnvPath, k, v)
		}
	}
	return got, nil
}

func strictYAML(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
}

// Observe implements translate.Judge: the files configure nothing for any
// route rule (every rule feature is unsupported on this target), so there
// is no behaviour to report and no rule claim to check.
func (*Backend) Observe(*translate.Model, translate.Options, []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	return map[string]map[translate.MethodClass]translate.Behaviour{}, nil
}

// ObserveConnections implements translate.ConnectionJudge: it reads the
// environment back (checked against what the operator derives from the
// patch) and gives the router's one value of each field to every Gateway.
func (*Backend) ObserveConnections(m *translate.Model, _ translate.Options, files []translate.File) (map[string]map[translate.Feature][]time.Duration, error) {
	env, err := readBack(files)
	if err != nil {
		return nil, err
	}
	out := map[string]map[translate.Feature][]time.Duration{}
	for _, g := range m.ConnectionTimeouts {
		out[g.Gateway] = map[translate.Feature][]time.Duration{}
		for _, f := range fields() {
			v, ok := env[f.env]
			if !ok {
				continue
			}
			d, _, err := translate.ParseHAProxyTime(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", EnvPath, f.env, err)
			}
			out[g.Gateway][f.feature] = []time.Duration{d}
		}
	}
	return out, nil
}
