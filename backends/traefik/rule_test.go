package traefik

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/translate"
)

func TestMatchExpr(t *testing.T) {
	tests := []struct {
		name     string
		hostname string
		match    translate.Match
		want     string
	}{
		{"prefix root, any host", "", translate.Match{PathType: translate.PathPrefix, Path: "/"},
			"PathPrefix(`/`)"},
		{"prefix is element-wise", "", translate.Match{PathType: translate.PathPrefix, Path: "/a"},
			"Path(`/a`) || PathPrefix(`/a/`)"},
		{"prefix trailing slash ignored", "", translate.Match{PathType: translate.PathPrefix, Path: "/a/b/"},
			"Path(`/a/b`) || PathPrefix(`/a/b/`)"},
		{"exact path, exact host", "a.example.com", translate.Match{PathType: translate.PathExact, Path: "/x"},
			"Host(`a.example.com`) && Path(`/x`)"},
		{"wildcard host is a suffix, not the apex", "*.example.com", translate.Match{PathType: translate.PathPrefix, Path: "/"},
			"HostRegexp(`^.+[.]example[.]com$`) && PathPrefix(`/`)"},
		{"regex path is anchored", "", translate.Match{PathType: translate.PathRegex, Path: "/v[0-9]{1,3}/.*"},
			"PathRegexp(`^(?:/v[0-9]{1,3}/.*)$`)"},
		{"method", "", translate.Match{PathType: translate.PathExact, Path: "/", Method: "POST"},
			"Path(`/`) && Method(`POST`)"},
		{"headers", "", translate.Match{PathType: translate.PathExact, Path: "/", Headers: []translate.ValueMatch{
			{Type: translate.StringExact, Name: "x-env", Value: "canary"},
			{Type: translate.StringRegex, Name: "x-id", Value: "[a-f]+"},
			{Type: translate.StringExact, Name: "x-empty", Value: ""}}},
			"Path(`/`) && Header(`x-env`, `canary`) && HeaderRegexp(`x-id`, `^(?:[a-f]+)$`) && Header(`x-empty`, ``)"},
		{"query", "h.example", translate.Match{PathType: translate.PathPrefix, Path: "/q", Query: []translate.ValueMatch{
			{Type: translate.StringExact, Name: "v", Value: "1"},
			{Type: translate.StringRegex, Name: "w", Value: "a|b"}}},
			"Host(`h.example`) && (Path(`/q`) || PathPrefix(`/q/`)) && Query(`v`, `1`) && QueryRegexp(`w`, `^(?:a|b)$`)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := matchExpr(tt.hostname, tt.match)
			if err != nil {
				t.Fatal(err)
			}
			got := render(x)
			if got != tt.want {
				t.Errorf("rule\n got %s\nwant %s", got, tt.want)
			}
			back, err := parseRule(got)
			if err != nil {
				t.Fatalf("parse back: %v", err)
			}
			if diff := cmp.Diff(x, back); diff != "" {
				t.Errorf("parse back (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatchExprUnknownTypes(t *testing.T) {
	for _, m := range []translate.Match{
		{PathType: "Glob", Path: "/"},
		{PathType: translate.PathExact, Path: "/", Headers: []translate.ValueMatch{{Type: "Prefix", Name: "a"}}},
		{PathType: translate.PathExact, Path: "/", Query: []translate.ValueMatch{{Type: "Prefix", Name: "a"}}},
	} {
		if _, err := matchExpr("", m); err == nil {
			t.Errorf("matchExpr(%+v) = nil error", m)
		}
	}
}

func TestParseRuleRejectsBrokenRules(t *testing.T) {
	for _, s := range []string{
		"",
		"Path(`/a`",
		"Path(`/a)",
		"Path(`/a`) &&",
		"Path(`/a`) && Host(`x`) || (Method(`GET`)",
		"Path(/a)",
		"Path(`/a`) Host(`b`)",
		"Path(`/a``)",
		"(Path(`/a`))) ",
	} {
		if x, err := parseRule(s); err == nil {
			t.Errorf("parseRule(%q) = %+v, want an error", s, x)
		}
	}
}

// A value that closes the backtick string changes the rule's structure; the
// parse-back comparison must notice even if the value check were bypassed.
func TestParseBackDetectsBreakout(t *testing.T) {
	want := allOf(call("Host", "a"), call("Path", "/x`) || PathPrefix(`/"))
	got, err := parseRule(render(want))
	if err == nil && cmp.Equal(got, want) {
		t.Fatalf("break-out rule %q parsed back to the intended tree", render(want))
	}
}

func TestCheckRuleValue(t *testing.T) {
	good := []string{"", "a", "/a/b", "^(?:[0-9]{1,3})$", "a.example.com", "x-y_z~!$&()*+,=:@%?|[]<>-"}
	// A backtick string holds quotes, backslashes and spaces as they are
	// (TestRuleCarriesQuotes).
	good = append(good, `a\`, `a\b`, "a b", `a"b`, "a'b", "#x;", "é", "日本語", "a\nb", "a\tb")
	bad := []string{"a`b", "a\rb", "a\x00b", "\xff", "a\ufeff", "a\x7f", "{{.}}", "a{{b", "a}}b",
		strings.Repeat("a", 10<<10)}
	for _, s := range good {
		if err := checkRuleValue(s); err != nil {
			t.Errorf("checkRuleValue(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range bad {
		if checkRuleValue(s) == nil {
			t.Errorf("checkRuleValue(%q) = nil, want an error", short(s))
		}
	}
}

// TestQueryNamesExpressed: a query name is a backtick string, every
// character the API allows but the backtick, and '+', which Traefik's
// form decoding reads as a space (live: e2e TestQuotedValuesLive).
func TestQueryNamesExpressed(t *testing.T) {
	for s, want := range map[string]bool{"x!$'*^|~": true, "a#b": true, "a&b": true, "a%b": true, "a+b": false, "a`b": false} {
		if got := New().Expresses(translate.KindQueryName, s); got != want {
			t.Errorf("Expresses(query name %q) = %v, want %v", s, got, want)
		}
	}
}
