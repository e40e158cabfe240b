package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// startProfiles writes the profiles docs/performance.md reads, when asked
// by the environment (not flags: they are for measuring gwretry, not for
// its users): GWRETRY_CPUPROFILE=FILE a CPU profile of the whole run,
// GWRETRY_MEMPROFILE=FILE a heap profile at its end (go tool pprof
// -sample_index=alloc_space shows where the bytes were allocated),
// GWRETRY_PEAKPROFILE=FILE a heap profile taken when the live heap was at
// its largest (sampled every 50 ms; inuse_space shows what held it). The
// function it returns stops and writes them.
func startProfiles(stderr io.Writer) (stop func()) {
	var stops []func()
	if p := os.Getenv("GWRETRY_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "gwretry: GWRETRY_CPUPROFILE: %v\n", err)
		} else {
			stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
		}
	}
	if p := os.Getenv("GWRETRY_MEMPROFILE"); p != "" {
		stops = append(stops, func() {
			f, err := os.Create(p)
			if err == nil {
				runtime.GC()
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(stderr, "gwretry: GWRETRY_MEMPROFILE: %v\n", err)
			}
		})
	}
	if p := os.Getenv("GWRETRY_PEAKPROFILE"); p != "" {
		stops = append(stops, peakProfile(p, stderr))
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// peakProfile samples the live heap every 50 ms and keeps the heap profile
// of the largest; the function it returns stops sampling and writes it.
func peakProfile(path string, stderr io.Writer) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		var peak uint64
		var best []byte
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				if err := os.WriteFile(path, best, 0o644); err != nil {
					fmt.Fprintf(stderr, "gwretry: GWRETRY_PEAKPROFILE: %v\n", err)
				}
				fmt.Fprintf(stderr, "gwretry: live heap peak %d MB\n", peak>>20)
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
				var b bytes.Buffer
				if pprof.Lookup("heap").WriteTo(&b, 0) == nil {
					best = b.Bytes()
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}
