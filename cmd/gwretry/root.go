package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// exitError carries an exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode prints err (if any) and maps it to an exit code. command is
// the path of the command that ran ("gwretry translate"), whose --help a
// usage error points at.
func exitCode(err error, command string, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	code := exitInput
	if errors.As(err, &ee) {
		code = ee.code
	} else if strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own error for "gwretry bogus" (and cobra.NoArgs's) is
		// untyped: it is a usage error, not bad input.
		code = exitUsage
	}
	if code == exitUsage {
		fmt.Fprintf(stderr, "gwretry: %v\nRun '%s --help' for usage.\n", err, command)
	} else {
		fmt.Fprintf(stderr, "gwretry: %v\n", err)
	}
	return code
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "gwretry",
		Short: "Translate Gateway API retries and timeouts for Envoy, NGINX, HAProxy and Traefik",
		Long: `gwretry reads Kubernetes Gateway API manifests (HTTPRoutes with rules[].retry and
rules[].timeouts, and the Gateways, Services and EndpointSlices around them) and writes the
equivalent configuration for each data plane. For every rule and every data plane it reports
what is honoured, approximated, or cannot be honoured, and why.

Exit codes: 0 ok, 1 invalid input, 2 usage, 3 --fail-on reached, 4 translate --check found
a difference, 5 prove saw a data plane contradict a claim of the report, 70 an internal error (a bug in gwretry: a configuration that contradicts its own
report, a panic).

Without PATH, a command reads the cluster of the kubeconfig instead, read-only, as kubectl does
(-n NAMESPACE or -A, -l, --context, --kubeconfig; docs/cluster.md). Installed as kubectl-gwretry
on the PATH, it is also the kubectl plugin "kubectl gwretry".`,
		Example: `  gwretry translate route.yaml --target envoy
  gwretry translate manifests/ --target all -o out/
  gwretry check manifests/ --target nginx@1.22 --fail-on unsupported
  gwretry translate manifests/ --target all -o out/ --check
  gwretry matrix --target haproxy
  gwretry prove manifests/ --target nginx
  kubectl gwretry check -A
  source <(gwretry completion bash)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	root.AddCommand(newTranslateCmd(stdin, stdout, stderr, false), newTranslateCmd(stdin, stdout, stderr, true), newVersionCmd(stdout))
	root.AddCommand(newImportCmd(stdin, stdout, stderr))
	root.AddCommand(newMatrixCmd(stdout))
	root.AddCommand(newExplainCmd(stdin, stdout))
	root.AddCommand(newDiffCmd(stdin, stdout))
	root.AddCommand(newProveCmd(stdin, stdout, stderr))
	finishCommands(root)
	return root
}

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected arguments: %v", args)
	}
	return nil
}
