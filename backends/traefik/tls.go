package traefik

import (
	"fmt"

	"github.com/gwretry/gwretry/translate"
)

// buildTLS builds the dynamic tls section for the TLS listeners of m: every
// certificate of a virtual host with a hostname in tls.certificates (once
// each, in the model's order), and the certificate of the first TLS
// listener's catch-all host as the default store's defaultCertificate.
// Traefik chooses among them by SNI against each certificate's own names
// (see tlsConfig); tlsVerdicts says where that differs from the Gateway
// API's per-listener choice. It returns nil when m has no TLS listener.
func buildTLS(m *translate.Model) (*tlsConfig, error) {
	var tc tlsConfig
	seen := map[certAndStores]bool{}
	for _, l := range m.Listeners {
		if !l.TLS {
			continue
		}
		for _, vh := range l.VirtualHosts {
			c := vh.Certificate
			if c == nil {
				return nil, fmt.Errorf("TLS listener %s host %q has no certificate", l.Name, vh.Hostname)
			}
			for _, p := range []string{c.CertFile, c.KeyFile} {
				if err := translate.CheckFilePath(p); err != nil {
					return nil, fmt.Errorf("listener %s host %q: %w", l.Name, vh.Hostname, err)
				}
			}
			ca := certAndStores{CertFile: c.CertFile, KeyFile: c.KeyFile}
			if vh.Hostname == "" {
				if tc.Stores == nil {
					tc.Stores = map[string]*tlsStore{defaultStore: {DefaultCertificate: &ca}}
				}
				continue
			}
			if !seen[ca] {
				seen[ca] = true
				tc.Certificates = append(tc.Certificates, &ca)
			}
		}
	}
	if tc.Certificates == nil && tc.Stores == nil {
		return nil, nil
	}
	return &tc, nil
}
