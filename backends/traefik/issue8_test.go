package traefik

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/translate"
)

func TestNewWithConfigDynamicFile(t *testing.T) {
	m := single(rule("f", 0, nil, translate.Timeouts{}))
	for _, p := range []string{"/srv/traefik/dynamic.yaml", "/a/b_c-d.1/x.yml"} {
		b, err := NewWithConfig(Config{DynamicFile: p})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out, err := b.Generate(m, translate.Options{Version: v36})
		if err != nil {
			t.Fatal(err)
		}
		var s staticConfig
		if err := yaml.UnmarshalStrict(out.Files[0].Data, &s); err != nil {
			t.Fatal(err)
		}
		if s.Providers.File.Filename != p {
			t.Errorf("providers.file.filename = %q, want %q", s.Providers.File.Filename, p)
		}
		if !strings.Contains(translate.NotesText(out.Notes), p) {
			t.Errorf("notes do not name %s:\n%s", p, translate.NotesText(out.Notes))
		}
		if _, err := b.Observe(m, translate.Options{Version: v36}, out.Files); err != nil {
			t.Errorf("Observe: %v", err)
		}
	}
	if b, err := NewWithConfig(Config{}); err != nil || b.file() != DynamicFile {
		t.Errorf("empty config: %v, %q", err, b.file())
	}
	for _, p := range []string{"dynamic.yaml", "./d.yaml", "/etc/../d.yaml", "/etc//d.yaml", "/etc/traefik/",
		"/etc/d.toml", "/etc/d yaml.yaml", "/etc/d\n.yaml", "/etc/{{.}}.yaml", "/etc/d`.yaml", "/etc/d\".yaml",
		"/etc/é.yaml", "/" + strings.Repeat("a", 1100) + ".yaml", "/etc/d.yaml/.", "/etc/d;.yaml"} {
		if _, err := NewWithConfig(Config{DynamicFile: p}); err == nil {
			t.Errorf("NewWithConfig accepted %q", p)
		}
	}
}

// TestFindingMessages checks that every approximated finding of the issue
// names its cause and, where there is one, the opt-in.
func TestFindingMessages(t *testing.T) {
	msg := func(r *translate.Rule, version string, opts translate.Options, f translate.Feature) (translate.Status, string) {
		t.Helper()
		opts.Version = version
		out := generate(t, single(r), opts)
		for _, fd := range out.Findings {
			if fd.Feature == f {
				return fd.Status, fd.Message
			}
		}
		t.Fatalf("no finding for %s", f)
		return "", ""
	}
	huge := rule("h", 0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{})
	for _, v := range []string{v36, v37} {
		if st, m := msg(huge, v, translate.Options{}, translate.FeatureRetryAttempts); st != A ||
			!strings.Contains(m, "clamped to 2147483646") {
			t.Errorf("%s huge attempts: %s %q", v, st, m)
		}
	}
	post := rule("p", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{})
	post.Methods = []string{"GET", "POST"}
	if st, m := msg(post, v37, translate.Options{}, translate.FeatureRetryAttempts); st != A ||
		!strings.Contains(m, "--retry-non-idempotent") || !strings.Contains(m, "2 MiB") {
		t.Errorf("3.7 POST without opt-in: %s %q", st, m)
	}
	if st, m := msg(post, v37, translate.Options{RetryNonIdempotent: true}, translate.FeatureRetryCodes); st != A ||
		strings.Contains(m, "not retried on a status (retryNonIdempotentMethod is off") || !strings.Contains(m, "2097152") {
		t.Errorf("3.7 POST with opt-in: %s %q", st, m)
	}
	// 3.6 retries a request it could not send whatever its method or body:
	// the only gap is a request that was sent and then failed.
	if st, m := msg(post, v36, translate.Options{}, translate.FeatureRetryAttempts); st != A ||
		!strings.Contains(m, "retries only a request it could not send") || !strings.Contains(m, "is tried once") ||
		strings.Contains(m, "--retry-non-idempotent") || strings.Contains(m, "MiB") {
		t.Errorf("3.6 POST: %s %q", st, m)
	}
	// 3.7 with 502 in codes retries a sent request that failed as a 502, so
	// that gap is gone; the method and body exemptions of a status retry stay.
	post502 := rule("p5", 0, &translate.Retry{Attempts: 1, Codes: []int{502}}, translate.Timeouts{})
	post502.Methods = []string{"GET", "POST"}
	if st, m := msg(post502, v37, translate.Options{}, translate.FeatureRetryAttempts); st != A ||
		strings.Contains(m, "could not send") || !strings.Contains(m, "--retry-non-idempotent") {
		t.Errorf("3.7 POST, 502 in codes: %s %q", st, m)
	}
	// With no retry, keep-alive off is what makes attempts 0 exact.
	none := rule("n", 0, &translate.Retry{Attempts: 0}, translate.Timeouts{})
	for _, v := range []string{v36, v37} {
		if st, m := msg(none, v, translate.Options{}, translate.FeatureRetryAttempts); st != H ||
			!strings.Contains(m, "maxIdleConnsPerHost -1") {
			t.Errorf("%s attempts 0: %s %q", v, st, m)
		}
	}
	zero := rule("z", 0, nil, translate.Timeouts{BackendRequest: dur("0s"), Request: dur("0s")})
	// Approximated: the entry point's readTimeout cuts a slow upload
	// (TestTraefik36ReadTimeoutCutsUntimedRequests).
	if st, m := msg(zero, v36, translate.Options{}, translate.FeatureBackendRequestTimeout); st != A ||
		!strings.Contains(m, "dialTimeout") || !strings.Contains(m, "readTimeout 1m0s") {
		t.Errorf("backendRequest 0s: %s %q", st, m)
	}
	part := rule("q", 0, nil, translate.Timeouts{})
	part.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 2, Reason: "kind Bucket is not a Service"}}
	if st, m := msg(part, v36, translate.Options{}, translate.FeatureBackendRefs); st != A ||
		!strings.Contains(m, "weight 2 of 3") || !strings.Contains(m, "418") {
		t.Errorf("partly invalid: %s %q", st, m)
	}
}
