// Package input is gwretry's first layer: it reads manifests and says, for
// each problem, which file, document, object and field it is in.
//
//	Load      strict, bounded, multi-document decoding of files, directories
//	          and stdin (load.go, decode.go): unknown fields, duplicate and
//	          wrong-case keys, aliases and oversized inputs are errors, as the
//	          API server would have them; a property that the kind's CRD
//	          requires and the object lacks is refused as the server does
//	          (absentRequired: the Go types read it as ""); kinds gwretry
//	          does not read are counted and noted
//	Validate  the Gateway API's own validation with the v1.7.0 CRDs of the
//	          channel: schema, defaults and CEL rules (crdvalidate.go, crds/);
//	          TestAPIServerAgrees checks it against a real kube-apiserver
//	Check     Validate, then gwretry's own limits on what a configuration
//	          may contain (validate.go), and gwretry's policy kinds against
//	          their CRDs in config/crd (policy.go)
//	ReadDocuments  every document with its position, for the importer
//	          (documents.go)
//
// Errors are an ErrorList of InputError: position (file, document, List
// item), object, field path and message, so that users see all their
// mistakes at once. What Load returns (Input, Object, Position, Limits) is
// declared in package translate, which every layer imports; the names here
// are aliases. resolve.Build checks the input and resolves it into the
// model; this package knows neither.
package input
