//go:build unix && !linux

package kubeapitest

import "syscall"

// dieWithParent does nothing where the kernel cannot kill a child when its
// parent dies; the test's cleanup still stops every process it started.
func dieWithParent(*syscall.SysProcAttr) {}
