//go:build unix

package dataplane

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// traefikAPIEntryPoint is the entry point the test copy of the static
// configuration adds for Traefik's API. Traefik's insecure API mode serves
// it on the entry point of this name.
const traefikAPIEntryPoint = "traefik"

// TraefikConfig is a copy of a generated Traefik configuration,
// written by WriteTraefikConfig.
type TraefikConfig struct {
	// StaticPath and DynamicPath are the copies of traefik.yaml and
	// dynamic.yaml; the static copy reads the dynamic copy by its absolute
	// path.
	StaticPath, DynamicPath string
	// EntryPoints maps each entry point of the static configuration to the
	// address it listens on in the copy.
	EntryPoints map[string]string
	// API is the loopback address of Traefik's API (/api/rawdata), served on
	// an extra entry point named "traefik".
	API string
	// Dynamic is the dynamic configuration as written.
	Dynamic []byte
}

// WriteTraefikConfig writes a copy of a generated configuration to dir:
// every entry point listens on addrs[name] when given, else on a port from
// ports; the file provider reads the copy of dynamic by its absolute path;
// Traefik's API is enabled on another port from ports. Start it with
// StartTraefik(bin, cfg.StaticPath, cfg.API).
func WriteTraefikConfig(dir string, static, dynamic []byte, addrs map[string]string, ports *Ports) (*TraefikConfig, error) {
	cfg := &TraefikConfig{
		StaticPath:  filepath.Join(dir, "traefik.yaml"),
		DynamicPath: filepath.Join(dir, "dynamic.yaml"),
		Dynamic:     dynamic,
	}
	if err := os.WriteFile(cfg.DynamicPath, dynamic, 0o644); err != nil {
		return nil, fmt.Errorf("writing Traefik's configuration: %w", err)
	}
	testStatic, err := cfg.rewriteStatic(static, addrs, ports)
	if err != nil {
		return nil, fmt.Errorf("rewriting traefik.yaml: %w", err)
	}
	if err := os.WriteFile(cfg.StaticPath, testStatic, 0o644); err != nil {
		return nil, fmt.Errorf("writing Traefik's configuration: %w", err)
	}
	return cfg, nil
}

// TraefikErrorLines returns the log lines at level error or fatal.
func TraefikErrorLines(logs string) []string {
	return traefikErrorLines(logs)
}

// traefikErrorLines returns the log lines at level error or fatal.
func traefikErrorLines(logs string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, " ERR ") || strings.Contains(l, " FTL ") || strings.Contains(l, "level=error") {
			out = append(out, l)
		}
	}
	return out
}

// WaitLoaded waits until Traefik's API shows every router, middleware and
// service of the dynamic configuration (from the file provider) enabled and
// without errors, and every router with the rule the file gives it.
func (cfg *TraefikConfig) WaitLoaded(p *Proxy, timeout time.Duration) error {
	want, err := traefikObjects(cfg.Dynamic)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	var last error
	for time.Now().Before(deadline) {
		if done, err := p.Exited(); done {
			return fmt.Errorf("traefik exited: %v", err)
		}
		got, err := traefikRawData(client, cfg.API)
		if err == nil {
			if last = compareTraefikObjects(want, got); last == nil {
				return nil
			}
		} else {
			last = err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("after %s: %w", timeout, last)
}

// traefikRuntime is the part of /api/rawdata the check reads.
type traefikRuntime struct {
	Routers     map[string]traefikRuntimeObject `json:"routers"`
	Middlewares map[string]traefikRuntimeObject `json:"middlewares"`
	Services    map[string]traefikRuntimeObject `json:"services"`
}

type traefikRuntimeObject struct {
	Rule   string   `json:"rule"`
	Status string   `json:"status"`
	Err    []string `json:"error"`
}

func traefikRawData(client *http.Client, api string) (*traefikRuntime, error) {
	resp, err := client.Get("http://" + api + "/api/rawdata")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("API answered %s", resp.Status)
	}
	var rt traefikRuntime
	if err := json.NewDecoder(resp.Body).Decode(&rt); err != nil {
		return nil, fmt.Errorf("decoding /api/rawdata: %w", err)
	}
	return &rt, nil
}

// traefikObjects reads the names (and router rules) of dynamic's HTTP
// objects, as the API names them ("name@file").
func traefikObjects(dynamic []byte) (*traefikRuntime, error) {
	var d struct {
		HTTP struct {
			Routers     map[string]struct{ Rule string } `json:"routers"`
			Middlewares map[string]any                   `json:"middlewares"`
			Services    map[string]any                   `json:"services"`
		} `json:"http"`
	}
	if err := yaml.Unmarshal(dynamic, &d); err != nil {
		return nil, fmt.Errorf("reading dynamic.yaml: %w", err)
	}
	want := &traefikRuntime{Routers: map[string]traefikRuntimeObject{}, Middlewares: map[string]traefikRuntimeObject{},
		Services: map[string]traefikRuntimeObject{}}
	for n, r := range d.HTTP.Routers {
		want.Routers[n+"@file"] = traefikRuntimeObject{Rule: r.Rule}
	}
	for n := range d.HTTP.Middlewares {
		want.Middlewares[n+"@file"] = traefikRuntimeObject{}
	}
	for n := range d.HTTP.Services {
		want.Services[n+"@file"] = traefikRuntimeObject{}
	}
	return want, nil
}

func compareTraefikObjects(want, got *traefikRuntime) error {
	for _, kind := range []struct {
		name      string
		want, got map[string]traefikRuntimeObject
	}{{"router", want.Routers, got.Routers}, {"middleware", want.Middlewares, got.Middlewares},
		{"service", want.Services, got.Services}} {
		var fromFile []string
		for n := range kind.got {
			if strings.HasSuffix(n, "@file") {
				fromFile = append(fromFile, n)
			}
		}
		if len(fromFile) != len(kind.want) {
			return fmt.Errorf("Traefik has %d %ss from the file, dynamic.yaml has %d", len(fromFile), kind.name, len(kind.want))
		}
		slices.Sort(fromFile)
		for _, n := range fromFile {
			w, ok := kind.want[n]
			if !ok {
				return fmt.Errorf("Traefik has %s %s, which dynamic.yaml does not", kind.name, n)
			}
			g := kind.got[n]
			if g.Status != "enabled" || len(g.Err) > 0 {
				return fmt.Errorf("%s %s is %q: %s", kind.name, n, g.Status, strings.Join(g.Err, "; "))
			}
			if g.Rule != w.Rule {
				return fmt.Errorf("router %s has rule %q, dynamic.yaml says %q", n, g.Rule, w.Rule)
			}
		}
	}
	return nil
}

// rewriteStatic returns the test copy of a static configuration and sets
// cfg's addresses.
func (cfg *TraefikConfig) rewriteStatic(static []byte, addrs map[string]string, ports *Ports) ([]byte, error) {
	var st map[string]any
	if err := yaml.Unmarshal(static, &st); err != nil {
		return nil, err
	}
	eps, _ := st["entryPoints"].(map[string]any)
	if eps == nil {
		eps = map[string]any{}
	}
	if _, taken := eps[traefikAPIEntryPoint]; taken {
		return nil, fmt.Errorf("entry point %q is reserved for the test API", traefikAPIEntryPoint)
	}
	cfg.EntryPoints = map[string]string{}
	for name, v := range eps {
		ep, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("entry point %s is not a map", name)
		}
		addr := addrs[name]
		if addr == "" {
			var err error
			if addr, err = ports.Addr(); err != nil {
				return nil, err
			}
		}
		ep["address"] = addr
		cfg.EntryPoints[name] = addr
	}
	api, err := ports.Addr()
	if err != nil {
		return nil, err
	}
	cfg.API = api
	eps[traefikAPIEntryPoint] = map[string]any{"address": api}
	st["entryPoints"] = eps
	st["api"] = map[string]any{"insecure": true, "dashboard": false}
	// The default providersThrottleDuration (2s) delays even the first
	// configuration.
	st["providers"] = map[string]any{"providersThrottleDuration": "50ms",
		"file": map[string]any{"filename": cfg.DynamicPath}}
	return yaml.Marshal(st)
}
