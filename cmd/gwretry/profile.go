package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// startProfiles writes the profiles docs/performance.md reads, when asked
// by the environment (not flags: they are for measuring gwretry, not for
// its users): GWRETRY_CPUPROFILE=FILE a CPU profile of the whole run,
// GWRETRY_MEMPROFILE=FILE a heap profile at its end (go tool pprof
// -sample_index=alloc_space shows where the bytes were allocated). The
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
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
