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
	Address string `json:"address"`
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
}

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
}

type middleware struct {
	Retry  *retry     `json:"retry,omitempty"`
	Errors *errorPage `json:"errors,omitempty"`
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
