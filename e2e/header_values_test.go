//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gwretry/gwretry/internal/flaky"
	"github.com/gwretry/gwretry/internal/hostile"
	"github.com/gwretry/gwretry/internal/proxytest"
	"github.com/gwretry/gwretry/prove"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// TestFilterHeaderValuesLive runs header filters whose values each format
// would interpret if written naively (hostile.HeaderValues: nginx
// variables and escapes, HAProxy's and Envoy's '%', quotes, comments,
// YAML scalars, a long value) on every installed data plane, from a
// manifest through the CLI, and checks that the backend and the client
// receive every value byte for byte: set and added on the request (added
// to a value the client sent), set and added on the response.
func TestFilterHeaderValuesLive(t *testing.T) {
	values := hostile.HeaderValues()
	for _, tg := range liveTargets() {
		t.Run(tg.name, func(t *testing.T) {
			eachInstalled(t, tg, func(t *testing.T, bin, version string) {
				dir := t.TempDir()
				be := flaky.New(t, "values")
				ready := flaky.New(t, "ready")
				listen := fmt.Sprintf("127.0.0.1:%d", proxytest.FreePort(t))
				report := generateManifest(t, dir, headerValuesManifest(t, values)+"---\n"+headerNamesManifest, tg.name+"@"+version, listen,
					[]string{fmt.Sprintf("values.%s:8080=%s", prove.Namespace, be.Addr()), fmt.Sprintf("ready.%s:8080=%s", prove.Namespace, ready.Addr())})
				// addsHonoured[k]: rule k claims to add to the client's value.
				addsHonoured := map[int]bool{}
				for _, f := range report.Findings {
					if f.Target != tg.name || f.Route != prove.Namespace+"/values" {
						continue
					}
					if f.Feature != translate.FeatureRequestHeaderModifier && f.Feature != translate.FeatureResponseHeaderModifier {
						continue
					}
					if f.Status == translate.Unsupported {
						t.Errorf("rule %d: %s is unsupported: %s", f.Rule, f.Feature, prove.RecordText(f.Decision))
					}
					if f.Feature == translate.FeatureRequestHeaderModifier {
						addsHonoured[f.Rule] = f.Status == translate.Honoured
					}
				}
				addr := tg.startBin(t, bin, filepath.Join(dir, "out"), listen)
				waitReadyT(t, addr)

				client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
				for k := 0; k*valuesPerRule < len(values); k++ {
					path := fmt.Sprintf("/values/%d", k)
					req, err := http.NewRequest("GET", "http://"+addr+path, nil)
					if err != nil {
						t.Fatal(err)
					}
					first, end := k*valuesPerRule, min(len(values), (k+1)*valuesPerRule)
					for i := first; i < end; i++ {
						req.Header.Set(fmt.Sprintf("X-Add-%d", i), "client")
					}
					resp, err := client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("%s: status %s", path, resp.Status)
					}
					be.WaitIdle(5 * time.Second)
					hits := be.Hits(path)
					if len(hits) != 1 {
						t.Fatalf("%s: the backend got %d requests, want 1", path, len(hits))
					}
					got := hits[0].Header
					check := func(where string, gotValues []string, want string) {
						t.Helper()
						if joined := strings.Join(gotValues, ","); joined != want {
							t.Errorf("%s: got %q, want %q", where, joined, want)
						}
					}
					for i := first; i < end; i++ {
						v := values[i]
						check(fmt.Sprintf("request X-Set-%d", i), got.Values(fmt.Sprintf("X-Set-%d", i)), v)
						added := got.Values(fmt.Sprintf("X-Add-%d", i))
						if !addsHonoured[k] && len(added) == 1 && added[0] == v {
							// An approximated add that sets instead (its
							// finding says so); the value is still literal.
							added = []string{"client", v}
						}
						check(fmt.Sprintf("request X-Add-%d", i), added, "client,"+v)
						check(fmt.Sprintf("response X-Set-%d", i), resp.Header.Values(fmt.Sprintf("X-Set-%d", i)), v)
						check(fmt.Sprintf("response X-Add-%d", i), resp.Header.Values(fmt.Sprintf("X-Add-%d", i)), v)
					}
				}
				checkHeaderNames(t, report, tg.name, addr, be)
			})
		})
	}
}

// Header names with every character the API allows beyond the portable
// letters, digits, '_', '.' and '-' (issue 21): filterName is set on the
// request and the response, removedName removed from the request.
const (
	filterName  = "x!#$%&'*+^_`|~n"
	removedName = "y!#$%&'*+^_`|~r"
)

// headerNamesManifest is a route "names" whose rule (path /names) sets
// filterName on the request and the response and removes removedName
// from the request.
var headerNamesManifest = prove.RouteManifest("names", fmt.Sprintf("  - matches: [{path: {type: PathPrefix, value: /names}}]\n"+
	"    filters:\n"+
	"    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: %q, value: v1}], remove: [%q]}}\n"+
	"    - {type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: %q, value: v2}]}}\n"+
	"    backendRefs: [{name: values, port: 8080}]\n", filterName, removedName, filterName))

// checkHeaderNames: the route "names" sets and removes its header names
// as named, or, where the report says the target cannot write one
// (ValueNotExpressible), answers 500 without reaching the backend.
func checkHeaderNames(t *testing.T, rep *translate.Report, target, addr string, be *flaky.Server) {
	t.Helper()
	unwritten := false
	for _, f := range prove.RuleFindings(rep, target, prove.Namespace+"/names", 0) {
		unwritten = unwritten || f.Reason == report.ReasonValueNotExpressible
	}
	req, err := http.NewRequest("GET", "http://"+addr+"/names", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header[removedName] = []string{"client"}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	be.WaitIdle(5 * time.Second)
	hits := be.Hits("/names")
	if unwritten {
		t.Logf("/names: ValueNotExpressible, %s", resp.Status)
		if resp.StatusCode != http.StatusInternalServerError || len(hits) != 0 {
			t.Errorf("/names (unwritten): %s and %d backend requests, want 500 and none", resp.Status, len(hits))
		}
		return
	}
	if len(hits) != 1 {
		t.Fatalf("/names: %s, the backend got %d requests, want 1", resp.Status, len(hits))
	}
	h := hits[0].Header
	if got := h.Values(filterName); len(got) != 1 || got[0] != "v1" {
		t.Errorf("request %s: %q, want v1", filterName, got)
	}
	if got := h.Values(removedName); len(got) != 0 {
		t.Errorf("request %s: %q, want it removed", removedName, got)
	}
	if got := resp.Header.Values(filterName); len(got) != 1 || got[0] != "v2" {
		t.Errorf("response %s: %q, want v2", filterName, got)
	}
}

// headerValuesManifest is a route "values" whose rule k (path
// /values/k) sets and adds header X-Set-i and X-Add-i to values[i] on the
// request and the response, for the values of chunk k (the Gateway API
// allows 16 per list). Each value is written as a JSON string, which YAML
// reads as a double-quoted scalar.
func headerValuesManifest(t *testing.T, values []string) string {
	t.Helper()
	var rules strings.Builder
	for k := 0; k*valuesPerRule < len(values); k++ {
		var req, resp []string
		for i := k * valuesPerRule; i < min(len(values), (k+1)*valuesPerRule); i++ {
			q, err := json.Marshal(values[i])
			if err != nil {
				t.Fatal(err)
			}
			req = append(req, fmt.Sprintf("{name: X-Set-%d, value: %s}", i, q))
			resp = append(resp, fmt.Sprintf("{name: X-Add-%d, value: %s}", i, q))
		}
		set, add := strings.Join(req, ", "), strings.Join(resp, ", ")
		fmt.Fprintf(&rules, "  - matches: [{path: {type: PathPrefix, value: /values/%d}}]\n"+
			"    filters:\n"+
			"    - {type: RequestHeaderModifier, requestHeaderModifier: {set: [%s], add: [%s]}}\n"+
			"    - {type: ResponseHeaderModifier, responseHeaderModifier: {set: [%s], add: [%s]}}\n"+
			"    backendRefs: [{name: values, port: 8080}]\n", k, set, add, set, add)
	}
	return prove.RouteManifest("values", rules.String()) + "---\n" +
		prove.RouteManifest("ready", fmt.Sprintf("  - matches: [{path: {type: PathPrefix, value: %s}}]\n    backendRefs: [{name: ready, port: 8080}]\n", prove.ReadyPath))
}

// valuesPerRule is the Gateway API's limit on set and add entries.
const valuesPerRule = 16
