// Package backends lists the data planes gwretry generates configuration
// for: one row of the registry (registry.go) per target. Adding a data
// plane means adding its package and one row there; the commands, the
// end-to-end suite and the tests read the rows and name no target.
package backends

import (
	"fmt"

	"github.com/gwretry/gwretry/translate"
)

// All returns every backend with its default settings, in the order
// --target all runs them.
func All() []translate.Backend {
	var out []translate.Backend
	for _, t := range registry {
		b, err := t.New(nil)
		if err != nil {
			// The defaults are the registry's own: a target whose
			// defaults it refuses is a bug that TestRegistry catches.
			panic(fmt.Sprintf("backends: %s refuses its default settings: %v", t.Name, err))
		}
		out = append(out, b)
	}
	return out
}

// Settings are the values of the targets' own flags (Target.Flags), by
// flag name. A flag that is absent, or "", has its default.
type Settings map[string]string

// Configured returns every backend with the given settings, in the order
// of All.
func Configured(s Settings) ([]translate.Backend, error) {
	var out []translate.Backend
	for _, t := range registry {
		b, err := t.New(s)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
