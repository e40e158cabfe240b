//gwretry:format
package envoy

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/translate"

	// The typed configs in the bootstrap must be registered for protojson
	// to write and read them; bootstrap.go and route.go import them too,
	// and vhosts.go the connection manager.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
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
	// The pieces are joined once their size is known: a buffer grown by
	// doubling would hold up to twice the file to the end.
	var pieces [][]byte
	if err := encodeTo(bs, func(b []byte) error { pieces = append(pieces, b); return nil }); err != nil {
		return nil, err
	}
	return bytes.Join(pieces, nil), nil
}

// encodeTo is encode giving the file to emit a piece at a time, in
// order; emit must not change a piece. Generate writes the pieces to a
// file as they come under -o DIR (translate.Options.Spool).
func encodeTo(bs *bootstrapv3.Bootstrap, emit func([]byte) error) error {
	sr := bs.GetStaticResources()
	if !onlyStaticLists(bs) || len(sr.GetClusters())+len(sr.GetListeners()) == 0 {
		y, err := encodeWhole(bs)
		if err != nil {
			return err
		}
		return emit(y)
	}
	w := yamlchunk.NewWriter()
	if err := emit([]byte("static_resources:\n")); err != nil {
		return err
	}
	// yaml.v2 writes a mapping's keys sorted.
	clusters := sr.GetClusters()
	err := encodeList(emit, "clusters", len(clusters), func(i int) error {
		j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(clusters[i])
		if err != nil {
			return fmt.Errorf("writing its JSON: %w", err)
		}
		y, err := w.Element([]string{"static_resources", "clusters"}, j)
		if err != nil {
			return fmt.Errorf("converting it to YAML: %w", err)
		}
		return emit(y)
	})
	if err != nil {
		return err
	}
	listeners := sr.GetListeners()
	return encodeList(emit, "listeners", len(listeners), func(i int) error {
		return encodeListener(emit, w, listeners[i])
	})
}

// encodeList emits the key of a list of static_resources with n
// elements (nothing when there is none), then each element, which
// element emits as the YAML writer writes it inside the whole bootstrap.
func encodeList(emit func([]byte) error, key string, n int, element func(i int) error) error {
	if n == 0 {
		return nil
	}
	if err := emit([]byte("  " + key + ":\n")); err != nil {
		return err
	}
	for i := range n {
		if err := element(i); err != nil {
			return fmt.Errorf("writing static_resources.%s[%d]: %w", key, i, err)
		}
	}
	return nil
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
// JSON, and the virtual hosts of a listener's connection managers one at
// a time too (issue 22: the JSON of the whole bootstrap was about 100 MB
// at 10,000 routes, and one listener's nearly all of it); the YAML is
// read on one goroutine while the others decode the JSON of the pieces
// read so far. Each connection manager is packed again with its virtual
// hosts as protojson packs an Any. TestDecodeInPieces compares it with
// reading the whole.
func decode(data []byte) (*bootstrapv3.Bootstrap, error) {
	return decodeWith(func(split func([]string) bool, piece func([]string, []int, string, int, []byte) error) ([]byte, error) {
		return yamlchunk.YAMLToJSONNested(data, split, piece)
	})
}

// decodeReader is decode of what r reads, a few KB at a time.
func decodeReader(r io.Reader) (*bootstrapv3.Bootstrap, error) {
	return decodeWith(func(split func([]string) bool, piece func([]string, []int, string, int, []byte) error) ([]byte, error) {
		return yamlchunk.ReaderToJSONNested(r, split, piece)
	})
}

// decodeWith is decode, with read reading the YAML as JSON in pieces.
func decodeWith(read func(split func([]string) bool, piece func([]string, []int, string, int, []byte) error) ([]byte, error)) (*bootstrapv3.Bootstrap, error) {
	var clusters []*clusterv3.Cluster
	var listeners []*listenerv3.Listener
	type slot struct{ fc, filter int }
	type packed struct{ b []byte }
	var vhosts []map[slot][]*packed // by listener
	var errs []*error               // the pieces', in the document's order
	type job struct {
		j    []byte
		m    proto.Message
		err  *error
		what func() string
		// pack, when set, keeps m packed instead (a virtual host).
		pack *packed
	}
	jobs := make(chan job, 64)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)-1) {
		wg.Go(func() {
			for jb := range jobs {
				err := (protojson.UnmarshalOptions{}).Unmarshal(jb.j, jb.m)
				if err == nil && jb.pack != nil {
					// As protojson packs what it reads into an Any.
					jb.pack.b, err = (proto.MarshalOptions{AllowPartial: true, Deterministic: true}).Marshal(jb.m)
				}
				if err != nil {
					*jb.err = fmt.Errorf("reading bootstrap JSON of %s: %w", jb.what(), err)
				}
			}
		})
	}
	split := func(path []string) bool {
		return len(path) == 2 && path[0] == "static_resources" && (path[1] == "clusters" || path[1] == "listeners") ||
			slices.Equal(path, []string{"static_resources", "listeners", "filter_chains", "filters", "typed_config", "route_config", "virtual_hosts"})
	}
	piece := func(path []string, at []int, _ string, i int, j []byte) error {
		var m proto.Message
		var what func() string
		var pack *packed
		switch {
		case len(path) > 2:
			if len(at) != 3 {
				return fmt.Errorf("virtual hosts in a list of lists")
			}
			l, fc, f := at[0], at[1], at[2]
			for len(vhosts) <= l {
				vhosts = append(vhosts, nil)
			}
			if vhosts[l] == nil {
				vhosts[l] = map[slot][]*packed{}
			}
			pack = &packed{}
			vhosts[l][slot{fc, f}] = append(vhosts[l][slot{fc, f}], pack)
			m, what = &routev3.VirtualHost{}, func() string {
				return fmt.Sprintf("static_resources.listeners[%d].filter_chains[%d].filters[%d].typed_config.route_config.virtual_hosts[%d]", l, fc, f, i)
			}
		case path[1] == "clusters":
			c := &clusterv3.Cluster{}
			clusters, m = append(clusters, c), c
			what = func() string { return fmt.Sprintf("static_resources.clusters[%d]", i) }
		default:
			l := &listenerv3.Listener{}
			listeners, m = append(listeners, l), l
			what = func() string { return fmt.Sprintf("static_resources.listeners[%d]", i) }
		}
		errs = append(errs, new(error))
		jobs <- job{j: bytes.Clone(j), m: m, err: errs[len(errs)-1], what: what, pack: pack}
		return nil
	}
	j, err := read(split, piece)
	close(jobs)
	wg.Wait()
	for _, e := range errs {
		if *e != nil {
			// The first piece that failed, as when they were read in
			// turn.
			return nil, *e
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading bootstrap YAML: %w", err)
	}
	for i, byFilter := range vhosts {
		if i >= len(listeners) {
			return nil, fmt.Errorf("reading bootstrap: virtual hosts outside static_resources.listeners")
		}
		slots := slices.SortedFunc(maps.Keys(byFilter), func(a, b slot) int {
			return cmp.Or(cmp.Compare(a.fc, b.fc), cmp.Compare(a.filter, b.filter))
		})
		for _, at := range slots {
			vs := make([][]byte, len(byFilter[at]))
			for k, p := range byFilter[at] {
				vs[k] = p.b
			}
			if err := packVirtualHosts(listeners[i], at.fc, at.filter, vs); err != nil {
				return nil, fmt.Errorf("reading bootstrap: static_resources.listeners[%d].filter_chains[%d].filters[%d]: %w", i, at.fc, at.filter, err)
			}
		}
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

// writeChecked writes bs as the file OutputPath and reads it back: in
// memory, or into a file of spool as it is written (none of it held),
// read back from there a few KB at a time.
func writeChecked(bs *bootstrapv3.Bootstrap, spool string) (translate.File, error) {
	if spool == "" {
		data, err := encode(bs)
		if err != nil {
			return translate.File{}, err
		}
		back, err := verify(bs, data)
		if err != nil {
			return translate.File{}, err
		}
		return translate.File{Path: OutputPath, Data: data, Parsed: translate.NewParsed(data, back)}, nil
	}
	name, err := translate.WriteSpooled(spool, "envoy.yaml", func(w io.Writer) error {
		return encodeTo(bs, func(b []byte) error {
			_, err := w.Write(b)
			return err
		})
	})
	if err != nil {
		return translate.File{}, err
	}
	back, err := verifyFile(bs, name)
	if err != nil {
		os.Remove(name)
		return translate.File{}, err
	}
	return translate.File{Path: OutputPath, Spooled: name, Parsed: translate.NewSpooledParsed(name, back)}, nil
}

// verify parses data back and checks that it is exactly bs; it returns
// the bootstrap read back, which the judges read (translate.File.Parsed)
// instead of decoding data again. Being equal to bs, which Generate
// validated, it is as valid (validation is a function of the message).
func verify(bs *bootstrapv3.Bootstrap, data []byte) (*bootstrapv3.Bootstrap, error) {
	back, err := decode(data)
	return compared(bs, back, err)
}

// verifyFile is verify of the file at path, read a few KB at a time.
func verifyFile(bs *bootstrapv3.Bootstrap, path string) (*bootstrapv3.Bootstrap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	back, err := decodeReader(bufio.NewReaderSize(f, 1<<16))
	return compared(bs, back, err)
}

// compared returns back, read back with err, when it is exactly bs.
func compared(bs, back *bootstrapv3.Bootstrap, err error) (*bootstrapv3.Bootstrap, error) {
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
// packed in an Any inside it, which ValidateAll does not open. A
// connection manager's virtual hosts are unpacked and validated one at a
// time, on every core (their validation is each one's own: a route
// configuration has no rule over its list of them).
func validate(m proto.Message) error {
	if v, ok := m.(validator); ok {
		if err := v.ValidateAll(); err != nil {
			return err
		}
	}
	return walkAnys(m.ProtoReflect(), func(a *anypb.Any) error {
		if a.GetTypeUrl() == hcmTypeURL {
			if err := validateManager(a.GetValue()); err != nil {
				return fmt.Errorf("%s: %w", a.GetTypeUrl(), err)
			}
			return nil
		}
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
