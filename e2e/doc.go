// Package e2e proves the report against real data planes: its tests run
// every scenario of package prove on each installed proxy (nginx, HAProxy,
// the Traefik test build, and Envoy when present), generating the
// configuration with the gwretry CLI, and fail on any verdict that
// contradicts the report. Envoy is also judged statically, from its
// generated configuration, for every version gwretry knows. The tests need
// the proxies and are skipped by `go test -short`.
//
// The machinery (scenarios, Observe, Judge, Derive, Matrix) is product
// code in package prove; only tests live here.
package e2e
