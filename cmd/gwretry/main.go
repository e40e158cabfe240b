// Command gwretry translates the retry and timeout settings of Kubernetes
// Gateway API HTTPRoutes into Envoy, NGINX, HAProxy and Traefik
// configurations, and reports, rule by rule and feature by feature, what each
// data plane honours, approximates or cannot honour.
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK     = 0
	exitInput  = 1 // invalid input (or an I/O or internal error)
	exitUsage  = 2 // bad flags or arguments
	exitFailOn = 3 // --fail-on reached
)

// run executes the command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := newRootCmd(stdin, stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return exitCode(err, stderr)
}
