package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// TestImportGolden runs every case in testdata/import-ingress-nginx/<case>/:
// gwretry import ingress-nginx reads input.yaml with the flags in args (a
// relative file argument is relative to the case), and its HTTPRoutes
// (routes.yaml), JSON report (report.json) and text report (report.txt)
// must equal the case's files byte for byte. The routes must then pass
// gwretry translate's loader, validation and resolution, and translate to
// every target.
func TestImportGolden(t *testing.T) {
	dirs, err := filepath.Glob("testdata/import-ingress-nginx/*/input.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, in := range dirs {
		dir := filepath.Dir(in)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var args []string
			if data, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
				for _, f := range strings.Fields(string(data)) {
					if !strings.HasPrefix(f, "-") {
						f = filepath.Join(dir, f)
					}
					args = append(args, f)
				}
			}
			got := map[string][]byte{}
			for _, format := range []string{"json", "text"} {
				var stdout, stderr bytes.Buffer
				full := append([]string{"import", "ingress-nginx", in, "-q", "--report", format}, args...)
				if code := run(full, nil, &stdout, &stderr); code != exitOK {
					t.Fatalf("gwretry %s: exit %d\n%s", strings.Join(full, " "), code, stderr.String())
				}
				got["routes.yaml"] = stdout.Bytes()
				if format == "json" {
					got["report.json"] = stderr.Bytes()
				} else {
					got["report.txt"] = stderr.Bytes()
				}
			}
			for name, data := range got {
				p := filepath.Join(dir, name)
				if *update {
					if err := os.WriteFile(p, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), string(data)); diff != "" {
					t.Errorf("%s differs (run `go test ./cmd/gwretry -run TestImportGolden -update` and review) (-want +got):\n%s", name, diff)
				}
			}
			var rep ingressnginx.Report
			if err := json.Unmarshal(got["report.json"], &rep); err != nil {
				t.Fatalf("report.json: %v", err)
			}
			if bytes.Contains(got["report.json"], []byte(`"message"`)) {
				t.Errorf("report.json holds messages: it carries records, the words are rendered from the catalogue")
			}
			for _, f := range rep.Findings {
				if err := report.CheckImport(f.Reason, f.Params, f.Caveats); err != nil {
					t.Errorf("%s %s: %v", f.Ingress, f.Annotation, err)
				}
				if want := ingressnginx.Status(report.ImportStatus(f.Reason, f.Caveats)); f.Status != want {
					t.Errorf("%s %s: status %s, its record gives %s", f.Ingress, f.Annotation, f.Status, want)
				}
			}
			checkTranslates(t, got["routes.yaml"])
		})
	}
}

// checkTranslates feeds imported routes to translate's loader, validation
// and resolution, then translates them for every target.
func checkTranslates(t *testing.T, routes []byte) {
	t.Helper()
	in, err := input.Load([]string{"-"}, bytes.NewReader(routes), input.DefaultLimits())
	if err != nil {
		t.Fatalf("input.Load: %v", err)
	}
	if len(in.Routes) == 0 || len(in.Gateways) == 0 {
		t.Fatalf("no HTTPRoute or Gateway: %s", input.Found(in))
	}
	if _, err := resolve.Build(in, translate.ResolveOptions{}); err != nil {
		t.Fatalf("resolve.Build: %v", err)
	}
	for _, target := range []string{"envoy", "nginx", "haproxy", "traefik"} {
		var stdout, stderr bytes.Buffer
		args := []string{"translate", "-", "--target", target, "--report", "none", "-q", "--output-dir", t.TempDir()}
		if code := run(args, bytes.NewReader(routes), &stdout, &stderr); code != exitOK {
			t.Errorf("gwretry %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// TestImportErrors checks that bad input exits 1 with a message naming the
// file, the object and the field.
func TestImportErrors(t *testing.T) {
	const ingress = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  annotations:
    nginx.ingress.kubernetes.io/%s: "%s"
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: shop
            port:
              %s
`
	for _, tc := range []struct {
		name      string
		input     string
		configMap string
		code      int
		want      []string
	}{
		// "error http_501" and "60s", which ingress-nginx's validation
		// refuses, are served as the ConfigMap's values
		// (TestImportToleratedValues); these it accepts, and nginx or the
		// Gateway API cannot take.
		{"next-upstream tokens run together, twice", fmt.Sprintf(ingress, "proxy-next-upstream", "http_500http_502", "number: 80"), "", exitInput,
			[]string{"document 1: Ingress default/shop: metadata.annotations[\"nginx.ingress.kubernetes.io/proxy-next-upstream\"]: \"http_500http_502\": want tokens"}},
		{"negative tries", fmt.Sprintf(ingress, "proxy-next-upstream-tries", "-1", "number: 80"), "", exitInput,
			[]string{`proxy-next-upstream-tries"]: "-1": want a whole number`}},
		{"zero read timeout", fmt.Sprintf(ingress, "proxy-read-timeout", "0", "number: 80"), "", exitInput,
			[]string{`"0": want a whole number of seconds from 1`}},
		{"bad use-regex", fmt.Sprintf(ingress, "use-regex", "yes please", "number: 80"), "", exitInput,
			[]string{`use-regex"]: "yes please": want true or false`}},
		{"named port without its Service", fmt.Sprintf(ingress, "proxy-read-timeout", "5", "name: http"), "", exitInput,
			[]string{`spec.rules[0].http.paths[0].backend.service.port.name: port "http" of Service default/shop`}},
		{"unknown field", strings.Replace(fmt.Sprintf(ingress, "proxy-read-timeout", "5", "number: 80"), "  ingressClassName", "  ingressClass", 1), "", exitInput,
			[]string{"spec.ingressClass: unknown field"}},
		{"v1beta1", strings.Replace(fmt.Sprintf(ingress, "proxy-read-timeout", "5", "number: 80"), "networking.k8s.io/v1", "extensions/v1beta1", 1), "", exitInput,
			[]string{"apiVersion: extensions/v1beta1: only networking.k8s.io/v1 Ingresses are read"}},
		{"no Ingress", "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n", "", exitInput, []string{"no Ingress (networking.k8s.io/v1)"}},
		{"bad ConfigMap value", fmt.Sprintf(ingress, "proxy-read-timeout", "5", "number: 80"),
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ingress-nginx\ndata:\n  proxy-next-upstream-tries: three\n", exitInput,
			[]string{"ConfigMap ingress-nginx/c: data.proxy-next-upstream-tries: \"three\": want a whole number"}},
		{"no ConfigMap in the file", fmt.Sprintf(ingress, "proxy-read-timeout", "5", "number: 80"),
			"apiVersion: v1\nkind: Service\nmetadata:\n  name: c\n", exitInput, []string{"want exactly one ConfigMap (v1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "in.yaml")
			if err := os.WriteFile(p, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"import", "ingress-nginx", p}
			if tc.configMap != "" {
				cm := filepath.Join(dir, "cm.yaml")
				if err := os.WriteFile(cm, []byte(tc.configMap), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--configmap", cm)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, nil, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout not empty on error:\n%s", stdout.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// TestImportToleratedValues: values ingress-nginx's annotation parser
// refuses, keeping the Ingress and serving the ConfigMap's value or its
// default, failed the whole import (exit 1); they are imported as
// ingress-nginx serves them, each with an InvalidValueIgnored finding.
func TestImportToleratedValues(t *testing.T) {
	in := writeFile(t, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  annotations:
    nginx.ingress.kubernetes.io/proxy-read-timeout: "20s"
    nginx.ingress.kubernetes.io/proxy-next-upstream: "error  timeout"
    nginx.ingress.kubernetes.io/proxy-next-upstream-tries: "abc"
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: shop, port: {number: 80}}}}
`)
	code, _, stderr := gwretry(t, "", "import", "ingress-nginx", in, "--report", "json", "-q")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s", code, stderr)
	}
	var r struct {
		Findings []struct {
			Annotation, Value, Reason, Status string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stderr), &r); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got := map[string]string{}
	for _, f := range r.Findings {
		if f.Reason == "InvalidValueIgnored" {
			got[strings.TrimPrefix(f.Annotation, "nginx.ingress.kubernetes.io/")] = f.Value + " " + f.Status
		}
	}
	want := map[string]string{"proxy-read-timeout": "20s not-carried", "proxy-next-upstream": "error  timeout not-carried", "proxy-next-upstream-tries": "abc not-carried"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("InvalidValueIgnored findings %v, want %v", got, want)
	}
}

// TestImportUsage checks the usage errors (exit 2).
func TestImportUsage(t *testing.T) {
	for _, args := range [][]string{
		{"import"},
		{"import", "ingress-nginx"},
		{"import", "ingress-nginx", "x.yaml", "--report", "yaml"},
		{"import", "ingress-nginx", "x.yaml", "-o", "json"},
		{"import", "ingress-nginx", "x.yaml", "-o", "routes.yaml", "--output-file", "b.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, nil, &stdout, &stderr); code != exitUsage {
			t.Errorf("gwretry %s: exit %d, want %d\n%s", strings.Join(args, " "), code, exitUsage, stderr.String())
		}
	}
}
