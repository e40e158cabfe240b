//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/internal/kubeapitest"
)

// TestClusterMemory measures, when GWRETRY_CLUSTER_ROUTES=N is set, the
// peak memory (max RSS) and time of translate reading a corpus of N routes
// from the cluster and from the same corpus as a file: the numbers of
// docs/cluster.md. Not part of make test (10,000 routes take minutes to
// apply).
func TestClusterMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GWRETRY_CLUSTER_ROUTES"))
	if n <= 0 {
		t.Skip("set GWRETRY_CLUSTER_ROUTES=N to measure")
	}
	s := apiserver.Get(t)
	c := newLiveCluster(t, s)
	c.headless = true
	s.InstallCRDs(t, kubeapitest.GatewayAPICRDs(t, "standard")...)
	s.InstallCRDs(t, kubeapitest.PolicyCRDs(t)...)
	dir := t.TempDir()
	f := filepath.Join(dir, "corpus.yaml")
	var buf bytes.Buffer
	if err := corpus.Write(&buf, corpus.Defaults(n)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gwretry")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	docs := readDocs(t, f)
	start := time.Now()
	c.apply(t, docs)
	defer c.clear(t)
	t.Logf("%d routes: applied %d objects in %v", n, len(docs), time.Since(start))
	measure := func(what string, args ...string) {
		out := filepath.Join(dir, what)
		cmd := exec.Command(bin, append([]string{"translate", "--target", "envoy", "--output-dir", out, "--report", "none", "-q"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, stderr.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		t.Logf("%s: max RSS %d MiB, %v wall, %v user", what, ru.Maxrss/1024, time.Since(start).Round(time.Millisecond), cmd.ProcessState.UserTime().Round(time.Millisecond))
	}
	measure("file", f)
	measure("cluster", "--kubeconfig", s.Kubeconfig, "-A")
	measure("cluster-dump", "--kubeconfig", s.Kubeconfig, "-A", "--dump", filepath.Join(dir, "dump"))
	measure("dump", filepath.Join(dir, "dump"))
	for _, f := range []string{"envoy/envoy.yaml", "report.json"} {
		a, _ := os.ReadFile(filepath.Join(dir, "cluster", f))
		b, _ := os.ReadFile(filepath.Join(dir, "dump", f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the cluster's and its dump's differ", f)
		}
	}
}
