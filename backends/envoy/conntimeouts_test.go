package envoy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// connPolicy sets every field on Gateway ns/gw of tlsManifests.
const connPolicy = `
---
apiVersion: gwretry.io/v1alpha1
kind: ConnectionTimeoutPolicy
metadata: {name: tuning, namespace: ns}
spec:
  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: gw}]
  clientTimeout: 45s
  clientFinTimeout: 3s
  serverTimeout: 20s
  serverFinTimeout: 4s
  tunnelTimeout: 30m
  tlsInspectDelay: 5s
`

// TestConnectionTimeouts: on a Gateway with HTTP and HTTPS listeners,
// serverTimeout becomes the idle_timeout of the routes of rules without
// timeouts of their own, tlsInspectDelay the HTTPS listener's
// listener_filters_timeout; both approximated, the rest unsupported, one
// finding each; the judge reads the values back and catches a changed
// file.
func TestConnectionTimeouts(t *testing.T) {
	ca := tlsCA(t)
	m := testmodel.LoadText(t, tlsManifests+connPolicy, translate.ResolveOptions{TLSDir: ca.dir})
	b := New()
	opts := translate.Options{Version: "1.36"}
	res, err := translate.Run(m, []translate.Target{{Backend: b, Version: opts.Version}}, false)
	if err != nil {
		t.Fatal(err)
	}
	out, bs := generate(t, m, opts)
	if d := tlsListenerOf(t, bs).GetListenerFiltersTimeout(); d == nil || d.AsDuration() != 5*time.Second {
		t.Errorf("HTTPS listener: listener_filters_timeout %v, want 5s", d)
	}
	for _, c := range []struct {
		route string
		want  time.Duration
	}{{"ns_wild_r0", 20 * time.Second}, {"ns_any_r0", 20 * time.Second}, {"ns_exact_r0", 0}} {
		routes := routesNamed(t, bs, c.route)
		if len(routes) == 0 {
			t.Fatalf("no route %s", c.route)
		}
		for _, rt := range routes {
			if got := rt.GetRoute().GetIdleTimeout().AsDuration(); got != c.want {
				t.Errorf("route %s: idle_timeout %v, want %v", c.route, got, c.want)
			}
		}
	}
	got := map[translate.Feature]report.Reason{}
	records := map[translate.Feature]string{}
	for _, f := range res.Report.Findings {
		if f.Gateway != "" {
			if _, dup := got[f.Feature]; dup {
				t.Errorf("two findings for %s", f.Feature)
			}
			got[f.Feature], records[f.Feature] = f.Reason, caveatText(f)
			if (f.Status == translate.Approximated) != (len(f.Caveats) > 0) {
				t.Errorf("%s: %s with caveats %v", f.Feature, f.Status, f.Caveats)
			}
		}
	}
	// What each record must hold: the stream idle timeout answers 504 once
	// the whole request arrived (Configured), 408 before
	// (Answers408WhileReceiving: Utility::maybeRequestTimeoutCode,
	// envoyproxy/envoy#20026), and resets the stream once the response has
	// started (NoAnswerAfterHeaders); the routes keep Envoy's default route
	// timeout. The HTTPS listener's listener_filters_timeout closes a
	// connection without its ClientHello, and the HTTP listener has none.
	for f, want := range map[translate.Feature]string{
		translate.FeatureConnServerTimeout:    `Configured "route idle_timeout 20s" [Answers408WhileReceiving DefaultRouteTimeout{timeout=15s} IdleTimerSpansRequest NoAnswerAfterHeaders]`,
		translate.FeatureConnTLSInspectDelay:  `Configured "listener_filters_timeout 5s" [ClosesWithoutClientHello HTTPListenersNotDelayed]`,
		translate.FeatureConnClientFinTimeout: `NotExpressible "" []`,
		translate.FeatureConnServerFinTimeout: `NotExpressible "" []`,
	} {
		if records[f] != want {
			t.Errorf("%s: %s, want %s", f, records[f], want)
		}
	}
	want := map[translate.Feature]report.Reason{
		translate.FeatureConnServerTimeout: report.ReasonConfigured, translate.FeatureConnTLSInspectDelay: report.ReasonConfigured,
		translate.FeatureConnClientTimeout: report.ReasonNotExpressible, translate.FeatureConnClientFinTimeout: report.ReasonNotExpressible,
		translate.FeatureConnServerFinTimeout: report.ReasonNotExpressible, translate.FeatureConnTunnelTimeout: report.ReasonNoTunnels,
	}
	if len(got) != len(want) {
		t.Errorf("findings %v, want %v", got, want)
	}
	for f, s := range want {
		if got[f] != s {
			t.Errorf("%s: %s, want %s", f, got[f], s)
		}
	}

	check := func(files []translate.File, f translate.Feature, want time.Duration) bool {
		seen, err := b.ObserveConnections(m, opts, files)
		if err != nil {
			t.Fatal(err)
		}
		got := seen["ns/gw"][f]
		return len(got) > 0 && !slices.ContainsFunc(got, func(d time.Duration) bool { return d != want })
	}
	if !check(out.Files, translate.FeatureConnServerTimeout, 20*time.Second) || !check(out.Files, translate.FeatureConnTLSInspectDelay, 5*time.Second) {
		t.Error("the judge does not read back what was written")
	}
	text := string(out.Files[0].Data)
	for _, tamper := range []struct {
		from, to string
		f        translate.Feature
		want     time.Duration
	}{
		{"listener_filters_timeout: 5s", "listener_filters_timeout: 6s", translate.FeatureConnTLSInspectDelay, 5 * time.Second},
		{"idle_timeout: 20s", "idle_timeout: 21s", translate.FeatureConnServerTimeout, 20 * time.Second},
	} {
		changed := strings.Replace(text, tamper.from, tamper.to, 1)
		if changed == text {
			t.Fatalf("no %q in\n%s", tamper.from, text)
		}
		if check([]translate.File{{Path: OutputPath, Data: []byte(changed)}}, tamper.f, tamper.want) {
			t.Errorf("%q -> %q: the judge reads the claimed value still", tamper.from, tamper.to)
		}
	}
}
