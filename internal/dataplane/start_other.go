//go:build unix && !linux

package dataplane

import "syscall"

// dieWithParent does nothing where the kernel cannot kill a child when its
// parent dies; Stop still ends every proxy that was started.
func dieWithParent(*syscall.SysProcAttr) {}
