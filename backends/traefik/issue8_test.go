package traefik

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/report"
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

// TestFindingCauses checks that every approximated finding of the issue
// records its cause as a caveat, and, where there is one, the caveat that
// names the opt-in (NonIdempotentExempt).
func TestFindingCauses(t *testing.T) {
	decision := func(r *translate.Rule, version string, opts translate.Options, f translate.Feature) report.Decision {
		t.Helper()
		for _, fd := range runFindings(t, single(r), version, opts.RetryNonIdempotent) {
			if fd.Feature == f {
				if fd.Status != fd.Decision.Status() {
					t.Errorf("%s: status %s, decision gives %s", f, fd.Status, fd.Decision.Status())
				}
				return fd.Decision
			}
		}
		t.Fatalf("no finding for %s", f)
		return report.Decision{}
	}
	caveat := func(d report.Decision, c report.Reason) report.Params {
		for _, x := range d.Caveats {
			if x.Reason == c {
				return x.Params
			}
		}
		return nil
	}
	huge := rule("h", 0, &translate.Retry{Attempts: 4294967297}, translate.Timeouts{})
	for _, v := range []string{v36, v37} {
		if d := decision(huge, v, translate.Options{}, translate.FeatureRetryAttempts); d.Status() != A ||
			caveat(d, report.CaveatAttemptsClamped)["configured"] != "2147483646" {
			t.Errorf("%s huge attempts: %+v", v, d)
		}
	}
	post := rule("p", 0, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{})
	post.Methods = []string{"GET", "POST"}
	if d := decision(post, v37, translate.Options{}, translate.FeatureRetryAttempts); d.Status() != A ||
		!hasCaveat(d, report.CaveatNonIdempotentExempt) || caveat(d, report.CaveatBodyBufferLimit)["limit"] != "2 MiB" {
		t.Errorf("3.7 POST without opt-in: %+v", d)
	}
	if d := decision(post, v37, translate.Options{RetryNonIdempotent: true}, translate.FeatureRetryCodes); d.Status() != A ||
		hasCaveat(d, report.CaveatNonIdempotentExempt) || !hasCaveat(d, report.CaveatBodyBufferLimit) {
		t.Errorf("3.7 POST with opt-in: %+v", d)
	}
	// 3.6 retries a request it could not send whatever its method or body:
	// the only gap is a request that was sent and then failed.
	if d := decision(post, v36, translate.Options{}, translate.FeatureRetryAttempts); d.Status() != A ||
		!slices.Equal(caveatReasons(d), []report.Reason{report.CaveatSentRequestNotRetried}) {
		t.Errorf("3.6 POST: %+v", d)
	}
	// 3.7 with 502 in codes retries a sent request that failed as a 502, so
	// that gap is gone; the method and body exemptions of a status retry stay.
	post502 := rule("p5", 0, &translate.Retry{Attempts: 1, Codes: []int{502}}, translate.Timeouts{})
	post502.Methods = []string{"GET", "POST"}
	if d := decision(post502, v37, translate.Options{}, translate.FeatureRetryAttempts); d.Status() != A ||
		hasCaveat(d, report.CaveatSentRequestNotRetried) || !hasCaveat(d, report.CaveatNonIdempotentExempt) {
		t.Errorf("3.7 POST, 502 in codes: %+v", d)
	}
	// With no retry, keep-alive off is what makes attempts 0 exact.
	none := rule("n", 0, &translate.Retry{Attempts: 0}, translate.Timeouts{})
	for _, v := range []string{v36, v37} {
		if d := decision(none, v, translate.Options{}, translate.FeatureRetryAttempts); d.Status() != H ||
			d.Reason != report.ReasonRetriesDisabled || d.Configured != "maxIdleConnsPerHost -1" {
			t.Errorf("%s attempts 0: %+v", v, d)
		}
	}
	zero := rule("z", 0, nil, translate.Timeouts{BackendRequest: dur("0s"), Request: dur("0s")})
	// Approximated: the entry point's readTimeout cuts a slow upload
	// (TestTraefik36ReadTimeoutCutsUntimedRequests).
	if d := decision(zero, v36, translate.Options{}, translate.FeatureBackendRequestTimeout); d.Status() != A ||
		d.Configured != "dialTimeout 0s, responseHeaderTimeout 0s" || caveat(d, report.CaveatReadTimeoutCutsUpload)["timeout"] != "1m0s" {
		t.Errorf("backendRequest 0s: %+v", d)
	}
	part := rule("q", 0, nil, translate.Timeouts{})
	part.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 2, Reason: "kind Bucket is not a Service"}}
	if d := decision(part, v36, translate.Options{}, translate.FeatureBackendRefs); d.Status() != A ||
		d.Configured != "noop@internal weight 2, errors 418 to 500" || caveat(d, report.CaveatStatusRewriteCoversRule)["status"] != "418" {
		t.Errorf("partly invalid: %+v", d)
	}
}
