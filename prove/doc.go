// Package prove checks the report against a real data plane: what
// `gwretry prove` runs on a user's own proxy binary.
//
// Each Scenario is a small HTTPRoute rule, a scripted flaky backend, and
// the requests to send: Scenarios are the suite's (mirroring the Gateway
// API conformance tests where one exists), Derive makes them from a
// user's rules. Observe
// generates the configuration, starts the proxy on loopback, sends the
// requests and records what the client and the endpoints saw; Judge holds
// the report's findings against that observation: honoured must behave
// exactly as the Gateway API says, approximated must carry a decision
// record whose reason or caveats name what happened, unsupported must
// indeed not be in effect. No finding's message is read.
//
// A target whose binary is not at hand can be judged from its generated
// configuration alone (CheckConfig): for Envoy, JudgeEnvoy reads the
// bootstrap with backends/envoy's reader and compares the route, its retry
// policy and clusters with each finding's decision record.
//
// Matrix collects the verdicts of `gwretry prove --suite --matrix FILE`
// (make matrix) into the capability matrix (docs/matrix.md), every cell
// naming the passing scenarios that back it. The end-to-end suite (package
// e2e) runs the same scenarios on every installed proxy.
package prove
