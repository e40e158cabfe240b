package prove

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// httpsScenario is the scenario of the rule's listener.https claim: a GET
// over TLS to the first HTTPS listener and virtual host that serve the
// rule, with the host's name as SNI, which must be answered with the
// certificate of the virtual host's Secret (as --tls-dir holds it). It
// returns nil and why when the claim is not exercised.
func httpsScenario(m *translate.Model, r *translate.Rule, services map[string]bool, opts DeriveOptions) (*Scenario, string) {
	if opts.NoHTTPS != "" {
		return nil, opts.NoHTTPS
	}
	u, why := userRule(m, r, services, true)
	if u == nil {
		if why == "" || why == "the rule is not served by a listener gwretry generates" {
			why = "no HTTPS listener that serves the rule is generated (its certificate is not under --tls-dir, or it needs --listen-https)"
		}
		return nil, why
	}
	want, err := leafDER(u.CertFile)
	if err != nil {
		return nil, fmt.Sprintf("the certificate of Secret %s cannot be read: %v", u.Secret, err)
	}
	name := fmt.Sprintf("%s rule %d", r.Route, r.Index)
	if r.RuleName != "" {
		name += " (" + r.RuleName + ")"
	}
	check := Check{Feature: translate.FeatureListenerHTTPS, Conds: []Cond{{
		Want:      fmt.Sprintf("the certificate of Secret %s", u.Secret),
		Shortfall: Shortfall{Class: CertificateOther},
		Seen: func(res Result) (string, bool) {
			switch {
			case res.Err != "" && res.Status == 0:
				return "no TLS answer: " + res.Err, false
			case res.PeerCert == nil:
				return "no certificate", false
			case !bytes.Equal(res.PeerCert, want):
				return "another certificate", false
			}
			return fmt.Sprintf("the certificate of Secret %s", u.Secret), true
		}}}}
	host := u.Host
	if host == "" {
		host = "(no SNI)"
	}
	return &Scenario{Name: name + ": HTTPS on " + host + " served Secret " + u.Secret + "'s certificate", Method: http.MethodGet, User: u,
		Test: Test{Checks: []Check{check}}}, ""
}

// leafDER is the first certificate of a PEM file.
func leafDER(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%s: no CERTIFICATE block", path)
		}
		if b.Type == "CERTIFICATE" {
			return b.Bytes, nil
		}
	}
}

// certificateCaveats back a certificate other than the listener's Secret's.
var certificateCaveats = []backer{
	{report.CaveatCertificateChosenByNames, nil},
	{report.CaveatListenerCertificateShadowed, nil},
	{report.CaveatCertificateByRouteHostname, nil},
}
