// Package kubeapitest runs a real Kubernetes API server for tests: Debian's
// etcd-server (3.4, /usr/bin/etcd) and kube-apiserver v1.34.2 built from the
// Go module proxy (tools/build-kube-apiserver.sh, `make kube-apiserver`),
// on free loopback ports, with their data in the test's temporary
// directory. The API server is the authority on which objects are valid:
// a server-side dry-run create (Server.DryRunCreate) gives its verdict
// without storing anything.
//
// The server serves HTTPS only, with a certificate of a CA made for it
// (Server.CAFile); it authenticates the cluster-admin with a static token
// (Server.Token, group system:masters) and any other user with a client
// certificate of that CA (Server.KubeconfigFor), and authorizes with RBAC,
// so that tests can run as a user with restricted rights.
//
// Starting one takes seconds: start one per test package run, with Start
// in a test that runs every case as a subtest, or with a Shared from
// TestMain. Like internal/proxytest.Require, a missing binary skips the
// test outside CI and fails it with CI=true; under go test -short every
// test that needs a server skips.
//
// The Gateway API's CRDs of GatewayAPIVersion come from the module zip of
// sigs.k8s.io/gateway-api (GatewayAPICRDs); `make deps` copies them into
// the test cache. gwretry's own policy CRDs are PolicyCRDs.
//
// The package is used by tests only.
package kubeapitest
