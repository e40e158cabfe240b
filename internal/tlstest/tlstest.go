// Package tlstest makes, at test time, a self-signed CA and the server
// certificates it signs, written in gwretry's --tls-dir layout:
// DIR/NAMESPACE/NAME/tls.crt (the leaf, then the CA) and tls.key
// (PKCS #8), as a Kubernetes TLS Secret holds them.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a test certificate authority and the --tls-dir it writes into.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// Pool holds Cert, for clients that verify.
	Pool *x509.CertPool
	// Dir is the --tls-dir.
	Dir    string
	serial int64
}

// New makes a CA valid from an hour ago for a day, writing under dir
// (tb.TempDir() when "").
func New(tb testing.TB, dir string) *CA {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gwretry test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{Cert: cert, Key: key, Pool: pool, Dir: dir, serial: 1}
}

// Leaf is a server certificate to sign.
type Leaf struct {
	// Namespace and Name are the Secret's.
	Namespace, Name string
	// CommonName is the subject's (the Secret's name when "").
	CommonName string
	// DNSNames are the names it serves, IPs its IP addresses (none by
	// default: a data plane may pick a certificate for an SNI-less client
	// by the address it connected to).
	DNSNames []string
	IPs      []net.IP
	// Serial is its serial number; 0 takes the CA's next one.
	Serial int64
}

// Sign signs l and writes its Secret's files; it returns the certificate.
func (ca *CA) Sign(tb testing.TB, l Leaf) *x509.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	serial := l.Serial
	if serial == 0 {
		ca.serial++
		serial = ca.serial
	}
	cn := l.CommonName
	if cn == "" {
		cn = l.Name
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		DNSNames: l.DNSNames, IPAddresses: l.IPs,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	d := filepath.Join(ca.Dir, l.Namespace, l.Name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		tb.Fatal(err)
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	if err := os.WriteFile(filepath.Join(d, "tls.crt"), chain, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return cert
}
