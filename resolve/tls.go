package resolve

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/gwretry/gwretry/translate"
)

// certificate maps the first certificateRef of an HTTPS listener to files
// under --tls-dir. It returns why the listener cannot be generated ("" when
// it can) and, for files that are missing, an input error.
func (r *resolver) certificate(gw *gwv1.Gateway, gwNS string, l gwv1.Listener) (*translate.Certificate, string) {
	if r.opts.TLSDir == "" {
		return nil, "gwretry generates HTTPS listeners only with --tls-dir DIR (certificates in DIR/NAMESPACE/NAME/tls.crt and tls.key)"
	}
	if l.TLS == nil || len(l.TLS.CertificateRefs) == 0 {
		return nil, "the listener has no tls.certificateRefs"
	}
	if l.TLS.Mode != nil && *l.TLS.Mode == gwv1.TLSModePassthrough {
		return nil, "TLS Passthrough is not generated (it needs a TLSRoute)"
	}
	ref := l.TLS.CertificateRefs[0]
	if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
		return nil, fmt.Sprintf("its certificateRef is a %s, only Secrets are read", derefKind(ref.Kind))
	}
	ns := gwNS
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	if ns != gwNS && !r.grantedTo(gwv1.GroupName, "Gateway", gwNS, "", "Secret", ns, string(ref.Name)) {
		return nil, fmt.Sprintf("no ReferenceGrant in namespace %s permits Gateways from %s to refer to Secret %s", ns, gwNS, ref.Name)
	}
	dir := filepath.Join(r.opts.TLSDir, ns, string(ref.Name))
	c := &translate.Certificate{Secret: ns + "/" + string(ref.Name), CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	src := map[string]string{}
	for _, p := range []*string{&c.CertFile, &c.KeyFile} {
		if _, err := os.Stat(*p); err != nil {
			return nil, fmt.Sprintf("the certificate of Secret %s is not in --tls-dir: %v", c.Secret, err)
		}
		read := *p
		if r.opts.CertDir != "" {
			// Where the proxy host keeps it: slash paths, whatever
			// the directory and the OS gwretry read it on.
			*p = path.Join(r.opts.CertDir, ns, string(ref.Name), filepath.Base(read))
		}
		if err := translate.CheckFilePath(*p); err != nil {
			return nil, err.Error()
		}
		src[*p] = read
	}
	if r.certSources == nil {
		r.certSources = map[string]string{}
	}
	maps.Copy(r.certSources, src)
	if len(l.TLS.CertificateRefs) > 1 {
		r.info("Gateway "+gwNS+"/"+gw.Name, "listener %s: only its first certificateRef (Secret %s) is used", l.Name, c.Secret)
	}
	return c, ""
}
