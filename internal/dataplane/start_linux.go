package dataplane

import "syscall"

// dieWithParent makes the kernel kill the proxy when the process that started it dies
// without stopping it (killed, or interrupted twice).
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
