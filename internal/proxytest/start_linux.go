package proxytest

import "syscall"

// dieWithParent makes the kernel kill the proxy when the test process dies
// without running its cleanups (killed, or interrupted twice).
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
