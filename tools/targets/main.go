// Command targets prints the names of gwretry's targets from the registry
// (backends/registry.go) for the Makefile, so that it names none: every
// target, or with -live those whose data plane binary gwretry runs, in
// the order gwretry prove runs them.
package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/gwretry/gwretry/backends"
)

func main() {
	live := flag.Bool("live", false, "only the targets with a data plane binary")
	sep := flag.String("sep", " ", "separator")
	flag.Parse()
	rows := backends.Targets()
	if *live {
		rows = backends.Live()
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	fmt.Println(strings.Join(names, *sep))
}
