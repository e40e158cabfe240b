package kubeapitest

import "syscall"

// dieWithParent makes the kernel kill etcd and kube-apiserver when the test
// binary dies without stopping them.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
