//go:build tools

// Package tools pins the Traefik command so that `go build` in this module
// resolves it from go.sum.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
