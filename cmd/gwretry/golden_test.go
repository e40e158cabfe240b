package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	ggrpc "google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/backends/envoy"
	"github.com/gwretry/gwretry/internal/dataplane"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// defaultGoldenTargets are the versions whose real binaries the tests run.
const defaultGoldenTargets = "envoy,haproxy@2.6,nginx@1.22,traefik@3.6"

// TestGolden runs every case in testdata/<case>/: the input (input.yaml, or
// the paths in the case's args file, relative to the case) is translated
// with the flags in args, and the output directory must equal the case's
// files byte for byte. Each generated configuration is then checked by its
// real data plane.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("../../testdata/*/args")
	if err != nil {
		t.Fatal(err)
	}
	inputs, _ := filepath.Glob("../../testdata/*/input.yaml")
	for _, p := range append(cases, inputs...) {
		dir := filepath.Dir(p)
		if p != filepath.Join(dir, "args") && slices.Contains(cases, filepath.Join(dir, "args")) {
			continue // case listed through its args file
		}
		t.Run(filepath.Base(dir), func(t *testing.T) { runGolden(t, dir) })
	}
}

func goldenArgs(t *testing.T, dir string) []string {
	args := []string{}
	if data, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if strings.HasPrefix(line, "-") {
				args = append(args, strings.Fields(line)...)
			} else {
				args = append(args, filepath.Join(dir, line))
			}
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "input.yaml")); err == nil {
		args = append(args, filepath.Join(dir, "input.yaml"))
	}
	if !slices.Contains(args, "--target") {
		args = append(args, "--target", defaultGoldenTargets)
	}
	return args
}

func runGolden(t *testing.T, dir string) {
	out := t.TempDir()
	args := append([]string{"translate", "--output-dir", out, "--report", "none", "-q"}, goldenArgs(t, dir)...)
	var stderr bytes.Buffer
	if code := run(args, nil, &bytes.Buffer{}, &stderr); code != exitOK {
		t.Fatalf("gwretry %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	got := readTree(t, out)
	if *update {
		for path := range readTree(t, dir) {
			if path != "input.yaml" && path != "args" && !strings.HasSuffix(path, ".md") {
				os.Remove(filepath.Join(dir, path))
			}
		}
		for path, data := range got {
			p := filepath.Join(dir, path)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := readTree(t, dir)
	for path := range want {
		if path == "input.yaml" || path == "args" || strings.HasSuffix(path, ".md") {
			delete(want, path)
		}
	}
	if diff := cmp.Diff(stringTree(want), stringTree(got)); diff != "" {
		t.Errorf("output differs from testdata (run `go test ./cmd/gwretry -update` and review) (-want +got):\n%s", diff)
	}
	checkWithDataPlanes(t, got)
}

// dataPlaneChecks run a target's generated files through its real data
// plane (or, for gRPC, the library that loads them), by target name. A
// check of a binary's configuration runs when the golden's version is the
// installed binary's (every version, for a check whose directives all
// versions read); a target without a check is checked by parse-back only.
var dataPlaneChecks = map[string]struct {
	name        string
	allVersions bool
	check       func(t *testing.T, files map[string][]byte)
}{
	// Every supported nginx version reads the same directives.
	"nginx": {"nginx -t", true, func(t *testing.T, files map[string][]byte) {
		proxytest.NginxCheck(t, files["nginx/nginx.conf"])
	}},
	"haproxy": {"haproxy -c", false, func(t *testing.T, files map[string][]byte) {
		proxytest.HAProxyCheck(t, files["haproxy/haproxy.cfg"])
	}},
	"traefik": {"traefik loads", false, func(t *testing.T, files map[string][]byte) {
		proxytest.TraefikCheck(t, files["traefik/traefik.yaml"], files["traefik/dynamic.yaml"])
	}},
	"grpc": {"grpc-go loads", true, func(t *testing.T, files map[string][]byte) {
		cc, err := ggrpc.NewClient("passthrough:///127.0.0.1:1", ggrpc.WithTransportCredentials(insecure.NewCredentials()),
			ggrpc.WithDefaultServiceConfig(string(files["grpc/service-config.json"])))
		if err != nil {
			t.Fatalf("grpc-go refuses grpc/service-config.json: %v", err)
		}
		cc.Close()
	}},
	"envoy": {"envoy", true, func(t *testing.T, files map[string][]byte) { checkEnvoy(t, files["envoy/envoy.yaml"]) }},
}

// checkWithDataPlanes runs each generated configuration through its real
// data plane (dataPlaneChecks), when the report says the version is the one
// installed here.
func checkWithDataPlanes(t *testing.T, files map[string][]byte) {
	var rep translate.Report
	if err := json.Unmarshal(files["report.json"], &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	version := map[string]string{}
	for _, tg := range rep.Targets {
		version[tg.Name] = tg.Version
	}
	for _, row := range backends.Targets() {
		c, ok := dataPlaneChecks[row.Name]
		if !ok || !slices.ContainsFunc(row.Files, func(f string) bool { _, ok := files[f]; return ok }) {
			continue
		}
		if !c.allVersions && row.Live != nil {
			if have := installedVersion(row.Live); have != "" && have != version[row.Name] {
				t.Logf("%s@%s output is checked by parse-back only: %s %s is the binary here", row.Name, version[row.Name], row.Name, have)
				continue
			}
		}
		t.Run(c.name, func(t *testing.T) { c.check(t, files) })
	}
}

var installedVersions sync.Map

// installedVersion is the MAJOR.MINOR of the binary of k found here, or ""
// when there is none (its check then skips, or fails in CI).
func installedVersion(k *dataplane.Kind) string {
	if v, ok := installedVersions.Load(k.Name); ok {
		return v.(string)
	}
	v := ""
	if bin := k.Find(); bin != "" {
		v, _, _ = k.Version(context.Background(), bin)
	}
	installedVersions.Store(k.Name, v)
	return v
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	tree := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		data, err := os.ReadFile(p)
		tree[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func stringTree(tree map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range tree {
		out[k] = string(v)
	}
	return out
}

// checkEnvoy validates an Envoy bootstrap with go-control-plane, and with a
// real envoy when one is installed (none is in Debian, so it is optional
// even in CI).
func checkEnvoy(t *testing.T, conf []byte) {
	if err := envoy.Check(conf); err != nil {
		t.Fatal(err)
	}
	bin := proxytest.Find("envoy")
	if bin == "" {
		return
	}
	p := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(p, conf, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "--mode", "validate", "-c", p).CombinedOutput(); err != nil {
		t.Fatalf("envoy --mode validate: %v\n%s", err, out)
	}
}
