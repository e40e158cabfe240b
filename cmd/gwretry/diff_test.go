package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDiff: diff reports, from what both configurations read back, only
// what differs, with the codes of both sides; the same data plane twice
// differs in nothing; --fail-on-change gates on it.
func TestDiff(t *testing.T) {
	diff := func(t *testing.T, args ...string) (int, diffReport, string) {
		t.Helper()
		code, stdout, stderr := gwretry(t, "", append([]string{"diff", example, "-o", "json"}, args...)...)
		var d diffReport
		if code == exitOK || code == exitFailOn {
			if err := json.Unmarshal([]byte(stdout), &d); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
		}
		return code, d, stderr
	}
	t.Run("HAProxy 3.0 does not retry 429", func(t *testing.T) {
		code, d, stderr := diff(t, "--from", "nginx@1.26", "--to", "haproxy@3.0")
		if code != exitOK || len(d.Rules) != 1 {
			t.Fatalf("exit %d, %d rules differ, want 1:\n%+v\n%s", code, len(d.Rules), d, stderr)
		}
		rd := d.Rules[0]
		if rd.Route != "shop/storefront" || rd.Rule != 2 || rd.Methods != "idempotent" || len(rd.Differences) != 1 {
			t.Fatalf("%+v", rd)
		}
		x := rd.Differences[0]
		if x.What != "retried on" || !strings.HasPrefix(x.From, "responses 429;") || strings.Contains(x.To, "429") ||
			!strings.Contains(x.ToWhy, "CodesNeedLaterVersion") || !strings.Contains(x.FromWhy, "InterimResponseIsFinal") {
			t.Errorf("%+v", x)
		}
	})
	t.Run("Envoy waits between tries, nginx does not", func(t *testing.T) {
		_, d, _ := diff(t, "--from", "nginx@1.26", "--to", "envoy")
		found := false
		for _, rd := range d.Rules {
			for _, x := range rd.Differences {
				if rd.Rule == 0 && x.What == "pause between tries" {
					found = x.From == "0s" && x.To == "0s to 100ms" && x.FromWhy == "unsupported NoBackoff" && x.ToWhy == "approximated FullJitterBackoff"
				}
			}
		}
		if !found {
			t.Errorf("no backoff difference for rule 0: %+v", d)
		}
	})
	t.Run("the same data plane differs in nothing", func(t *testing.T) {
		code, d, _ := diff(t, "--from", "haproxy@3.0", "--to", "haproxy@3.0", "--fail-on-change")
		if code != exitOK || len(d.Rules) != 0 {
			t.Errorf("exit %d, %+v", code, d)
		}
	})
	t.Run("fail on change", func(t *testing.T) {
		if code, _, stderr := diff(t, "--from", "nginx@1.26", "--to", "haproxy@3.0", "--fail-on-change"); code != exitFailOn || !strings.Contains(stderr, "--fail-on-change: 1 rule") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
	})
	t.Run("paired by rule, not by position", func(t *testing.T) {
		// Linkerd also explains the rules attached to Services, which
		// Envoy does not serve: each side is paired with the same rule.
		code, stdout, stderr := gwretry(t, "", "diff", "../../testdata/linkerd-gamma/input.yaml", "--from", "envoy", "--to", "linkerd", "-o", "json")
		var d diffReport
		if err := json.Unmarshal([]byte(stdout), &d); code != exitOK || err != nil {
			t.Fatalf("exit %d, %v\n%s", code, err, stderr)
		}
		seen := map[string]bool{}
		served := 0
		for _, rd := range d.Rules {
			k := rd.Route + ":" + strconv.Itoa(rd.Rule) + ":" + string(rd.Methods)
			if seen[k] {
				t.Errorf("%s is listed twice", k)
			}
			seen[k] = true
			for _, x := range rd.Differences {
				if x.What == "read back" {
					served++
					if x.From != "not served" || x.To != "read back" {
						t.Errorf("%s: %+v", k, x)
					}
				}
			}
		}
		if served != 5 || !seen["shop/pay:0:idempotent"] {
			t.Errorf("%d rules only Linkerd serves, want 5: %+v", served, d.Rules)
		}
	})
	t.Run("usage", func(t *testing.T) {
		if code, _, _ := diff(t, "--from", "nginx"); code != exitUsage {
			t.Errorf("no --to: exit %d", code)
		}
		if code, _, _ := diff(t, "--from", "nginx,envoy", "--to", "haproxy"); code != exitUsage {
			t.Errorf("two --from: exit %d", code)
		}
	})
	t.Run("text and markdown", func(t *testing.T) {
		_, out, _ := gwretry(t, "", "diff", example, "--from", "nginx@1.26", "--to", "haproxy@3.0")
		if !strings.Contains(out, "HTTPRoute shop/storefront rule 2 (default), other methods\n") || !strings.Contains(out, "CodesNeedLaterVersion") {
			t.Errorf("text:\n%s", out)
		}
		_, md, _ := gwretry(t, "", "diff", example, "--from", "nginx@1.26", "--to", "haproxy@3.0", "-o", "markdown")
		if !strings.HasPrefix(md, "### What changes from nginx@1.26 to haproxy@3.0\n") || !strings.Contains(md, "| retried on |") {
			t.Errorf("markdown:\n%s", md)
		}
	})
}

// TestExplainFromTo: explain --from A --to B gives both data planes'
// timelines of each rule side by side, A's then B's; --rule keeps one.
func TestExplainFromTo(t *testing.T) {
	code, out, stderr := gwretry(t, "", "explain", example, "--from", "nginx@1.22", "--to", "nginx@1.26", "--rule", "shop/storefront:0", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var ex struct {
		Timelines []struct {
			Target, Version, Route, Methods string
			Rule                            int
		}
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range ex.Timelines {
		got = append(got, tl.Target+"@"+tl.Version+" "+tl.Route+":"+strconv.Itoa(tl.Rule)+" "+tl.Methods)
	}
	want := []string{
		"nginx@1.22 shop/storefront:0 idempotent", "nginx@1.26 shop/storefront:0 idempotent",
		"nginx@1.22 shop/storefront:0 non-idempotent", "nginx@1.26 shop/storefront:0 non-idempotent",
	}
	if !slices.Equal(got, want) {
		t.Errorf("timelines %q, want %q", got, want)
	}
	// From ingress-nginx: its side is the diff's, then the target's.
	code, out, stderr = gwretry(t, "", "explain", "../../testdata/ingress-nginx-diff/migration.yaml", "--from", "ingress-nginx", "--to", "haproxy@3.0", "-o", "json")
	ex.Timelines = nil
	if err := json.Unmarshal([]byte(out), &ex); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	got = nil
	for _, tl := range ex.Timelines {
		got = append(got, tl.Target+"@"+tl.Version+" "+tl.Route+":"+strconv.Itoa(tl.Rule)+" "+tl.Methods)
	}
	want = []string{
		"ingress-nginx@1.15 shop/storefront-shop-example-com:0 idempotent", "haproxy@3.0 shop/storefront-shop-example-com:0 idempotent",
		"ingress-nginx@1.15 shop/storefront-shop-example-com:0 non-idempotent", "haproxy@3.0 shop/storefront-shop-example-com:0 non-idempotent",
	}
	if !slices.Equal(got, want) {
		t.Errorf("timelines %q, want %q", got, want)
	}
	for _, args := range [][]string{
		{"--from", "nginx", "--to", "envoy", "--configmap", "cm.yaml"},
		{"--from", "nginx"},
		{"--from", "nginx", "--to", "envoy", "--target", "haproxy"},
		{"--from", "nginx", "--to", "envoy", "--rule", "storefront"},
		{"--from", "nginx", "--to", "envoy", "--rule", "shop/storefront:9"},
	} {
		if code, _, _ := gwretry(t, "", append([]string{"explain", example}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// ingressExample is the Ingresses of the ingress-nginx diff and its live
// test: retry annotations, a 1s read timeout, non_idempotent, tries 0,
// off, and the defaults.
const ingressExample = "../../testdata/ingress-nginx-diff/ingresses.yaml"

// TestDiffFromIngress: --from ingress-nginx compares, per Ingress path,
// what ingress-nginx's template configures with what the target does with
// the imported HTTPRoute, with the import's codes on the ingress-nginx
// side.
func TestDiffFromIngress(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ingress-nginx.conf")
	code, stdout, stderr := gwretry(t, "", "diff", ingressExample, "--from", "ingress-nginx", "--to", "haproxy@3.0", "-o", "json", "--ingress-nginx-conf", conf)
	var d diffReport
	if err := json.Unmarshal([]byte(stdout), &d); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v\n%s", code, err, stderr)
	}
	if d.From.Name != "ingress-nginx" || d.From.Version != "1.15" {
		t.Errorf("from %+v", d.From)
	}
	got := map[string]difference{} // ingress methods what
	for _, rd := range d.Rules {
		if rd.Ingress == "" || !strings.HasPrefix(rd.Path, "PathPrefix /") {
			t.Errorf("rule %s:%d names no Ingress path: %+v", rd.Route, rd.Rule, rd)
		}
		for _, x := range rd.Differences {
			got[rd.Ingress+" "+string(rd.Methods)+" "+x.What] = x
		}
	}
	check := func(key string, ok func(x difference) bool) {
		t.Helper()
		x, found := got[key]
		if !found || !ok(x) {
			t.Errorf("%s: %+v (found %v)", key, x, found)
		}
	}
	check("shop/codes idempotent retried on", func(x difference) bool {
		return strings.HasPrefix(x.From, "responses 429;") && !strings.Contains(x.To, "429") &&
			strings.Contains(x.FromWhy, "ConditionsCarried") && strings.Contains(x.ToWhy, "CodesNeedLaterVersion")
	})
	check("shop/unbounded idempotent retries", func(x difference) bool {
		return x.From == "unbounded" && x.To == "1" && strings.Contains(x.FromWhy, "UnlimitedTries")
	})
	check("shop/post non-idempotent retried on", func(x difference) bool {
		return strings.HasPrefix(x.From, "responses 503;") && strings.Contains(x.ToWhy, "NonIdempotentExempt")
	})
	for _, key := range []string{"shop/retry idempotent retries", "shop/retry idempotent retried on", "shop/no-retry idempotent retries",
		"shop/no-retry idempotent retried on", "shop/retry idempotent try cut by", "shop/plain idempotent try cut by"} {
		if x, found := got[key]; found {
			t.Errorf("%s differs: %+v", key, x)
		}
	}
	data, err := os.ReadFile(conf)
	if err != nil || !strings.Contains(string(data), "proxy_next_upstream_tries       0;") {
		t.Errorf("--ingress-nginx-conf: %v\n%s", err, data)
	}
	_, text, _ := gwretry(t, "", "diff", ingressExample, "--from", "ingress-nginx", "--to", "haproxy@3.0")
	if !strings.Contains(text, "Ingress shop/codes PathPrefix /codes (HTTPRoute shop/retry-shop-example-com rule 1), other methods\n") {
		t.Errorf("text:\n%s", text)
	}
	// The ConfigMap's values are the defaults of the Ingresses that do not
	// annotate them: 5 tries and non_idempotent for shop/plain.
	cm := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(cm, []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: ingress-nginx-controller, namespace: ingress-nginx}
data: {proxy-next-upstream-tries: "5", retry-non-idempotent: "true"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = gwretry(t, "", "diff", ingressExample, "--from", "ingress-nginx", "--configmap", cm, "--to", "haproxy@3.0", "-o", "json")
	var cd diffReport
	if err := json.Unmarshal([]byte(stdout), &cd); code != exitOK || err != nil {
		t.Fatalf("--configmap: exit %d, %v\n%s", code, err, stderr)
	}
	plain := map[string]string{}
	for _, rd := range cd.Rules {
		for _, x := range rd.Differences {
			if rd.Ingress == "shop/plain" {
				plain[string(rd.Methods)+" "+x.What] = x.From + " | " + x.To
			}
		}
	}
	if _, ok := plain["idempotent retries"]; ok || !strings.HasPrefix(plain["non-idempotent retried on"], "connection failures, also after") {
		t.Errorf("--configmap: shop/plain differs in %q", plain)
	}
	// An Ingress without a class is served only with
	// --watch-ingress-without-class; with none served the diff says so.
	classless := filepath.Join(t.TempDir(), "classless.yaml")
	if err := os.WriteFile(classless, []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: c, namespace: shop}
spec:
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /c, pathType: Prefix, backend: {service: {name: c, port: {number: 80}}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := gwretry(t, "", "diff", classless, "--from", "ingress-nginx", "--to", "envoy"); code != exitInput || !strings.Contains(stderr, "serves no Ingress path") {
		t.Errorf("no Ingress served: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := gwretry(t, "", "diff", classless, "--from", "ingress-nginx", "--to", "envoy", "--watch-ingress-without-class"); code != exitOK {
		t.Errorf("--watch-ingress-without-class: exit %d\n%s", code, stderr)
	}
	// A backend that is not a Service has no endpoint: its location is
	// not modelled, and the diff says it is not read back.
	resource := filepath.Join(t.TempDir(), "resource.yaml")
	if err := os.WriteFile(resource, []byte(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: r, namespace: shop}
spec:
  ingressClassName: nginx
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /b, pathType: Prefix, backend: {resource: {apiGroup: k8s.example.com, kind: Bucket, name: b}}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = gwretry(t, "", "diff", resource, "--from", "ingress-nginx", "--to", "nginx", "-o", "json")
	var rd diffReport
	if err := json.Unmarshal([]byte(stdout), &rd); code != exitOK || err != nil || len(rd.Rules) != 2 ||
		rd.Rules[0].Differences[0] != (difference{What: "read back", From: "not read back", To: "read back", FromWhy: "-", ToWhy: "-"}) {
		t.Errorf("a resource backend: exit %d, %v %+v\n%s", code, err, rd, stderr)
	}
	for _, args := range [][]string{
		{"--from", "envoy", "--to", "ingress-nginx"},
		{"--from", "ingress-nginx@1.9", "--to", "envoy"},
		{"--from", "envoy", "--to", "haproxy", "--configmap", conf},
	} {
		if code, _, _ := gwretry(t, "", append([]string{"diff", ingressExample}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
}

// TestDiffMigrationExample: the README's migration example is the real
// output of gwretry diff --from ingress-nginx on
// testdata/ingress-nginx-diff/migration.yaml, to Envoy and to HAProxy
// (goldens migration-envoy.md and migration-haproxy.md, -update rewrites
// them), and the README holds each verbatim.
func TestDiffMigrationExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"envoy", "haproxy"} {
		code, stdout, stderr := gwretry(t, "", "diff", "../../testdata/ingress-nginx-diff/migration.yaml", "--from", "ingress-nginx", "--to", to, "-o", "markdown")
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		golden := "../../testdata/ingress-nginx-diff/migration-" + to + ".md"
		if *update {
			if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil || string(want) != stdout {
			t.Errorf("%s differs from the output (-update rewrites it): %v\n%s", golden, err, stdout)
		}
		if !strings.Contains(string(readme), stdout) {
			t.Errorf("README.md does not hold the output of the migration example to %s:\n%s", to, stdout)
		}
	}
}
