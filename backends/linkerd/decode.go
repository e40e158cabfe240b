//gwretry:format
package linkerd

import (
	"bytes"
	"fmt"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/gwretry/gwretry/internal/yamlchunk"
)

// decode reads the documents of httproutes.yaml strictly (unknown fields
// and duplicate keys are errors) as gateway-api HTTPRoutes. Each document
// goes to JSON through yamlchunk.YAMLToJSONStrict (yaml.v3's parser's events,
// duplicate keys rejected, aliases, merge keys and tags other than the
// core schema's refused): the same JSON value as sigs.k8s.io/yaml's
// YAMLToJSONStrict for what encode writes (TestYAMLToJSONAsSigsYAML), at
// a fraction of its allocations; sigs.k8s.io/json then decodes it
// strictly into the HTTPRoute, and verify compares it with what was meant.
func decode(data []byte) ([]*gwv1.HTTPRoute, error) {
	var out []*gwv1.HTTPRoute
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		j, err := yamlchunk.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var rt gwv1.HTTPRoute
		strict, err := sigsjson.UnmarshalStrict(j, &rt)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if len(strict) > 0 {
			return nil, fmt.Errorf("document %d: %v", i+1, strict)
		}
		// v1beta1 (written for 2.16 and 2.17) has the same fields as v1.
		if rt.APIVersion != apiV1 && rt.APIVersion != apiV1beta1 || rt.Kind != "HTTPRoute" {
			return nil, fmt.Errorf("document %d: %s %s, not an HTTPRoute", i+1, rt.APIVersion, rt.Kind)
		}
		out = append(out, &rt)
	}
	return out, nil
}
