package envoy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

func TestVersionsTable(t *testing.T) {
	caps := capabilities()
	if got, want := New().Versions(), versions(caps); !slices.Equal(got, want) {
		t.Fatalf("Versions() = %v, want %v", got, want)
	}
	if def, err := lookup(""); err != nil || def.version != caps[len(caps)-1].version {
		t.Errorf("lookup(\"\") = %q, %v; want the last row", def.version, err)
	}
	if _, err := lookup("1.0"); err == nil {
		t.Error("lookup(1.0) succeeded, want an error")
	}
	for _, c := range caps {
		t.Run(c.version, func(t *testing.T) {
			if !slices.ContainsFunc(c.retryOn, func(s string) bool { return s == "reset" || s == "5xx" || s == "gateway-error" }) {
				t.Errorf("retryOn %v has no token that retries a per-try timeout", c.retryOn)
			}
			if c.maxRetries < 1024 {
				t.Errorf("maxRetries %d: Envoy would drop concurrent retries", c.maxRetries)
			}
			r := newRule(0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{})
			_, bs := generate(t, singleModel(r), translate.Options{Version: c.version})
			rp := routesNamed(t, bs, r.Name)[0].GetRoute().GetRetryPolicy()
			if want := strings.Join(append(slices.Clone(c.retryOn), c.statusCodesToken), ","); rp.GetRetryOn() != want {
				t.Errorf("retry_on = %q, want %q", rp.GetRetryOn(), want)
			}
			cb := bs.GetStaticResources().GetClusters()[0].GetCircuitBreakers().GetThresholds()[0]
			if cb.GetMaxRetries().GetValue() != c.maxRetries {
				t.Errorf("max_retries = %v, want %d", cb.GetMaxRetries(), c.maxRetries)
			}
		})
	}
}

// models are hand-built Models covering every feature combination.
func models(t *testing.T) map[string]*translate.Model {
	full := func(i int) *translate.Rule {
		return newRule(i, &translate.Retry{Attempts: 3, Codes: []int{500, 502, 503}, Backoff: dur(t, "100ms")},
			translate.Timeouts{Request: dur(t, "10s"), BackendRequest: dur(t, "1s")})
	}
	ms := map[string]*translate.Model{
		"full":             singleModel(full(0)),
		"no retry":         singleModel(newRule(0, nil, translate.Timeouts{})),
		"retry defaults":   singleModel(newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})),
		"attempts 0":       singleModel(newRule(0, &translate.Retry{Attempts: 0, Codes: []int{503}, Backoff: dur(t, "1s")}, translate.Timeouts{Request: dur(t, "5s"), BackendRequest: dur(t, "1s")})),
		"request 0s":       singleModel(newRule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "1s")})),
		"backend 0s":       singleModel(newRule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{BackendRequest: dur(t, "0s")})),
		"backend only":     singleModel(newRule(0, nil, translate.Timeouts{BackendRequest: dur(t, "3s")})),
		"request only":     singleModel(newRule(0, nil, translate.Timeouts{Request: dur(t, "1h")})),
		"backoff 0s":       singleModel(newRule(0, &translate.Retry{Attempts: 1, Backoff: dur(t, "0s")}, translate.Timeouts{})),
		"long tries":       singleModel(newRule(0, &translate.Retry{Attempts: 4}, translate.Timeouts{BackendRequest: dur(t, "5s")})),
		"many rules":       singleModel(full(0), newRule(1, nil, translate.Timeouts{Request: dur(t, "2s")}), newRule(2, &translate.Retry{Attempts: 5, Codes: []int{429}}, translate.Timeouts{})),
		"several":          severalModel(t),
		"matches":          matchModel(t),
		"backends":         backendModel(t),
		"unreferenced":     {Rules: []*translate.Rule{full(0)}, RouteCount: 1, RuleCount: 1},
		"all weights zero": weightsZeroModel(t),
		"judge":            judgeModel(t),
	}
	return ms
}

// severalModel has two listeners, exact, wildcard and catch-all virtual
// hosts, and a rule placed in two matches on two listeners.
func severalModel(t *testing.T) *translate.Model {
	shared := newRule(0, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{Request: dur(t, "3s")})
	other := newRule(1, nil, translate.Timeouts{BackendRequest: dur(t, "500ms")})
	other.Backends = []*translate.BackendRef{backend("default_api_80", 1, "api.internal")}
	// Virtual host names are unique in a Model (Model.Check).
	vhs := func(port string) []*translate.VirtualHost {
		return []*translate.VirtualHost{
			{Name: port + "-a-example-com", Hostname: "a.example.com", Routes: []*translate.RouteMatch{
				{Match: translate.Match{PathType: translate.PathExact, Path: "/exact"}, Rule: shared},
				{Match: prefix("/"), Rule: other},
			}},
			{Name: port + "-wild-example-com", Hostname: "*.example.com", Routes: []*translate.RouteMatch{{Match: prefix("/api/"), Rule: shared}}},
			{Name: port + "-any", Routes: []*translate.RouteMatch{{Match: prefix("/"), Rule: shared}}},
		}
	}
	return &translate.Model{
		Listeners: []*translate.Listener{
			{Name: "http-8080", Address: "0.0.0.0", Port: 8080, VirtualHosts: vhs("8080")},
			{Name: "http-9090", Address: "::", Port: 9090, VirtualHosts: vhs("9090")},
		},
		Rules: []*translate.Rule{shared, other}, RouteCount: 1, RuleCount: 2,
	}
}

// matchModel uses every kind of match.
func matchModel(t *testing.T) *translate.Model {
	r := newRule(0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{BackendRequest: dur(t, "2s"), Request: dur(t, "6s")})
	m := singleModel(r)
	m.Listeners[0].VirtualHosts[0].Routes = nil
	for _, mt := range matchCases() {
		m.Listeners[0].VirtualHosts[0].Routes = append(m.Listeners[0].VirtualHosts[0].Routes, &translate.RouteMatch{Match: mt.match, Rule: r})
	}
	return m
}

// backendModel has weighted, DNS, IPv6 and duplicate backends.
func backendModel(t *testing.T) *translate.Model {
	r0 := newRule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{Request: dur(t, "4s")})
	r0.Backends = []*translate.BackendRef{
		backend("default_a_80", 3, "10.0.0.1", "10.0.0.2"),
		backend("default_b_80", 1, "b.default.svc.cluster.local"),
		backend("default_c_80", 0, "10.0.0.3"),
		backend("default_a_80", 2, "10.0.0.1", "10.0.0.2"),
	}
	r1 := newRule(1, nil, translate.Timeouts{})
	r1.Backends = []*translate.BackendRef{backend("default_v6_80", 1, "::1", "fd00::2"), backend("default_mixed_80", 1, "10.0.0.9", "mixed.example")}
	return singleModel(r0, r1)
}

func weightsZeroModel(t *testing.T) *translate.Model {
	r := newRule(0, &translate.Retry{Attempts: 2, Backoff: dur(t, "10ms")}, translate.Timeouts{Request: dur(t, "1s")})
	r.Backends[0].Weight = 0
	return singleModel(r)
}

func TestGenerateModels(t *testing.T) {
	for name, m := range models(t) {
		for _, opts := range []translate.Options{{}, {RetryNonIdempotent: true}} {
			t.Run(name+"/nonidempotent="+map[bool]string{true: "on", false: "off"}[opts.RetryNonIdempotent], func(t *testing.T) {
				out, back := generate(t, m, opts)

				// The YAML reads back as exactly the bootstrap built.
				g := &generator{cap: capabilities()[0], retryNonIdempotent: opts.RetryNonIdempotent}
				built, err := g.bootstrap(m)
				if err != nil {
					t.Fatal(err)
				}
				if !proto.Equal(built, back) {
					t.Errorf("round trip differs:\n%s", out.Files[0].Data)
				}
				if err := validate(back); err != nil {
					t.Errorf("ValidateAll: %v", err)
				}

				// Byte-for-byte deterministic.
				again, _ := generate(t, m, opts)
				if !bytes.Equal(out.Files[0].Data, again.Files[0].Data) {
					t.Error("two runs wrote different bytes")
				}

				// One finding per feature per rule, in feature order.
				checkFindingsMatchFeatures(t, m, out.Findings)
				if _, err := translate.Run(m, []translate.Target{{Backend: New(), Version: "1.36"}}, opts.RetryNonIdempotent); err != nil {
					t.Errorf("Run: %v", err)
				}

				checkClustersReferenced(t, back)
				if got, want := len(back.GetStaticResources().GetListeners()), len(m.Listeners); got != want {
					t.Errorf("%d listeners, want %d", got, want)
				}
				if len(out.Notes) == 0 {
					t.Error("no notes")
				}
			})
		}
	}
}

func checkFindingsMatchFeatures(t *testing.T, m *translate.Model, fs []translate.Finding) {
	t.Helper()
	i := 0
	for _, r := range m.Rules {
		for _, f := range r.Features() {
			if i >= len(fs) {
				t.Fatalf("too few findings: %d", len(fs))
			}
			got := fs[i]
			if got.Route != r.Route || got.Rule != r.Index || got.Feature != f {
				t.Errorf("finding %d is %s/%d/%s, want %s/%d/%s", i, got.Route, got.Rule, got.Feature, r.Route, r.Index, f)
			}
			if got.Reason == "" {
				t.Errorf("finding %d (%s) has no reason", i, f)
			}
			i++
		}
	}
	if i != len(fs) {
		t.Errorf("%d findings, want %d", len(fs), i)
	}
}

// checkClustersReferenced checks that routes and clusters refer to each
// other exactly.
func checkClustersReferenced(t *testing.T, bs *bootstrapv3.Bootstrap) {
	t.Helper()
	defined := map[string]bool{}
	for _, c := range bs.GetStaticResources().GetClusters() {
		defined[c.GetName()] = true
	}
	used := map[string]bool{}
	for i := range bs.GetStaticResources().GetListeners() {
		for _, vh := range routeConfig(t, bs, i).GetVirtualHosts() {
			for _, r := range vh.GetRoutes() {
				ra := r.GetRoute()
				if ra == nil {
					continue
				}
				if c := ra.GetCluster(); c != "" {
					used[c] = true
				}
				for _, w := range ra.GetWeightedClusters().GetClusters() {
					used[w.GetName()] = true
				}
				for _, mp := range ra.GetRequestMirrorPolicies() {
					used[mp.GetCluster()] = true
				}
			}
		}
	}
	for c := range used {
		if !defined[c] && c != invalidCluster {
			t.Errorf("route uses undefined cluster %s", c)
		}
	}
	for c := range defined {
		if !used[c] {
			t.Errorf("cluster %s is unused", c)
		}
	}
}

func TestTamperedOutputIsRejected(t *testing.T) {
	r := newRule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{})
	out, _ := generate(t, singleModel(r), translate.Options{})
	g := &generator{cap: capabilities()[0]}
	built, err := g.bootstrap(singleModel(r))
	if err != nil {
		t.Fatal(err)
	}
	data := out.Files[0].Data
	for name, bad := range map[string][]byte{
		"changed value": bytes.Replace(data, []byte("num_retries: 2"), []byte("num_retries: 3"), 1),
		"unknown field": insertAfterLine(t, data, "num_retries: 2", "bogus: 1"),
		"duplicate key": insertAfterLine(t, data, "num_retries: 2", "num_retries: 2"),
	} {
		if bytes.Equal(bad, data) {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if _, err := verify(built, bad); err == nil {
			t.Errorf("%s: verify accepted a tampered file", name)
		}
	}
	if _, err := verify(built, data); err != nil {
		t.Errorf("verify rejected the real output: %v", err)
	}
}

// TestProtobufCarriesAPIValues: values the Gateway API accepts that a
// format with quoting traps cannot hold (a backslash in a regular
// expression, a line break or quote in a header value) are protobuf
// strings here: Envoy writes them, and reads them back as they were.
func TestProtobufCarriesAPIValues(t *testing.T) {
	m := singleModel(newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{}))
	rm := &m.Listeners[0].VirtualHosts[0].Routes[0].Match
	*rm = translate.Match{PathType: translate.PathRegex, Path: `/a\d+'"#;`, Headers: []translate.ValueMatch{
		{Type: translate.StringExact, Name: "x", Value: "a\nb \"c\" 'd' `e` \\"},
		{Type: translate.StringRegex, Name: "y", Value: `\d+`},
	}}
	out, err := New().Generate(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := ReadBootstrap(out.Files[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, vh := range routeConfig(t, bs, 0).GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			seen[r.GetMatch().GetSafeRegex().GetRegex()] = true
			for _, h := range r.GetMatch().GetHeaders() {
				seen[h.GetStringMatch().GetExact()] = true
				seen[h.GetStringMatch().GetSafeRegex().GetRegex()] = true
			}
		}
	}
	for _, want := range []string{rm.Path, rm.Headers[0].Value, rm.Headers[1].Value} {
		if !seen[want] {
			t.Errorf("%q not read back from envoy.yaml", want)
		}
	}
}

func TestHostileValuesRejected(t *testing.T) {
	cases := map[string]func(m *translate.Model){
		"quote in path":          func(m *translate.Model) { m.Listeners[0].VirtualHosts[0].Routes[0].Match.Path = "/a\"b" },
		"space in listener name": func(m *translate.Model) { m.Listeners[0].Name = "http 8080" },
		"hash in hostname":       func(m *translate.Model) { m.Listeners[0].VirtualHosts[0].Hostname = "#a.example.com" },
		"injected endpoint":      func(m *translate.Model) { m.Rules[0].Backends[0].Endpoints[0].Host = "1.2.3.4\"}]" },
		"bad method":             func(m *translate.Model) { m.Listeners[0].VirtualHosts[0].Routes[0].Match.Method = "GET|POST" },
		"colon in query name": func(m *translate.Model) {
			m.Listeners[0].VirtualHosts[0].Routes[0].Match.Query = []translate.ValueMatch{{Type: translate.StringExact, Name: ":x", Value: "1"}}
		},
		"cluster name with slash": func(m *translate.Model) { m.Rules[0].Backends[0].Name = "a/b" },
		"negative attempts":       func(m *translate.Model) { m.Rules[0].Retry.Attempts = -1 },
		"port out of range":       func(m *translate.Model) { m.Listeners[0].Port = 70000 },
		"unknown path type":       func(m *translate.Model) { m.Listeners[0].VirtualHosts[0].Routes[0].Match.PathType = "Glob" },
		"listener on a DNS name":  func(m *translate.Model) { m.Listeners[0].Address = "localhost" },
		"duplicate virtual host": func(m *translate.Model) {
			vh := *m.Listeners[0].VirtualHosts[0]
			m.Listeners[0].VirtualHosts = append(m.Listeners[0].VirtualHosts, &vh)
		},
		"two endpoint lists": func(m *translate.Model) {
			m.Rules[0].Backends = append(m.Rules[0].Backends, backend(m.Rules[0].Backends[0].Name, 1, "10.9.9.9"))
		},
		"negative weight": func(m *translate.Model) { m.Rules[0].Backends[0].Weight = -1 },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := singleModel(newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{}))
			mutate(m)
			out, err := New().Generate(m, translate.Options{})
			if err == nil {
				t.Fatalf("Generate accepted it:\n%s", out.Files[0].Data)
			}
			if out != nil {
				t.Errorf("Generate returned output with the error %v", err)
			}
		})
	}
	if _, err := New().Generate(singleModel(newRule(0, nil, translate.Timeouts{})), translate.Options{Version: "1.10"}); err == nil {
		t.Error("unknown version accepted")
	}
}

// TestEnvoyValidate runs the real binary when it is installed. Envoy is not
// packaged for Debian, so this skips unless GWRETRY_ENVOY or PATH has one.
func TestEnvoyValidate(t *testing.T) {
	bin := proxytest.Find("envoy")
	if bin == "" {
		t.Skip("envoy not found (set GWRETRY_ENVOY to run `envoy --mode validate`)")
	}
	for name, m := range models(t) {
		t.Run(name, func(t *testing.T) {
			out, _ := generate(t, m, translate.Options{})
			path := filepath.Join(t.TempDir(), "envoy.yaml")
			if err := os.WriteFile(path, out.Files[0].Data, 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--mode", "validate", "-c", path, "--log-level", "warn")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("envoy --mode validate: %v\n%s\n%s", err, b, out.Files[0].Data)
			}
		})
	}
}

// route0 returns the single route generated for rule r.
func route0(t *testing.T, rs []*routev3.Route) *routev3.Route {
	t.Helper()
	if len(rs) != 1 {
		t.Fatalf("%d routes, want 1", len(rs))
	}
	return rs[0]
}

// insertAfterLine adds line, indented like the line containing after.
func insertAfterLine(t *testing.T, data []byte, after, line string) []byte {
	t.Helper()
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == after {
			indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
			lines = slices.Insert(lines, i+1, indent+line)
			return []byte(strings.Join(lines, "\n"))
		}
	}
	t.Fatalf("no line %q", after)
	return nil
}

func TestCheck(t *testing.T) {
	out, _ := generate(t, severalModel(t), translate.Options{})
	if err := Check(out.Files[0].Data); err != nil {
		t.Errorf("Check rejected generated output: %v", err)
	}
	bad := insertAfterLine(t, out.Files[0].Data, "name: http-8080", "bogus: true")
	if err := Check(bad); err == nil {
		t.Error("Check accepted an unknown field")
	}
	invalid := bytes.Replace(out.Files[0].Data, []byte("port_value: 8080"), []byte("port_value: 70000"), 1)
	if err := Check(invalid); err == nil {
		t.Error("Check accepted port 70000")
	}
}

// TestValidateOpensTypedConfigs checks that validation reaches messages
// packed in Any fields, which ValidateAll alone does not open.
func TestValidateOpensTypedConfigs(t *testing.T) {
	g := &generator{cap: capabilities()[0]}
	bs, err := g.bootstrap(singleModel(newRule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{})))
	if err != nil {
		t.Fatal(err)
	}
	if err := validate(bs); err != nil {
		t.Fatalf("valid bootstrap rejected: %v", err)
	}
	l := bs.GetStaticResources().GetListeners()[0]
	hcm := &hcmv3.HttpConnectionManager{}
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	hcm.StatPrefix = "" // required by the HCM's own rules
	bad, err := marshalAny(hcm)
	if err != nil {
		t.Fatal(err)
	}
	l.GetFilterChains()[0].GetFilters()[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: bad}
	if err := bs.ValidateAll(); err != nil {
		t.Fatalf("the outer ValidateAll already fails (%v); the test needs a nested error", err)
	}
	if err := validate(bs); err == nil || !strings.Contains(err.Error(), "StatPrefix") {
		t.Errorf("validate = %v, want the HCM's StatPrefix error", err)
	}
	// A virtual host's own rules, and those of an Any inside it, are
	// checked too (the virtual hosts are validated one at a time).
	hcm.StatPrefix = "ok"
	vh := hcm.GetRouteConfig().GetVirtualHosts()[0]
	for name, breakIt := range map[string]func() (restore func()){
		"Domains": func() func() {
			d := vh.Domains
			vh.Domains = nil
			return func() { vh.Domains = d }
		},
		"typed_per_filter_config": func() func() {
			vh.TypedPerFilterConfig = map[string]*anypb.Any{"f": {TypeUrl: "type.googleapis.com/no.such.Type"}}
			return func() { vh.TypedPerFilterConfig = nil }
		},
	} {
		restore := breakIt()
		bad, err := marshalAny(hcm)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		l.GetFilterChains()[0].GetFilters()[0].ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: bad}
		if err := validate(bs); err == nil || !strings.Contains(err.Error(), "virtual_hosts[0]") {
			t.Errorf("%s: validate = %v, want virtual host 0's error", name, err)
		}
	}
}
