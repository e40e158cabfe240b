package traefik

// The structs below carry the names of Traefik's static and file-provider
// configuration (pkg/config/static, pkg/config/dynamic in traefik/traefik).
// Only the fields gwretry writes exist here: Traefik's file provider rejects
// unknown fields, so a field that one Traefik version lacks must never be
// written for it (see versions.go).

// staticConfig is traefik.yaml.
type staticConfig struct {
	Global      globalConfig          `json:"global" yaml:"global"`
	Log         logConfig             `json:"log" yaml:"log"`
	EntryPoints map[string]entryPoint `json:"entryPoints" yaml:"entryPoints"`
	Providers   providersConfig       `json:"providers" yaml:"providers"`
}

type globalConfig struct {
	CheckNewVersion    bool `json:"checkNewVersion" yaml:"checkNewVersion"`
	SendAnonymousUsage bool `json:"sendAnonymousUsage" yaml:"sendAnonymousUsage"`
}

type logConfig struct {
	Level string `json:"level" yaml:"level"`
}

type entryPoint struct {
	Address   string               `json:"address" yaml:"address"`
	Transport *entryPointTransport `json:"transport,omitempty" yaml:"transport,omitempty"`
}

type providersConfig struct {
	File fileProvider `json:"file" yaml:"file"`
}

type fileProvider struct {
	Filename string `json:"filename" yaml:"filename"`
}

// dynamicConfig is dynamic.yaml, read by the file provider.
type dynamicConfig struct {
	HTTP httpConfig `json:"http" yaml:"http"`
	// TLS holds the certificates of the TLS entry points (nil without
	// any): Traefik's dynamic tls section (pkg/config/dynamic
	// TLSConfiguration).
	TLS *tlsConfig `json:"tls,omitempty" yaml:"tls,omitempty"`
}

// tlsConfig is the dynamic tls section. Traefik keeps every certificate
// in one store ("default", the only one routers use) shared by all entry
// points, and picks the certificate of a TLS connection by matching the
// SNI name against each certificate's common name and DNS SANs
// (pkg/tls/certificate_store.go GetBestCertificate: an exact name or a
// one-label "*." wildcard; among several, the lexicographically greatest
// matching SAN). With none matching, it presents the store's
// defaultCertificate.
type tlsConfig struct {
	Certificates []*certAndStores     `json:"certificates,omitempty" yaml:"certificates,omitempty"`
	Stores       map[string]*tlsStore `json:"stores,omitempty" yaml:"stores,omitempty"`
	// Options holds the default TLS options (the only ones gwretry's
	// routers use) when they differ from Traefik's: sniStrict.
	Options map[string]*tlsOptions `json:"options,omitempty" yaml:"options,omitempty"`
}

// tlsOptions is pkg/tls Options with only sniStrict. Under the name
// "default" they are the TLS options of every router without its own;
// Traefik's file provider sets the defaults of the fields not written
// (ALPN h2 and http/1.1, the cipher suites) as for its built-in default.
// With SniStrict, a handshake whose SNI name (the local IP address when
// the ClientHello has none) no certificate of the store names is refused
// (pkg/tls/tlsmanager.go Get: GetBestCertificate found none, and the
// store's default certificate is not presented).
type tlsOptions struct {
	SniStrict bool `json:"sniStrict,omitempty" yaml:"sniStrict,omitempty"`
}

// defaultOptions is the name of the TLS options every router here uses.
const defaultOptions = "default"

// certAndStores is pkg/tls CertAndStores without stores: a certificate
// without stores goes to the default store.
type certAndStores struct {
	CertFile string `json:"certFile" yaml:"certFile"`
	KeyFile  string `json:"keyFile" yaml:"keyFile"`
}

// tlsStore is pkg/tls Store.
type tlsStore struct {
	DefaultCertificate *certAndStores `json:"defaultCertificate,omitempty" yaml:"defaultCertificate,omitempty"`
}

// defaultStore is the only TLS store Traefik's routers use.
const defaultStore = "default"

type httpConfig struct {
	Routers           map[string]*router           `json:"routers,omitempty" yaml:"routers,omitempty"`
	Middlewares       map[string]*middleware       `json:"middlewares,omitempty" yaml:"middlewares,omitempty"`
	Services          map[string]*service          `json:"services,omitempty" yaml:"services,omitempty"`
	ServersTransports map[string]*serversTransport `json:"serversTransports,omitempty" yaml:"serversTransports,omitempty"`
}

type router struct {
	EntryPoints []string `json:"entryPoints" yaml:"entryPoints"`
	Rule        string   `json:"rule" yaml:"rule"`
	Priority    int      `json:"priority" yaml:"priority"`
	Middlewares []string `json:"middlewares,omitempty" yaml:"middlewares,omitempty"`
	Service     string   `json:"service" yaml:"service"`
	// TLS, when set (written "tls: {}"), makes the router serve TLS
	// connections only, terminated with the default store's certificates;
	// without it the router serves plain HTTP only.
	TLS *routerTLS `json:"tls,omitempty" yaml:"tls,omitempty"`
}

// routerTLS is pkg/config/dynamic RouterTLSConfig with none of its fields:
// the default TLS options and store.
type routerTLS struct{}

type middleware struct {
	Retry            *retry            `json:"retry,omitempty" yaml:"retry,omitempty"`
	Errors           *errorPage        `json:"errors,omitempty" yaml:"errors,omitempty"`
	Headers          *headers          `json:"headers,omitempty" yaml:"headers,omitempty"`
	RedirectRegex    *redirectRegex    `json:"redirectRegex,omitempty" yaml:"redirectRegex,omitempty"`
	ReplacePath      *replacePath      `json:"replacePath,omitempty" yaml:"replacePath,omitempty"`
	ReplacePathRegex *replacePathRegex `json:"replacePathRegex,omitempty" yaml:"replacePathRegex,omitempty"`
}

// headers is Traefik's headers middleware, with only the custom header
// maps (pkg/middlewares/headers/header.go): each request header is set
// (req.Header.Set; "Host" sets req.Host, which the proxy sends because
// passHostHeader is on by default), each response header is set on the
// response, and an empty value deletes the header instead.
type headers struct {
	CustomRequestHeaders  map[string]string `json:"customRequestHeaders,omitempty" yaml:"customRequestHeaders,omitempty"`
	CustomResponseHeaders map[string]string `json:"customResponseHeaders,omitempty" yaml:"customResponseHeaders,omitempty"`
}

// redirectRegex is Traefik's redirectRegex middleware
// (pkg/middlewares/redirect): when Regex matches the request's URL
// ("scheme://" + Host header + request URI), the client is redirected to
// Regex.ReplaceAllString(url, Replacement), unless that equals the URL
// (then the request goes on). The status is 302 for GET and 307 for other
// methods, or 301 and 308 when Permanent.
type redirectRegex struct {
	Regex       string `json:"regex" yaml:"regex"`
	Replacement string `json:"replacement" yaml:"replacement"`
	Permanent   bool   `json:"permanent,omitempty" yaml:"permanent,omitempty"`
}

// replacePath replaces the request's path with Path and adds the old path
// in an X-Replaced-Path request header (pkg/middlewares/replacepath).
type replacePath struct {
	Path string `json:"path" yaml:"path"`
}

// replacePathRegex replaces the request's (escaped) path by
// Regex.ReplaceAllString(path, Replacement) when Regex matches, adding the
// old path in an X-Replaced-Path request header.
type replacePathRegex struct {
	Regex       string `json:"regex" yaml:"regex"`
	Replacement string `json:"replacement" yaml:"replacement"`
}

// errorPage is Traefik's errors middleware (ErrorPage): a response whose
// status is in Status is replaced by what Service answers at Query, with
// the status rewritten by StatusRewrites. gwretry uses it only to turn the
// 418 of noop@internal into the Gateway API's 500.
type errorPage struct {
	Status         []string       `json:"status" yaml:"status"`
	StatusRewrites map[string]int `json:"statusRewrites" yaml:"statusRewrites"`
	Service        string         `json:"service" yaml:"service"`
	Query          string         `json:"query" yaml:"query"`
}

// retry is Traefik's Retry middleware. Attempts counts every try, the first
// included. Status, Timeout and RetryNonIdempotentMethod exist from Traefik
// 3.7 only.
type retry struct {
	Attempts                 int      `json:"attempts" yaml:"attempts"`
	InitialInterval          string   `json:"initialInterval,omitempty" yaml:"initialInterval,omitempty"`
	Status                   []string `json:"status,omitempty" yaml:"status,omitempty"`
	Timeout                  string   `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	RetryNonIdempotentMethod bool     `json:"retryNonIdempotentMethod,omitempty" yaml:"retryNonIdempotentMethod,omitempty"`
	// MaxRequestBodyBytes is the largest body buffered for a status
	// retry; a larger body is not retried on a status. 3.7 only.
	MaxRequestBodyBytes *int64 `json:"maxRequestBodyBytes,omitempty" yaml:"maxRequestBodyBytes,omitempty"`
}

// service is either a load balancer over servers or a weighted service over
// other services.
type service struct {
	LoadBalancer *loadBalancer `json:"loadBalancer,omitempty" yaml:"loadBalancer,omitempty"`
	Weighted     *weighted     `json:"weighted,omitempty" yaml:"weighted,omitempty"`
	Mirroring    *mirroring    `json:"mirroring,omitempty" yaml:"mirroring,omitempty"`
}

// mirroring is Traefik's mirroring service
// (pkg/server/service/loadbalancer/mirror): every request goes to Service,
// whose answer the client gets; once it has answered, a copy (body
// included: mirrorBody and maxBodySize keep their defaults, true and -1)
// goes to each mirror whose count is below Percent of the requests so far,
// and the mirror's answer is discarded.
type mirroring struct {
	Service string          `json:"service" yaml:"service"`
	Mirrors []mirrorService `json:"mirrors" yaml:"mirrors"`
}

type mirrorService struct {
	Name    string `json:"name" yaml:"name"`
	Percent int    `json:"percent" yaml:"percent"`
}

type loadBalancer struct {
	Servers          []server `json:"servers" yaml:"servers"`
	ServersTransport string   `json:"serversTransport,omitempty" yaml:"serversTransport,omitempty"`
}

type server struct {
	URL string `json:"url" yaml:"url"`
}

type weighted struct {
	Services []weightedService `json:"services" yaml:"services"`
}

// weightedService is written with its weight even when it is 0: Traefik
// ignores a child with a non-positive weight, as the Gateway API asks.
type weightedService struct {
	Name   string `json:"name" yaml:"name"`
	Weight int    `json:"weight" yaml:"weight"`
}

// serversTransport configures the connections to a service's servers.
// MaxIdleConnsPerHost -1 turns upstream keep-alive off: Go's transport
// then never reuses a connection, so it never re-sends a request on its own
// after a reused connection closed (see findings.go).
type serversTransport struct {
	MaxIdleConnsPerHost int                 `json:"maxIdleConnsPerHost,omitempty" yaml:"maxIdleConnsPerHost,omitempty"`
	ForwardingTimeouts  *forwardingTimeouts `json:"forwardingTimeouts,omitempty" yaml:"forwardingTimeouts,omitempty"`
}

type forwardingTimeouts struct {
	DialTimeout           string `json:"dialTimeout,omitempty" yaml:"dialTimeout,omitempty"`
	ResponseHeaderTimeout string `json:"responseHeaderTimeout,omitempty" yaml:"responseHeaderTimeout,omitempty"`
}
