//go:build unix

package prove

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/translate"
)

// Live is a data plane binary that scenarios run on.
type Live struct {
	// Name is the target ("nginx"); Bin the binary's path.
	Name, Bin string
	// Version is the MAJOR.MINOR passed to --target; Full describes the
	// binary ("nginx 1.22.1").
	Version, Full string
}

// Generator writes the configuration of sc for target (NAME@VERSION) into
// dir/out, with every proxy listening on listen and the --endpoint values
// endpoints, and returns the report.
type Generator func(ctx context.Context, dir string, sc Scenario, target, listen string, endpoints []string) (*translate.Report, error)

// Run is what one scenario run on one data plane produced.
type Run struct {
	// Findings are the report's findings for the scenario's rule.
	Findings []translate.Finding
	Obs      Observation
	// Config is the generated configuration, Log the proxy's output.
	Config, Log string
	// Listen and Endpoints are the --listen and --endpoint values the
	// configuration was generated with (gwretry explain's inputs too).
	Listen    string
	Endpoints []string
}

// Observe runs one scenario on one data plane: it starts the scripted
// endpoints, generates the configuration with gen, starts the real proxy on
// loopback, sends the requests and stops everything (the proxy by its pid)
// before it returns. ctx bounds the whole run. Temporary files go under
// tmp (os.TempDir() when "").
func Observe(ctx context.Context, live Live, sc Scenario, gen Generator, tmp string) (run Run, err error) {
	dir, err := os.MkdirTemp(tmp, "gwretry-run-")
	if err != nil {
		return run, err
	}
	defer os.RemoveAll(dir)
	ports := &dataplane.Ports{}
	defer ports.Release()

	servers, endpointFlags, err := startEndpoints(sc)
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	if err != nil {
		return run, err
	}
	if sc.User == nil {
		ready, err := flaky.Start("ready")
		if err != nil {
			return run, err
		}
		defer ready.Close()
		endpointFlags = append(endpointFlags, fmt.Sprintf("ready.%s:8080=%s", Namespace, ready.Addr()))
	}
	listen, err := ports.Addr()
	if err != nil {
		return run, err
	}
	// An HTTPS scenario binds its listeners on a port of their own,
	// which the proxy is then waited on and the requests sent to.
	serveOn := listen
	if sc.User != nil && sc.User.TLS {
		if serveOn, err = ports.Addr(); err != nil {
			return run, err
		}
		u := *sc.User
		u.ListenTLS = serveOn
		sc.User = &u
	}
	run.Listen, run.Endpoints = listen, endpointFlags
	report, err := gen(ctx, dir, sc, live.Name+"@"+live.Version, listen, endpointFlags)
	if err != nil {
		return run, err
	}
	out := filepath.Join(dir, "out")
	run.Findings = RuleFindings(report, live.Name, sc.Route(), sc.RuleIndex())
	run.Config = ConfigText(out, live.Name)
	p, addr, err := StartProxy(ctx, live, out, serveOn, dir, ports)
	if err != nil {
		return run, &StartError{Err: err}
	}
	defer p.Stop()
	defer func() { run.Log = p.Output() }()
	if sc.User == nil {
		if err := WaitReady(ctx, addr); err != nil {
			return run, err
		}
	}
	run.Obs, err = send(ctx, addr, sc, servers)
	return run, err
}

// StartError is a proxy that did not run the generated configuration:
// it refused it, exited, or never listened.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// startEndpoints starts the scenario's scripted servers (and, for a user's
// rule, the stray one last) and returns them with the --endpoint values.
func startEndpoints(sc Scenario) ([]*flaky.Server, []string, error) {
	var servers []*flaky.Server
	var addrs []string
	path, _, _ := strings.Cut(sc.Path(), "?")
	for _, e := range sc.ScriptedEndpoints() {
		if e.Refused {
			a, err := flaky.RefusedAddr()
			if err != nil {
				return servers, nil, err
			}
			addrs = append(addrs, a)
			continue
		}
		start := flaky.Start
		if sc.KeepAlive {
			start = flaky.StartKeepAlive
		}
		s, err := start(e.Name)
		if err != nil {
			return servers, nil, err
		}
		s.Handle(path, e.Script)
		if sc.User != nil && sc.User.BackendPath != "" {
			s.Handle(sc.User.BackendPath, e.Script)
		}
		servers = append(servers, s)
		addrs = append(addrs, s.Addr())
	}
	if sc.User == nil {
		return servers, []string{fmt.Sprintf("%s.%s:8080=%s", sc.Name, Namespace, strings.Join(addrs, ","))}, nil
	}
	var flags []string
	for _, svc := range sc.User.Services {
		flags = append(flags, svc+"="+strings.Join(addrs, ","))
	}
	if len(sc.User.Mirrors) > 0 {
		mirror, err := flaky.Start(MirrorEndpoint)
		if err != nil {
			return servers, nil, err
		}
		servers = append(servers, mirror)
		for _, svc := range sc.User.Mirrors {
			flags = append(flags, svc+"="+mirror.Addr())
		}
	}
	if len(sc.User.Others) > 0 {
		stray, err := flaky.Start(StrayEndpoint)
		if err != nil {
			return servers, nil, err
		}
		servers = append(servers, stray)
		for _, svc := range sc.User.Others {
			flags = append(flags, svc+"="+stray.Addr())
		}
	}
	return servers, flags, nil
}

// StrayEndpoint names the endpoint that stands in for every Service but
// those of the rule under test.
const StrayEndpoint = "elsewhere"

// StartProxy starts the real data plane on the configuration in out and
// returns it with the address to send requests to.
func StartProxy(ctx context.Context, live Live, out, listen, dir string, ports *dataplane.Ports) (*dataplane.Proxy, string, error) {
	k := dataplane.KindOf(live.Name)
	if k == nil {
		var names []string
		for _, k := range dataplane.Kinds() {
			names = append(names, k.Name)
		}
		return nil, "", fmt.Errorf("no live runs of %s: choose %s", live.Name, strings.Join(names, ", "))
	}
	return k.StartOutput(ctx, live.Bin, out, listen, dir, ports)
}

// RuleFindings returns the findings of rule of route on target.
func RuleFindings(r *translate.Report, target, route string, rule int) []translate.Finding {
	var out []translate.Finding
	for _, f := range r.Findings {
		if f.Target == target && f.Route == route && f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// WaitReady polls the readiness route until the proxy answers 200 from
// the ready endpoint.
func WaitReady(ctx context.Context, addr string) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(dataplane.ReadyTimeout)
	var last string
	for time.Now().Before(deadline) && ctx.Err() == nil {
		resp, err := client.Get("http://" + addr + ReadyPath)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && resp.Header.Get(flaky.EndpointHeader) == "ready" {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("proxy on %s never routed %s to the ready endpoint: %s", addr, ReadyPath, last)
}

// send sends the scenario's requests one after the other and collects what
// the client and the endpoints saw.
func send(ctx context.Context, addr string, sc Scenario, servers []*flaky.Server) (Observation, error) {
	transport := &http.Transport{DisableKeepAlives: !sc.KeepAlive, MaxIdleConnsPerHost: 1}
	scheme := "http://"
	if sc.User != nil && sc.User.TLS {
		// The certificate is judged (Result.PeerCert), not verified.
		scheme = "https://"
		transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, ServerName: hostOnly(sc.User.Host)} //nolint:gosec // judged by the check
	}
	defer transport.CloseIdleConnections()
	// The client waits as long as the scenario may last (10s without a
	// deadline): a client timeout must never pass for the proxy's.
	wait := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	// A redirect is the answer: it is judged, not followed.
	client := &http.Client{Timeout: wait, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	newRequest := func(id string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, sc.method(), scheme+addr+sc.Path(), strings.NewReader(sc.body()))
		if err != nil {
			return nil, err
		}
		for k, v := range sc.Header {
			req.Header.Set(k, v)
		}
		if sc.User != nil {
			if sc.User.Host != "" {
				req.Host = sc.User.Host
			}
			keys := make([]string, 0, len(sc.User.Header))
			for k := range sc.User.Header {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				req.Header.Set(k, sc.User.Header[k])
			}
		}
		if id != "" {
			req.Header.Set(flaky.RequestHeader, id)
		}
		return req, nil
	}
	if sc.KeepAlive {
		// Warm the client and upstream connections: the measured
		// requests then arrive on kept-alive ones.
		req, err := newRequest("")
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("warm-up request: %w", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, s := range servers {
			s.WaitIdle(3 * time.Second)
		}
	}
	var obs Observation
	for i := range sc.requests() {
		if err := ctx.Err(); err != nil {
			return obs, fmt.Errorf("scenario %s: time is up after %d request(s): %w", sc.Name, i, err)
		}
		id := strconv.Itoa(i + 1)
		req, err := newRequest(id)
		if err != nil {
			return nil, err
		}
		r := Result{Method: sc.method(), Path: sc.Path(), BodyBytes: len(sc.body())}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			r.Err = err.Error()
		} else {
			r.Status = resp.StatusCode
			r.Header = resp.Header
			if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
				r.PeerCert = resp.TLS.PeerCertificates[0].Raw
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			r.Complete = err == nil && (sc.WantBody == "" || string(body) == sc.WantBody)
			if err != nil {
				r.Err = err.Error()
			}
		}
		r.Duration = time.Since(start)
		if sc.User != nil && len(sc.User.Mirrors) > 0 {
			// A mirror's copy may arrive after the answer.
			waitMirrored(servers, id, 2*time.Second)
		}
		var busy []string
		for _, s := range servers {
			if !s.WaitIdle(3 * time.Second) {
				busy = append(busy, s.Name())
			}
		}
		if len(busy) > 0 {
			return obs, fmt.Errorf("endpoint %s still busy 3s after the answer to request %s", strings.Join(busy, ", "), id)
		}
		for _, h := range flaky.Merge(servers...) {
			if h.Request == id {
				if h.Endpoint == MirrorEndpoint {
					r.Mirrored = append(r.Mirrored, h)
					continue
				}
				if h.Endpoint == StrayEndpoint {
					return obs, fmt.Errorf("request %s (%s %s) reached a Service of another rule: the rule's match does not select it here", id, sc.method(), sc.Path())
				}
				r.Hits = append(r.Hits, h)
			}
		}
		obs = append(obs, r)
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return obs, fmt.Errorf("scenario %s: time is up", sc.Name)
	}
	return obs, nil
}

// waitMirrored waits until the mirror endpoint has a hit of request id,
// at most timeout.
func waitMirrored(servers []*flaky.Server, id string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.Name() != MirrorEndpoint {
				continue
			}
			for _, h := range s.AllHits() {
				if h.Request == id {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ConfigText returns the generated configuration of a target for messages.
func ConfigText(out, target string) string {
	var b strings.Builder
	var paths []string
	_ = filepath.WalkDir(filepath.Join(out, target), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	slices.Sort(paths)
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "--- %s\n%s", filepath.Base(p), data)
	}
	return b.String()
}

// configJudge reads one target's generated configuration back and judges
// it field by field against a scenario's findings, without its binary.
type configJudge struct {
	// file is the configuration, relative to the output directory.
	file  string
	judge func(data []byte, sc Scenario, findings []translate.Finding) ([]Verdict, error)
}

// configJudges are the targets whose configuration the suite judges
// without running it (CheckConfig), by target name.
var configJudges = map[string]configJudge{
	"envoy": {file: "envoy/envoy.yaml", judge: func(data []byte, sc Scenario, findings []translate.Finding) ([]Verdict, error) {
		bs, err := envoy.ReadBootstrap(data)
		if err != nil {
			return nil, fmt.Errorf("%w\n%s", err, data)
		}
		return JudgeEnvoy(bs, sc, sc.RetryNonIdempotent, findings), nil
	}},
}

// ConfigJudged reports whether CheckConfig can judge target's generated
// configuration without its binary.
func ConfigJudged(target string) bool {
	_, ok := configJudges[target]
	return ok
}

// CheckConfig generates sc for target@version with gen and judges the
// generated configuration field by field against the findings (for
// Envoy: the route, retry policy and cluster, JudgeEnvoy). No binary is
// needed.
func CheckConfig(ctx context.Context, target, version string, sc Scenario, gen Generator, tmp string) ([]Verdict, error) {
	j, ok := configJudges[target]
	if !ok {
		return nil, fmt.Errorf("no judge of %s's configuration without its binary", target)
	}
	dir, err := os.MkdirTemp(tmp, "gwretry-config-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var addrs []string
	for i := range sc.ScriptedEndpoints() {
		addrs = append(addrs, fmt.Sprintf("127.0.0.%d:8080", i+1))
	}
	report, err := gen(ctx, dir, sc, target+"@"+version, "127.0.0.1:10080", []string{
		fmt.Sprintf("%s.%s:8080=%s", sc.Name, Namespace, strings.Join(addrs, ",")),
		fmt.Sprintf("ready.%s:8080=127.0.0.9:8080", Namespace)})
	if err != nil {
		return nil, err
	}
	findings := RuleFindings(report, target, sc.Route(), sc.RuleIndex())
	if len(findings) == 0 {
		return nil, fmt.Errorf("the report has no %s finding for %s", target, sc.Route())
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", filepath.FromSlash(j.file)))
	if err != nil {
		return nil, err
	}
	return j.judge(data, sc, findings)
}
