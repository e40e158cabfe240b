package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/backends"
	"github.com/gwretry/gwretry/input"
	"github.com/gwretry/gwretry/internal/corpus"
	"github.com/gwretry/gwretry/resolve"
	"github.com/gwretry/gwretry/translate"
)

// BenchmarkTranslateAll measures a whole `translate --target all -o DIR` of
// the upstream conformance manifests, as a CI step runs it.
func BenchmarkTranslateAll(b *testing.B) {
	dir := b.TempDir()
	args := []string{"translate", "../../testdata/upstream-conformance", "--target", "all", "--output-dir", dir, "-q", "--report", "none"}
	b.ReportAllocs()
	for b.Loop() {
		if code := run(args, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
}

// benchSizes are the corpus sizes of BenchmarkCorpus: 1,000 and 10,000
// routes, or GWRETRY_BENCH_ROUTES (a comma list) for a profile of another
// size.
func benchSizes(b *testing.B) []int {
	spec := os.Getenv("GWRETRY_BENCH_ROUTES")
	if spec == "" {
		return []int{1000, 10000}
	}
	var out []int
	for _, s := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			b.Fatalf("GWRETRY_BENCH_ROUTES=%q: want a comma list of route counts", spec)
		}
		out = append(out, n)
	}
	return out
}

// writeCorpus writes the generated corpus of n routes and returns its path.
func writeCorpus(b *testing.B, n int) string {
	b.Helper()
	data, err := corpus.Generate(corpus.Defaults(n))
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), fmt.Sprintf("routes-%d.yaml", n))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkCorpus measures every stage on the generated corpora
// (internal/corpus), beside the baseline the targets of
// docs/performance.md are ratios of:
//
//   - decode: only decoding the documents into their gateway-api and
//     Kubernetes structs with sigs.k8s.io/yaml, as any tool must;
//   - load, build: input.Load (strict decoding, alias and size checks)
//     and resolve.Build (validation and resolution);
//   - target=NAME: one backend's Generate with its parse-back and judge
//     (translate.Run with that target alone);
//   - translate: the whole `gwretry translate FILE --target all -o DIR`.
//
// Each reports the peak heap (peak-heap-MB) it reached.
func BenchmarkCorpus(b *testing.B) {
	for _, n := range benchSizes(b) {
		path := writeCorpus(b, n)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("routes=%d/decode", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			measure(b, func() {
				if err := decodeOnly(data); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("routes=%d/load", n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			measure(b, func() {
				if _, err := input.Load([]string{path}, nil, input.DefaultLimits()); err != nil {
					b.Fatal(err)
				}
			})
		})
		in, err := input.Load([]string{path}, nil, input.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("routes=%d/build", n), func(b *testing.B) {
			measure(b, func() {
				if _, err := resolve.Build(in, translate.ResolveOptions{}); err != nil {
					b.Fatal(err)
				}
			})
		})
		m, err := resolve.Build(in, translate.ResolveOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, be := range backends.All() {
			t := translate.Target{Backend: be, Version: be.Versions()[len(be.Versions())-1]}
			b.Run(fmt.Sprintf("routes=%d/target=%s", n, be.Name()), func(b *testing.B) {
				measure(b, func() {
					if _, err := translate.Run(m, []translate.Target{t}, false); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
		floor := parseBackInputs(b, m)
		b.Run(fmt.Sprintf("routes=%d/parseback-floor", n), func(b *testing.B) {
			measure(b, func() {
				if err := parseBackFloor(floor); err != nil {
					b.Fatal(err)
				}
			})
		})
		in, m, floor = nil, nil, nil
		for _, targets := range []string{"all", "envoy,haproxy,nginx,traefik"} {
			name := "translate"
			if targets != "all" {
				name = "translate-four"
			}
			b.Run(fmt.Sprintf("routes=%d/%s", n, name), func(b *testing.B) {
				dir := b.TempDir()
				args := []string{"translate", path, "--target", targets, "--output-dir", dir, "-q", "--report", "none"}
				b.SetBytes(int64(len(data)))
				measure(b, func() {
					if code := run(args, nil, io.Discard, io.Discard); code != exitOK {
						b.Fatalf("exit %d", code)
					}
				})
			})
		}
	}
}

// floorFiles are the YAML files of the data planes' targets whose
// parse-back the floor measures: Envoy's and Traefik's.
var floorFiles = map[string]string{"envoy": "envoy/envoy.yaml", "traefik": "traefik/dynamic.yaml"}

// parseBackInputs generates Envoy's and Traefik's files for the model once,
// outside any timing.
func parseBackInputs(b *testing.B, m *translate.Model) [][]byte {
	b.Helper()
	var out [][]byte
	for _, be := range backends.All() {
		want, ok := floorFiles[be.Name()]
		if !ok {
			continue
		}
		res, err := translate.Run(m, []translate.Target{{Backend: be, Version: be.Versions()[len(be.Versions())-1]}}, false)
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range res.Files {
			if f.Path == want {
				out = append(out, f.Data)
			}
		}
	}
	if len(out) != len(floorFiles) {
		b.Fatalf("parse-back floor: found %d of the files %v", len(out), floorFiles)
	}
	return out
}

// parseBackFloor is a lower bound of what reading back a translation's
// outputs costs, whatever gwretry does: it only converts Envoy's and
// Traefik's YAML files to JSON with sigs.k8s.io/yaml (the first step of
// the decode baseline, on bytes 9 times the input's at 1,000 routes),
// decoding nothing, comparing nothing, and reading neither nginx's,
// HAProxy's nor Linkerd's files. Beside decode, it shows how much of the
// 1.5 x target the parse-back of every output alone takes.
func parseBackFloor(files [][]byte) error {
	for _, data := range files {
		if _, err := yaml.YAMLToJSON(data); err != nil {
			return err
		}
	}
	return nil
}

// measure runs f b.N times and reports the peak heap it reached.
func measure(b *testing.B, f func()) {
	b.ReportAllocs()
	runtime.GC()
	base := heapBytes()
	var peak uint64
	for b.Loop() {
		f()
		peak = max(peak, peakHeap())
	}
	b.ReportMetric(float64(max(peak, base))/(1<<20), "peak-heap-MB")
}

// heapBytes is the bytes of heap objects now; peakHeap the heap goal the
// collector last worked to, a bound of what the heap reached.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func peakHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// decodeOnly is the baseline: split the documents and decode each into its
// typed struct with sigs.k8s.io/yaml, checking nothing else.
func decodeOnly(data []byte) error {
	yr := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		raw, err := yr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		// The kind is read off its line, so that each document is
		// decoded once, as a tool that knows its input's kinds would.
		kind := ""
		if _, rest, ok := bytes.Cut(raw, []byte("\nkind: ")); ok {
			line, _, _ := bytes.Cut(rest, []byte("\n"))
			kind = string(bytes.TrimSpace(line))
		}
		var obj any
		switch kind {
		case "HTTPRoute":
			obj = &gwv1.HTTPRoute{}
		case "Gateway":
			obj = &gwv1.Gateway{}
		case "GatewayClass":
			obj = &gwv1.GatewayClass{}
		case "Service":
			obj = &corev1.Service{}
		case "Namespace":
			obj = &corev1.Namespace{}
		case "EndpointSlice":
			obj = &discoveryv1.EndpointSlice{}
		default:
			continue
		}
		if err := yaml.Unmarshal(raw, obj); err != nil {
			return err
		}
	}
}

// BenchmarkRatio runs the decode baseline and the whole translate one
// after the other in each iteration and reports their ratio, so that the
// load of a shared machine weighs on both alike: translate/decode (all
// six targets), four/decode (envoy, haproxy, nginx, traefik), and the
// wall seconds of each; and floor/decode, the parse-back floor
// (parseBackFloor) beside the decode baseline.
func BenchmarkRatio(b *testing.B) {
	for _, n := range benchSizes(b) {
		path := writeCorpus(b, n)
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			all := []string{"translate", path, "--target", "all", "--output-dir", dir, "-q", "--report", "none"}
			four := []string{"translate", path, "--target", "envoy,haproxy,nginx,traefik", "--output-dir", dir, "-q", "--report", "none"}
			in, err := input.Load([]string{path}, nil, input.DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			m, err := resolve.Build(in, translate.ResolveOptions{})
			if err != nil {
				b.Fatal(err)
			}
			floor := parseBackInputs(b, m)
			in, m = nil, nil
			var dec, fl, tr, tr4 time.Duration
			for b.Loop() {
				start := time.Now()
				if err := decodeOnly(data); err != nil {
					b.Fatal(err)
				}
				dec += time.Since(start)
				start = time.Now()
				if err := parseBackFloor(floor); err != nil {
					b.Fatal(err)
				}
				fl += time.Since(start)
				start = time.Now()
				if code := run(all, nil, io.Discard, io.Discard); code != exitOK {
					b.Fatalf("exit %d", code)
				}
				tr += time.Since(start)
				start = time.Now()
				if code := run(four, nil, io.Discard, io.Discard); code != exitOK {
					b.Fatalf("exit %d", code)
				}
				tr4 += time.Since(start)
			}
			b.ReportMetric(tr.Seconds()/dec.Seconds(), "translate/decode")
			b.ReportMetric(tr4.Seconds()/dec.Seconds(), "four/decode")
			b.ReportMetric(fl.Seconds()/dec.Seconds(), "floor/decode")
			b.ReportMetric(dec.Seconds()/float64(b.N), "decode-s")
			b.ReportMetric(tr.Seconds()/float64(b.N), "translate-s")
			b.ReportMetric(tr4.Seconds()/float64(b.N), "four-s")
		})
	}
}
