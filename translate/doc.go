// Package translate is the model every target reads and the pipeline that
// runs the targets over it. The layers before it are packages of their own,
// and the flow goes one way:
//
//	input.Load      strict, bounded, multi-document decoding; the API's own
//	                validation (package input)
//	resolve.Build   resolution of Gateways, listeners, hostnames,
//	                ReferenceGrants, Services, EndpointSlices, GAMMA parents
//	                and policies into a Model (package resolve)
//	Run             every Backend's Generate, the contract check (one finding
//	                per feature per rule, every record against the catalogue)
//	                and the Judge: each backend's configuration is read back
//	                and every honoured finding compared with what it does
//	                (backend.go, assess.go, scope.go, judge.go)
//
// This package holds what those layers hand each other and every target
// reads, and imports neither input nor resolve (they import it):
//
//	the input as read     Input, Object, Position, Limits (input.go) and the
//	                      policy objects (policytypes.go)
//	the user's choices    ResolveOptions, EndpointOverride, Bind, Channel
//	                      (options.go)
//	the model             Model, Listener, Rule, Filters, GatewayTimeouts,
//	                      MeshAttachment, PolicyReport (model.go, filters.go,
//	                      conntimeout.go, mesh.go, policy_report.go); every
//	                      string in a Model has passed the allowlists in
//	                      allow.go, so no backend can be handed a value that
//	                      breaks out of its configuration format
//	the IR                Model.IR, the model's serialisable view (ir.go)
//	the pipeline          Run, RunTo, Assess, Record, Scope (backend.go,
//	                      assess.go, scope.go, findings.go)
//	the behaviour spec    what "honoured" means per method class, checked
//	                      against each judge's reading (judge.go), and the
//	                      timelines behind explain (timeline.go)
//	notes                 what the user should know beyond the findings
//	                      (notes.go)
//
// The Model has goldens of its own, as each layer of Envoy Gateway has
// (*.in.yaml -> *.out.yaml): Model.IR is a plain view of everything a target
// reads, without the raw HTTPRoutes or anything machine-dependent.
// TestModelGolden (in package resolve, which builds models) compares it with
// testdata/model/X.ir.yaml and testdata/model/cli/CASE.ir.yaml; a change to
// input or resolve shows there first, once, before any target's output:
//
//	go test ./resolve -run TestModelGolden -update
//
// rewrites the goldens; review their diff as a change of intent.
//
// The package knows no data plane: backends live under backends/ and
// implement Backend (and Judge). Load and Build here are deprecated
// forwarders to input.Load and resolve.Build for callers written before
// the layers had folders.
package translate
