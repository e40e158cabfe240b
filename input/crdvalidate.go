package input

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/gwretry/gwretry/internal/thirdparty/crdcel"
	"github.com/gwretry/gwretry/translate"
)

// The CRD schemas of v1.7.0 (see the header of each file) are validated the
// way the API server's apiextensions code does it on create: prune unknown
// fields, apply defaults, check the OpenAPI schema, list-type invariants and
// the x-kubernetes-validations (CEL) rules. Running the API server's own
// code over the CRDs' own schemas is what makes gwretry agree with it.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// crdValidator validates one kind in one channel.
type crdValidator struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	// cel runs the x-kubernetes-validations rules over the pruned and
	// defaulted object: the API server's CEL validator
	// (internal/thirdparty/crdcel, a fork that only makes it cheaper; the
	// differential test runs upstream's beside it).
	cel func(u map[string]any) field.ErrorList
}

// newCELValidate returns the CEL validation of the structural schema s, as
// the API server runs it on create.
func newCELValidate(s *structuralschema.Structural) func(map[string]any) field.ErrorList {
	v := crdcel.NewValidator(s, true, celconfig.PerCallLimit)
	return func(u map[string]any) field.ErrorList {
		errs, _ := v.Validate(context.Background(), nil, s, u, nil, celconfig.RuntimeCELCostBudget)
		return errs
	}
}

// crdValidators are compiled once (compiling the CEL rules takes a while);
// they are read-only afterwards.
var crdValidators = sync.OnceValues(func() (map[string]*crdValidator, error) {
	out := map[string]*crdValidator{}
	for _, ch := range []translate.Channel{translate.ChannelStandard, translate.ChannelExperimental} {
		for kind, file := range map[string]string{"HTTPRoute": "httproutes", "Gateway": "gateways", "GatewayClass": "gatewayclasses"} {
			v, err := newCRDValidator(fmt.Sprintf("crds/%s-%s.yaml", ch, file))
			if err != nil {
				return nil, err
			}
			out[string(ch)+"/"+kind] = v
		}
	}
	return out, nil
})

func newCRDValidator(name string) (*crdValidator, error) {
	raw, err := crdFiles.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var v1 apiextensionsv1.JSONSchemaProps
	if err := yaml.UnmarshalStrict(raw, &v1); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return compileSchema(name, &v1)
}

// compileSchema builds the validator of one version's openAPIV3Schema.
func compileSchema(name string, v1 *apiextensionsv1.JSONSchemaProps) (*crdValidator, error) {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &crdValidator{structural: s, schema: sv, cel: newCELValidate(s)}, nil
}

// experimentalOnly names, per kind, the fields of the experimental CRDs that
// the standard ones lack, so that the unknown-field error can say so.
var experimentalOnly = map[string][]string{
	"HTTPRoute": {"spec.useDefaultGateways", "sessionPersistence", "externalAuth"},
	"Gateway":   {"spec.defaultScope"},
}

// validateAPI validates one decoded Gateway API object as the API server
// with the channel's CRDs would on create. The object is converted back to
// its JSON form; status is not validated (the API server ignores it on
// create).
func validateAPI(pos Position, kind, namespace, name string, obj any, ch translate.Channel) ErrorList {
	object := ObjectName(kind, namespace, name)
	fail := func(err error) ErrorList {
		return ErrorList{{Pos: pos, Object: object, Msg: "internal error: validation: " + err.Error()}}
	}
	if ch == "" {
		ch = translate.ChannelStandard
	}
	vs, err := crdValidators()
	if err != nil {
		return fail(err)
	}
	v := vs[string(ch)+"/"+kind]
	if v == nil {
		return fail(fmt.Errorf("no schema for %s in channel %q", kind, ch))
	}
	return validateWith(v, pos, kind, namespace, name, obj, ch, "invalid per the Gateway API: ")
}

// validateWith validates obj with the schema v as the API server would on
// create; prefix starts each message ("invalid per the Gateway API: ").
func validateWith(v *crdValidator, pos Position, kind, namespace, name string, obj any, ch translate.Channel, prefix string) ErrorList {
	object := ObjectName(kind, namespace, name)
	fail := func(err error) ErrorList {
		return ErrorList{{Pos: pos, Object: object, Msg: "internal error: validation: " + err.Error()}}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fail(err)
	}
	return validateUnstructured(v, pos, kind, namespace, name, u, ch, prefix)
}

// validateUnstructured is validateWith of the object's JSON form u, which
// it prunes and defaults in place.
func validateUnstructured(v *crdValidator, pos Position, kind, namespace, name string, u map[string]any, ch translate.Channel, prefix string) ErrorList {
	object := ObjectName(kind, namespace, name)
	delete(u, "status")
	if md, ok := u["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name is required"))
	}
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		if name != "" {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, msg))
		}
	}
	if namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(namespace, false) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), namespace, msg))
		}
	}
	unknown := structuralpruning.PruneWithOptions(u, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	sort.Strings(unknown)
	for _, p := range unknown {
		if strings.HasPrefix(p, "metadata.") {
			continue
		}
		msg := "unknown field"
		if ch == translate.ChannelStandard && isExperimentalField(kind, p) {
			msg = "an experimental-channel field, unknown to the standard channel's CRDs; use --channel experimental"
		}
		errs = append(errs, field.Forbidden(field.NewPath(p), msg))
	}
	structuraldefaulting.Default(u, v.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u, v.schema)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, u)...)
	if !hasBlocking(errs) {
		errs = append(errs, v.cel(u)...)
	}
	// The API server's validators walk Go maps (CEL rules of sibling
	// properties, the schema's properties), so several problems of one
	// object come in a random order: sorted by field path (indices as
	// numbers), then message, the list is the same on every run.
	slices.SortStableFunc(errs, func(a, b *field.Error) int {
		if c := comparePaths(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.ErrorBody(), b.ErrorBody())
	})
	out := make(ErrorList, 0, len(errs))
	for _, e := range errs {
		f := e.Field
		if f == "<nil>" { // field.Error of a nil path (oneOf, anyOf): the message names it
			f = ""
		}
		out = append(out, &InputError{Pos: pos, Object: object, Field: f, Msg: prefix + e.ErrorBody()})
	}
	return out
}

func isExperimentalField(kind, p string) bool {
	for _, f := range experimentalOnly[kind] {
		if p == f || strings.HasSuffix(p, "."+f) {
			return true
		}
	}
	return false
}

// hasBlocking mirrors the API server (hasBlockingErr in apiextensions'
// customresource strategy): CEL rules are not run after these errors.
func hasBlocking(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// comparePaths orders field paths as text, except that runs of digits
// compare as numbers: spec.rules[2] comes before spec.rules[10].
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digitRun is the length of the run of ASCII digits s starts with.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// absentRequired returns, for an object's JSON as written, what the API
// server refuses in it that the Go types cannot show: each property that
// the schema s requires and the object lacks or sets to null ("Required
// value"), and each
// empty list whose schema wants items (a list the types drop as empty
// with omitempty, such as spec.rules: []). Messages start with prefix;
// status, which the server ignores on create, and metadata are not
// walked. Decoded into the Go types, an absent string or number reads as
// "" or 0, which the schema would then judge as a value: a missing
// extensionRef.group would pass as the empty group, which the server
// refuses as missing.
func absentRequired(s *structuralschema.Structural, pos Position, object string, j []byte, prefix string) ErrorList {
	var doc map[string]any
	if json.Unmarshal(j, &doc) != nil {
		return nil // the strict decoding reports it
	}
	delete(doc, "status")
	delete(doc, "metadata")
	var errs ErrorList
	walkAsWritten(s, doc, nil, func(e *field.Error) {
		errs = append(errs, &InputError{Pos: pos, Object: object, Field: e.Field, Msg: prefix + e.ErrorBody()})
	})
	return errs
}

// gatewayAPIAbsentRequired is absentRequired for a Gateway API kind, with
// the standard channel's schema, whose required properties the
// experimental one shares.
func gatewayAPIAbsentRequired(pos Position, kind, object string, j []byte) ErrorList {
	vs, err := crdValidators()
	if err != nil {
		return ErrorList{{Pos: pos, Object: object, Msg: "internal error: validation: " + err.Error()}}
	}
	return absentRequired(vs[string(translate.ChannelStandard)+"/"+kind].structural, pos, object, j, "invalid per the Gateway API: ")
}

// walkAsWritten calls bad with each error absentRequired looks for, in
// the order of the paths.
func walkAsWritten(s *structuralschema.Structural, v any, p *field.Path, bad func(*field.Error)) {
	switch x := v.(type) {
	case map[string]any:
		if s.ValueValidation != nil {
			for _, r := range s.ValueValidation.Required {
				// The server drops a null it cannot store (the property
				// is not nullable): that property is then absent too.
				val, ok := x[r]
				if (!ok || val == nil && !s.Properties[r].Nullable) && (p != nil || r != "metadata" && r != "status") {
					bad(field.Required(p.Child(r), ""))
				}
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := s.Properties[k]; ok {
				walkAsWritten(&ps, x[k], p.Child(k), bad)
			}
		}
	case []any:
		if len(x) == 0 && s.ValueValidation != nil && s.ValueValidation.MinItems != nil && *s.ValueValidation.MinItems > 0 {
			// The wording of the API server's schema validator.
			bad(field.Invalid(p, 0, fmt.Sprintf("%s in body should have at least %d items", p, *s.ValueValidation.MinItems)))
		}
		if s.Items != nil {
			for i, e := range x {
				walkAsWritten(s.Items, e, p.Index(i), bad)
			}
		}
	}
}
