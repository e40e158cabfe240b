// Command gencorpus writes the benchmark corpus of internal/corpus: a
// deterministic, varied set of Gateway API manifests.
//
//	go run ./tools/gencorpus -routes 10000 > /tmp/routes-10k.yaml
//	go run ./tools/gencorpus -routes 68000 -max-rules 1 -max-matches 1 > /tmp/routes-68k.yaml   # about 30 MB
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gwretry/gwretry/internal/corpus"
)

func main() {
	o := corpus.Defaults(1000)
	flag.IntVar(&o.Routes, "routes", o.Routes, "number of HTTPRoutes")
	flag.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the variations (the same seed gives the same bytes)")
	flag.StringVar(&o.GatewayClass, "gateway-class", o.GatewayClass, "gatewayClassName of every Gateway")
	flag.StringVar(&o.ControllerName, "controller", o.ControllerName, "controllerName of the GatewayClass")
	flag.IntVar(&o.MaxRules, "max-rules", 4, "most rules of a route (each has 1 to this many)")
	flag.IntVar(&o.MaxMatches, "max-matches", 3, "most matches of a rule (each has 1 to this many)")
	flag.Parse()
	if err := corpus.Write(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "gencorpus:", err)
		os.Exit(1)
	}
}
