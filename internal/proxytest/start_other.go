//go:build unix && !linux

package proxytest

import "syscall"

// dieWithParent does nothing where the kernel cannot kill a child when its
// parent dies; Stop still ends every proxy a finished test started.
func dieWithParent(*syscall.SysProcAttr) {}
