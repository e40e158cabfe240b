package nginx

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// judgeModel has rules of every kind the judge must read: GET-only and
// any-method retries, the opt-in, attempts 0, 0s timers, several endpoints,
// a clamp, a dead rule and one with an invalid backendRef.
func judgeModel(t testing.TB) *translate.Model {
	get := func(r *translate.Rule) *translate.Rule { r.Methods = []string{"GET", "HEAD"}; return r }
	dead := rule(5, &translate.Retry{Attempts: 2}, translate.Timeouts{Request: dur(t, "1s")})
	dead.Backends, dead.NoBackendRefs = nil, true
	partial := get(rule(6, &translate.Retry{Attempts: 1, Codes: []int{503}}, translate.Timeouts{}, backend("a", 2, "127.0.0.1")))
	partial.Invalid = []translate.InvalidBackend{{Index: 1, Weight: 1, Reason: "kind Bucket is not a Service"}}
	post := rule(9, &translate.Retry{Attempts: 1, Codes: []int{502}}, translate.Timeouts{})
	post.Methods = []string{"POST"}
	return model("", []*translate.Rule{
		get(rule(0, &translate.Retry{Attempts: 3, Codes: []int{500, 502, 503}, Backoff: dur(t, "100ms")}, translate.Timeouts{})),
		rule(1, &translate.Retry{Attempts: 2, Codes: []int{503}}, translate.Timeouts{BackendRequest: dur(t, "2s")}),
		rule(2, &translate.Retry{Attempts: 0, Codes: []int{503}}, translate.Timeouts{}),
		get(rule(3, &translate.Retry{Attempts: 1}, translate.Timeouts{Request: dur(t, "0s"), BackendRequest: dur(t, "0s")})),
		get(rule(4, &translate.Retry{Attempts: 2, Codes: []int{429}}, translate.Timeouts{}, backend("a", 1, "127.0.0.1", "127.0.0.2", "127.0.0.3"))),
		dead,
		partial,
		get(rule(7, &translate.Retry{Attempts: 4294967297, Codes: []int{502}}, translate.Timeouts{})),
		rule(8, nil, translate.Timeouts{Request: dur(t, "0s")}),
		post,
	})
}

func claimErrors(t *testing.T, b *Backend, m *translate.Model, opts translate.Options, out *translate.Output) []error {
	t.Helper()
	obs, err := b.Observe(m, opts, out.Files)
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	var errs []error
	for _, r := range m.Rules {
		errs = append(errs, translate.CheckClaims(r, out.Findings, obs[r.Name])...)
	}
	return errs
}

// tamper makes the finding feature of rule honoured when feature is set,
// and otherwise edits the generated file (which must hold from) with edit.
func tamper(t *testing.T, out *translate.Output, feature translate.Feature, rule int, edit func(string) string, from string) {
	t.Helper()
	if feature == "" {
		conf := string(out.Files[0].Data)
		if !strings.Contains(conf, from) {
			t.Fatalf("the file lacks %q:\n%s", from, conf)
		}
		out.Files[0].Data = []byte(edit(conf))
		return
	}
	found := false
	for i, f := range out.Findings {
		if f.Rule == rule && f.Feature == feature {
			if f.Status == translate.Honoured {
				t.Fatalf("finding already honoured: %+v", f)
			}
			out.Findings[i].Status, found = translate.Honoured, true
		}
	}
	if !found {
		t.Fatalf("no finding %s for rule %d", feature, rule)
	}
}

func layouts(t *testing.T) map[string]*Backend {
	t.Helper()
	out := map[string]*Backend{}
	for _, l := range []string{LayoutFull, LayoutConfD} {
		b, err := NewWithConfig(Config{Layout: l})
		if err != nil {
			t.Fatal(err)
		}
		out[l] = b
	}
	return out
}

// TestJudgeAgreesWithClaims: on generated configurations, every honoured
// claim holds in what the judge reads back, for both layouts, every version
// and with and without the opt-in; and the judge reads nginx's semantics.
func TestJudgeAgreesWithClaims(t *testing.T) {
	for layout, b := range layouts(t) {
		for _, v := range b.Versions() {
			for _, optIn := range []bool{false, true} {
				m := judgeModel(t)
				opts := translate.Options{Version: v, RetryNonIdempotent: optIn}
				if _, err := translate.Run(m, []translate.Target{{Backend: b, Version: v}}, optIn); err != nil {
					t.Fatalf("%s %s opt-in %v: Run: %v", layout, v, optIn, err)
				}
				out, err := b.Generate(m, opts)
				if err != nil {
					t.Fatal(err)
				}
				if errs := claimErrors(t, b, m, opts, out); len(errs) > 0 {
					t.Fatalf("%s %s: %v", layout, v, errs)
				}
				obs, _ := b.Observe(m, opts, out.Files)
				get := func(rule int, c translate.MethodClass) translate.Behaviour {
					bh, ok := obs[m.Rules[rule].Name][c]
					if !ok {
						t.Fatalf("no behaviour for rule %d %s", rule, c)
					}
					return bh
				}
				if bh := get(0, translate.Idempotent); bh.Retries != 3 || len(bh.Codes) != 3 || bh.ConnErrors != translate.ConnRetryAll ||
					bh.MaxRetriedBody != -1 || bh.TryTimeout != (translate.Timer{Kind: translate.TimerIdle, Value: time.Minute}) || !bh.TimeoutRetried {
					t.Errorf("rule 0: %+v", bh)
				}
				post := get(1, translate.NonIdempotent)
				if optIn && (post.ConnErrors != translate.ConnRetryAll || len(post.Codes) != 1 || !post.TimeoutRetried) {
					t.Errorf("rule 1 POST with the opt-in: %+v", post)
				}
				if !optIn && (post.ConnErrors != translate.ConnRetryUnsent || post.Codes != nil || post.TimeoutRetried || post.Retries != 2) {
					t.Errorf("rule 1 POST without the opt-in: %+v", post)
				}
				if bh := get(2, translate.Idempotent); bh.Retries != 0 || bh.Codes != nil {
					t.Errorf("rule 2 (attempts 0): %+v", bh)
				}
				if bh := get(3, translate.Idempotent); !bh.TryTimeout.Off() || !bh.RequestTimeout.Off() {
					t.Errorf("rule 3 (0s timers): %+v", bh)
				}
				if bh := get(4, translate.Idempotent); bh.Retries != 2 {
					t.Errorf("rule 4 (3 endpoints, attempts 2): %+v", bh)
				}
				for _, c := range []translate.MethodClass{translate.Idempotent, translate.NonIdempotent} {
					if bh := get(5, c); bh.Answer != 500 {
						t.Errorf("dead rule %s: %+v", c, bh)
					}
				}
				if bh := get(6, translate.Idempotent); bh.InvalidShareAnswered || bh.Answer != 0 {
					t.Errorf("rule 6 (an invalid backendRef): %+v", bh)
				}
				if bh := get(7, translate.Idempotent); bh.Retries != maxAttempts {
					t.Errorf("rule 7 (clamped): %+v", bh)
				}
			}
		}
	}
}

// TestJudgeCatchesTampering: a configuration edited after generation, or a
// finding made wider than the configuration, is caught.
func TestJudgeCatchesTampering(t *testing.T) {
	for _, tc := range []struct {
		name     string
		optIn    bool
		from, to string // an edit of the generated file
		count    int    // how many occurrences to replace (-1 all)
		// finding, when set, is made honoured instead.
		finding translate.Feature
		rule    int
		// refused: the judge refuses the edited file as a whole (it
		// contradicts every rule), rather than one claim.
		refused bool
	}{
		{name: "a code removed", from: "http_500 http_502 http_503;", to: "http_500 http_502;", count: 1},
		{name: "error removed", from: "proxy_next_upstream error timeout invalid_header http_500", to: "proxy_next_upstream timeout invalid_header http_500", count: 1},
		{name: "fewer tries", from: "proxy_next_upstream_tries 4;", to: "proxy_next_upstream_tries 3;", count: 1},
		{name: "retries off", from: "proxy_next_upstream error timeout invalid_header http_500 http_502 http_503;", to: "proxy_next_upstream off;", count: 1},
		{name: "an upstream entry removed", from: "server 127.0.0.1:18081 max_fails=0;", to: "", count: 1},
		{name: "request buffering off", from: "proxy_next_upstream_tries 4;", to: "proxy_next_upstream_tries 4; proxy_request_buffering off;", count: 1},
		{name: "body limit back to 1m", from: "client_max_body_size 0;", to: "", count: -1, refused: true},
		{name: "body limit of 10m", from: "client_max_body_size 0;", to: "client_max_body_size 10m;", count: 1, refused: true},
		{name: "upstream keepalive", from: "upstream default_route_r0 {", to: "upstream default_route_r0 {\n keepalive 4;", count: 1},
		// What the Gateway passes through (TestLivePassThrough).
		{name: "X-Accel headers obeyed", from: "proxy_ignore_headers X-Accel-Redirect X-Accel-Expires X-Accel-Limit-Rate X-Accel-Buffering X-Accel-Charset;", to: "", count: 1, refused: true},
		{name: "X-Accel-Redirect obeyed", from: "proxy_ignore_headers X-Accel-Redirect X-Accel-Expires", to: "proxy_ignore_headers X-Accel-Expires", count: 1, refused: true},
		{name: "X-Pad stripped", from: "proxy_pass_header X-Pad;", to: "", count: 1, refused: true},
		{name: "X-Accel-Charset stripped", from: "proxy_pass_header X-Accel-Charset;", to: "", count: -1, refused: true},
		{name: "underscored names dropped", from: "underscores_in_headers on;", to: "", count: -1, refused: true},
		{name: "invalid names dropped", from: "ignore_invalid_headers off;", to: "ignore_invalid_headers on;", count: 1, refused: true},
		{name: "Upgrade not passed", from: "proxy_set_header Upgrade $http_upgrade;", to: "", count: 1, refused: true},
		{name: "Connection close", from: "proxy_set_header Connection $gw_connection_upgrade;", to: "", count: 1, refused: true},
		{name: "upgrade map closes", from: "default upgrade;", to: "default close;", count: 1, refused: true},
		{name: "Host as sent only", from: "proxy_set_header Host $gw_host;", to: "proxy_set_header Host $http_host;", count: 1, refused: true},
		{name: "Host not set", from: "proxy_set_header Host $gw_host;", to: "", count: 1, refused: true},
		{name: "Host map without port", from: "default $server_addr:$server_port;", to: "default $server_addr;", count: 1, refused: true},
		{name: "upgrade map upgrades every request", from: `"" close;`, to: `"" upgrade;`, count: 1, refused: true},
		{name: "Host map IPv6 without brackets", from: "~: [$server_addr]:$server_port;", to: "~: $server_addr:$server_port;", count: 1, refused: true},
		{name: "Host map skips $host", from: `"" $gw_host_default;`, to: `"" $gw_server_authority;`, count: 1, refused: true},
		{name: "0s timer below the range", from: "proxy_read_timeout 100000h;", to: "proxy_read_timeout 99999h;", count: -1},
		{name: "0s timer at the default", from: "proxy_connect_timeout 100000h;", to: "", count: -1},
		{name: "dead rule proxies", from: "return 500;", to: "proxy_pass http://default_route_r0;", count: 1, refused: true},
		{name: "opt-in removed", optIn: true, from: "invalid_header http_503 non_idempotent;", to: "invalid_header http_503;", count: 1},
		{name: "backoff claimed", finding: translate.FeatureRetryBackoff, rule: 0},
		{name: "any-method codes claimed", finding: translate.FeatureRetryCodes, rule: 1},
		{name: "POST connection errors claimed", finding: translate.FeatureRetryConnectionErrors, rule: 9},
		{name: "idle backendRequest claimed", finding: translate.FeatureBackendRequestTimeout, rule: 1},
		{name: "invalid share claimed", finding: translate.FeatureBackendRefs, rule: 6},
		{name: "dead rule attempts claimed", finding: translate.FeatureRetryAttempts, rule: 5},
		{name: "clamped attempts claimed", finding: translate.FeatureRetryAttempts, rule: 7},
	} {
		for layout, b := range layouts(t) {
			t.Run(tc.name+"/"+layout, func(t *testing.T) {
				m := judgeModel(t)
				opts := translate.Options{Version: "1.22", RetryNonIdempotent: tc.optIn}
				out, err := b.Generate(m, opts)
				if err != nil {
					t.Fatal(err)
				}
				if errs := claimErrors(t, b, m, opts, out); len(errs) > 0 {
					t.Fatalf("untampered: %v", errs)
				}
				tamper(t, out, tc.finding, tc.rule, func(conf string) string {
					return strings.Replace(conf, tc.from, tc.to, tc.count)
				}, tc.from)
				if tc.refused {
					_, err := b.Observe(m, opts, out.Files)
					if err == nil {
						t.Fatalf("the judge accepted the file:\n%s", out.Files[0].Data)
					}
					t.Log(err)
					return
				}
				errs := claimErrors(t, b, m, opts, out)
				if len(errs) == 0 {
					t.Fatalf("the judge did not catch it:\n%s", out.Files[0].Data)
				}
				t.Log(errs[0])
			})
		}
	}
}

func TestJudgeNeedsTheFile(t *testing.T) {
	m := judgeModel(t)
	if _, err := New().Observe(m, translate.Options{}, []translate.File{{Path: ConfDPath, Data: []byte("")}}); err == nil {
		t.Error("Observe without nginx.conf succeeded")
	}
	if _, err := New().Observe(m, translate.Options{}, []translate.File{{Path: ConfigPath, Data: []byte("http { server { location @r_default_route_r0 { return 500; } }")}}); err == nil {
		t.Error("Observe of a file that does not parse succeeded")
	}
}

func TestParseNginxTime(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1500ms": 1500 * time.Millisecond, "60s": time.Minute, "60": time.Minute, "1m30s": 90 * time.Second,
		"100000h": 100000 * time.Hour, "1h 30m": 0, "2d": 48 * time.Hour, "s": 0, "1s1m": 0, "": 0, "1x": 0,
		"99999999999999999y": 0,
	} {
		got, err := ParseTime(in)
		if want == 0 {
			if err == nil {
				t.Errorf("ParseTime(%q) = %v, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("ParseTime(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
}

func TestNewWithConfig(t *testing.T) {
	for layout, path := range map[string]string{"": ConfigPath, LayoutFull: ConfigPath, LayoutConfD: ConfDPath} {
		b, err := NewWithConfig(Config{Layout: layout})
		if err != nil {
			t.Fatalf("%q: %v", layout, err)
		}
		out, err := b.Generate(model("", []*translate.Rule{rule(0, nil, translate.Timeouts{})}), translate.Options{})
		if err != nil || len(out.Files) != 1 || out.Files[0].Path != path {
			t.Errorf("layout %q: %v %v", layout, out, err)
		}
	}
	if _, err := NewWithConfig(Config{Layout: "sites-enabled"}); err == nil {
		t.Error("unknown layout accepted")
	}
}

// TestConfDHashSizes: the conf.d file carries the hash sizes long names
// need, and a note says they must not be set twice.
func TestConfDHashSizes(t *testing.T) {
	b, err := NewWithConfig(Config{Layout: LayoutConfD})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 40) + ".example.com"
	out, err := b.Generate(model(long, []*translate.Rule{rule(0, nil, translate.Timeouts{})}), translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out.Files[0].Data), "server_names_hash_bucket_size 128;") {
		t.Errorf("gwretry.conf:\n%s", out.Files[0].Data)
	}
	if !strings.Contains(translate.NotesText(out.Notes), "gwretry.conf sets server_names_hash_bucket_size") {
		t.Errorf("notes: %q", out.Notes)
	}
	nginxCheckConfD(t, out.Files[0].Data)
}

// TestJudgeCatchesFilterTampering: a filter edited out of the generated
// file, or a filter finding made wider than what nginx does, is caught.
func TestJudgeCatchesFilterTampering(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		from, to      string // an edit of the generated file
		nth           int    // which occurrence of from, from 0
		finding       translate.Feature
		rule          int
	}{
		{name: "set value changed", from: `proxy_set_header X-Set "s v";`, to: `proxy_set_header X-Set "s w";`},
		{name: "add appends nothing", from: "default $http_x_add,added;", to: "default $http_x_add;"},
		{name: "add replaces", from: `"" added;`, to: `"" other;`},
		{name: "remove dropped", from: `proxy_set_header X-Remove "";`, to: ""},
		{name: "response add not always", from: "add_header X-Resp-Add ra always;", to: "add_header X-Resp-Add ra;"},
		{name: "response remove dropped", from: "proxy_hide_header X-Flaky-Endpoint;", to: ""},
		{name: "response set adds", from: "proxy_hide_header X-Flaky-Endpoint;", to: "", nth: 1},
		{name: "redirect status", from: "return 302 $scheme", to: "return 301 $scheme"},
		{name: "redirect port map", from: `80 "";`, to: `8080 "";`},
		{name: "redirect query dropped", from: "/new$is_args$args;", to: "/new;"},
		{name: "redirect host", from: "https://example.com:8443", to: "https://example.org:8443"},
		{name: "redirect port", from: "https://example.com:8443", to: "https://example.com"},
		{name: "redirect scheme", from: "return 308 http://h.example", to: "return 308 https://h.example"},
		// A prefix redirect: from the path as sent ($request_uri, the raw
		// map), else from the normalised path (set in an if).
		{name: "redirect raw value", from: `"~^1:/rd-prefix(/[^?]*)([?].*)?$" /p2$1$2;`, to: `"~^1:/rd-prefix(/[^?]*)([?].*)?$" /p3$1$2;`},
		{name: "redirect raw not element-wise", from: `"~^1:/rd-prefix(/[^?]*)([?].*)?$" /p2$1$2;`, to: `"~^1:/rd-prefix([^?]*)([?].*)?$" /p2$1$2;`},
		{name: "redirect raw query dropped", from: `"~^1:/rd-prefix(/[^?]*)([?].*)?$" /p2$1$2;`, to: `"~^1:/rd-prefix(/[^?]*)([?].*)?$" /p2$1;`},
		{name: "redirect raw path equal to prefix", from: `"~^1:/rd-empty([?].*)?$" /$1;`, to: `"~^1:/rd-empty([?].*)?$" $1;`},
		{name: "redirect raw keeps encoded dot segments", from: "~^[^:]*:[^?]*(/|%2[fF])([.]|%2[eE])([.]|%2[eE])?(/|%2[fF]|[?]|$) \"\";", to: `"~^[^:]*:[^?]*/[.][.]?(/|[?]|$)" "";`},
		{name: "redirect raw of any prefix", from: "map $gw_default__filters__r4_rd_pfx:$request_uri", to: "map 1:$request_uri"},
		{name: "redirect index of another prefix", from: `"~(?s)^/rd-prefix(/.*)?$" 1;`, to: `"~(?s)^/rd-pre(/.*)?$" 1;`},
		{name: "redirect normalised value", from: "set $gw_default__filters__r4_rd /p2$1$is_args$args;", to: "set $gw_default__filters__r4_rd /p3$1$is_args$args;"},
		{name: "redirect normalised query dropped", from: "set $gw_default__filters__r4_rd /p2$1$is_args$args;", to: "set $gw_default__filters__r4_rd /p2$1;"},
		{name: "redirect normalised prefix", from: `if ($uri ~ "(?s)^(?:/rd-prefix)(/.*)$")`, to: `if ($uri ~ "(?s)^(?:/rd-pre)(/.*)$")`},
		{name: "redirect raw unused", from: "if ($gw_default__filters__r4_rd_raw) {", to: `if ($request_uri = "") {`},
		{name: "redirect normalised unused", from: `if ($uri ~ "(?s)^(?:/rd-prefix)(/.*)$") {`, to: `if ($uri ~ "^$") {`},
		{name: "redirect root", from: "set $gw_default__filters__r6_rd /$is_args$args;", to: "set $gw_default__filters__r6_rd $is_args$args;"},
		{name: "redirect returns first", from: "set $gw_default__filters__r4_rd /p2$is_args$args;", to: "return 307 https://example.com:8443$gw_default__filters__r4_rd;\nset $gw_default__filters__r4_rd /p2$is_args$args;"},
		{name: "redirect from the raw map alone", from: "return 307 https://example.com:8443$gw_default__filters__r4_rd;", to: "return 307 https://example.com:8443$gw_default__filters__r4_rd_raw;"},
		{name: "redirect is a 500", from: "return 303 $scheme://$host:8080$request_uri;", to: "return 500;"},
		{name: "rewrite prefix value", from: `"~(?s)^/rw-prefix(/.*)$" /inner$1;`, to: `"~(?s)^/rw-prefix(/.*)$" /inner/x$1;`},
		{name: "rewrite exact path", from: `"~^/rw-prefix$" /inner;`, to: `"~^/rw-prefix$" /;`},
		{name: "rewrite other prefix", from: `"~(?s)^/rw-prefix(/.*)$" /inner$1;`, to: `"~(?s)^/rw-prefi(/.*)$" /inner$1;`},
		// A prefix rewrite: proxy_pass appends the path as sent (the raw
		// map), set before the rewrite of the normalised path.
		{name: "rewrite raw value", from: `"~^1:/rw-prefix(/[^?]*)([?].*)?$" /inner$1$2;`, to: `"~^1:/rw-prefix(/[^?]*)([?].*)?$" /inner/x$1$2;`},
		{name: "rewrite raw query dropped", from: `"~^1:/rw-prefix(/[^?]*)([?].*)?$" /inner$1$2;`, to: `"~^1:/rw-prefix(/[^?]*)([?].*)?$" /inner$1;`},
		{name: "rewrite raw keeps encoded dot segments", from: "~^[^:]*:[^?]*(/|%2[fF])([.]|%2[eE])([.]|%2[eE])?(/|%2[fF]|[?]|$) \"\";", to: `"~^[^:]*:[^?]*/[.][.]?(/|[?]|$)" "";`, nth: 2},
		{name: "rewrite index of another prefix", from: `"~(?s)^/rw-prefix(/.*)?$" 1;`, to: `"~(?s)^/rw(/.*)?$" 1;`},
		{name: "rewrite raw unused", from: "proxy_pass http://default_filters_r8$gw_default__filters__r8_rw_path;", to: "proxy_pass http://default_filters_r8;"},
		{name: "rewrite raw set after a rewrite", from: "set $gw_default__filters__r8_rw_path $gw_default__filters__r8_rw_raw;", to: "rewrite ^ $gw_default__filters__r8_rw break;\nset $gw_default__filters__r8_rw_path $gw_default__filters__r8_rw_raw;"},
		{name: "rewrite raw from elsewhere", from: "set $gw_default__filters__r8_rw_path $gw_default__filters__r8_rw_raw;", to: "set $gw_default__filters__r8_rw_path $request_uri;"},
		{name: "rewrite raw set again", from: "set $gw_default__filters__r8_rw_path $gw_default__filters__r8_rw_raw;", to: "set $gw_default__filters__r8_rw_path $gw_default__filters__r8_rw_raw;\n        set $gw_default__filters__r8_rw_path $request_uri;"},
		{name: "full rewrite proxies the path as sent", from: "proxy_pass http://default_filters_r9;", to: "proxy_pass http://default_filters_r9$request_uri;"},
		{name: "rewrite host", from: "proxy_set_header Host rw.example;", to: "proxy_set_header Host $http_host;"},
		{name: "rewrite removed", from: "rewrite ^ /full break;", to: ""},
		{name: "rewrite redirects", from: "rewrite ^ /full break;", to: "rewrite ^ /full redirect;"},
		{name: "mirror share", from: `50% "";`, to: `20% "";`},
		{name: "mirror elsewhere", from: "server 127.0.0.1:18082 max_fails=0;", to: "server 127.0.0.1:18083 max_fails=0;"},
		{name: "mirror removed", from: "mirror /_gwretry_mirror_default_filters_r11_0;", to: ""},
		{name: "mirror skips all", from: "if ($gw_default__filters__r12_mirror0_skip) {", to: "if ($gw_default__filters__r12_mirror0_skip) {\n}\nif ($request_id) {"},
		{name: "1.22 add claimed", version: "1.22", finding: translate.FeatureRequestHeaderModifier, rule: 0},
	} {
		for layout, b := range layouts(t) {
			t.Run(tc.name+"/"+layout, func(t *testing.T) {
				m := filterModel(18080, translate.Endpoint{Host: "127.0.0.1", Port: 18081}, translate.Endpoint{Host: "127.0.0.1", Port: 18082})
				v := tc.version
				if v == "" {
					v = "1.24"
				}
				opts := translate.Options{Version: v}
				out, err := b.Generate(m, opts)
				if err != nil {
					t.Fatal(err)
				}
				if errs := claimErrors(t, b, m, opts, out); len(errs) > 0 {
					t.Fatalf("untampered: %v", errs)
				}
				tamper(t, out, tc.finding, tc.rule, func(conf string) string {
					i := 0
					for range tc.nth {
						i += strings.Index(conf[i:], tc.from) + len(tc.from)
					}
					j := i + strings.Index(conf[i:], tc.from)
					if j < i {
						t.Fatalf("the file has no occurrence %d of %q", tc.nth, tc.from)
					}
					return conf[:j] + tc.to + conf[j+len(tc.from):]
				}, tc.from)
				obs, err := b.Observe(m, opts, out.Files)
				if err != nil {
					t.Logf("Observe refuses it: %v", err)
					return
				}
				var errs []error
				for _, r := range m.Rules {
					errs = append(errs, translate.CheckClaims(r, out.Findings, obs[r.Name])...)
				}
				if len(errs) == 0 {
					t.Fatalf("the judge did not catch it:\n%s", out.Files[0].Data)
				}
				t.Log(errs[0])
			})
		}
	}
}

// TestPassHeaderUndoesHide: a rule that removes or sets a header nginx
// strips by default gets no proxy_pass_header of it (nginx would pass it
// despite the rule's proxy_hide_header), the others still pass, and the
// judge reads a proxy_pass_header added back as undoing the removal.
func TestPassHeaderUndoesHide(t *testing.T) {
	r := rule(0, nil, translate.Timeouts{})
	r.Filters.ResponseHeaders = &translate.HeaderModifier{Remove: []string{"x-accel-redirect"}, Set: []translate.Header{{Name: "X-Pad", Value: "p"}}}
	m := model("", []*translate.Rule{r})
	b := New()
	opts := translate.Options{Version: "1.24"}
	out, err := b.Generate(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(out.Files[0].Data)
	for _, n := range strippedHeaders {
		want := n != "X-Accel-Redirect" && n != "X-Pad"
		if got := strings.Contains(conf, "proxy_pass_header "+n+";"); got != want {
			t.Errorf("proxy_pass_header %s written: %v, want %v", n, got, want)
		}
	}
	for _, f := range out.Findings {
		if f.Feature == translate.FeatureResponseHeaderModifier && f.Status != translate.Honoured {
			t.Fatalf("response header finding: %+v", f)
		}
	}
	if errs := claimErrors(t, b, m, opts, out); len(errs) > 0 {
		t.Fatalf("untampered: %v", errs)
	}
	for _, n := range []string{"X-Accel-Redirect", "X-Pad"} {
		tampered := *out
		tampered.Files = []translate.File{{Path: out.Files[0].Path, Data: []byte(strings.Replace(conf, "proxy_pass_header X-Accel-Expires;", "proxy_pass_header X-Accel-Expires;\nproxy_pass_header "+n+";", 1))}}
		if errs := claimErrors(t, b, m, opts, &tampered); len(errs) == 0 {
			t.Errorf("a proxy_pass_header %s that undoes the rule's filter was not caught", n)
		}
	}
}

// TestJudgeMirrorIgnoresXAccel: a mirror location where nginx would act on
// the X-Accel-* headers of the mirror's response (an X-Accel-Redirect
// proxies the request again) is refused.
func TestJudgeMirrorIgnoresXAccel(t *testing.T) {
	for layout, b := range layouts(t) {
		m := filterModel(18080, translate.Endpoint{Host: "127.0.0.1", Port: 18081}, translate.Endpoint{Host: "127.0.0.1", Port: 18082})
		opts := translate.Options{Version: "1.24"}
		out, err := b.Generate(m, opts)
		if err != nil {
			t.Fatal(err)
		}
		conf := string(out.Files[0].Data)
		mirror := strings.Index(conf, "location = /_gwretry_mirror_")
		ignore := "proxy_ignore_headers " + strings.Join(ignoredHeaders, " ") + ";"
		i := strings.Index(conf[mirror:], ignore)
		if mirror < 0 || i < 0 || strings.Contains(conf[mirror:mirror+i], "}") {
			t.Fatalf("%s: no %s in the first mirror location:\n%s", layout, ignore, conf)
		}
		out.Files[0].Data = []byte(conf[:mirror+i] + conf[mirror+i+len(ignore):])
		if _, err := b.Observe(m, opts, out.Files); err == nil {
			t.Errorf("%s: the judge accepted a mirror location without %s", layout, ignore)
		} else {
			t.Log(err)
		}
	}
}

// TestJudgeServerHeader: nginx writes its own Server header, so hiding the
// backend's does not remove it; a claim that it does is caught.
func TestJudgeServerHeader(t *testing.T) {
	r := rule(0, nil, translate.Timeouts{})
	r.Filters.ResponseHeaders = &translate.HeaderModifier{Remove: []string{"Server"}}
	m := model("", []*translate.Rule{r})
	b := New()
	opts := translate.Options{Version: "1.24"}
	out, err := b.Generate(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range out.Findings {
		if f.Feature == translate.FeatureResponseHeaderModifier {
			if f.Status != translate.Approximated {
				t.Fatalf("removing Server: %+v", f)
			}
			out.Findings[i].Status = translate.Honoured
		}
	}
	if errs := claimErrors(t, b, m, opts, out); len(errs) == 0 {
		t.Error("a widened claim on Server was not caught")
	}
}

// TestJudgeAgreesWithFilterClaims: on the generated filters, at every
// version and layout, every honoured claim holds in what the judge reads.
func TestJudgeAgreesWithFilterClaims(t *testing.T) {
	for layout, b := range layouts(t) {
		for _, v := range b.Versions() {
			m := filterModel(18080, translate.Endpoint{Host: "127.0.0.1", Port: 18081}, translate.Endpoint{Host: "127.0.0.1", Port: 18082})
			res, err := translate.Run(m, []translate.Target{{Backend: b, Version: v}}, false)
			if err != nil {
				t.Fatalf("%s %s: %v", layout, v, err)
			}
			honoured := 0
			for _, f := range res.Report.Findings {
				if f.Status == translate.Honoured {
					honoured++
				}
			}
			// 1.22 cannot append to a repeated header; the prefix
			// redirects and rewrites are approximated
			// (PathRebuiltNormalized), and checked all the same.
			want := 12
			if v == "1.22" {
				want = 11
			}
			if honoured != want {
				t.Errorf("%s %s: %d honoured findings, want %d: %+v", layout, v, honoured, want, res.Report.Findings)
			}
			rebuilt := 0
			for _, f := range res.Report.Findings {
				if f.Status == translate.Approximated && len(f.Caveats) == 1 && f.Caveats[0].Reason == report.CaveatPathRebuiltNormalized {
					rebuilt++
					if !translate.Checked(f) {
						t.Errorf("%s %s: rule %d %s is not checked against the judge", layout, v, f.Rule, f.Feature)
					}
				}
			}
			if rebuilt != 4 {
				t.Errorf("%s %s: %d findings approximated by PathRebuiltNormalized alone, want 4", layout, v, rebuilt)
			}
		}
	}
}

// TestJudgeChecksApproximatedCodes: every nginx in the version table takes
// a backend's 1xx as the final response, so a retry.codes finding is
// approximated (InterimResponseIsFinal) where it used to be honoured; the
// caveat changes nothing in the configuration, so the judge still compares
// the configured proxy_next_upstream codes with the rule's: a code removed
// or added after generation is caught.
func TestJudgeChecksApproximatedCodes(t *testing.T) {
	for _, edit := range []struct{ name, from, to string }{
		{"a code removed", "http_500 http_502 http_503;", "http_500 http_502;"},
		{"a code added", "http_500 http_502 http_503;", "http_500 http_502 http_503 http_504;"},
		{"a code replaced", "http_500 http_502 http_503;", "http_500 http_502 http_404;"},
	} {
		for _, v := range New().Versions() {
			t.Run(edit.name+"/"+v, func(t *testing.T) {
				b, m := New(), judgeModel(t)
				opts := translate.Options{Version: v}
				out, err := b.Generate(m, opts)
				if err != nil {
					t.Fatal(err)
				}
				var codes translate.Finding
				for _, f := range out.Findings {
					if f.Rule == 0 && f.Feature == translate.FeatureRetryCodes {
						codes = f
					}
				}
				want := []report.Caveat{report.NewCaveat(report.CaveatInterimResponseIsFinal, "version", v)}
				if codes.Status != translate.Approximated || !reflect.DeepEqual(codes.Caveats, want) || !translate.Checked(codes) {
					t.Fatalf("rule 0 retry.codes: %s with %v (checked %v), want approximated with %v only, and checked", codes.Status, codes.Caveats, translate.Checked(codes), want)
				}
				if errs := claimErrors(t, b, m, opts, out); len(errs) > 0 {
					t.Fatalf("untampered: %v", errs)
				}
				tamper(t, out, "", 0, func(conf string) string { return strings.Replace(conf, edit.from, edit.to, 1) }, edit.from)
				errs := claimErrors(t, b, m, opts, out)
				if len(errs) == 0 || !strings.Contains(errs[0].Error(), "retry.codes is approximated") {
					t.Fatalf("the judge did not catch the edited codes of the approximated claim: %v", errs)
				}
				t.Log(errs[0])
			})
		}
	}
}
