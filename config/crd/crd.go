// Package crd holds the CustomResourceDefinitions of gwretry's own kinds
// (apply them with kubectl; gwretry validates its input with them).
package crd

import "embed"

// Files are the CRDs, one kind per file: gwretry.io_<plural>.yaml.
//
//go:embed *.yaml
var Files embed.FS
