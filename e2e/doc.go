// Package e2e proves the report against real data planes.
//
// Each Scenario is a small HTTPRoute rule (mirroring the Gateway API
// conformance tests where one exists), a scripted flaky backend, and the
// requests to send. For every installed data plane (nginx, HAProxy, the
// Traefik test build, and Envoy when present) the tests generate the
// configuration with the gwretry CLI, start the real proxy on loopback, send
// the requests and hand the report's findings and the observation to Judge:
// honoured must behave exactly as the Gateway API says, approximated must
// say what happened, unsupported must indeed not be in effect. Envoy, which
// is not installed here, is also checked statically: its generated retry
// policy is compared field by field with the findings.
//
// The harness (Observe, Judge, Derive, Matrix) is product code: `gwretry
// prove` runs it on a user's own rules, and `gwretry prove --suite
// --matrix FILE` (make matrix) writes the capability matrix
// (docs/matrix.md) from the suite's verdicts: every cell names the passing
// scenarios that back it.
package e2e
