package traefik

// The structs below carry the names of Traefik's static and file-provider
// configuration (pkg/config/static, pkg/config/dynamic in traefik/traefik).
// Only the fields gwretry writes exist here: Traefik's file provider rejects
// unknown fields, so a field that one Traefik version lacks must never be
// written for it (see versions.go).

// staticConfig is traefik.yaml.
type staticConfig struct {
	Global      globalConfig          `json:"global"`
	Log         logConfig             `json:"log"`
	EntryPoints map[string]entryPoint `json:"entryPoints"`
	Providers   providersConfig       `json:"providers"`
}

type globalConfig struct {
	CheckNewVersion    bool `json:"checkNewVersion"`
	SendAnonymousUsage bool `json:"sendAnonymousUsage"`
}

type logConfig struct {
	Level string `json:"level"`
}

type entryPoint struct {
	Address   string               `json:"address"`
	Transport *entryPointTransport `json:"transport,omitempty"`
}

type providersConfig struct {
	File fileProvider `json:"file"`
}

type fileProvider struct {
	Filename string `json:"filename"`
}

// dynamicConfig is dynamic.yaml, read by the file provider.
type dynamicConfig struct {
	HTTP httpConfig `json:"http"`
	// TLS holds the certificates of the TLS entry points (nil without
	// any): Traefik's dynamic tls section (pkg/config/dynamic
	// TLSConfiguration).
	TLS *tlsConfig `json:"tls,omitempty"`
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
	Certificates []*certAndStores     `json:"certificates,omitempty"`
	Stores       map[string]*tlsStore `json:"stores,omitempty"`
}

// certAndStores is pkg/tls CertAndStores without stores: a certificate
// without stores goes to the default store.
type certAndStores struct {
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

// tlsStore is pkg/tls Store.
type tlsStore struct {
	DefaultCertificate *certAndStores `json:"defaultCertificate,omitempty"`
}

// defaultStore is the only TLS store Traefik's routers use.
const defaultStore = "default"

type httpConfig struct {
	Routers           map[string]*router           `json:"routers,omitempty"`
	Middlewares       map[string]*middleware       `json:"middlewares,omitempty"`
	Services          map[string]*service          `json:"services,omitempty"`
	ServersTransports map[string]*serversTransport `json:"serversTransports,omitempty"`
}

type router struct {
	EntryPoints []string `json:"entryPoints"`
	Rule        string   `json:"rule"`
	Priority    int      `json:"priority"`
	Middlewares []string `json:"middlewares,omitempty"`
	Service     string   `json:"service"`
	// TLS, when set (written "tls: {}"), makes the router serve TLS
	// connections only, terminated with the default store's certificates;
	// without it the router serves plain HTTP only.
	TLS *routerTLS `json:"tls,omitempty"`
}

// routerTLS is pkg/config/dynamic RouterTLSConfig with none of its fields:
// the default TLS options and store.
type routerTLS struct{}

type middleware struct {
	Retry            *retry            `json:"retry,omitempty"`
	Errors           *errorPage        `json:"errors,omitempty"`
	Headers          *headers          `json:"headers,omitempty"`
	RedirectRegex    *redirectRegex    `json:"redirectRegex,omitempty"`
	ReplacePath      *replacePath      `json:"replacePath,omitempty"`
	ReplacePathRegex *replacePathRegex `json:"replacePathRegex,omitempty"`
}

// headers is Traefik's headers middleware, with only the custom header
// maps (pkg/middlewares/headers/header.go): each request header is set
// (req.Header.Set; "Host" sets req.Host, which the proxy sends because
// passHostHeader is on by default), each response header is set on the
// response, and an empty value deletes the header instead.
type headers struct {
	CustomRequestHeaders  map[string]string `json:"customRequestHeaders,omitempty"`
	CustomResponseHeaders map[string]string `json:"customResponseHeaders,omitempty"`
}

// redirectRegex is Traefik's redirectRegex middleware
// (pkg/middlewares/redirect): when Regex matches the request's URL
// ("scheme://" + Host header + request URI), the client is redirected to
// Regex.ReplaceAllString(url, Replacement), unless that equals the URL
// (then the request goes on). The status is 302 for GET and 307 for other
// methods, or 301 and 308 when Permanent.
type redirectRegex struct {
	Regex       string `json:"regex"`
	Replacement string `json:"replacement"`
	Permanent   bool   `json:"permanent,omitempty"`
}

// replacePath replaces the request's path with Path and adds the old path
// in an X-Replaced-Path request header (pkg/middlewares/replacepath).
type replacePath struct {
	Path string `json:"path"`
}

// replacePathRegex replaces the request's (escaped) path by
// Regex.ReplaceAllString(path, Replacement) when Regex matches, adding the
// old path in an X-Replaced-Path request header.
type replacePathRegex struct {
	Regex       string `json:"regex"`
	Replacement string `json:"replacement"`
}

// errorPage is Traefik's errors middleware (ErrorPage): a response whose
// status is in Status is replaced by what Service answers at Query, with
// the status rewritten by StatusRewrites. gwretry uses it only to turn the
// 418 of noop@internal into the Gateway API's 500.
type errorPage struct {
	Status         []string       `json:"status"`
	StatusRewrites map[string]int `json:"statusRewrites"`
	Service        string         `json:"service"`
	Query          string         `json:"query"`
}

// retry is Traefik's Retry middleware. Attempts counts every try, the first
// included. Status, Timeout and RetryNonIdempotentMethod exist from Traefik
// 3.7 only.
type retry struct {
	Attempts                 int      `json:"attempts"`
	InitialInterval          string   `json:"initialInterval,omitempty"`
	Status                   []string `json:"status,omitempty"`
	Timeout                  string   `json:"timeout,omitempty"`
	RetryNonIdempotentMethod bool     `json:"retryNonIdempotentMethod,omitempty"`
	// MaxRequestBodyBytes is the largest body buffered for a status
	// retry; a larger body is not retried on a status. 3.7 only.
	MaxRequestBodyBytes *int64 `json:"maxRequestBodyBytes,omitempty"`
}

// service is either a load balancer over servers or a weighted service over
// other services.
type service struct {
	LoadBalancer *loadBalancer `json:"loadBalancer,omitempty"`
	Weighted     *weighted     `json:"weighted,omitempty"`
	Mirroring    *mirroring    `json:"mirroring,omitempty"`
}

// mirroring is Traefik's mirroring service
// (pkg/server/service/loadbalancer/mirror): every request goes to Service,
// whose answer the client gets; once it has answered, a copy (body
// included: mirrorBody and maxBodySize keep their defaults, true and -1)
// goes to each mirror whose count is below Percent of the requests so far,
// and the mirror's answer is discarded.
type mirroring struct {
	Service string          `json:"service"`
	Mirrors []mirrorService `json:"mirrors"`
}

type mirrorService struct {
	Name    string `json:"name"`
	Percent int    `json:"percent"`
}

type loadBalancer struct {
	Servers          []server `json:"servers"`
	ServersTransport string   `json:"serversTransport,omitempty"`
}

type server struct {
	URL string `json:"url"`
}

type weighted struct {
	Services []weightedService `json:"services"`
}

// weightedService is written with its weight even when it is 0: Traefik
// ignores a child with a non-positive weight, as the Gateway API asks.
type weightedService struct {
	Name   string `json:"name"`
	Weight int    `json:"weight"`
}

// serversTransport configures the connections to a service's servers.
// MaxIdleConnsPerHost -1 turns upstream keep-alive off: Go's transport
// then never reuses a connection, so it never re-sends a request on its own
// after a reused connection closed (see findings.go).
type serversTransport struct {
	MaxIdleConnsPerHost int                 `json:"maxIdleConnsPerHost,omitempty"`
	ForwardingTimeouts  *forwardingTimeouts `json:"forwardingTimeouts,omitempty"`
}

type forwardingTimeouts struct {
	DialTimeout           string `json:"dialTimeout,omitempty"`
	ResponseHeaderTimeout string `json:"responseHeaderTimeout,omitempty"`
}
