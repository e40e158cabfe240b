package translate

// The user's choices that resolution needs (--listen, --endpoint,
// --tls-dir, --channel, ...), parsed from the flags; resolve.Build reads them.

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// ResolveOptions are the user's choices that resolution needs.
type ResolveOptions struct {
	// Listen, when set, is the one address every generated proxy binds,
	// whatever the Gateway listeners say.
	Listen *Bind
	// Endpoints override the addresses of Services (--endpoint).
	Endpoints []EndpointOverride
	// TLSDir, when set, makes HTTPS listeners generated: the certificate of
	// Secret NS/NAME is DIR/NS/NAME/tls.crt and tls.key (--tls-dir).
	TLSDir string
	// CertDir is the directory of the proxy host where the certificates
	// are: the configurations name DIR/NS/NAME/tls.crt and tls.key
	// (--cert-dir, DefaultCertDir on the command line). "" names the
	// files under TLSDir themselves, for a proxy that runs where gwretry
	// read them (the live tests).
	CertDir string
	// ListenTLS, when set, is the address every HTTPS listener binds
	// (--listen-https); Listen then applies to HTTP listeners only.
	ListenTLS *Bind
	// AssumeReferenceGrants permits every cross-namespace backendRef, for
	// inputs that lack their ReferenceGrants (--assume-reference-grants).
	AssumeReferenceGrants bool
	// Channel is the Gateway API release channel whose CRDs validate the
	// input (--channel); "" is standard.
	Channel Channel
}

// EndpointOverride is one --endpoint flag: the addresses of a Service port.
type EndpointOverride struct {
	Service string
	// Namespace is "" to match the Service in any namespace.
	Namespace string
	Port      int
	Endpoints []Endpoint
}

// ParseEndpoint parses --endpoint NAME[.NAMESPACE]:PORT=HOST:PORT[,HOST:PORT...].
func ParseEndpoint(s string) (EndpointOverride, error) {
	var o EndpointOverride
	svc, addrs, ok := strings.Cut(s, "=")
	if !ok {
		return o, fmt.Errorf("--endpoint %q: want NAME[.NAMESPACE]:PORT=HOST:PORT[,HOST:PORT...]", s)
	}
	i := strings.LastIndex(svc, ":")
	if i < 0 {
		return o, fmt.Errorf("--endpoint %q: the Service needs a port (NAME[.NAMESPACE]:PORT)", s)
	}
	port, err := strconv.Atoi(svc[i+1:])
	if err != nil || port < 1 || port > 65535 {
		return o, fmt.Errorf("--endpoint %q: %q is not a port", s, svc[i+1:])
	}
	o.Port = port
	o.Service, o.Namespace, _ = strings.Cut(svc[:i], ".")
	if !dnsLabelRE.MatchString(o.Service) || (o.Namespace != "" && !dnsLabelRE.MatchString(o.Namespace)) {
		return o, fmt.Errorf("--endpoint %q: %q is not NAME or NAME.NAMESPACE", s, svc[:i])
	}
	for _, a := range strings.Split(addrs, ",") {
		host, p, err := splitHostPort(a)
		if err != nil {
			return o, fmt.Errorf("--endpoint %q: %w", s, err)
		}
		if host == "" {
			return o, fmt.Errorf("--endpoint %q: %q has no host", s, a)
		}
		o.Endpoints = append(o.Endpoints, Endpoint{Host: host, Port: p})
	}
	return o, nil
}

// DefaultCertDir is where the configurations look for the certificates
// without --cert-dir: one directory for every data plane, which the
// deployment fills from the Secrets (NS/NAME/tls.crt and tls.key).
const DefaultCertDir = "/etc/gwretry/certs"

// DefaultPort is where the generated proxy listens when the input has no
// Gateway for a route and no --listen is given.
const DefaultPort = 8080

// Bind is an address to listen on.
type Bind struct {
	Address string
	Port    int
}

// ParseListen parses --listen HOST:PORT; an empty HOST means 0.0.0.0.
func ParseListen(s string) (*Bind, error) {
	host, port, err := splitHostPort(s)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %w", s, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return &Bind{Address: host, Port: port}, nil
}

// ParseFlags reads the --listen value (none when "") and --endpoint
// values of a run into ResolveOptions.
func ParseFlags(listen string, endpoints []string) (ResolveOptions, error) {
	var ro ResolveOptions
	if listen != "" {
		l, err := ParseListen(listen)
		if err != nil {
			return ro, err
		}
		ro.Listen = l
	}
	for _, e := range endpoints {
		ep, err := ParseEndpoint(e)
		if err != nil {
			return ro, err
		}
		ro.Endpoints = append(ro.Endpoints, ep)
	}
	return ro, nil
}

func splitHostPort(s string) (string, int, error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("want HOST:PORT: %v", err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%q is not a port (1-65535)", ps)
	}
	if host != "" {
		if err := CheckValue(KindHost, host); err != nil {
			return "", 0, err
		}
	}
	return host, port, nil
}

// Channel is the Gateway API release channel whose CRDs validation applies.
type Channel string

// The release channels.
const (
	ChannelStandard     Channel = "standard"
	ChannelExperimental Channel = "experimental"
)

// ParseChannel checks a --channel value; "" is standard.
func ParseChannel(s string) (Channel, error) {
	switch Channel(s) {
	case "", ChannelStandard:
		return ChannelStandard, nil
	case ChannelExperimental:
		return ChannelExperimental, nil
	}
	return "", fmt.Errorf("channel %q: must be standard or experimental", s)
}

// dnsLabelRE is a DNS label (RFC 1123), as the Gateway API's names.
var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
