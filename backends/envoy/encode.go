//gwretry:format
package envoy

import (
	"errors"
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
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
// same bootstrap (protojson's own whitespace is not stable).
func encode(bs *bootstrapv3.Bootstrap) ([]byte, error) {
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
// (yamlchunk.YAMLToJSONStrict) and unknown fields (protojson).
func decode(data []byte) (*bootstrapv3.Bootstrap, error) {
	j, err := yamlchunk.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("reading bootstrap YAML: %w", err)
	}
	bs := &bootstrapv3.Bootstrap{}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, bs); err != nil {
		return nil, fmt.Errorf("reading bootstrap JSON: %w", err)
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
