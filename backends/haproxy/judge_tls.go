package haproxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	parser "github.com/haproxytech/client-native/v5/config-parser"
	"github.com/haproxytech/client-native/v5/config-parser/params"
	"github.com/haproxytech/client-native/v5/config-parser/types"

	"github.com/gwretry/gwretry/translate"
)

// tlsView is what haproxy.cfg and its crt-lists say about the TLS of one
// frontend. translate.Behaviour has no field for it (it is per rule, TLS
// per listener), so the judge compares it with the Model itself
// (checkTLS) and fails Observe on any difference.
type tlsView struct {
	// terminates: the bind line has ssl.
	terminates bool
	// defaultCert is the certificate HAProxy presents for an SNI name no
	// filter matches: the first of the crt-list.
	defaultCert string
	// sni is the certificate of each SNI filter (a hostname or
	// "*.example.com").
	sni map[string]string
	// keys is the key file HAProxy reads for each certificate ("" when it
	// reads it from the certificate file only).
	keys map[string]string
	// alpn is the bind line's ALPN list ("" when unset: HAProxy 2.8 and
	// later then offer h2).
	alpn string
}

// readTLS reads the bind line of every frontend and the crt-list files it
// names.
func readTLS(p *cfgSections, files []translate.File) (map[string]tlsView, error) {
	c := cfgReader{p: p}
	extra := "all" // HAProxy's default
	if v, ok := c.get(parser.Global, parser.GlobalSectionName, "ssl-load-extra-files").(*types.StringC); ok {
		extra = v.Value
	}
	_, delExt := c.get(parser.Global, parser.GlobalSectionName, "ssl-load-extra-del-ext").(*types.Enabled)
	if c.err != nil {
		return nil, c.err
	}
	keyOf := func(cert string) string {
		if !slices.ContainsFunc(strings.Fields(extra), func(w string) bool { return w == "all" || w == "key" }) {
			return ""
		}
		if delExt {
			return keyPath(cert)
		}
		return cert + ".key"
	}
	fes, err := p.SectionsGet(parser.Frontends)
	if err != nil {
		return nil, fmt.Errorf("listing frontends: %w", err)
	}
	out := map[string]tlsView{}
	for _, fe := range fes {
		binds, _ := c.get(parser.Frontends, fe, "bind").([]types.Bind)
		if c.err != nil {
			return nil, c.err
		}
		v := tlsView{sni: map[string]string{}, keys: map[string]string{}}
		for _, b := range binds {
			for _, o := range b.Params {
				switch o := o.(type) {
				case *params.BindOptionWord:
					if o.Name != "ssl" {
						return nil, fmt.Errorf("frontend %s: bind option %s is not one gwretry writes", fe, o.Name)
					}
					v.terminates = true
				case *params.BindOptionValue:
					if o.Name == "alpn" {
						if o.Value != tlsALPN {
							return nil, fmt.Errorf("frontend %s: bind option alpn %s, gwretry writes alpn %s", fe, o.Value, tlsALPN)
						}
						v.alpn = o.Value
						continue
					}
					if o.Name != "crt-list" {
						return nil, fmt.Errorf("frontend %s: bind option %s %s is not one gwretry writes", fe, o.Name, o.Value)
					}
					data, err := translate.FileData(files, o.Value)
					if err != nil {
						return nil, fmt.Errorf("frontend %s: crt-list %s: %w", fe, o.Value, err)
					}
					lines, err := parseCrtList(data)
					if err != nil {
						return nil, fmt.Errorf("frontend %s: crt-list %s: %w", fe, o.Value, err)
					}
					for i, l := range lines {
						if v.defaultCert == "" && i == 0 {
							v.defaultCert = l.cert
						}
						v.keys[l.cert] = keyOf(l.cert)
						switch {
						case strings.HasPrefix(l.filter, "!"):
							// A negative filter alone: the line is a
							// candidate for no name.
						case v.sni[l.filter] != "":
							// HAProxy takes the first line of a name.
						default:
							v.sni[l.filter] = l.cert
						}
					}
				default:
					return nil, fmt.Errorf("frontend %s: bind option %T is not one gwretry writes", fe, o)
				}
			}
		}
		out[strings.TrimPrefix(fe, "fe_")] = v
	}
	return out, nil
}

// checkTLS compares the TLS read back with the Model: every HTTPS listener
// terminates TLS with its catch-all certificate as the default and each
// hostname's certificate (and key) for that SNI name; no HTTP listener
// terminates TLS.
func checkTLS(m *translate.Model, views map[string]tlsView) error {
	for _, l := range m.Listeners {
		v, ok := views[l.Name]
		if !ok {
			return fmt.Errorf("listener %s: no frontend fe_%s", l.Name, l.Name)
		}
		if v.terminates != l.TLS {
			return fmt.Errorf("listener %s: TLS is %v in the model, but frontend fe_%s has ssl %v", l.Name, l.TLS, l.Name, v.terminates)
		}
		if v.terminates && v.alpn != tlsALPN {
			return fmt.Errorf("listener %s: frontend fe_%s has no alpn %s, so HAProxy 2.8 and later offer HTTP/2 where the finding says HTTP/1.1", l.Name, l.Name, tlsALPN)
		}
		if !l.TLS {
			continue
		}
		want := map[string]string{}
		for _, vh := range l.VirtualHosts {
			c := vh.Certificate
			if vh.Hostname == "" {
				if v.defaultCert != c.CertFile {
					return fmt.Errorf("listener %s: the default certificate is %s, want the catch-all host's %s", l.Name, v.defaultCert, c.CertFile)
				}
				continue
			}
			want[vh.Hostname] = c.CertFile
		}
		if !maps.Equal(v.sni, want) {
			return fmt.Errorf("listener %s: certificates by SNI name are %v, want %v", l.Name, v.sni, want)
		}
		for _, vh := range l.VirtualHosts {
			if c := vh.Certificate; v.keys[c.CertFile] != c.KeyFile {
				return fmt.Errorf("listener %s host %q: HAProxy reads the key of %s from %q, want %s", l.Name, vh.Hostname, c.CertFile, v.keys[c.CertFile], c.KeyFile)
			}
		}
	}
	return nil
}
