package nginxconf

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/importer/ingressnginx"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/translate"
)

var update = flag.Bool("update", false, "rewrite testdata/ingress-nginx-diff/ingress-nginx.conf")

const dir = "../../../testdata/ingress-nginx-diff"

func generate(t *testing.T, cm *ingressnginx.ConfigMap) *Config {
	t.Helper()
	in, err := ingressnginx.Load([]string{filepath.Join(dir, "ingresses.yaml")}, nil, input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := ingressnginx.Import(in, ingressnginx.Options{ConfigMap: cm})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Generate(res, "127.0.0.1:8080", func(string, int) []string { return []string{"10.0.0.1:8080", "10.0.0.2:8080"} })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// read reads cfg back, by the Ingress of each location.
func read(t *testing.T, cfg *Config) map[string]map[translate.MethodClass]translate.Behaviour {
	t.Helper()
	bs, err := Read(cfg.Data, cfg.Locations)
	if err != nil {
		t.Fatalf("%v\n%s", err, cfg.Data)
	}
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	for i, loc := range cfg.Locations {
		out[loc.Ingress] = bs[i]
	}
	return out
}

// TestGenerateAndRead: the file has ingress-nginx's directives for each
// Ingress's settings, and its reading is ingress-nginx's behaviour: the
// tries of proxy_next_upstream_tries whatever the endpoints (two here),
// none with off, unbounded with 0, POST retried only with non_idempotent,
// a try cut by proxy_read_timeout.
func TestGenerateAndRead(t *testing.T) {
	cfg := generate(t, nil)
	golden := filepath.Join(dir, "ingress-nginx.conf")
	if *update {
		if err := os.WriteFile(golden, cfg.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(golden); err != nil || string(want) != string(cfg.Data) {
		t.Errorf("%s differs from the generated file (go test ./importer/ingressnginx/nginxconf -update): %v", golden, err)
	}
	got := read(t, cfg)
	type want struct {
		retries    int
		codes      []int
		conn       translate.ConnRetry
		postCodes  []int
		postConn   translate.ConnRetry
		tryTimeout time.Duration
	}
	cases := map[string]want{
		"shop/retry":     {2, []int{503}, translate.ConnRetryAll, nil, translate.ConnRetryUnsent, time.Second},
		"shop/codes":     {1, []int{429}, translate.ConnRetryAll, nil, translate.ConnRetryUnsent, time.Second},
		"shop/post":      {2, []int{503}, translate.ConnRetryAll, []int{503}, translate.ConnRetryAll, time.Second},
		"shop/unbounded": {UnboundedRetries, []int{503}, translate.ConnRetryAll, nil, translate.ConnRetryUnsent, 60 * time.Second},
		"shop/no-retry":  {0, nil, translate.ConnRetryNone, nil, translate.ConnRetryNone, time.Second},
		"shop/plain":     {2, nil, translate.ConnRetryAll, nil, translate.ConnRetryUnsent, 60 * time.Second},
	}
	if len(got) != len(cases) {
		t.Errorf("%d locations, want %d", len(got), len(cases))
	}
	for ing, w := range cases {
		bh, post := got[ing][translate.Idempotent], got[ing][translate.NonIdempotent]
		if bh.Retries != w.retries || !slices.Equal(bh.Codes, w.codes) || bh.ConnErrors != w.conn ||
			!slices.Equal(post.Codes, w.postCodes) || post.ConnErrors != w.postConn ||
			bh.TryTimeout != (translate.Timer{Kind: translate.TimerIdle, Value: w.tryTimeout}) || bh.ExtraRetries != (w.retries > 0) {
			t.Errorf("%s: read %+v, POST %+v; want %+v", ing, bh, post, w)
		}
	}
}

// TestConfigMapRetryNonIdempotent: the ConfigMap's retry-non-idempotent
// adds non_idempotent to every location (buildNextUpstream), and the
// reading retries POST then.
func TestConfigMapRetryNonIdempotent(t *testing.T) {
	cfg := generate(t, &ingressnginx.ConfigMap{Name: "ingress-nginx/ingress-nginx-controller", Data: map[string]string{"retry-non-idempotent": "true"}})
	if !strings.Contains(string(cfg.Data), "proxy_next_upstream             error timeout non_idempotent;") {
		t.Errorf("no non_idempotent for the defaults:\n%s", cfg.Data)
	}
	post := read(t, cfg)["shop/plain"][translate.NonIdempotent]
	if post.ConnErrors != translate.ConnRetryAll || !post.TimeoutRetried {
		t.Errorf("POST on shop/plain: %+v", post)
	}
}

// TestReadFollowsTheFile: the reading comes from the directives, not from
// the settings: a changed directive changes it, and an upstream with
// fewer entries than tries (plain nginx would stop sooner than
// ingress-nginx's balancer) is refused.
func TestReadFollowsTheFile(t *testing.T) {
	cfg := generate(t, nil)
	text := string(cfg.Data)
	cfg.Data = []byte(strings.Replace(text, "proxy_next_upstream             error timeout http_429;", "proxy_next_upstream             error timeout http_502;", 2))
	if bh := read(t, cfg)["shop/codes"][translate.Idempotent]; !slices.Equal(bh.Codes, []int{502}) {
		t.Errorf("codes read %v, want [502] as the file says", bh.Codes)
	}
	cfg.Data = []byte(strings.Replace(text, "proxy_next_upstream_tries       2;", "proxy_next_upstream_tries       5;", 2))
	if _, err := Read(cfg.Data, cfg.Locations); err == nil || !strings.Contains(err.Error(), "lists 2 entries for 5 tries") {
		t.Errorf("an upstream with fewer entries than tries: %v", err)
	}
	cfg.Data = []byte(strings.Replace(text, "proxy_next_upstream_tries       2;", "proxy_next_upstream_tries       1;", 1))
	if _, err := Read(cfg.Data, cfg.Locations); err == nil || !strings.Contains(err.Error(), "its locations behave differently") {
		t.Errorf("the two locations of a Prefix path disagree: %v", err)
	}
}

func TestBuildNextUpstream(t *testing.T) {
	for _, c := range []struct {
		in   string
		rni  bool
		want string
	}{
		{"error timeout", false, "error timeout"},
		{"error non_idempotent timeout", false, "error timeout non_idempotent"},
		{"error timeout", true, "error timeout non_idempotent"},
		{"off", false, "off"},
	} {
		if got := buildNextUpstream(c.in, c.rni); got != c.want {
			t.Errorf("buildNextUpstream(%q, %v) = %q, want %q", c.in, c.rni, got, c.want)
		}
	}
}

// TestSharedLocations: a Prefix /p's "= /p" gives way to an Exact /p of
// the same host, and the file still parses and reads.
func TestSharedLocations(t *testing.T) {
	doc := func(name, pathType string) string {
		return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ` + name + `, namespace: shop}
spec:
  ingressClassName: nginx
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /p, pathType: ` + pathType + `, backend: {service: {name: ` + name + `, port: {number: 80}}}}
`
	}
	f := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(f, []byte(doc("prefix", "Prefix")+"---\n"+doc("exact", "Exact")), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := ingressnginx.Load([]string{f}, nil, input.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := ingressnginx.Import(in, ingressnginx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Generate(res, "127.0.0.1:8080", func(string, int) []string { return []string{"10.0.0.1:80"} })
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(cfg.Data), "location = /p {"); n != 1 {
		t.Errorf("%d locations = /p, want 1:\n%s", n, cfg.Data)
	}
	got := map[string][][]string{}
	for _, loc := range cfg.Locations {
		got[loc.Path] = loc.Blocks
	}
	if len(got["PathPrefix /p"]) != 1 || got["PathPrefix /p"][0][0] != "/p/" || len(got["Exact /p"]) != 1 {
		t.Errorf("blocks %q", got)
	}
	read(t, cfg)
}

// TestManyTries: the file lists at most MaxEntries entries whatever the
// tries, and reads the tries from proxy_next_upstream_tries.
func TestManyTries(t *testing.T) {
	cfg := generate(t, &ingressnginx.ConfigMap{Name: "ingress-nginx/c", Data: map[string]string{"proxy-next-upstream-tries": "1000000"}})
	if n := strings.Count(string(cfg.Data), "max_fails=0;"); n > len(cfg.Locations)*MaxEntries {
		t.Errorf("%d upstream entries for %d locations", n, len(cfg.Locations))
	}
	if bh := read(t, cfg)["shop/plain"][translate.Idempotent]; bh.Retries != 999999 {
		t.Errorf("retries %d, want 999999", bh.Retries)
	}
}
