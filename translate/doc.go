// Package translate reads Gateway API manifests and turns them into a
// data-plane-neutral model of what each HTTPRoute rule asks of retries and
// timeouts, then runs the data plane backends over it and builds the report.
//
// The flow goes one way:
//
//	Load     strict, bounded, multi-document decoding (load.go)
//	Build    the API's own validation (validate.go), then resolution of
//	         Gateways, listeners, hostnames, ReferenceGrants, Services and
//	         EndpointSlices into a Model (resolve.go, model.go)
//	Run      every Backend's Generate, the contract check (one finding per
//	         feature per rule) and the Judge: each backend's configuration is
//	         read back and every honoured finding compared with what it does
//	         (backend.go, judge.go)
//
// The Model is a layer of its own, with its own goldens, as each layer of
// Envoy Gateway has (*.in.yaml -> *.out.yaml): Model.IR is a plain,
// serialisable view of everything a target reads (listeners and their
// virtual hosts, rules and mesh rules, mesh attachments, connection
// timeouts, effective values, policy reports, skipped rules), without the
// raw HTTPRoutes or anything machine-dependent (ir.go). TestModelGolden
// builds each testdata/model/X.in.yaml as the CLI does, with the flags of
// its "# gwretry:" lines, and compares the IR written as YAML with
// X.ir.yaml; it does the same for the input of every CLI golden
// testdata/CASE/ (testdata/model/cli/CASE.ir.yaml). A change to Load or
// Build shows there first, once, before any target's output:
//
//	go test ./translate -run TestModelGolden -update
//
// rewrites the goldens; review their diff as a change of intent.
//
// The package knows no data plane: backends live under backends/ and
// implement Backend (and Judge). Every string in a Model has passed the
// allowlists in allow.go, so no backend can be handed a value that breaks
// out of its configuration format.
package translate
