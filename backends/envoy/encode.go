//gwretry:format
package envoy

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/gwretry/gwretry/internal/yamlchunk"

	// The typed configs in the bootstrap must be registered for protojson
	// to write and read them; bootstrap.go and route.go import them too.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
)

// encode writes the bootstrap as YAML with snake_case field names. The
// YAML writer sorts keys, so the output is the same byte for byte for the
// same bootstrap (protojson's own whitespace is not stable). A bootstrap
// of static clusters and listeners only, which is what Generate builds,
// is written one cluster or listener at a time (issue 22: the JSON of
// the whole bootstrap and the YAML writer's tree of it were 250 MB at
// 10,000 routes), in the bytes of the whole (TestEncodeInPieces); verify
// reads the whole file back.
func encode(bs *bootstrapv3.Bootstrap) ([]byte, error) {
	sr := bs.GetStaticResources()
	if !onlyStaticLists(bs) || len(sr.GetClusters())+len(sr.GetListeners()) == 0 {
		return encodeWhole(bs)
	}
	w := yamlchunk.NewWriter()
	// The pieces are joined once their size is known: a buffer grown by
	// doubling would hold up to twice the file to the end.
	pieces := [][]byte{[]byte("static_resources:\n")}
	var err error
	// yaml.v2 writes a mapping's keys sorted.
	if pieces, err = encodeList(pieces, w, "clusters", sr.GetClusters()); err != nil {
		return nil, err
	}
	if pieces, err = encodeList(pieces, w, "listeners", sr.GetListeners()); err != nil {
		return nil, err
	}
	return bytes.Join(pieces, nil), nil
}

// encodeList appends the key of static_resources and its list, each
// element as the YAML writer writes it inside the whole bootstrap.
func encodeList[T proto.Message](out [][]byte, w *yamlchunk.Writer, key string, list []T) ([][]byte, error) {
	if len(list) == 0 {
		return out, nil
	}
	out = append(out, []byte("  "+key+":\n"))
	path := []string{"static_resources", key}
	for i, m := range list {
		j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("writing bootstrap JSON of %s[%d]: %w", key, i, err)
		}
		y, err := w.Element(path, j)
		if err != nil {
			return nil, fmt.Errorf("converting %s[%d] to YAML: %w", key, i, err)
		}
		out = append(out, y)
	}
	return out, nil
}

// onlyStaticLists reports whether bs sets nothing but static_resources'
// clusters and listeners.
func onlyStaticLists(bs *bootstrapv3.Bootstrap) bool {
	only := func(m protoreflect.Message, names ...protoreflect.Name) bool {
		ok := true
		m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
			ok = slices.Contains(names, fd.Name())
			return ok
		})
		return ok
	}
	return only(bs.ProtoReflect(), "static_resources") &&
		only(bs.GetStaticResources().ProtoReflect(), "clusters", "listeners")
}

// encodeWhole is encode through the JSON of the whole bootstrap.
func encodeWhole(bs *bootstrapv3.Bootstrap) ([]byte, error) {
	j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(bs)
	if err != nil {
		return nil, fmt.Errorf("writing bootstrap JSON: %w", err)
	}
	y, err := yamlchunk.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("converting bootstrap to YAML: %w", err)
	}
	return y, nil
}

// decode reads a bootstrap written by encode, rejecting duplicate keys
// (yamlchunk's reader) and unknown fields (protojson). The clusters and
// listeners of static_resources are read one at a time, each from its own
// JSON (issue 22: the JSON of the whole bootstrap was about 100 MB at
// 10,000 routes); TestDecodeInPieces compares it with reading the whole.
func decode(data []byte) (*bootstrapv3.Bootstrap, error) {
	var clusters []*clusterv3.Cluster
	var listeners []*listenerv3.Listener
	split := func(path []string) bool {
		return len(path) == 2 && path[0] == "static_resources" && (path[1] == "clusters" || path[1] == "listeners")
	}
	piece := func(path []string, _ string, i int, j []byte) error {
		var m proto.Message
		if path[1] == "clusters" {
			c := &clusterv3.Cluster{}
			clusters, m = append(clusters, c), c
		} else {
			l := &listenerv3.Listener{}
			listeners, m = append(listeners, l), l
		}
		if err := (protojson.UnmarshalOptions{}).Unmarshal(j, m); err != nil {
			return fmt.Errorf("reading bootstrap JSON of static_resources.%s[%d]: %w", path[1], i, err)
		}
		return nil
	}
	j, err := yamlchunk.YAMLToJSONPieces(data, split, piece)
	if err != nil {
		return nil, fmt.Errorf("reading bootstrap YAML: %w", err)
	}
	bs := &bootstrapv3.Bootstrap{}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, bs); err != nil {
		return nil, fmt.Errorf("reading bootstrap JSON: %w", err)
	}
	if len(clusters)+len(listeners) > 0 {
		// They were read where static_resources is, so it is set.
		bs.StaticResources.Clusters = clusters
		bs.StaticResources.Listeners = listeners
	}
	return bs, nil
}

// verify parses data back and checks that it is exactly bs; it returns
// the bootstrap read back, which the judges read (translate.File.Parsed)
// instead of decoding data again. Being equal to bs, which Generate
// validated, it is as valid (validation is a function of the message).
func verify(bs *bootstrapv3.Bootstrap, data []byte) (*bootstrapv3.Bootstrap, error) {
	back, err := decode(data)
	if err != nil {
		return nil, err
	}
	if !proto.Equal(bs, back) {
		return nil, errors.New("the written bootstrap does not read back as the one built")
	}
	return back, nil
}

// validator is implemented by the generated protoc-gen-validate code.
type validator interface{ ValidateAll() error }

// validate runs the generated validation over m and over every message
// packed in an Any inside it, which ValidateAll does not open.
func validate(m proto.Message) error {
	if v, ok := m.(validator); ok {
		if err := v.ValidateAll(); err != nil {
			return err
		}
	}
	return walkAnys(m.ProtoReflect(), func(a *anypb.Any) error {
		inner, err := a.UnmarshalNew()
		if err != nil {
			return fmt.Errorf("unpacking %s: %w", a.GetTypeUrl(), err)
		}
		if err := validate(inner); err != nil {
			return fmt.Errorf("%s: %w", a.GetTypeUrl(), err)
		}
		return nil
	})
}

// walkAnys calls fn for every Any directly or indirectly inside m, but not
// inside those Anys (fn recurses itself).
func walkAnys(m protoreflect.Message, fn func(*anypb.Any) error) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() && fd.MapValue().Message() == nil {
			return true
		}
		visit := func(msg protoreflect.Message) {
			if err != nil {
				return
			}
			if a, ok := msg.Interface().(*anypb.Any); ok {
				err = fn(a)
				return
			}
			err = walkAnys(msg, fn)
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				visit(l.Get(i).Message())
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				visit(mv.Message())
				return err == nil
			})
		default:
			visit(v.Message())
		}
		return err == nil
	})
	return err
}
