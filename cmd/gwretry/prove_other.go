//go:build !unix

package main

import (
	"io"

	"github.com/spf13/cobra"
)

// newProveCmd: prove starts and stops data plane processes by process
// group, which only Unix systems have.
func newProveCmd(_ io.Reader, _, _ io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:                "prove [PATH...] --target NAME[@VERSION]",
		Short:              "Run the real data plane on the generated configuration (Linux and other Unix systems only)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return usageErrorf("prove runs data planes by process group: it needs Linux or another Unix system")
		},
	}
}
