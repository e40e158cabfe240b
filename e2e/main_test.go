package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// gwretryBin is the CLI built once by TestMain; it is not changed after.
var gwretryBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "gwretry-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	gwretryBin = filepath.Join(dir, "gwretry")
	build := exec.Command("go", "build", "-o", gwretryBin, "github.com/gwretry/gwretry/cmd/gwretry")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the gwretry CLI:", err)
		return 1
	}
	return m.Run()
}
