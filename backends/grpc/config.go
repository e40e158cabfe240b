//gwretry:format
package grpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ServiceConfig is a gRPC service config (grpc/service_config/
// service_config.proto) as its JSON form, with the fields gwretry writes.
// Field order is the order they are written.
type ServiceConfig struct {
	MethodConfig    []MethodConfig   `json:"methodConfig"`
	RetryThrottling *RetryThrottling `json:"retryThrottling,omitempty"`
}

// MethodConfig is the policy of the calls whose method one of Name names.
type MethodConfig struct {
	Name []Name `json:"name"`
	// Timeout is a proto JSON duration ("2.500s"), the deadline of the
	// whole call, every attempt included; "" when unset.
	Timeout     string       `json:"timeout,omitempty"`
	RetryPolicy *RetryPolicy `json:"retryPolicy,omitempty"`
}

// Name selects methods: Service and Method one method, Service alone every
// method of the service, neither every method (the default config).
type Name struct {
	Service string `json:"service,omitempty"`
	Method  string `json:"method,omitempty"`
}

// RetryPolicy is gRFC A6's retry policy. Every field is required.
type RetryPolicy struct {
	MaxAttempts          int      `json:"maxAttempts"`
	InitialBackoff       string   `json:"initialBackoff"`
	MaxBackoff           string   `json:"maxBackoff"`
	BackoffMultiplier    float64  `json:"backoffMultiplier"`
	RetryableStatusCodes []string `json:"retryableStatusCodes"`
}

// RetryThrottling is the channel's retry throttling (gRFC A6).
type RetryThrottling struct {
	MaxTokens  int     `json:"maxTokens"`
	TokenRatio float64 `json:"tokenRatio"`
}

// String names n for messages: "pkg.Svc/Method", "pkg.Svc/*" or "*".
func (n Name) String() string {
	switch {
	case n.Service == "":
		return "{} (every method)"
	case n.Method == "":
		return n.Service + "/*"
	}
	return n.Service + "/" + n.Method
}

// statusCodes are the canonical gRPC status code names, by code.
var statusCodes = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

func validStatus(s string) bool {
	for _, c := range statusCodes {
		if c == s {
			return true
		}
	}
	return false
}

// Allowlists of what reaches the file: a service is a fully qualified
// protobuf name, a method a protobuf identifier.
var (
	serviceRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	methodRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	durationRE = regexp.MustCompile(`^([0-9]{1,12})(\.[0-9]{1,9})?s$`)
)

// maxProtoSeconds is the largest google.protobuf.Duration.
const maxProtoSeconds = 315576000000

// protoDuration writes d as a proto JSON duration: seconds with 0, 3, 6 or
// 9 fractional digits, as protojson writes them.
func protoDuration(d time.Duration) string {
	sec, ns := int64(d/time.Second), int64(d%time.Second)
	switch {
	case ns == 0:
		return fmt.Sprintf("%ds", sec)
	case ns%1e6 == 0:
		return fmt.Sprintf("%d.%03ds", sec, ns/1e6)
	case ns%1e3 == 0:
		return fmt.Sprintf("%d.%06ds", sec, ns/1e3)
	}
	return fmt.Sprintf("%d.%09ds", sec, ns)
}

// parseDuration reads a proto JSON duration (non-negative, as a service
// config's durations are).
func parseDuration(s string) (time.Duration, error) {
	m := durationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a proto JSON duration (seconds, up to 9 decimals, then s)", s)
	}
	sec, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || sec > maxProtoSeconds || sec > int64(time.Duration(1<<63-1)/time.Second)-1 {
		return 0, fmt.Errorf("duration %q out of range", s)
	}
	d := time.Duration(sec) * time.Second
	if m[2] != "" {
		frac := (m[2][1:] + "000000000")[:9]
		ns, _ := strconv.ParseInt(frac, 10, 64)
		d += time.Duration(ns)
	}
	return d, nil
}

// validate checks sc against gRFC A6 and the service config rules: a
// non-empty name list of valid, unique names in every methodConfig;
// positive proto durations; a retryPolicy with all five fields, maxAttempts
// above 1, a positive multiplier and a non-empty list of known codes;
// throttling maxTokens in (0, 1000] and a positive tokenRatio.
func validate(sc *ServiceConfig) error {
	var errs []error
	seen := map[Name]int{}
	for i, mc := range sc.MethodConfig {
		at := fmt.Sprintf("methodConfig[%d]", i)
		if len(mc.Name) == 0 {
			errs = append(errs, fmt.Errorf("%s: name is empty", at))
		}
		for j, n := range mc.Name {
			switch {
			case n.Service == "" && n.Method != "":
				errs = append(errs, fmt.Errorf("%s.name[%d]: method %q without a service", at, j, n.Method))
			case n.Service != "" && !serviceRE.MatchString(n.Service):
				errs = append(errs, fmt.Errorf("%s.name[%d]: service %q is not a protobuf full name", at, j, n.Service))
			case n.Method != "" && !methodRE.MatchString(n.Method):
				errs = append(errs, fmt.Errorf("%s.name[%d]: method %q is not a protobuf identifier", at, j, n.Method))
			}
			if k, dup := seen[n]; dup {
				errs = append(errs, fmt.Errorf("%s.name[%d]: %s is also named by methodConfig[%d] (gRPC rejects the whole service config)", at, j, n, k))
			}
			seen[n] = i
		}
		if mc.Timeout != "" {
			if d, err := parseDuration(mc.Timeout); err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s.timeout %q: want a positive duration", at, mc.Timeout))
			}
		}
		if rp := mc.RetryPolicy; rp != nil {
			at += ".retryPolicy"
			if rp.MaxAttempts < 2 {
				errs = append(errs, fmt.Errorf("%s.maxAttempts %d: must be greater than 1", at, rp.MaxAttempts))
			}
			for field, v := range map[string]string{"initialBackoff": rp.InitialBackoff, "maxBackoff": rp.MaxBackoff} {
				if d, err := parseDuration(v); err != nil || d <= 0 {
					errs = append(errs, fmt.Errorf("%s.%s %q: want a positive duration", at, field, v))
				}
			}
			if !(rp.BackoffMultiplier > 0) {
				errs = append(errs, fmt.Errorf("%s.backoffMultiplier %v: must be positive", at, rp.BackoffMultiplier))
			}
			if len(rp.RetryableStatusCodes) == 0 {
				errs = append(errs, fmt.Errorf("%s.retryableStatusCodes: empty", at))
			}
			for _, c := range rp.RetryableStatusCodes {
				if !validStatus(c) {
					errs = append(errs, fmt.Errorf("%s.retryableStatusCodes: unknown status %q", at, c))
				}
			}
		}
	}
	if t := sc.RetryThrottling; t != nil {
		if t.MaxTokens <= 0 || t.MaxTokens > 1000 {
			errs = append(errs, fmt.Errorf("retryThrottling.maxTokens %d: must be in (0, 1000]", t.MaxTokens))
		}
		if !(t.TokenRatio > 0) {
			errs = append(errs, fmt.Errorf("retryThrottling.tokenRatio %v: must be positive", t.TokenRatio))
		}
	}
	return errors.Join(errs...)
}

// encode writes sc as indented JSON, then reads it back strictly and
// checks that it says what sc says and that it passes validate.
func encode(sc *ServiceConfig) ([]byte, error) {
	if err := validate(sc); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	back, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("reading it back: %w", err)
	}
	if !reflect.DeepEqual(back, sc) {
		return nil, errors.New("reading it back gives another service config")
	}
	return data, nil
}

// decode reads a service config strictly: unknown fields, trailing data
// and anything validate rejects are errors.
func decode(data []byte) (*ServiceConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sc ServiceConfig
	if err := dec.Decode(&sc); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the service config")
	}
	if err := validate(&sc); err != nil {
		return nil, err
	}
	if sc.MethodConfig == nil {
		return nil, errors.New("no methodConfig list")
	}
	return &sc, nil
}

// parseThrottling reads --grpc-retry-throttling MAXTOKENS,TOKENRATIO.
// Ratios have at most 3 decimals (gRFC A6 ignores the rest).
func parseThrottling(s string) (*RetryThrottling, error) {
	tok, ratio, ok := strings.Cut(s, ",")
	if !ok || !regexp.MustCompile(`^[0-9]{1,4}$`).MatchString(tok) ||
		!regexp.MustCompile(`^[0-9]{1,4}(\.[0-9]{1,3})?$`).MatchString(ratio) {
		return nil, fmt.Errorf("--grpc-retry-throttling %q: want MAXTOKENS,TOKENRATIO (an integer in 1-1000, a positive number with at most 3 decimals, e.g. 10,0.1)", s)
	}
	n, _ := strconv.Atoi(tok)
	r, _ := strconv.ParseFloat(ratio, 64)
	t := &RetryThrottling{MaxTokens: n, TokenRatio: r}
	if err := validate(&ServiceConfig{RetryThrottling: t}); err != nil {
		return nil, fmt.Errorf("--grpc-retry-throttling %q: %w", s, err)
	}
	return t, nil
}

// maxAttemptsCap is what gRPC clients treat a larger maxAttempts as (gRFC
// A6): a fact of the format that the planner writes within and the judge
// reads back.
const maxAttemptsCap = 5
