package linkerd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/testmodel"
	"github.com/gwretry/gwretry/internal/thirdparty/crdcel"
	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/report"
	"github.com/gwretry/gwretry/translate"
)

// bundledCRD is the HTTPRoute schema of the Gateway API CRDs a Linkerd
// version bundles (testdata/crds, trimmed by testdata/crds/trim.py from
// the Go module cache's sigs.k8s.io/gateway-api v0.7.1 and v1.1.1,
// config/crd/experimental/gateway.networking.k8s.io_httproutes.yaml: the
// served versions' openAPIV3Schema, which is the same for each, without
// descriptions), compiled as input/crdvalidate.go compiles the project's
// own CRDs.
type bundledCRD struct {
	served     []string
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        func(map[string]any) field.ErrorList // nil: no rules (v0.7.1)
}

// bundledFile is the Gateway API release Linkerd version v bundles:
// v0.7.1 experimental for 2.16 and 2.17, v1.1.1 experimental for 2.18 to
// 2.20 (linkerd2's charts/linkerd-crds at each stable tag).
func bundledFile(v string) string {
	switch v {
	case "2.16", "2.17":
		return "v0.7.1"
	}
	return "v1.1.1"
}

var bundledCRDs = sync.OnceValues(func() (map[string]*bundledCRD, error) {
	out := map[string]*bundledCRD{}
	for _, rel := range []string{"v0.7.1", "v1.1.1"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "crds", "httproutes-"+rel+".yaml"))
		if err != nil {
			return nil, err
		}
		var f struct {
			Served []string                        `json:"served"`
			Schema apiextensionsv1.JSONSchemaProps `json:"openAPIV3Schema"`
		}
		if err := yaml.UnmarshalStrict(raw, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&f.Schema, &internal, nil); err != nil {
			return nil, err
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, err
		}
		sv, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, err
		}
		out[rel] = &bundledCRD{served: f.Served, structural: s, schema: sv, cel: crdcelValidator(s)}
	}
	return out, nil
})

// validateBundled validates one HTTPRoute document (its JSON form) as the
// API server with the CRDs bundled with Linkerd version v would on
// create, with strict field validation (kubectl apply's default): an
// apiVersion not served and an unknown field are errors, then the
// defaulted object is checked against the schema, its list types and its
// x-kubernetes-validations rules.
func validateBundled(v string, u map[string]any) field.ErrorList {
	crds, err := bundledCRDs()
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	c := crds[bundledFile(v)]
	var errs field.ErrorList
	if av, _ := u["apiVersion"].(string); !slices.Contains(c.served, av[len("gateway.networking.k8s.io/"):]) {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), av, c.served))
	}
	for _, p := range structuralpruning.PruneWithOptions(u, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, field.Forbidden(field.NewPath(p), "unknown field"))
	}
	structuraldefaulting.Default(u, c.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, c.schema)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, c.structural, u)...)
	if c.cel != nil && len(errs) == 0 {
		errs = append(errs, c.cel(u)...)
	}
	return errs
}

// checkBundledCRDs generates m for every Linkerd version and validates
// each route written against that version's bundled CRDs, offline and,
// outside -short, on a real API server with those CRDs installed
// (liveBundled). A Generate error is not checked here (the tests that
// expect one do).
func checkBundledCRDs(t *testing.T, m *translate.Model) {
	t.Helper()
	for _, v := range New().Versions() {
		out, err := New().Generate(m, translate.Options{Version: v})
		if err != nil {
			continue
		}
		data := out.Files[0].Data
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			j, err := yamlchunk.YAMLToJSONStrict(doc)
			if err != nil {
				t.Fatalf("%s: document %d: %v", v, i+1, err)
			}
			var u map[string]any
			if err := utiljson.Unmarshal(j, &u); err != nil {
				t.Fatal(err)
			}
			if errs := validateBundled(v, u); len(errs) > 0 {
				t.Errorf("Linkerd %s: document %d refused by the bundled Gateway API %s CRD: %v\n%s", v, i+1, bundledFile(v), errs.ToAggregate(), doc)
			}
			if s := liveBundled(t, bundledFile(v)); s != nil {
				s.dryRun(t, fmt.Sprintf("Linkerd %s: document %d", v, i+1), doc)
			}
		}
	}
}

// goldenDirs are the golden cases (testdata/DIR) with Linkerd output.
var goldenDirs = []string{"linkerd-gamma", "linkerd-split", "conntimeout", "policy-linkerd"}

// TestBundledCRDsGoldens validates the Linkerd output of every version on
// the linkerd goldens' inputs against the bundled CRDs (the tests' own
// inputs are validated by build).
func TestBundledCRDsGoldens(t *testing.T) {
	for _, dir := range goldenDirs {
		t.Run(dir, func(t *testing.T) {
			p := filepath.Join("..", "..", "testdata", dir, "input.yaml")
			if _, err := os.Stat(p); err != nil {
				t.Skip(err)
			}
			checkBundledCRDs(t, testmodel.Load(t, []string{p}, translate.ResolveOptions{}))
		})
	}
}

// refuseCases are routes each release's CRDs accept or refuse (ok), for
// the version's bundled CRDs: TestBundledCRDsRefuse checks the offline
// validation with them, TestBundledCRDsAPIServer the real API server.
var refuseCases = []struct {
	version, api, rule string
	ok                 bool
}{
	{"2.16", "v1beta1", ``, true},
	{"2.16", "v1", ``, false},
	{"2.16", "v1beta1", `"timeouts":{"request":"1s"},`, false},
	{"2.17", "v1beta1", `"retry":{"attempts":2},`, false},
	{"2.18", "v1", `"timeouts":{"request":"1s"},`, true},
	{"2.18", "v1beta1", ``, true},
	{"2.19", "v1", `"retry":{"attempts":2},`, false},
	{"2.20", "v1", `"name":"x",`, false},
	{"2.20", "v1alpha2", ``, false},
	{"2.20", "v1", `"timeouts":{"request":"1s","backendRequest":"2s"},`, false}, // CEL: backendRequest <= request
}

// refuseDoc is the HTTPRoute of a refuseCases case, as JSON.
func refuseDoc(api, rule string) []byte {
	return []byte(`{"apiVersion":"gateway.networking.k8s.io/` + api + `","kind":"HTTPRoute","metadata":{"name":"a","namespace":"shop"},"spec":{"parentRefs":[{"group":"","kind":"Service","name":"cart","port":80}],"rules":[{` + rule + `"backendRefs":[{"name":"cart","port":80}]}]}}`)
}

// TestBundledCRDsRefuse: the validation refuses what each release's CRD
// lacks, so that checkBundledCRDs would catch a regression.
func TestBundledCRDsRefuse(t *testing.T) {
	for _, tt := range refuseCases {
		var u map[string]any
		if err := utiljson.Unmarshal(refuseDoc(tt.api, tt.rule), &u); err != nil {
			t.Fatal(err)
		}
		errs := validateBundled(tt.version, u)
		if (len(errs) == 0) != tt.ok {
			t.Errorf("%s %s {%s}: errors %v, want ok=%v", tt.version, tt.api, tt.rule, errs, tt.ok)
		}
	}
}

// crdcelValidator is input/crdvalidate.go's newCELValidate.
func crdcelValidator(s *structuralschema.Structural) func(map[string]any) field.ErrorList {
	v := crdcel.NewValidator(s, true, celconfig.PerCallLimit)
	if v == nil {
		return nil
	}
	return func(u map[string]any) field.ErrorList {
		errs, _ := v.Validate(context.Background(), nil, s, u, nil, celconfig.RuntimeCELCostBudget)
		return errs
	}
}

// TestBundledCRDLacks: a rule with a field the version's bundled CRDs lack
// gets a route of its own that is not written, and every feature of it
// says so (BundledCRDLacksField). (sessionPersistence, which writtenRule
// leaves out, cannot be tested: no input passes validation with it, the
// Go types of gateway-api v1.6.3 lacking the cookie the CRDs of input/crds
// require.) The output of
// every version is what its CRDs accept, and Run finds the claims true.
func TestBundledCRDLacks(t *testing.T) {
	tests := []struct {
		name, extra string
		lacks       map[string]string // by version; "" written
	}{
		{"CORS filter", "    filters: [{type: CORS, cors: {allowOrigins: ['https://a.example.com']}}]\n", all("filters type CORS")},
		{"ExternalAuth filter", "    filters: [{type: ExternalAuth, externalAuth: {protocol: HTTP, http: {}, backendRef: {name: cart, port: 80}}}]\n", all("filters type ExternalAuth")},
		{"mirror percent", "    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: cart, port: 80}, percent: 50}}]\n", all("filters requestMirror.percent")},
		{"backendRef CORS filter", "    backendRefs: [{name: cart, port: 80, filters: [{type: CORS, cors: {allowOrigins: ['https://a.example.com']}}]}]\n", all("backendRefs filters type CORS")},
		{"mirror without percent", "    filters: [{type: RequestMirror, requestMirror: {backendRef: {name: cart, port: 80}}}]\n", all("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rule("/y", tt.extra)
			if strings.Contains(tt.extra, "backendRefs:") {
				r = "  - matches: [{path: {type: PathPrefix, value: /y}}]\n" + tt.extra
			}
			_, m := testmodel.FromYAML(t, base+gammaRoute("a", rule("/x", retry2), r), translate.ResolveOptions{Channel: translate.ChannelExperimental})
			checkBundledCRDs(t, m)
			for _, v := range New().Versions() {
				out, err := New().Generate(m, translate.Options{Version: v})
				if err != nil {
					t.Fatal(err)
				}
				routes, err := decode(out.Files[0].Data)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.lacks[v]
				var written []string
				for _, rt := range routes {
					written = append(written, rt.Annotations[annRules])
					for _, x := range rt.Spec.Rules {
						if x.SessionPersistence != nil {
							t.Errorf("%s: sessionPersistence written", v)
						}
					}
				}
				if wantWritten := []string{"0"}; want == "" && !slices.Contains(written, "1") || want != "" && !slices.Equal(written, wantWritten) {
					t.Errorf("%s: routes of rules %q written, lacks %q", v, written, want)
				}
				for _, f := range out.Findings {
					if f.Rule != 1 {
						continue
					}
					got := f.Reason == report.ReasonBundledCRDLacksField
					if got != (want != "") || got && f.Params["field"] != want {
						t.Errorf("%s: %s %s %v, lacks %q", v, f.Feature, f.Reason, f.Params, want)
					}
				}
				if _, err := translate.Run(m, []translate.Target{{Backend: New(), Version: v}}, false); err != nil {
					t.Fatalf("%s: %v", v, err)
				}
			}
		})
	}
}

// all is the same field for every version.
func all(field string) map[string]string {
	out := map[string]string{}
	for _, v := range New().Versions() {
		out[v] = field
	}
	return out
}

// TestJudgeBundledCRDs: the judge reads a route the version's bundled CRDs
// refuse (an apiVersion they do not serve, a rule field they lack) as not
// applied, so that the honoured claims of its rules fail; the file as
// written is read with the retry of its annotations.
func TestJudgeBundledCRDs(t *testing.T) {
	_, m := build(t, base+gammaRoute("a", rule("/x", retry2+"    timeouts: {request: 10s}\n")))
	r := m.MeshRules[0]
	tests := []struct {
		version, from, to string
		applied           bool
	}{
		{"2.16", "", "", true},
		{"2.20", "", "", true},
		{"2.16", "gateway.networking.k8s.io/v1beta1", "gateway.networking.k8s.io/v1", false},
		{"2.16", "  - backendRefs:", "  - timeouts: {request: 10s}\n    backendRefs:", false},
		{"2.18", "gateway.networking.k8s.io/v1", "gateway.networking.k8s.io/v1beta1", true},
		{"2.18", "  - backendRefs:", "  - retry: {attempts: 2}\n    backendRefs:", false},
		{"2.20", "  - backendRefs:", "  - name: x\n    backendRefs:", false},
		{"2.20", "  - backendRefs:", "  - filters: [{type: CORS, cors: {allowOrigins: ['https://a.example.com']}}]\n    backendRefs:", false},
	}
	for _, tt := range tests {
		out, err := New().Generate(m, translate.Options{Version: tt.version})
		if err != nil {
			t.Fatal(err)
		}
		data := string(out.Files[0].Data)
		changed := strings.Replace(data, tt.from, tt.to, 1)
		if tt.from != "" && changed == data {
			t.Fatalf("%s: no %q in\n%s", tt.version, tt.from, data)
		}
		observed, err := New().Observe(m, translate.Options{Version: tt.version}, []translate.File{{Path: routesPath, Data: []byte(changed)}})
		if err != nil {
			t.Fatal(err)
		}
		b := observed[r.Name][r.MethodClasses()[0]]
		if applied := b.Retries == 2 && b.RequestTimeout.Value == 10*time.Second; applied != tt.applied {
			t.Errorf("%s %q: retries %d, request timeout %v, want applied=%v", tt.version, tt.to, b.Retries, b.RequestTimeout, tt.applied)
		}
	}
}
