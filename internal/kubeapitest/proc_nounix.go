//go:build !unix

package kubeapitest

import "errors"

// process is a started binary, on Unix systems only: kubeapitest runs etcd
// and kube-apiserver in their own process groups.
type process struct {
	name, log string
	exited    chan struct{}
	err       error
}

var errUnix = errors.New("kubeapitest runs etcd and kube-apiserver on Unix systems only")

func startProcess(log, bin string, args ...string) (*process, error) {
	return nil, errUnix
}

func (p *process) stop() {}

func reserveAddrs(int) ([]string, func(), error) { return nil, nil, errUnix }
