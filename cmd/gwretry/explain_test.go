package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gwretry/gwretry/translate"
)

const explainRoute = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /cart}}]
    retry: {codes: [500, 503], attempts: 6, backoff: 200ms}
    timeouts: {request: 2s, backendRequest: 500ms}
    backendRefs: [{name: cart, port: 8080}]
`

// TestExplainText: a block per target, rule and method class, with the
// table of tries, the worst case and the retries that never happen.
func TestExplainText(t *testing.T) {
	code, stdout, stderr := gwretry(t, explainRoute, "explain", "-", "--target", "grpc,haproxy@3.2", "--endpoint", "cart:8080=10.0.0.1:80")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"grpc@1.84  default/shop rule 0  GET, PUT, DELETE and other idempotent requests\n",
		"  retries: 4 (the rule asks for 6), on ",
		"  TRY  PAUSE BEFORE    EARLIEST START  LATEST START  TRY TIMEOUT  NOTE\n",
		"  2    200ms to 300ms  200ms           2s            none         after a pause of 200ms to 300ms\n",
		"  never: try 5: the request timeout (total 2s) has always passed",
		"  never: tries 6 to 7: the configuration makes at most 4 retries (maxAttempts 5, the first try included)\n",
		"\nhaproxy@3.2  default/shop rule 0  GET, PUT, DELETE and other idempotent requests\n",
		"  retries: 6 (the rule asks for 6), on responses 500, 503;",
		"  worst case: 3.5s\n",
		"  note: each try's timer is an idle timer (500ms)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stdout, "haproxy@3.2  default/shop rule 0  POST, PATCH and LOCK requests\n  retries: 6 (the rule asks for 6), on connection failures before the request was sent\n") {
		t.Errorf("no POST block for HAProxy:\n%s", stdout)
	}
}

// TestExplainJSON: the documented schema, with null for an unbounded time.
func TestExplainJSON(t *testing.T) {
	// linkerd does not serve a route on a Gateway: its timeline says so
	// and is unbounded; grpc's has tries that never happen.
	code, stdout, stderr := gwretry(t, explainRoute, "explain", "-", "--target", "nginx,linkerd,grpc", "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var ex translate.Explanation
	if err := json.Unmarshal([]byte(stdout), &ex); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if ex.SchemaVersion != 1 || len(ex.Timelines) != 6 {
		t.Fatalf("schemaVersion %d, %d timelines:\n%s", ex.SchemaVersion, len(ex.Timelines), stdout)
	}
	ngx, lk := ex.Timelines[0], ex.Timelines[2]
	if ngx.Target != "nginx" || ngx.Route != "default/shop" || ngx.Methods != translate.Idempotent || ngx.Retries != 6 || len(ngx.Tries) != 7 {
		t.Errorf("nginx timeline: %+v", ngx)
	}
	if got := ngx.Tries[6].LatestStart; got.Unbounded || got.D.String() != "2s" {
		t.Errorf("nginx try 7 latest start %v, want 2s (proxy_next_upstream_timeout)", got)
	}
	if lk.Target != "linkerd" || !lk.WorstCase.Unbounded || !strings.Contains(stdout, `"worstCaseMs": null`) ||
		len(lk.Notes) != 1 || !strings.Contains(lk.Notes[0], "linkerd does not serve this rule") {
		t.Errorf("linkerd timeline: %+v", lk)
	}
	for _, key := range []string{`"requestedRetries"`, `"retriedOn"`, `"pauseMinMs"`, `"pauseMaxMs"`, `"earliestStartMs"`,
		`"latestStartMs"`, `"timeout"`, `"neverHappen"`, `"firstTry"`, `"lastTry"`, `"reason"`, `"notes"`} {
		if !strings.Contains(stdout, key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// TestExplainErrors: usage and input errors exit as translate's do.
func TestExplainErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		want  string
	}{
		{"no path", "", []string{"explain", "--target", "nginx"}, exitUsage, "at least one PATH"},
		{"no target", explainRoute, []string{"explain", "-"}, exitUsage, "--target is required"},
		{"bad output", explainRoute, []string{"explain", "-", "--target", "nginx", "-o", "yaml"}, exitUsage, `-o "yaml"`},
		{"bad input", "kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata: {name: x}\nspec: {rules: [{retry: {attempts: -1}}]}\n",
			[]string{"explain", "-", "--target", "nginx"}, exitInput, "attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := gwretry(t, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

// TestExplainSharesTranslateInputFlags: explain defines the input flags
// with translate's own definitions.
func TestExplainSharesTranslateInputFlags(t *testing.T) {
	root := newRootCmd(nil, io.Discard, io.Discard)
	tr, ex := findCmd(t, root.Commands(), "translate"), findCmd(t, root.Commands(), "explain")
	for _, name := range []string{"listen", "endpoint", "retry-non-idempotent", "channel", "tls-dir", "listen-https",
		"assume-reference-grants", "nginx-layout", "traefik-dynamic-file", "grpc-retry-throttling", "max-input-bytes"} {
		a, b := tr.Flags().Lookup(name), ex.Flags().Lookup(name)
		if a == nil || b == nil || a.Usage != b.Usage || a.DefValue != b.DefValue {
			t.Errorf("--%s: translate %v, explain %v", name, a, b)
		}
	}
}

func findCmd(t *testing.T, cmds []*cobra.Command, name string) *cobra.Command {
	t.Helper()
	for _, c := range cmds {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}
