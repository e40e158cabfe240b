package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gwretry/gwretry/backends"
)

// benchChildEnv, set in the environment of this test binary, makes it a
// child of BenchmarkProcess instead of running tests: "decode FILE" runs
// the decode baseline (decodeOnly) on FILE, "gwretry ARGS..." runs
// gwretry with ARGS, as the built binary would.
const benchChildEnv = "GWRETRY_BENCH_CHILD"

func benchChild(args []string) int {
	if len(args) == 2 && args[0] == "decode" {
		data, err := os.ReadFile(args[1])
		if err == nil {
			err = decodeOnly(data)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	if len(args) > 0 && args[0] == "gwretry" {
		autoMemoryLimit = true // as main does
		return run(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	fmt.Fprintf(os.Stderr, "%s: want decode FILE or gwretry ARGS...\n", benchChildEnv)
	return 2
}

// usage is what one child process took: wall and CPU (user + system)
// seconds, and its peak resident set (the kernel's maxrss).
type usage struct {
	wall, cpu float64
	peakMB    float64
}

// child runs this test binary as a benchChild with args and measures it.
func child(b *testing.B, args ...string) usage {
	b.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), benchChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%v: %v\n%s", args, err, stderr.Bytes())
	}
	wall := time.Since(start).Seconds()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return usage{wall: wall, cpu: cpu, peakMB: float64(ru.Maxrss) * 1024 / 1e6}
}

// BenchmarkProcess measures whole processes, as a user runs them, beside
// the decode baseline: per corpus size (GWRETRY_BENCH_ROUTES, 1,000 and
// 10,000 routes by default), `decode` is a process that only reads the
// corpus and decodes each document into its typed struct (decodeOnly);
// `all` is `gwretry translate FILE --target all -o DIR` (report.json
// included); `target=NAME` the same with one target. Each reports its
// wall and CPU (user + system) seconds and its peak resident set in MB
// (getrusage's maxrss: what the process held at its peak, heap, stacks
// and binary alike), and each run but decode its ratios to a decode run
// taken just before it, under the same load of a shared machine:
// wall/decode, cpu/decode and peak/decode. docs/performance.md gives the
// figures and the targets.
func BenchmarkProcess(b *testing.B) {
	for _, n := range benchSizes(b) {
		path := writeCorpus(b, n)
		prefix := fmt.Sprintf("routes=%d", n)
		runs := []struct{ name, target string }{{"all", "all"}}
		for _, be := range backends.All() {
			runs = append(runs, struct{ name, target string }{"target=" + be.Name(), be.Name()})
		}
		b.Run(prefix+"/decode", func(b *testing.B) {
			var u usage
			for b.Loop() {
				u = child(b, "decode", path)
			}
			reportUsage(b, u, usage{})
		})
		for _, r := range runs {
			b.Run(prefix+"/"+r.name, func(b *testing.B) {
				var u, dec usage
				for b.Loop() {
					b.StopTimer()
					dec = child(b, "decode", path)
					dir := filepath.Join(b.TempDir(), "out")
					b.StartTimer()
					u = child(b, "gwretry", "translate", path, "--target", r.target, "--output-dir", dir, "-q")
				}
				reportUsage(b, u, dec)
			})
		}
	}
}

// reportUsage reports u, and its ratios to the decode run dec when there is one.
func reportUsage(b *testing.B, u, dec usage) {
	b.ReportMetric(u.wall, "wall-s")
	b.ReportMetric(u.cpu, "cpu-s")
	b.ReportMetric(u.peakMB, "peak-MB")
	if dec.wall > 0 {
		b.ReportMetric(u.wall/dec.wall, "wall/decode")
		b.ReportMetric(u.cpu/dec.cpu, "cpu/decode")
		b.ReportMetric(u.peakMB/dec.peakMB, "peak/decode")
	}
	// The benchmark's own ns/op would be the wall time again.
	b.ReportMetric(0, "ns/op")
}
