// Command gwretry translates the retry and timeout settings of Kubernetes
// Gateway API HTTPRoutes into Envoy, NGINX, HAProxy and Traefik
// configurations, and reports, rule by rule and feature by feature, what each
// data plane honours, approximates or cannot honour.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	autoMemoryLimit = true
	stop := startProfiles(os.Stderr)
	code := runAs(filepath.Base(os.Args[0]), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK     = 0
	exitInput  = 1 // invalid input, or a file that cannot be read or written
	exitUsage  = 2 // bad flags or arguments
	exitFailOn = 3 // --fail-on reached
	exitDrift  = 4 // translate --check: DIR differs from what translate writes
	// exitContradicted: gwretry prove saw the real data plane contradict a
	// claim of the report.
	exitContradicted = 5
	// exitInternal is a bug in gwretry (sysexits' EX_SOFTWARE): a backend
	// broke its contract, a configuration contradicts its report, or a
	// panic. Never 1, which would blame the input.
	exitInternal = 70
)

// run executes the command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAs("gwretry", args, stdin, stdout, stderr)
}

// runAs is run for the executable named name: as kubectl-gwretry (or
// kubectl-gwretry.exe), kubectl runs it for "kubectl gwretry", which its
// help then names.
func runAs(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "gwretry: internal error: %v\n%s\nPlease report this with the input that caused it.\n", p, debug.Stack())
			code = exitInternal
		}
	}()
	cmd := newRootCmd(stdin, stdout, stderr)
	if strings.TrimSuffix(name, ".exe") == kubectlPluginName {
		cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl gwretry"}
	}
	cmd.SetArgs(args)
	ran, err := cmd.ExecuteC()
	path := cmd.CommandPath()
	if ran != nil {
		path = ran.CommandPath()
	}
	return exitCode(err, path, stderr)
}
