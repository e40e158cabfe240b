package nginx

import (
	"fmt"
	"slices"
	"strings"

	crossplane "github.com/nginxinc/nginx-go-crossplane"

	"github.com/gwretry/gwretry/translate"
)

// The judge's side of TLS (tls.go decides the listener.https finding): it
// reads back which servers terminate TLS with which certificate and
// checks them against the model.

// listensSSL reports whether a server block's listen directive has the ssl
// parameter.
func listensSSL(server crossplane.Directives) bool {
	for _, d := range server {
		if d.Directive == "listen" && slices.Contains(d.Args, "ssl") {
			return true
		}
	}
	return false
}

// tlsSeen is what the judge reads back of the TLS of one listen address.
type tlsSeen struct {
	// SSL: some server on the address listens with ssl, which nginx
	// applies to the whole address; Plain: some server lacks it.
	SSL, Plain bool
	// Certs are the certificate and key files of each server_name ("" for
	// the catch-all) on the address.
	Certs map[string]translate.Certificate
	// Default is the server_name of the default_server; Rejects: that
	// server refuses the handshake (ssl_reject_handshake on).
	HasDefault bool
	Default    string
	Rejects    bool
}

// readTLSInto reads, per listen address, which servers terminate TLS and with
// which certificate files each SNI name is answered.
// It adds the server blocks of http to out, for reading them a batch at
// a time.
func readTLSInto(out map[string]*tlsSeen, http crossplane.Directives) error {
	for _, d := range http {
		if d.Directive != "server" {
			continue
		}
		var addr, name, cert, key string
		var ssl, def, reject bool
		for _, x := range d.Block {
			switch x.Directive {
			case "listen":
				if len(x.Args) == 0 {
					return fmt.Errorf("listen without an address")
				}
				addr = x.Args[0]
				ssl = slices.Contains(x.Args[1:], "ssl")
				def = slices.Contains(x.Args[1:], "default_server")
			case "server_name":
				if len(x.Args) != 1 {
					return fmt.Errorf("server_name %q: want one name", x.Args)
				}
				name = x.Args[0]
			case "ssl_certificate":
				cert = strings.Join(x.Args, " ")
			case "ssl_certificate_key":
				key = strings.Join(x.Args, " ")
			case "ssl_reject_handshake":
				reject = slices.Equal(x.Args, []string{"on"})
			}
		}
		seen := out[addr]
		if seen == nil {
			seen = &tlsSeen{Certs: map[string]translate.Certificate{}}
			out[addr] = seen
		}
		seen.SSL = seen.SSL || ssl
		seen.Plain = seen.Plain || !ssl
		if cert != "" || key != "" {
			if _, dup := seen.Certs[name]; dup {
				return fmt.Errorf("listen %s: two servers named %q", addr, name)
			}
			seen.Certs[name] = translate.Certificate{CertFile: cert, KeyFile: key}
		}
		if def {
			if seen.HasDefault {
				return fmt.Errorf("listen %s: two default servers", addr)
			}
			seen.HasDefault, seen.Default, seen.Rejects = true, name, reject
		}
	}
	return nil
}

// checkTLS compares the TLS read back from a file with the model: every
// TLS listener's servers all listen with ssl and answer each hostname with
// its virtual host's certificate and key, the default server is the
// catch-all host's or refuses the handshake, and plain listeners have no
// TLS at all.
func checkTLS(m *translate.Model, seen map[string]*tlsSeen) error {
	for _, l := range m.Listeners {
		addr := hostPort(l.Address, l.Port)
		s := seen[addr]
		if s == nil {
			return fmt.Errorf("listener %s: no server listens on %s", l.Name, addr)
		}
		if !l.TLS {
			if s.SSL || len(s.Certs) > 0 {
				return fmt.Errorf("plain listener %s: %s terminates TLS", l.Name, addr)
			}
			continue
		}
		if s.Plain || !s.SSL {
			return fmt.Errorf("TLS listener %s: a server on %s listens without ssl", l.Name, addr)
		}
		want := map[string]translate.Certificate{}
		catchAll := false
		for _, vh := range l.VirtualHosts {
			if vh.Certificate == nil {
				return fmt.Errorf("TLS listener %s host %q has no certificate", l.Name, vh.Hostname)
			}
			want[vh.Hostname] = translate.Certificate{CertFile: vh.Certificate.CertFile, KeyFile: vh.Certificate.KeyFile}
			catchAll = catchAll || vh.Hostname == ""
		}
		for h, c := range want {
			if got, ok := s.Certs[h]; !ok || got != c {
				return fmt.Errorf("TLS listener %s: SNI %q is answered with certificate %+v, want %+v", l.Name, h, got, c)
			}
		}
		for h := range s.Certs {
			if _, ok := want[h]; !ok {
				return fmt.Errorf("TLS listener %s: server_name %q has a certificate the model does not give", l.Name, h)
			}
		}
		if !s.HasDefault || s.Default != "" || (!catchAll && !s.Rejects) {
			return fmt.Errorf("TLS listener %s: the default server is %q (refuses handshakes: %v), want the catch-all", l.Name, s.Default, s.Rejects)
		}
	}
	return nil
}
