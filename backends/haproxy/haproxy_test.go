package haproxy

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// checkedVersion is the HAProxy version installed for tests (Debian 12's
// 2.6.12). Outputs for newer versions may use keywords it does not know
// (retry-on 429, 421), so they are checked by config-parser's parse-back
// only.
const checkedVersion = "2.6"

// generate runs the backend through translate.Run, which also checks the
// one-finding-per-feature contract, and returns haproxy.cfg and the
// findings by rule index and feature.
func generate(t *testing.T, m *translate.Model, opts translate.Options) (string, map[int]map[translate.Feature]translate.Finding) {
	t.Helper()
	res, err := translate.Run(m, []translate.Target{{Backend: New(), Version: opts.Version}}, opts.RetryNonIdempotent)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Files) != 1 || res.Files[0].Path != OutputPath {
		t.Fatalf("files = %v, want one %s", res.Files, OutputPath)
	}
	byRule := map[int]map[translate.Feature]translate.Finding{}
	for _, f := range res.Report.Findings {
		if byRule[f.Rule] == nil {
			byRule[f.Rule] = map[translate.Feature]translate.Finding{}
		}
		byRule[f.Rule][f.Feature] = f
	}
	for _, r := range m.Rules {
		if got, want := len(byRule[r.Index]), len(r.Features()); got != want {
			t.Errorf("rule %d: %d findings, want %d (one per feature)", r.Index, got, want)
		}
	}
	cfg := string(res.Files[0].Data)
	if opts.Version == checkedVersion {
		proxytest.HAProxyCheck(t, res.Files[0].Data)
	}
	return cfg, byRule
}

// section returns the lines of one section of cfg, trimmed.
func section(cfg, header string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(cfg, "\n") {
		switch {
		case l == header:
			in = true
		case in && strings.HasPrefix(l, "  "):
			out = append(out, strings.TrimSpace(l))
		case in && l != "":
			return out
		}
	}
	return out
}

func TestVersions(t *testing.T) {
	b := New()
	if b.Name() != "haproxy" {
		t.Errorf("Name() = %q", b.Name())
	}
	want := []string{"2.6", "2.8", "3.0", "3.1", "3.2"}
	if got := b.Versions(); !slices.Equal(got, want) {
		t.Errorf("Versions() = %v, want %v", got, want)
	}
	if _, err := b.Generate(modelOf(rule(0, nil, translate.Timeouts{})), translate.Options{Version: "2.4"}); err == nil {
		t.Error("Generate accepted version 2.4")
	}
}

// TestVersionTable covers every row of supportTable: the codes written in
// retry-on and the codes finding.
func TestVersionTable(t *testing.T) {
	// notRetried are the codes of the CodesNotRetried caveat; later, of
	// the CodesRetriedByLaterVersion caveat, names the release that
	// retries each of them ("" for no caveat: none does).
	tests := []struct {
		version    string
		retryOn    string
		notRetried string
		later      string
	}{
		{"2.6", "conn-failure empty-response response-timeout 401 425 500 504", "409, 421, 429", "421 from 3.2, 429 from 3.1"},
		{"2.8", "conn-failure empty-response response-timeout 401 425 500 504", "409, 421, 429", "421 from 3.2, 429 from 3.1"},
		{"3.0", "conn-failure empty-response response-timeout 401 425 500 504", "409, 421, 429", "421 from 3.2, 429 from 3.1 or 3.0.4"},
		{"3.1", "conn-failure empty-response response-timeout 401 425 429 500 504", "409, 421", "421 from 3.2"},
		{"3.2", "conn-failure empty-response response-timeout 401 421 425 429 500 504", "409", ""},
	}
	if len(tests) != len(supportTable()) {
		t.Fatalf("%d tests for %d table rows", len(tests), len(supportTable()))
	}
	for i, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			if supportTable()[i].Version != tt.version {
				t.Fatalf("row %d is %s", i, supportTable()[i].Version)
			}
			r := rule(0, &translate.Retry{Attempts: 2, Codes: []int{401, 409, 421, 425, 429, 500, 504}}, translate.Timeouts{})
			cfg, fs := generate(t, modelOf(r), translate.Options{Version: tt.version})
			be := section(cfg, "backend be_default_web_r00")
			if !slices.Contains(be, "retry-on "+tt.retryOn) {
				t.Errorf("backend = %q, want retry-on %s", be, tt.retryOn)
			}
			f := fs[0][translate.FeatureRetryCodes]
			want := report.NewCaveat(report.CaveatCodesNotRetried, "codes", tt.notRetried)
			if c, ok := caveatOf(f, report.CaveatCodesNotRetried); f.Reason != report.ReasonConfigured || !ok || !cmp.Equal(c, want) {
				t.Errorf("codes finding = %s %v, want %v", f.Reason, f.Caveats, want)
			}
			c, ok := caveatOf(f, report.CaveatCodesRetriedByLaterVersion)
			if got := c.Params["versions"]; ok != (tt.later != "") || got != tt.later {
				t.Errorf("CodesRetriedByLaterVersion = %q (%v), want %q", got, ok, tt.later)
			}
		})
	}
	// Codes every version supports are retried, but only for requests that
	// fit in one buffer (approximated, naming the limit); codes none
	// supports are unsupported, naming the release that retries them
	// when one does.
	for _, s := range supportTable() {
		_, fs := generate(t, modelOf(rule(0, &translate.Retry{Attempts: 1, Codes: s.RetryCodes}, translate.Timeouts{})), translate.Options{Version: s.Version, RetryNonIdempotent: true})
		if f := fs[0][translate.FeatureRetryCodes]; !cmp.Equal(f.Caveats, []report.Caveat{oneBuffer}) {
			t.Errorf("%s: all supported codes: caveats %v, want the buffer limit only", s.Version, f.Caveats)
		}
		_, fs = generate(t, modelOf(rule(0, &translate.Retry{Attempts: 1, Codes: []int{409, 505}}, translate.Timeouts{})), translate.Options{Version: s.Version})
		if f := fs[0][translate.FeatureRetryCodes]; f.Reason != report.ReasonCodesNotRetryable || f.Params["codes"] != "409, 505" {
			t.Errorf("%s: only unsupported codes: %s %v, want CodesNotRetryable", s.Version, f.Reason, f.Params)
		}
		if s.Version == "3.2" {
			continue
		}
		_, fs = generate(t, modelOf(rule(0, &translate.Retry{Attempts: 1, Codes: []int{409, 421}}, translate.Timeouts{})), translate.Options{Version: s.Version})
		want := report.Params{"codes": "409, 421", "versions": "421 from 3.2"}
		if f := fs[0][translate.FeatureRetryCodes]; f.Reason != report.ReasonCodesNeedLaterVersion || !cmp.Equal(f.Params, want) {
			t.Errorf("%s: only unsupported codes, one retried by 3.2: %s %v, want CodesNeedLaterVersion %v", s.Version, f.Reason, f.Params, want)
		}
	}
}

// TestFeatureCombinations generates every combination of retry stanza,
// timeouts and the non-idempotent opt-in for every version, and checks the
// backend's directives and the findings' statuses.
func TestFeatureCombinations(t *testing.T) {
	retries := []struct {
		name  string
		retry *translate.Retry
	}{
		{"no-retry", nil},
		{"attempts-0", &translate.Retry{Attempts: 0, Codes: []int{503}, Backoff: dur("1s")}},
		{"attempts-1", &translate.Retry{Attempts: 1}},
		{"attempts-3-codes-backoff", &translate.Retry{Attempts: 3, Codes: []int{500, 502, 503}, Backoff: dur("250ms")}},
	}
	timeouts := []struct {
		name string
		t    translate.Timeouts
	}{
		{"none", translate.Timeouts{}},
		{"request", translate.Timeouts{Request: dur("3s")}},
		{"backendRequest", translate.Timeouts{BackendRequest: dur("500ms")}},
		{"both", translate.Timeouts{Request: dur("10s"), BackendRequest: dur("1s")}},
		{"request-0s", translate.Timeouts{Request: dur("0s")}},
		{"backendRequest-0s", translate.Timeouts{BackendRequest: dur("0s")}},
		{"request-0s-backendRequest", translate.Timeouts{Request: dur("0s"), BackendRequest: dur("2s")}},
		{"huge", translate.Timeouts{Request: dur("99999h"), BackendRequest: dur("600h")}},
	}
	var rules []*translate.Rule
	for _, rt := range retries {
		for _, to := range timeouts {
			r := rule(len(rules), rt.retry, to.t)
			r.RuleName = rt.name + "/" + to.name
			rules = append(rules, r)
		}
	}
	for _, v := range New().Versions() {
		for _, unsafe := range []bool{false, true} {
			opts := translate.Options{Version: v, RetryNonIdempotent: unsafe}
			cfg, fs := generate(t, modelOf(rules...), opts)
			for _, r := range rules {
				checkRule(t, opts, r, section(cfg, "backend be_"+r.Name), fs[r.Index])
			}
		}
	}
}

// checkRule checks one rule's backend lines and findings.
func checkRule(t *testing.T, opts translate.Options, r *translate.Rule, be []string, fs map[translate.Feature]translate.Finding) {
	t.Helper()
	where := opts.Version + " " + r.RuleName
	has := func(line string) bool { return slices.Contains(be, line) }
	retrying := r.Retry != nil && r.Retry.Attempts > 0
	if retrying {
		for _, l := range []string{"retries " + strconv.Itoa(r.Retry.Attempts), "option http-buffer-request"} {
			if !has(l) {
				t.Errorf("%s: backend %q lacks %q", where, be, l)
			}
		}
		if got := has("http-request disable-l7-retry if { method POST PATCH LOCK }"); got == opts.RetryNonIdempotent {
			t.Errorf("%s: disable-l7-retry present = %v with RetryNonIdempotent %v", where, got, opts.RetryNonIdempotent)
		}
	} else {
		for _, l := range []string{"retries 0", "retry-on none"} {
			if !has(l) {
				t.Errorf("%s: backend %q lacks %q", where, be, l)
			}
		}
		if has("option http-buffer-request") || has("option redispatch 1") {
			t.Errorf("%s: backend %q without retries buffers or redispatches", where, be)
		}
	}
	if has("option redispatch 1") {
		t.Errorf("%s: redispatch with one endpoint", where)
	}
	wantStatus := map[translate.Feature]translate.Status{}
	// Retrying rules: every retry finding is approximated, since a
	// request larger than one buffer is not L7-retried whatever its
	// method (and, without the opt-in, POST, PATCH and LOCK are retried
	// only after connection failures).
	// Rules with attempts 0: HAProxy does not retry, which is honoured
	// only where HAProxy answers 502 to a failed request on a kept-alive
	// client connection; where it closes the connection silently, clients
	// send the request again (TestLiveSilentCloseResend).
	vs, _ := lookupVersion(opts.Version)
	noRetryStatus := map[bool]translate.Status{true: translate.Approximated, false: translate.Honoured}[vs.SilentKeepAliveClose]
	retryStatus := map[bool]translate.Status{true: translate.Approximated, false: noRetryStatus}[retrying]
	if r.Retry != nil {
		wantStatus[translate.FeatureRetryAttempts] = retryStatus
		wantStatus[translate.FeatureRetryConnectionErrors] = retryStatus
		if r.Retry.Backoff != nil {
			wantStatus[translate.FeatureRetryBackoff] = map[bool]translate.Status{true: translate.Unsupported, false: noRetryStatus}[retrying]
		}
		if len(r.Retry.Codes) > 0 {
			// A status code is answered, never a silent close.
			wantStatus[translate.FeatureRetryCodes] = map[bool]translate.Status{true: translate.Approximated, false: translate.Honoured}[retrying]
		}
		if r.Timeouts.BackendRequest != nil {
			// timeout server is an inactivity timer, never a total.
			wantStatus[translate.FeatureRetryBackendTimeout] = translate.Approximated
		}
	}
	if retrying {
		for _, feat := range []translate.Feature{translate.FeatureRetryAttempts, translate.FeatureRetryConnectionErrors} {
			f := fs[feat]
			if !hasCaveat(f, report.CaveatRetryBufferLimitedByHeaders) {
				t.Errorf("%s: %s does not name the buffer limit: %v", where, feat, f.Caveats)
			}
			if !opts.RetryNonIdempotent && !hasCaveat(f, report.CaveatNonIdempotentExempt) {
				t.Errorf("%s: %s does not name the method exemption: %v", where, feat, f.Caveats)
			}
		}
	}
	if r.Timeouts.BackendRequest != nil {
		wantStatus[translate.FeatureBackendRequestTimeout] = translate.Approximated
	}
	if rq := r.Timeouts.Request; rq != nil {
		br := r.Timeouts.BackendRequest
		switch {
		case rq.IsZero() && br != nil && !br.IsZero() && !retrying:
			wantStatus[translate.FeatureRequestTimeout] = translate.Honoured
		case br != nil && !rq.IsZero():
			wantStatus[translate.FeatureRequestTimeout] = translate.Unsupported
		default:
			wantStatus[translate.FeatureRequestTimeout] = translate.Approximated
		}
	}
	gotStatus := map[translate.Feature]translate.Status{}
	for feat, f := range fs {
		gotStatus[feat] = f.Status
		if (opts.RetryNonIdempotent || !retrying) && hasCaveat(f, report.CaveatNonIdempotentExempt) {
			t.Errorf("%s: %s exempts POST although POST is retried or nothing is: %v", where, feat, f.Caveats)
		}
	}
	if d := cmp.Diff(wantStatus, gotStatus); d != "" {
		t.Errorf("%s: statuses (-want +got):\n%s", where, d)
	}
	// Timeouts: backendRequest wins, then request, else the defaults.
	wantServer := ""
	switch {
	case r.Timeouts.BackendRequest != nil:
		wantServer = timeoutLine(r.Timeouts.BackendRequest)
	case r.Timeouts.Request != nil:
		wantServer = timeoutLine(r.Timeouts.Request)
	}
	if wantServer == "" {
		for _, l := range be {
			if strings.HasPrefix(l, "timeout ") {
				t.Errorf("%s: unexpected %q", where, l)
			}
		}
	} else if !has(wantServer) {
		t.Errorf("%s: backend %q lacks %q", where, be, wantServer)
	}
}

func timeoutLine(d *translate.Duration) string {
	v := d.Value.Milliseconds()
	if d.IsZero() || v > maxTimeoutMs {
		v = maxTimeoutMs
	}
	return "timeout server " + strconv.Itoa(int(v)) + "ms"
}

func TestClamp(t *testing.T) {
	r := rule(0, &translate.Retry{Attempts: 1}, translate.Timeouts{BackendRequest: dur("99999h59m59s999ms")})
	cfg, fs := generate(t, modelOf(r), translate.Options{Version: "2.6"})
	be := section(cfg, "backend be_default_web_r00")
	for _, l := range []string{"timeout server 2147483647ms", "timeout connect 5000ms"} {
		if !slices.Contains(be, l) {
			t.Errorf("backend %q lacks %q", be, l)
		}
	}
	for _, feat := range []translate.Feature{translate.FeatureBackendRequestTimeout, translate.FeatureRetryBackendTimeout} {
		if f := fs[0][feat]; f.Status != translate.Approximated || !hasCaveat(f, report.CaveatTimeoutClamped) {
			t.Errorf("%s finding = %s %v, want approximated and clamped", feat, f.Status, f.Caveats)
		}
	}
	// The largest value that fits is not clamped.
	p := planTimeouts(translate.Timeouts{Request: &translate.Duration{Text: "x", Value: maxTimeoutMs * 1e6}})
	if p.clamped || p.serverMs != maxTimeoutMs {
		t.Errorf("planTimeouts(2147483647ms) = %+v", p)
	}
}

func TestGolden(t *testing.T) {
	for _, v := range New().Versions() {
		for _, unsafe := range []bool{false, true} {
			name := "full-" + v
			if unsafe {
				name += "-non-idempotent"
			}
			t.Run(name, func(t *testing.T) {
				cfg, _ := generate(t, fullModel(), translate.Options{Version: v, RetryNonIdempotent: unsafe})
				again, _ := generate(t, fullModel(), translate.Options{Version: v, RetryNonIdempotent: unsafe})
				if cfg != again {
					t.Fatal("output is not deterministic")
				}
				file := filepath.Join("testdata", name+".cfg")
				if *update {
					if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatalf("%v (run go test -update)", err)
				}
				if d := cmp.Diff(string(want), cfg); d != "" {
					t.Errorf("%s differs (-want +got):\n%s", file, d)
				}
			})
		}
	}
}

func TestNotes(t *testing.T) {
	out, err := New().Generate(fullModel(), translate.Options{Version: "3.2"})
	if err != nil {
		t.Fatal(err)
	}
	joined := translate.NotesText(out.Notes)
	for _, want := range []string{"haproxy -c -f haproxy/haproxy.cfg", "retries 0", "404", "init-addr", "tune.bufsize"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes do not mention %q:\n%s", want, joined)
		}
	}
	if !bytes.HasPrefix(out.Files[0].Data, []byte("\nglobal\n")) {
		t.Errorf("config starts with %q", out.Files[0].Data[:20])
	}
}
