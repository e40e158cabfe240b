// Package backends lists the data planes gwretry generates configuration
// for. Adding a data plane means adding its package and one line here.
package backends

import (
	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/backends/grpc"
	"github.com/gwretry/gwretry/backends/haproxy"
	"github.com/gwretry/gwretry/backends/linkerd"
	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/backends/openshift"
	"github.com/gwretry/gwretry/backends/traefik"
	"github.com/gwretry/gwretry/translate"
)

// All returns every backend with its default settings, in the order
// --target all runs them.
func All() []translate.Backend {
	return []translate.Backend{envoy.New(), grpc.New(), haproxy.New(), linkerd.New(), nginx.New(), openshift.New(), traefik.New()}
}

// Settings are the choices that concern one data plane's output files
// rather than the report (translate.Options holds those).
type Settings struct {
	// NginxLayout is nginx.LayoutFull ("", the default) or
	// nginx.LayoutConfD.
	NginxLayout string
	// TraefikDynamicFile is where traefik.yaml loads dynamic.yaml from;
	// "" keeps the default.
	TraefikDynamicFile string
	// GRPCRetryThrottling is the gRPC service config's retryThrottling,
	// "MAXTOKENS,TOKENRATIO"; "" for none.
	GRPCRetryThrottling string
}

// Configured returns every backend with the given settings, in the order
// of All.
func Configured(s Settings) ([]translate.Backend, error) {
	ngx, err := nginx.NewWithConfig(nginx.Config{Layout: s.NginxLayout})
	if err != nil {
		return nil, err
	}
	tr, err := traefik.NewWithConfig(traefik.Config{DynamicFile: s.TraefikDynamicFile})
	if err != nil {
		return nil, err
	}
	g, err := grpc.NewWithConfig(grpc.Config{RetryThrottling: s.GRPCRetryThrottling})
	if err != nil {
		return nil, err
	}
	return []translate.Backend{envoy.New(), g, haproxy.New(), linkerd.New(), ngx, openshift.New(), tr}, nil
}
