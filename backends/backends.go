// Package backends lists the data planes gwretry generates configuration
// for. Adding a data plane means adding its package and one line here.
package backends

import (
	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/backends/haproxy"
	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/backends/traefik"
	"github.com/gwretry/gwretry/translate"
)

// All returns every backend, in the order --target all runs them.
func All() []translate.Backend {
	return []translate.Backend{envoy.New(), haproxy.New(), nginx.New(), traefik.New()}
}
