//go:build !unix

package dataplane

import (
	"context"
	"errors"
)

// Where there is no process group, gwretry runs no data plane; these stand
// in for start.go's types and the Kinds' start functions so that the Kinds
// can still be listed, found and asked their version.

// Ports hands out loopback ports on Unix systems only.
type Ports struct{}

// Proxy is a data plane process, on Unix systems only.
type Proxy struct{}

var errNoProcessGroups = errors.New("gwretry runs data planes by process group: it needs Linux or another Unix system")

func noProcessGroups(context.Context, string, []string, string, string, *Ports) (*Proxy, string, error) {
	return nil, "", errNoProcessGroups
}

var startNginxOutput, startHAProxyOutput, startTraefikOutput, startEnvoyOutput startFunc = noProcessGroups, noProcessGroups, noProcessGroups, noProcessGroups
