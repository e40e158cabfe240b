package haproxy

import (
	"fmt"

	tcpActions "github.com/haproxytech/client-native/v5/config-parser/parsers/tcp/actions"
	tcptypes "github.com/haproxytech/client-native/v5/config-parser/parsers/tcp/types"
	"github.com/haproxytech/client-native/v5/config-parser/types"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// connPlan is a section's share of the Gateways' connection timeouts, each
// in the HAProxy time format, "" when unset: the client side in a
// frontend, the server side in a backend.
type connPlan struct {
	client, clientFin, inspectDelay string
	server, serverFin, tunnel       string
}

// haproxyTime writes a connection timeout in HAProxy's time format: as
// the policy wrote it (the policy's values are in that format), or
// HAProxy's largest time when it was clamped to it.
func haproxyTime(c translate.ConnectionTimeout) string {
	if c.Clamped {
		return ms(maxTimeoutMs)
	}
	return c.Text
}

// connValue is the checked HAProxy text of a connection timeout.
func connValue(c translate.ConnectionTimeout, ck *tokenChecker) string {
	v := haproxyTime(c)
	if _, _, err := translate.ParseHAProxyTime(v); err != nil && ck.err == nil {
		ck.err = fmt.Errorf("%s: %w", c.Feature, err)
	}
	return ck.word("time", v)
}

// planListenerConn is what the frontend of listener l sets: timeout client,
// timeout client-fin and tcp-request inspect-delay, as the OpenShift
// router's defaults and public frontend do.
func planListenerConn(m *translate.Model, l *translate.Listener, ck *tokenChecker) connPlan {
	var p connPlan
	for _, s := range []struct {
		f   translate.Feature
		dst *string
	}{{translate.FeatureConnClientTimeout, &p.client}, {translate.FeatureConnClientFinTimeout, &p.clientFin},
		{translate.FeatureConnTLSInspectDelay, &p.inspectDelay}} {
		if c, ok := m.ListenerConnection(l, s.f); ok {
			*s.dst = connValue(c, ck)
		}
	}
	return p
}

// planRuleConn is what the backend of rule r sets: timeout server (unless
// the rule has timeouts of its own), timeout server-fin and timeout tunnel.
func planRuleConn(m *translate.Model, r *translate.Rule, ck *tokenChecker) connPlan {
	var p connPlan
	for _, s := range []struct {
		f   translate.Feature
		dst *string
	}{{translate.FeatureConnServerTimeout, &p.server}, {translate.FeatureConnServerFinTimeout, &p.serverFin},
		{translate.FeatureConnTunnelTimeout, &p.tunnel}} {
		if c, ok := m.RuleConnection(r, s.f); ok {
			*s.dst = connValue(c, ck)
		}
	}
	return p
}

// setFrontendConn writes the client side of p into frontend s.
func (d *document) setFrontendConn(s sectionRef, p connPlan) {
	if p.client != "" {
		d.set(s, "timeout client", &types.SimpleTimeout{Value: p.client})
	}
	if p.clientFin != "" {
		d.set(s, "timeout client-fin", &types.SimpleTimeout{Value: p.clientFin})
	}
	if p.inspectDelay != "" {
		// As the router's public frontend: wait up to the delay for a
		// whole HTTP request before the content rules run.
		rules := []types.TCPType{&tcptypes.InspectDelay{Timeout: p.inspectDelay},
			&tcptypes.Content{Action: &tcpActions.Accept{Cond: "if", CondTest: "HTTP"}}}
		d.setLines(s, "tcp-request", rules, len(rules))
	}
}

// setBackendConn writes the server side of p into backend s.
func (d *document) setBackendConn(s sectionRef, p connPlan) {
	if p.server != "" {
		d.set(s, "timeout server", &types.SimpleTimeout{Value: p.server})
	}
	if p.serverFin != "" {
		d.set(s, "timeout server-fin", &types.SimpleTimeout{Value: p.serverFin})
	}
	if p.tunnel != "" {
		d.set(s, "timeout tunnel", &types.SimpleTimeout{Value: p.tunnel})
	}
}

// connFindings are the connection.* findings: HAProxy has every setting
// the OpenShift router uses, written in the frontend of each of the
// Gateway's listeners (client side) or the backend of each rule served
// there (server side; a rule with timeouts of its own keeps them, as a
// Route's timeout annotation does on the router). Only those a live test
// sees at work (TestLiveConnectionTimeouts*) are honoured: clientTimeout,
// serverTimeout and tunnelTimeout; serverTimeout is approximated on
// versions that also time the server during an upload
// (vs.ServerTimeoutDuringUpload).
func connFindings(m *translate.Model, vs versionSupport) []translate.Finding {
	return translate.ConnectionDecisions(m, func(g *translate.GatewayTimeouts, c translate.ConnectionTimeout) report.Decision {
		configured := func(keyword string) report.Decision {
			return report.Decide(report.ReasonConfigured).Set(keyword + " " + haproxyTime(c))
		}
		// The fin timeouts, as the router writes them, time nothing seen
		// in these HTTP sections: HAProxy closes a WebSocket tunnel as
		// soon as either side shuts down its own, and a client that
		// half-closes and stops reading is cut after timeout client (seen
		// live with HAProxy 2.6).
		unseen := report.NewCaveat(report.CaveatNoEffectSeenLive, "version", "2.6")
		switch c.Feature {
		case translate.FeatureConnClientTimeout:
			return configured("timeout client")
		case translate.FeatureConnClientFinTimeout:
			return configured("timeout client-fin").With(unseen)
		case translate.FeatureConnServerTimeout:
			if vs.ServerTimeoutDuringUpload {
				return configured("timeout server").With(report.NewCaveat(report.CaveatServerTimerRunsDuringUpload, "version", vs.Version))
			}
			return configured("timeout server")
		case translate.FeatureConnServerFinTimeout:
			return configured("timeout server-fin").With(unseen)
		case translate.FeatureConnTunnelTimeout:
			return configured("timeout tunnel")
		}
		// tcp-request inspect-delay with tcp-request content accept if
		// HTTP, as the router's HTTP frontend. On an HTTPS listener HAProxy
		// terminates TLS at the bind and picks the certificate during the
		// handshake (bounded by timeout client), so the delay bounds the
		// wait for the decrypted request; on HTTP listeners the request
		// head is parsed (under timeout http-request) before the content
		// rules run, so the delay holds nothing.
		for _, l := range g.Listeners {
			if l.TLS {
				return configured("tcp-request inspect-delay").With(report.NewCaveat(report.CaveatDelayBoundsDecryptedRequest))
			}
		}
		return configured("tcp-request inspect-delay").With(report.NewCaveat(report.CaveatDelayNeverHoldsRequest))
	})
}
