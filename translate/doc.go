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
// The package knows no data plane: backends live under backends/ and
// implement Backend (and Judge). Every string in a Model has passed the
// allowlists in allow.go, so no backend can be handed a value that breaks
// out of its configuration format.
package translate
