// Package resolve is gwretry's second layer: it turns what package input
// read into the data-plane-neutral model (translate.Model) that every
// target reads.
//
// Build checks the input (input.Check) and resolves it as a Gateway API
// implementation would: Gateways and their listeners, binds and hostnames
// (resolve.go), ReferenceGrants, Services and EndpointSlices behind each
// backendRef, filters (resolve_filters.go), Service parents of GAMMA mesh
// routes (mesh.go), HTTPS listeners and their certificates (tls.go), and
// the policies: RetryPolicy and BackendTrafficPolicy merged into each
// rule's retry and timeouts by GEP-713's rules (policy.go, policy_merge.go,
// btp.go), ConnectionTimeoutPolicy into each Gateway's connection timeouts
// (conntimeout.go). Every error in the input is reported, not only the
// first; the model is then checked against the allowlists (Model.Check).
//
// TestModelGolden (ir_test.go) builds each testdata/model/X.in.yaml, and the
// input of every CLI golden, as the CLI does and compares the model's IR
// with its golden:
//
//	go test ./resolve -run TestModelGolden -update
//
// rewrites them; review their diff as a change of intent. FuzzLoadAndBuild
// (fuzz_test.go) feeds random manifests through Load and Build.
package resolve
