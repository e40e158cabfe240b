package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	parser "github.com/haproxytech/client-native/v5/config-parser"
	cpoptions "github.com/haproxytech/client-native/v5/config-parser/options"
	crossplane "github.com/nginxinc/nginx-go-crossplane"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/internal/celcases"
	"github.com/gwretry/gwretry/internal/hostile"
	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// celCase is one case of testdata/cel/*.yaml (input/cel_test.go reads the
// same files).
type celCase = celcases.Case

func validCELCases(t *testing.T) []celCase {
	t.Helper()
	var out []celCase
	for _, file := range []string{"../../testdata/cel/upstream.yaml", "../../testdata/cel/schema.yaml"} {
		for _, c := range celcases.Load(t, file) {
			if c.Valid {
				out = append(out, c)
			}
		}
	}
	return out
}

// celWorld is the object of a valid case with what it needs to be
// translated: the Gateways its parentRefs name (listeners for their
// sectionNames and ports, routes from every namespace), the Services its
// backendRefs name, and for a Gateway a route attached to it.
func celWorld(t *testing.T, obj map[string]any) (string, []string) {
	t.Helper()
	var docs []any
	ns := func(m map[string]any, def string) string {
		if s, _ := m["namespace"].(string); s != "" {
			return s
		}
		return def
	}
	meta, _ := obj["metadata"].(map[string]any)
	objNS := "default"
	if meta != nil {
		objNS = ns(meta, "default")
	}
	spec, _ := obj["spec"].(map[string]any)
	docs = append(docs, obj)
	services := map[[2]string][]int64{}
	addService := func(ref map[string]any, routeNS string) {
		if g, _ := ref["group"].(string); g != "" {
			return
		}
		if k, _ := ref["kind"].(string); k != "" && k != "Service" {
			return
		}
		port, ok := ref["port"].(float64)
		if !ok {
			return
		}
		key := [2]string{ns(ref, routeNS), ref["name"].(string)}
		if !slices.Contains(services[key], int64(port)) {
			services[key] = append(services[key], int64(port))
		}
	}
	switch obj["kind"] {
	case "HTTPRoute":
		if spec == nil {
			spec = map[string]any{}
			obj["spec"] = spec
		}
		refs, _ := spec["parentRefs"].([]any)
		if len(refs) == 0 {
			refs = []any{map[string]any{"name": "gw"}}
			spec["parentRefs"] = refs
		}
		type listener struct {
			name string
			port int64
		}
		gateways := map[[2]string][]listener{}
		var order [][2]string
		for _, r := range refs {
			ref := r.(map[string]any)
			key := [2]string{ns(ref, objNS), ref["name"].(string)}
			if _, ok := gateways[key]; !ok {
				order = append(order, key)
				gateways[key] = nil
			}
			l := listener{name: "http", port: 80}
			if s, _ := ref["sectionName"].(string); s != "" {
				l.name = s
			}
			if p, ok := ref["port"].(float64); ok {
				l.port = int64(p)
				if l.name == "http" {
					l.name = fmt.Sprintf("http-%d", l.port)
				}
			}
			if !slices.Contains(gateways[key], l) {
				gateways[key] = append(gateways[key], l)
			}
		}
		for _, key := range order {
			var ls []any
			perPort := map[int64]int{}
			for _, l := range gateways[key] {
				perPort[l.port]++
			}
			for _, l := range gateways[key] {
				m := map[string]any{"name": l.name, "port": l.port, "protocol": "HTTP",
					"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
				if perPort[l.port] > 1 {
					m["hostname"] = l.name + ".example.com"
				}
				ls = append(ls, m)
			}
			docs = append(docs, map[string]any{
				"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
				"metadata": map[string]any{"name": key[1], "namespace": key[0]},
				"spec":     map[string]any{"gatewayClassName": "gwretry", "listeners": ls},
			})
		}
		rules, _ := spec["rules"].([]any)
		for _, r := range rules {
			rule := r.(map[string]any)
			var filters []any
			if fs, ok := rule["filters"].([]any); ok {
				filters = append(filters, fs...)
			}
			brs, _ := rule["backendRefs"].([]any)
			for _, b := range brs {
				br := b.(map[string]any)
				addService(br, objNS)
				if fs, ok := br["filters"].([]any); ok {
					filters = append(filters, fs...)
				}
			}
			for _, f := range filters {
				if m, ok := f.(map[string]any)["requestMirror"].(map[string]any); ok {
					if br, ok := m["backendRef"].(map[string]any); ok {
						addService(br, objNS)
					}
				}
			}
		}
	case "Gateway":
		docs = append(docs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "route", "namespace": objNS},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": meta["name"]}},
				"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": "svc", "port": 8080}}}},
			},
		})
		services[[2]string{objNS, "svc"}] = []int64{8080}
	default:
		docs = append(docs, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
			"metadata": map[string]any{"name": "route", "namespace": "default"},
			"spec": map[string]any{
				"parentRefs": []any{map[string]any{"name": "gw"}},
				"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": "svc", "port": 8080}}}},
			},
		}, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
			"metadata": map[string]any{"name": "gw", "namespace": "default"},
			"spec":     map[string]any{"gatewayClassName": "gwretry", "listeners": []any{map[string]any{"name": "http", "port": 80, "protocol": "HTTP"}}},
		})
		services[[2]string{"default", "svc"}] = []int64{8080}
	}
	keys := make([][2]string, 0, len(services))
	for k := range services {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	var endpoints []string
	for _, k := range keys {
		var ports []any
		for _, p := range services[k] {
			ports = append(ports, map[string]any{"name": fmt.Sprintf("p%d", p), "port": p})
			endpoints = append(endpoints, "--endpoint", fmt.Sprintf("%s.%s:%d=127.0.0.1:9", k[1], k[0], p))
		}
		docs = append(docs, map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": k[1], "namespace": k[0]},
			"spec":     map[string]any{"ports": ports},
		})
	}
	var buf bytes.Buffer
	for _, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	return buf.String(), endpoints
}

// TestValidRoutesTranslate translates every case of testdata/cel that the
// API server accepts (valid: true), in each channel it runs in, for every
// target: each must exit 0, its outputs pass the targets' parse-back and
// judges (translate.Run), and a value one target's format cannot express
// makes that rule unsupported there, never the whole translation.
func TestValidRoutesTranslate(t *testing.T) {
	for _, c := range validCELCases(t) {
		for _, ch := range c.Channels {
			t.Run(ch+"/"+c.Name, func(t *testing.T) {
				in := filepath.Join(t.TempDir(), "in.yaml")
				world, endpoints := celWorld(t, c.Object)
				if err := os.WriteFile(in, []byte(world), 0o644); err != nil {
					t.Fatal(err)
				}
				out := t.TempDir()
				args := append([]string{"translate", in, "--target", "all", "--channel", ch, "--output-dir", out, "--report", "none", "-q", "--assume-reference-grants"}, endpoints...)
				var stderr bytes.Buffer
				if code := run(args, nil, &bytes.Buffer{}, &stderr); code != exitOK {
					data, _ := os.ReadFile(in)
					t.Fatalf("exit %d\n%s\ninput:\n%s", code, stderr.String(), data)
				}
				files := readTree(t, out)
				parseBack(t, files)
				checkUnwritten(t, c, files["report.json"])
				if !testing.Short() && ch == "standard" && quotedCase(c) {
					checkWithDataPlanes(t, files)
				}
			})
		}
	}
}

// unwrittenWant is what the report of a valid case says of the rules a
// target does not write: a rewrite or redirect path without a leading '/'
// (no HTTP request or Location can carry it) on every gateway target
// (ValueNotExpressible). Every other rule of every case is written by
// every target: the path of
// TestHTTPPathMatch/valid_path_with_some_special_characters too, whose
// %0A nginx decodes to a line break before it matches (its map writes
// \x0a; e2e TestQuotedValuesLive).
func unwrittenWant(c celCase) map[string]report.Decision {
	want := map[string]report.Decision{}
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, k)
			}
			if f, ok := x["type"].(string); ok && (f == "RequestRedirect" || f == "URLRewrite") {
				what := map[string]string{"RequestRedirect": "requestRedirect", "URLRewrite": "urlRewrite"}[f]
				body, _ := x[what].(map[string]any)
				path, _ := body["path"].(map[string]any)
				for _, k := range []string{"replaceFullPath", "replacePrefixMatch"} {
					if p, ok := path[k].(string); ok && p != "" && !strings.HasPrefix(p, "/") {
						d := report.Decide(report.ReasonValueNotExpressible, "field", what+" path", "value", p, "why", translate.HTTPWhy(translate.KindFilterPath))
						for _, tg := range []string{"envoy", "grpc", "haproxy", "nginx", "traefik"} {
							want[tg] = d
						}
					}
				}
			}
		case []any:
			for _, e := range x {
				walk(e, key)
			}
		}
	}
	walk(c.Object, "")
	return want
}

// checkUnwritten compares the report's MatchNotExpressible and
// ValueNotExpressible findings with unwrittenWant, target by target.
func checkUnwritten(t *testing.T, c celCase, data []byte) {
	t.Helper()
	var rep translate.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	want := unwrittenWant(c)
	got := map[string]report.Decision{}
	for _, f := range rep.Findings {
		if f.Reason == report.ReasonMatchNotExpressible || f.Reason == report.ReasonValueNotExpressible {
			// A backendRef's filter is named "backendRef NS/NAME ...".
			field := f.Params["field"]
			if rest, ok := strings.CutPrefix(field, "backendRef "); ok {
				_, field, _ = strings.Cut(rest, " ")
			}
			got[f.Target] = report.Decide(f.Reason, "field", field, "value", f.Params["value"], "why", f.Params["why"])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules not written (-want +got):\n%s", diff)
	}
}

// quotedCase reports whether a case has a value some format must quote
// or cannot carry: its outputs also go through the real data planes.
func quotedCase(c celCase) bool {
	data, _ := json.Marshal(c.Object)
	return strings.ContainsAny(string(data), "'\\%") || strings.Contains(string(data), "replace") || strings.Contains(string(data), "RegularExpression")
}

// parseBack reads every output back with its format's library, beside
// the backends' own parse-back and judges that translate ran: Envoy's
// protos, crossplane, config-parser, YAML (every document) and JSON.
func parseBack(t *testing.T, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		var err error
		switch {
		case name == "envoy/envoy.yaml":
			_, err = envoy.ReadBootstrap(data)
		case name == "nginx/nginx.conf":
			var payload *crossplane.Payload
			payload, err = crossplane.Parse(name, &crossplane.ParseOptions{
				Open:               func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
				SingleFile:         true,
				StopParsingOnError: true,
			})
			if err == nil && len(payload.Errors) > 0 {
				err = payload.Errors[0].Error
			}
		case name == "haproxy/haproxy.cfg":
			_, err = parser.New(cpoptions.String(string(data)), cpoptions.NoNamedDefaultsFrom)
		case strings.HasSuffix(name, ".json"):
			if !json.Valid(data) {
				err = fmt.Errorf("not JSON")
			}
		case strings.HasSuffix(name, ".yaml"):
			dec := yamlv3.NewDecoder(bytes.NewReader(data))
			for {
				var doc any
				if err = dec.Decode(&doc); err != nil {
					break
				}
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
		default:
			err = fmt.Errorf("no parser for this file")
		}
		if err != nil {
			t.Errorf("%s does not read back: %v", name, err)
		}
	}
}

// TestNoValueStopsTranslation puts values some format would read as
// something else (internal/hostile's, and regex escapes, braces, quotes,
// non-ASCII) in every match and filter field of one rule beside a plain
// one, and translates for every target: the input is valid (exit 0) or
// the Gateway API refuses it (exit 1, saying so); a value no target can
// write never ends in an internal error, and the plain rule is written by
// every target.
func TestNoValueStopsTranslation(t *testing.T) {
	values := []string{`\d+`, `a\\b`, `\"q\'`, `\p{L}+`, "{", "}", "a{{b}}", "café", "a\tb", "`x`", "#x", "$1", "a b  c", "a(", "%[src]", strings.Repeat("long-", 400)}
	if !testing.Short() {
		values = append(values, hostile.HeaderValues()...)
	}
	fields := []string{
		"matches: [{path: {type: Exact, value: %s}}]",
		"matches: [{path: {type: RegularExpression, value: %s}}]",
		"matches: [{headers: [{name: x-a, value: %s}]}]",
		"matches: [{headers: [{type: RegularExpression, name: x-a, value: %s}]}]",
		"matches: [{queryParams: [{name: q, value: %s}]}]",
		"matches: [{queryParams: [{type: RegularExpression, name: q, value: %s}]}]",
		"filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-s, value: %s}]}}]",
		"filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: %s}}}]",
	}
	for _, field := range fields {
		for _, v := range values {
			if strings.Contains(field, "path: {type: Exact") || strings.Contains(field, "replaceFullPath") {
				v = "/" + v
			}
			q, _ := json.Marshal(v)
			route := fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - %s
    backendRefs: [{name: svc, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /plain}}]
    backendRefs: [{name: svc, port: 8080}]
`+testmodel.GatewayAndService, fmt.Sprintf(field, q))
			out := t.TempDir()
			code, _, stderr := gwretry(t, route, "translate", "-", "--target", "all", "--output-dir", out, "--report", "none", "-q",
				"--endpoint", "svc.default:8080=127.0.0.1:9")
			switch {
			case code == exitInput && strings.Contains(stderr, "Gateway API"):
				continue
			case code != exitOK:
				t.Errorf("%s: exit %d\n%s", fmt.Sprintf(field, q), code, stderr)
				continue
			}
			data, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep translate.Report
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Rule == 1 && f.Status == translate.Unsupported {
					t.Errorf("%s: the plain rule is %s on %s", fmt.Sprintf(field, q), f.Reason, f.Target)
				}
			}
		}
	}
}
