package backends

import (
	"slices"

	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/backends/grpc"
	"github.com/gwretry/gwretry/backends/haproxy"
	"github.com/gwretry/gwretry/backends/linkerd"
	"github.com/gwretry/gwretry/backends/nginx"
	"github.com/gwretry/gwretry/backends/openshift"
	"github.com/gwretry/gwretry/backends/traefik"
	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/translate"
)

// Target is one row of the registry: what gwretry knows of a target
// besides its package. What it serves is its Backend's Scope().
type Target struct {
	// Name is the target's name on the command line: its Backend's
	// Name().
	Name string
	// New returns the backend with the settings of its Flags (nil: every
	// default), or an error when a setting is not allowed.
	New func(Settings) (translate.Backend, error)
	// Flags are the target's own flags of translate, check and explain,
	// which the commands define from the row.
	Flags []Flag
	// Files are every file the target may write, relative to the output
	// directory (translate -o DIR), whatever its settings.
	Files []string
	// Live is the data plane binary that gwretry prove and the tests run
	// on the target's configuration (how to find it, read its version and
	// start it on an output directory); nil when there is none.
	Live *dataplane.Kind
}

// Flag is a string flag of one target: its value is Settings[Name].
type Flag struct {
	Name, Default, Usage string
}

// registry is every target, in the order --target all runs them.
var registry = []Target{
	{
		Name:  "envoy",
		New:   func(Settings) (translate.Backend, error) { return envoy.New(), nil },
		Files: []string{envoy.OutputPath},
		Live:  dataplane.KindOf("envoy"),
	},
	{
		Name: "grpc",
		New: func(s Settings) (translate.Backend, error) {
			return grpc.NewWithConfig(grpc.Config{RetryThrottling: s["grpc-retry-throttling"]})
		},
		Flags: []Flag{{Name: "grpc-retry-throttling",
			Usage: "`MAXTOKENS,TOKENRATIO` of the gRPC service config's retryThrottling (e.g. 10,0.1); none by default"}},
		Files: []string{"grpc/service-config.json"},
	},
	{
		Name:  "haproxy",
		New:   func(Settings) (translate.Backend, error) { return haproxy.New(), nil },
		Files: []string{haproxy.OutputPath},
		Live:  dataplane.KindOf("haproxy"),
	},
	{
		Name:  "linkerd",
		New:   func(Settings) (translate.Backend, error) { return linkerd.New(), nil },
		Files: []string{"linkerd/httproutes.yaml"},
	},
	{
		Name: "nginx",
		New: func(s Settings) (translate.Backend, error) {
			return nginx.NewWithConfig(nginx.Config{Layout: s["nginx-layout"]})
		},
		Flags: []Flag{{Name: "nginx-layout", Default: nginx.LayoutFull,
			Usage: "nginx output: full (nginx/nginx.conf, a whole configuration) or conf.d (nginx/gwretry.conf, what goes inside http {}, for include /etc/nginx/conf.d/*.conf)"}},
		Files: []string{nginx.ConfigPath, nginx.ConfDPath},
		Live:  dataplane.KindOf("nginx"),
	},
	{
		Name:  "openshift",
		New:   func(Settings) (translate.Backend, error) { return openshift.New(), nil },
		Files: []string{openshift.PatchPath, openshift.EnvPath},
	},
	{
		Name: "traefik",
		New: func(s Settings) (translate.Backend, error) {
			return traefik.NewWithConfig(traefik.Config{DynamicFile: s["traefik-dynamic-file"]})
		},
		Flags: []Flag{{Name: "traefik-dynamic-file", Default: traefik.DynamicFile,
			Usage: "`PATH` traefik.yaml loads dynamic.yaml from (providers.file.filename)"}},
		Files: []string{"traefik/traefik.yaml", "traefik/dynamic.yaml"},
		Live:  dataplane.KindOf("traefik"),
	},
}

// Targets returns every row of the registry, in the order of All.
func Targets() []Target { return slices.Clone(registry) }

// Lookup returns the row of the target named name.
func Lookup(name string) (Target, bool) {
	for _, t := range registry {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// Live returns the rows whose target has a data plane binary, in the
// order of dataplane.Kinds (the order gwretry prove names and runs them).
func Live() []Target {
	var out []Target
	for _, k := range dataplane.Kinds() {
		for _, t := range registry {
			if t.Live == k {
				out = append(out, t)
			}
		}
	}
	return out
}

// Flags returns every target's flags, in registry order.
func Flags() []Flag {
	var out []Flag
	for _, t := range registry {
		out = append(out, t.Flags...)
	}
	return out
}
