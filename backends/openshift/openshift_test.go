package openshift

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestOperatorTimeSpec: cluster-ingress-operator's durationToHAProxyTimespec,
// and every output matches the router template's pattern.
func TestOperatorTimeSpec(t *testing.T) {
	for _, c := range []struct {
		in   time.Duration
		want string
	}{
		{45 * time.Second, "45s"},
		{60 * time.Second, "1m"},
		{90 * time.Minute, "90m"},
		{24 * time.Hour, "24h"},
		{1500 * time.Millisecond, "1500ms"},
		{1500 * time.Microsecond, "1500us"},
		{translate.MaxHAProxyTimeout, "2147483647ms"},
		{translate.MaxHAProxyTimeout + time.Millisecond, "2147483647ms"},
	} {
		got := operatorTimeSpec(c.in)
		if got != c.want || !routerTimeSpec.MatchString(got) {
			t.Errorf("%v = %q, want %q (router pattern: %v)", c.in, got, c.want, routerTimeSpec.MatchString(got))
		}
	}
}

// TestAPIDuration: the HAProxy format becomes a metav1.Duration string
// ("d" as hours, no unit as ms) that time.ParseDuration reads back.
func TestAPIDuration(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"45s", "45s"}, {"3000", "3000ms"}, {"05s", "5s"}, {"1d", "24h"}, {"2h", "2h"}, {"30m", "30m"},
		{"250us", "250us"}, {"30d", "2147483647ms"},
	} {
		d, clamped, err := translate.ParseHAProxyTime(c.in)
		if err != nil {
			t.Fatal(err)
		}
		got := apiDuration(translate.ConnectionTimeout{Text: c.in, Value: d, Clamped: clamped})
		back, err := time.ParseDuration(got)
		if got != c.want || err != nil || !goDuration.MatchString(got) || back != d {
			t.Errorf("%q = %q (back %v, %v), want %q", c.in, got, back, err, c.want)
		}
	}
}

// TestReadBackRejectsDrift: an environment that is not what the operator
// derives from the patch is an error.
func TestReadBackRejectsDrift(t *testing.T) {
	files := []translate.File{
		{Path: PatchPath, Data: []byte("spec:\n  tuningOptions:\n    clientTimeout: 45s\n")},
		{Path: EnvPath, Data: []byte("- name: ROUTER_DEFAULT_CLIENT_TIMEOUT\n  value: 46s\n")},
	}
	if _, err := readBack(files); err == nil {
		t.Error("drift accepted")
	}
	files[1].Data = []byte("- name: ROUTER_TLS_INSPECT_DELAY\n  value: 5s\n")
	if _, err := readBack(files); err == nil {
		t.Error("a variable the operator does not set accepted")
	}
	files[1].Data = []byte("- name: ROUTER_DEFAULT_CLIENT_TIMEOUT\n  value: 45s\n")
	if _, err := readBack(files); err != nil {
		t.Error(err)
	}
}

// TestConnectionFindingsNotHonoured: the router serves Routes and
// Ingresses, never a Gateway's listeners (haproxy-config.template's
// frontends public and public_ssl), so no connection field of a Gateway
// is honoured for that Gateway's own connections, whatever the field;
// each finding records why (GatewayListenersNotServed).
func TestConnectionFindingsNotHonoured(t *testing.T) {
	for _, spec := range [][]string{
		{"clientTimeout: 45s"},
		{"serverTimeout: 60s"},
		{"tunnelTimeout: 30m"},
		{"tlsInspectDelay: 5s"},
		{"clientFinTimeout: 3s", "serverFinTimeout: 4s"},
	} {
		t.Run(strings.Join(spec, ","), func(t *testing.T) {
			m := testmodel.LoadText(t, testmodel.ConnectionPolicy(spec...), translate.ResolveOptions{}, "svc:8080=127.0.0.1:9100")
			out, err := New().Generate(m, translate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, f := range out.Findings {
				if !strings.HasPrefix(string(f.Feature), "connection.") {
					continue
				}
				n++
				if f.Status == translate.Honoured || !slices.ContainsFunc(f.Caveats, func(c report.Caveat) bool { return c.Reason == report.CaveatGatewayListenersNotServed }) {
					t.Errorf("%s: %s: %+v", f.Feature, f.Status, f.Caveats)
				}
			}
			if n != len(spec) {
				t.Errorf("%d connection findings, want %d", n, len(spec))
			}
		})
	}
}
