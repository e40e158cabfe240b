package haproxy

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/translate"
)

func TestMatchACLs(t *testing.T) {
	tests := []struct {
		name  string
		match translate.Match
		want  []string // acl lines, then the use_backend condition
	}{
		{"prefix root", prefix("/"), []string{""}},
		{"prefix", prefix("/a"), []string{"acl p_path path -m str /a", "acl p_path path -m beg /a/", "p_path"}},
		{"prefix trailing slash", prefix("/a/b/"), []string{"acl p_path path -m str /a/b", "acl p_path path -m beg /a/b/", "p_path"}},
		{"exact", translate.Match{PathType: translate.PathExact, Path: "/a/"}, []string{"acl p_path path -m str /a/", "p_path"}},
		{"regex", translate.Match{PathType: translate.PathRegex, Path: "/a[0-9]+"}, []string{"acl p_path path -m reg ^(/a[0-9]+)$", "p_path"}},
		{"method", translate.Match{PathType: translate.PathPrefix, Path: "/", Method: "DELETE"}, []string{"acl p_method method DELETE", "p_method"}},
		{"headers", translate.Match{PathType: translate.PathPrefix, Path: "/", Headers: []translate.ValueMatch{
			{Type: translate.StringExact, Name: "x-a", Value: "v1"},
			{Type: translate.StringExact, Name: "x-b", Value: ""},
			{Type: translate.StringExact, Name: "x-c", Value: "-x"},
			{Type: translate.StringRegex, Name: "x-d", Value: "a|b"},
		}}, []string{
			"acl p_h0 req.fhdr(x-a) -m str v1", "acl p_h1 req.fhdr(x-b) -m len 0",
			"acl p_h2 req.fhdr(x-c) -m str -- -x", "acl p_h3 req.fhdr(x-d) -m reg ^(a|b)$", "p_h0 p_h1 p_h2 p_h3"}},
		{"query", translate.Match{PathType: translate.PathPrefix, Path: "/", Query: []translate.ValueMatch{
			{Type: translate.StringExact, Name: "Q", Value: "1"},
			{Type: translate.StringRegex, Name: "r", Value: "[a-z]{2}"},
		}}, []string{"acl p_q0 urlp(Q) -m str 1", "acl p_q1 urlp(r) -m reg ^([a-z]{2})$", "p_q0 p_q1"}},
		{"all", translate.Match{PathType: translate.PathExact, Path: "/x", Method: "POST",
			Headers: []translate.ValueMatch{{Type: translate.StringExact, Name: "h", Value: "v"}},
			Query:   []translate.ValueMatch{{Type: translate.StringExact, Name: "q", Value: "v"}}},
			[]string{"acl p_path path -m str /x", "acl p_method method POST", "acl p_h0 req.fhdr(h) -m str v", "acl p_q0 urlp(q) -m str v", "p_path p_method p_h0 p_q0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ck tokenChecker
			acls, names := matchACLs("p", tt.match, &ck)
			if ck.err != nil {
				t.Fatal(ck.err)
			}
			var got []string
			for _, a := range acls {
				got = append(got, "acl "+a.Name+" "+a.Criterion+" "+a.Value)
			}
			got = append(got, strings.Join(names, " "))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestFrontendRouting checks host matching, the order of use_backend lines
// and the 404 for a selected host that no route matches.
func TestFrontendRouting(t *testing.T) {
	cfg, _ := generate(t, fullModel(), translate.Options{Version: "2.6"})
	fe := section(cfg, "frontend fe_http-8080")
	for _, want := range []string{
		"bind 127.0.0.1:8080",
		"acl vh0_host req.hdr(host),field(1,:),lower -m str a.example.com",
		"acl vh1_host req.hdr(host),field(1,:),lower -m end .example.com",
		"default_backend no_route",
	} {
		if !slices.Contains(fe, want) {
			t.Errorf("frontend lacks %q:\n%s", want, strings.Join(fe, "\n"))
		}
	}
	var use []string
	for _, l := range fe {
		if strings.HasPrefix(l, "use_backend ") {
			use = append(use, l)
		}
	}
	want := []string{
		"use_backend be_default_web_r00 if vh0_host vh0_m0_path vh0_m0_method vh0_m0_h0 vh0_m0_h1 vh0_m0_h2 vh0_m0_h3 vh0_m0_q0 vh0_m0_q1",
		"use_backend be_default_web_r01 if vh0_host vh0_m1_path",
		"use_backend no_route if vh0_host",
		"use_backend be_default_web_r00 if vh1_host vh1_m0_path",
		"use_backend no_route if vh1_host",
		"use_backend be_default_web_r01",
	}
	if d := cmp.Diff(want, use); d != "" {
		t.Errorf("use_backend lines (-want +got):\n%s", d)
	}
	if fe6 := section(cfg, "frontend fe_http6-8081"); !slices.Contains(fe6, "bind [::1]:8081") {
		t.Errorf("IPv6 frontend = %q", fe6)
	}
}

func TestServers(t *testing.T) {
	tests := []struct {
		name       string
		refs       []*translate.BackendRef
		want       []string
		redispatch bool
		rounded    bool
	}{
		{"one", []*translate.BackendRef{ref("a", 1, ep("10.0.0.1", 80))},
			[]string{"server s1_a 10.0.0.1:80 weight 1"}, false, false},
		{"endpoints share their ref's weight", []*translate.BackendRef{
			ref("a", 1, ep("10.0.0.1", 80), ep("10.0.0.2", 80), ep("10.0.0.3", 80)),
			ref("b", 1, ep("b.example.com", 8080))},
			[]string{"server s1_a 10.0.0.1:80 weight 1", "server s2_a 10.0.0.2:80 weight 1", "server s3_a 10.0.0.3:80 weight 1", "server s4_b b.example.com:8080 weight 3"}, true, false},
		{"weight 0 is not an extra endpoint", []*translate.BackendRef{
			ref("a", 5, ep("10.0.0.1", 80)), ref("b", 0, ep("::2", 80))},
			[]string{"server s1_a 10.0.0.1:80 weight 1", "server s2_b [::2]:80 weight 0"}, false, false},
		{"weights above 256 are scaled", []*translate.BackendRef{
			ref("a", 1000, ep("10.0.0.1", 80)), ref("b", 1, ep("10.0.0.2", 80))},
			[]string{"server s1_a 10.0.0.1:80 weight 256", "server s2_b 10.0.0.2:80 weight 1"}, true, true},
		{"all weights 0: no server, the rule answers 500", []*translate.BackendRef{ref("a", 0, ep("10.0.0.1", 80))},
			nil, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rule(0, &translate.Retry{Attempts: 2}, translate.Timeouts{})
			r.Backends = tt.refs
			cfg, _ := generate(t, modelOf(r), translate.Options{Version: "2.6"})
			be := section(cfg, "backend be_default_web_r00")
			var got []string
			for _, l := range be {
				if strings.HasPrefix(l, "server ") {
					got = append(got, l)
				}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("servers (-want +got):\n%s", d)
			}
			if got := slices.Contains(be, "option redispatch 1"); got != tt.redispatch {
				t.Errorf("redispatch = %v, want %v", got, tt.redispatch)
			}
			if _, rounded := serverWeights(tt.refs); rounded != tt.rounded {
				t.Errorf("rounded = %v, want %v", rounded, tt.rounded)
			}
		})
	}
}

// fatalRecorder stands in for a testing.TB whose Fatalf ends the goroutine.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	runtime.Goexit()
}

// TestHAProxyCheckRejects makes sure the real-binary check can fail.
func TestHAProxyCheckRejects(t *testing.T) {
	proxytest.Require(t, "haproxy")
	for name, cfg := range map[string]string{
		"unknown retry-on code": "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\nbackend b\n  retry-on 429\n",
		"warning":               "defaults\n  mode http\nbackend b\n  server s 10.0.0.1:80\n",
	} {
		rec := &fatalRecorder{TB: t}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			proxytest.HAProxyCheck(rec, []byte(cfg))
		}()
		wg.Wait()
		if rec.msg == "" {
			t.Errorf("%s: HAProxyCheck passed", name)
		}
	}
}
