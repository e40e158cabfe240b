package grpc

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gwretry/gwretry/translate"
)

// Observe reads grpc/service-config.json back and says, for every rule
// whose matches all name gRPC calls, what a gRPC client (grpc-go 1.84)
// does with those calls: it looks each call's method up as the client
// does (the {service, method} name, then {service}, then the default {})
// and reads the retryPolicy and timeout found. A rule whose calls get
// different methodConfigs, or whose matches select calls the judge cannot
// name (regular expressions, headers), is left out, so that no honoured
// claim about it passes.
func (*Backend) Observe(m *translate.Model, _ translate.Options, files []translate.File) (map[string]map[translate.MethodClass]translate.Behaviour, error) {
	data, err := translate.FileData(files, configPath)
	if err != nil {
		return nil, err
	}
	sc, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	byName := map[Name]*MethodConfig{}
	for i := range sc.MethodConfig {
		for _, n := range sc.MethodConfig[i].Name {
			byName[n] = &sc.MethodConfig[i]
		}
	}
	out := map[string]map[translate.MethodClass]translate.Behaviour{}
	for _, r := range m.Rules {
		var got []translate.Behaviour
		ok := true
		for _, pl := range m.PlacementsOf(r) {
			svc, method, named := callsOf(pl.Match.Match)
			if !named {
				ok = false
				break
			}
			b, err := behaviour(lookup(byName, svc, method), sc.RetryThrottling)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", configPath, err)
			}
			got = append(got, b)
		}
		if !ok || len(got) == 0 {
			continue
		}
		same := !slices.ContainsFunc(got[1:], func(b translate.Behaviour) bool { return !reflect.DeepEqual(b, got[0]) })
		if !same {
			continue
		}
		classes := map[translate.MethodClass]translate.Behaviour{}
		for _, c := range r.MethodClasses() {
			classes[c] = got[0]
		}
		out[r.Name] = classes
	}
	return out, nil
}

// callsOf says which calls a match selects, as the judge reads it: one
// method (service and method set), every method of a service (method ""),
// or every call (both ""). named is false when the match selects calls by
// anything else than their path, or by a path that is no gRPC name.
func callsOf(m translate.Match) (service, method string, named bool) {
	if len(m.Headers) > 0 || len(m.Query) > 0 || (m.Method != "" && m.Method != "POST") {
		return "", "", false
	}
	segs := strings.Split(m.Path, "/")
	switch {
	case m.PathType == translate.PathPrefix && m.Path == "/":
		return "", "", true
	case m.PathType == translate.PathPrefix && len(segs) == 2:
		return segs[1], "", true
	case (m.PathType == translate.PathPrefix || m.PathType == translate.PathExact) && len(segs) == 3:
		return segs[1], segs[2], true
	}
	return "", "", false
}

// lookup returns the methodConfig a call gets, as gRPC picks it: the
// method's own name, then its service's, then the default; nil when none.
// A method "" stands for a method no name of the service names.
func lookup(byName map[Name]*MethodConfig, service, method string) *MethodConfig {
	if service != "" && method != "" {
		if mc := byName[Name{Service: service, Method: method}]; mc != nil {
			return mc
		}
	}
	if service != "" {
		if mc := byName[Name{Service: service}]; mc != nil {
			return mc
		}
	}
	return byName[Name{}]
}

// behaviour is what grpc-go does with a call under mc (nil: no config).
func behaviour(mc *MethodConfig, _ *RetryThrottling) (translate.Behaviour, error) {
	b := translate.Behaviour{
		ConnErrors:     translate.ConnRetryNone,
		MaxRetriedBody: retryBuffer,
		TryTimeout:     translate.Timer{Kind: translate.TimerNone},
		RequestTimeout: translate.Timer{Kind: translate.TimerNone},
	}
	if mc == nil {
		return b, nil
	}
	if mc.Timeout != "" {
		d, err := parseDuration(mc.Timeout)
		if err != nil {
			return b, err
		}
		// The client ends the call with DEADLINE_EXCEEDED, not an HTTP
		// status: TimeoutStatus stays 0.
		b.RequestTimeout = translate.Timer{Kind: translate.TimerTotal, Value: d}
	}
	rp := mc.RetryPolicy
	if rp == nil {
		return b, nil
	}
	// Throttling can only lower the retries; no claim of retries is
	// honoured when there are any, so Retries stays the policy's count.
	b.Retries = min(rp.MaxAttempts, maxAttemptsCap) - 1
	b.RetriesSource = fmt.Sprintf("maxAttempts %d, the first try included", rp.MaxAttempts)
	if rp.MaxAttempts > maxAttemptsCap {
		b.RetriesSource = fmt.Sprintf("maxAttempts %d, which gRPC clients treat as %d", rp.MaxAttempts, maxAttemptsCap)
	}
	for c := 400; c <= 599; c++ {
		if slices.Contains(rp.RetryableStatusCodes, goHTTPStatus(c)) {
			b.Codes = append(b.Codes, c)
		}
	}
	if slices.Contains(rp.RetryableStatusCodes, "UNAVAILABLE") {
		b.ConnErrors = translate.ConnRetryAll
	}
	ib, err := parseDuration(rp.InitialBackoff)
	if err != nil {
		return b, err
	}
	mb, err := parseDuration(rp.MaxBackoff)
	if err != nil {
		return b, err
	}
	// Retry n waits min(initialBackoff × multiplier^(n-1), maxBackoff)
	// times a random factor in [0.8, 1.2] (gRFC A6).
	b.Backoff = translate.Backoff{Base: min(ib, mb), Multiplier: rp.BackoffMultiplier, Max: mb, JitterMin: 0.8, JitterMax: 1.2}
	b.MinGap = b.Backoff.MinGap(b.Retries)
	return b, nil
}

// retryBuffer is grpc-go's per-call retry buffer: a call whose request
// messages exceed it is committed and no longer retried.
const retryBuffer = 256 << 10

// goHTTPStatus is grpc-go 1.84's table (internal/transport
// HTTPStatusConvTab), which the judge applies (the planner maps codes by
// the gRPC document, httpStatus).
func goHTTPStatus(code int) string {
	switch code {
	case 400:
		return "INTERNAL"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "UNIMPLEMENTED"
	case 429, 502, 503, 504:
		return "UNAVAILABLE"
	}
	return "UNKNOWN"
}
