package input

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/kubeapitest"
	"github.com/gwretry/gwretry/translate"
)

// TestAPIServerAgrees runs every case of testdata/cel (upstream's CEL
// tests, the schema cases and the absent required properties) through the real API server (kube-apiserver
// v1.34.2 with the Gateway API v1.7.0 CRDs of each channel the case
// lists, a server-side dry-run create) and through gwretry's validation
// (Load of the object as a file, then Validate with the channel). Both
// verdicts must equal the case's valid; where the API server rejects, the
// field paths gwretry names must be the ones the server names. The server
// is the authority: a case whose recorded verdict it contradicts is wrong.
//
// Both servers also have gwretry's policy CRDs; the experimental one also
// gets every Gateway API v1 and gwretry.io document of the repository's
// inputs (testdataAgrees). One server per channel, the two started at once.
func TestAPIServerAgrees(t *testing.T) {
	kubeapitest.Require(t)
	type channelCase struct {
		celCase
		file string
	}
	cases := map[string][]channelCase{}
	for _, file := range []string{upstreamCases, "../testdata/cel/schema.yaml", absentCases} {
		for _, c := range loadCELCases(t, file) {
			for _, ch := range c.Channels {
				cases[ch] = append(cases[ch], channelCase{c, file})
			}
		}
	}
	for _, ch := range []string{"standard", "experimental"} {
		t.Run(ch, func(t *testing.T) {
			t.Parallel()
			s := kubeapitest.Start(t)
			s.InstallCRDs(t, kubeapitest.GatewayAPICRDs(t, ch)...)
			s.InstallCRDs(t, kubeapitest.PolicyCRDs(t)...)
			namespaces := map[string]bool{"default": true}
			agree := 0
			for _, c := range cases[ch] {
				doc, err := yaml.Marshal(c.Object)
				if err != nil {
					t.Fatal(err)
				}
				ensureNamespace(t, s, namespaces, doc)
				t.Run(c.Name, func(t *testing.T) {
					if agreesWithAPIServer(t, s, translate.Channel(ch), c.Valid, doc) && (c.file == "../testdata/cel/schema.yaml" || serverSaysWhatCaseSays(t, s, c.celCase, doc)) {
						agree++
					}
				})
			}
			t.Logf("%s: %d cases, %d where the API server, gwretry and the case file agree", ch, len(cases[ch]), agree)
			if ch == "experimental" {
				testdataAgrees(t, s, namespaces)
				return
			}
			// gwretry's own validation tests (validate_test.go), which
			// run with the standard channel: the API server must refuse
			// what Validate refuses, at the same fields. An input the
			// table refuses and the API server accepts is refused by
			// gwretry's own checks (Check), not as invalid.
			for _, tt := range validationRejects {
				t.Run("TestValidationRejects/"+tt.name, func(t *testing.T) {
					docs := strings.Split(tt.input, "---\n")
					var apiErr error
					for _, d := range docs {
						ensureNamespace(t, s, namespaces, []byte(d))
						if err := s.DryRunCreate([]byte(d)); err != nil && apiErr == nil {
							apiErr = err
						}
					}
					valid := apiErr == nil
					if valid {
						t.Logf("the API server accepts it: gwretry refuses it with its own checks only")
					}
					agreesWithAPIServerDocs(t, s, translate.ChannelStandard, valid, docs)
				})
			}
			for _, tt := range validationQuoted {
				t.Run("TestValidationAcceptsWhatTargetsCannotQuote/"+tt.name, func(t *testing.T) {
					ensureNamespace(t, s, namespaces, []byte(tt.input))
					agreesWithAPIServer(t, s, translate.ChannelStandard, true, []byte(tt.input))
				})
			}
			for i, rule := range validationAccepts {
				t.Run(fmt.Sprintf("TestValidationAccepts/%d", i), func(t *testing.T) {
					doc := routeWithRule(rule)
					ensureNamespace(t, s, namespaces, []byte(doc))
					agreesWithAPIServer(t, s, translate.ChannelStandard, true, []byte(doc))
				})
			}
		})
	}
}

// agreesWithAPIServer checks doc against the server s and gwretry's
// validation with channel ch, and that both verdicts are valid.
func agreesWithAPIServer(t *testing.T, s *kubeapitest.Server, ch translate.Channel, valid bool, doc []byte) bool {
	t.Helper()
	return agreesWithAPIServerDocs(t, s, ch, valid, []string{string(doc)})
}

// agreesWithAPIServerDocs is agreesWithAPIServer of several documents
// (one file to gwretry): the API server's verdict is its first refusal.
func agreesWithAPIServerDocs(t *testing.T, s *kubeapitest.Server, ch translate.Channel, valid bool, docs []string) bool {
	t.Helper()
	var apiErr error
	for _, d := range docs {
		if apiErr = s.DryRunCreate([]byte(d)); apiErr != nil {
			break
		}
	}
	var st *kubeapitest.StatusError
	if apiErr != nil && !errors.As(apiErr, &st) {
		t.Fatalf("API server request failed: %v", apiErr)
	}
	gw := gwretryVerdict(t, ch, []byte(strings.Join(docs, "---\n")))
	ok := true
	if (apiErr == nil) != valid {
		t.Errorf("the case says valid=%v, the API server says otherwise: %v", valid, describeStatus(st))
		ok = false
	}
	switch {
	case apiErr == nil && gw != nil:
		t.Errorf("the API server accepts it, gwretry rejects it:\n%v", gw)
		return false
	case apiErr != nil && gw == nil:
		t.Errorf("the API server rejects it (%s), gwretry accepts it", describeStatus(st))
		return false
	case apiErr == nil:
		return ok
	}
	want := apiFields(st)
	var got []string
	for _, e := range gw {
		if e.Field != "" && !slices.Contains(got, e.Field) {
			got = append(got, e.Field)
		}
	}
	slices.Sort(got)
	same := slices.Equal(got, want)
	if st.Reason == "BadRequest" {
		// A strict decoding error (an unknown field) stops the server
		// before it validates the rest: gwretry names those fields and
		// may name more.
		same = true
		for _, f := range want {
			same = same && slices.Contains(got, f)
		}
	}
	if !same {
		t.Errorf("both reject it, at different fields: API server %q, gwretry %q\nAPI server: %s\ngwretry: %v", want, got, describeStatus(st), gw)
		return false
	}
	return ok
}

// upstreamCases are the Gateway API's own CEL tests and absentCases
// objects that lack a required property: their wantErrors are the API
// server's words (schema.yaml's are gwretry's).
const (
	upstreamCases = "../testdata/cel/upstream.yaml"
	absentCases   = "../testdata/cel/absent.yaml"
)

// serverSaysWhatCaseSays checks that the server's refusal of an invalid
// upstream or absent case contains the case's wantErrors ("more" may read "longer")
// and names its wantFields.
func serverSaysWhatCaseSays(t *testing.T, s *kubeapitest.Server, c celCase, doc []byte) bool {
	t.Helper()
	var st *kubeapitest.StatusError
	if c.Valid || !errors.As(s.DryRunCreate(doc), &st) {
		return true
	}
	ok := true
	for _, w := range c.WantErrors {
		if !strings.Contains(st.Message, w) && !strings.Contains(st.Message, strings.ReplaceAll(w, "more", "longer")) {
			t.Errorf("the case's wantErrors %q is not in the API server's refusal: %s", w, describeStatus(st))
			ok = false
		}
	}
	for _, f := range c.WantFields {
		if !slices.Contains(apiFields(st), f) {
			t.Errorf("the case's wantFields %s is not named by the API server: %s", f, describeStatus(st))
			ok = false
		}
	}
	return ok
}

// gwretryVerdict is what gwretry says of doc: nil when it accepts it.
func gwretryVerdict(t *testing.T, ch translate.Channel, doc []byte) ErrorList {
	t.Helper()
	p := writeInput(t, "object.yaml", string(doc))
	in, err := Load([]string{p}, nil, DefaultLimits())
	if err != nil {
		var l ErrorList
		if !errors.As(err, &l) {
			t.Fatalf("Load: %v", err)
		}
		return l
	}
	return Validate(in, ch)
}

// apiFields are the field paths the API server's refusal names, sorted,
// each once. A strict decoding error ("unknown field \"spec.x\"") names
// its fields in the message only; a cause about no field ("<nil>": a
// schema's oneOf, or "some validation rules were not checked") names
// none; an object in a namespace that cannot exist ("a.b") is refused as
// NotFound, at metadata.namespace.
func apiFields(st *kubeapitest.StatusError) []string {
	var fields []string
	add := func(f string) {
		if f != "" && f != "<nil>" && !slices.Contains(fields, f) {
			fields = append(fields, f)
		}
	}
	if st.Reason == "NotFound" && st.Details.Kind == "namespaces" {
		add("metadata.namespace")
	}
	for _, c := range st.Details.Causes {
		add(c.Field)
	}
	if len(fields) == 0 {
		for _, part := range strings.Split(st.Message, `unknown field "`)[1:] {
			f, _, _ := strings.Cut(part, `"`)
			add(f)
		}
	}
	slices.Sort(fields)
	return fields
}

func describeStatus(st *kubeapitest.StatusError) string {
	if st == nil {
		return "accepted"
	}
	var b strings.Builder
	b.WriteString(st.Error())
	for _, c := range st.Details.Causes {
		fmt.Fprintf(&b, "\n  %s: %s: %s", c.Field, c.Type, c.Message)
	}
	return b.String()
}

// ensureNamespace creates the namespace of doc (YAML) on s unless seen
// has it: the API server refuses objects in a namespace that does not
// exist, which is no verdict on the object.
func ensureNamespace(t *testing.T, s *kubeapitest.Server, seen map[string]bool, doc []byte) {
	t.Helper()
	var m struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal(doc, &m)
	ns := m.Metadata.Namespace
	if ns == "" || seen[ns] || len(validation.IsDNS1123Label(ns)) > 0 {
		return
	}
	seen[ns] = true
	j, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]string{"name": ns}})
	if err := s.Create(j); err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// testdataAgrees sends each Gateway API v1 and gwretry.io document of the
// repository's inputs (the golden cases, the model cases, the examples and
// the upstream manifests) to the experimental server s and to gwretry with the experimental channel:
// the verdicts and fields must agree.
func testdataAgrees(t *testing.T, s *kubeapitest.Server, namespaces map[string]bool) {
	var files []string
	for _, g := range []string{"../testdata/*/input.yaml", "../testdata/model/*.in.yaml", "../testdata/examples/*.yaml", "../testdata/upstream-examples/*.yaml", "../testdata/upstream-conformance/*.yaml", "../testdata/upstream-conformance/*/*.yaml"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
		for i := 1; ; i++ {
			doc, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var tm struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if yaml.Unmarshal(doc, &tm) != nil || tm.APIVersion != "gateway.networking.k8s.io/v1" && !strings.HasPrefix(tm.APIVersion, "gwretry.io/") {
				continue
			}
			switch tm.Kind {
			case "HTTPRoute", "Gateway", "GatewayClass", "RetryPolicy", "ConnectionTimeoutPolicy":
			default:
				continue
			}
			n++
			t.Run(fmt.Sprintf("testdata/%s#%d", strings.TrimPrefix(f, "../testdata/"), i), func(t *testing.T) {
				ensureNamespace(t, s, namespaces, doc)
				valid := s.DryRunCreate(doc) == nil
				agreesWithAPIServer(t, s, translate.ChannelExperimental, valid, doc)
			})
		}
	}
	t.Logf("testdata: %d documents of %d files", n, len(files))
}
