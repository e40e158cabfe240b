//gwretry:format
package envoy

// A listener's connection manager can hold every virtual host of its port
// (issue 22: 10,121 of them, 80 MB of YAML, at 10,000 routes): the writer,
// the read-back, the validation and the judge take them one at a time,
// from the packed manager cut with protowire.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/gwretry/gwretry/internal/yamlchunk"
	"github.com/gwretry/gwretry/translate"
)

// hcmTypeURL is the type URL of an HTTP connection manager's typed_config.
const hcmTypeURL = "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

// vhostSentinel starts the name of the one virtual host encodeListener
// writes in place of a connection manager's list of them.
const vhostSentinel = "gwretry-virtual-hosts-"

// vhostBatch is how many virtual hosts one yamlchunk.Writer writes.
const vhostBatch = 64

// vhostPath is the path in the bootstrap of a virtual host of the route
// configuration inline in a listener's connection manager.
func vhostPath() []yamlchunk.Step {
	k, item := yamlchunk.Key, yamlchunk.Item()
	return []yamlchunk.Step{k("static_resources"), k("listeners"), item, k("filter_chains"), item, k("filters"), item,
		k("typed_config"), k("route_config"), k("virtual_hosts"), item}
}

// hole is a connection manager's list of virtual hosts, taken out of its
// listener to be written one at a time.
type hole struct {
	filter   *listenerv3.Filter
	packed   *anypb.Any // the filter's typed_config, put back when written
	sentinel string
	vhosts   [][]byte // each packed, as in packed
}

// encodeListener emits the lines of listener l as an element of
// static_resources.listeners, in the bytes encodeWhole writes, without
// the JSON of the whole listener (issue 22: a listener's connection
// manager holds every virtual host of its port, 80 MB of YAML at 10,000
// routes): each connection manager's virtual hosts are taken out and
// replaced by one named with a sentinel, the listener written, and the
// sentinel's line replaced by the virtual hosts, each written as an
// element at its path (yamlchunk.ElementAt; emitVirtualHosts). l is
// changed while it is written and put back as it was.
func encodeListener(emit func([]byte) error, w *yamlchunk.Writer, l *listenerv3.Listener) error {
	var holes []*hole
	defer func() {
		for _, h := range holes {
			h.filter.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: h.packed}
		}
	}()
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			a := f.GetTypedConfig()
			if a.GetTypeUrl() != hcmTypeURL {
				continue
			}
			rest, vhosts, err := splitVirtualHosts(a.GetValue())
			if err != nil {
				return err
			}
			if len(vhosts) == 0 {
				continue
			}
			cm := &hcmv3.HttpConnectionManager{}
			if err := proto.Unmarshal(rest, cm); err != nil {
				return err
			}
			h := &hole{filter: f, packed: a, sentinel: vhostSentinel + strconv.Itoa(len(holes)), vhosts: vhosts}
			cm.GetRouteConfig().VirtualHosts = []*routev3.VirtualHost{{Name: h.sentinel}}
			b, err := marshalAny(cm)
			if err != nil {
				return err
			}
			holes = append(holes, h)
			f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: b}
		}
	}
	j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(l)
	if err != nil {
		return err
	}
	y, err := w.Element([]string{"static_resources", "listeners"}, j)
	if err != nil {
		return err
	}
	if len(holes) == 0 {
		return emit(y)
	}
	if bytes.Count(j, []byte(vhostSentinel)) != len(holes) {
		// A value of the listener has the sentinel in it: written whole.
		for _, h := range holes {
			h.filter.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: h.packed}
		}
		holes = nil
		if j, err = (protojson.MarshalOptions{UseProtoNames: true}).Marshal(l); err != nil {
			return err
		}
		if y, err = w.Element([]string{"static_resources", "listeners"}, j); err != nil {
			return err
		}
		return emit(y)
	}
	path := vhostPath()
	for _, h := range holes {
		line, err := w.ElementAt(path, []byte(`{"name":"`+h.sentinel+`"}`))
		if err != nil {
			return err
		}
		at := bytes.Index(y, line)
		if at < 0 || bytes.Count(y, line) != 1 {
			return fmt.Errorf("the virtual hosts' placeholder %q is not in the listener once", line)
		}
		if err := emit(y[:at:at]); err != nil {
			return err
		}
		y = y[at+len(line):]
		if err := emitVirtualHosts(emit, path, h.vhosts); err != nil {
			return err
		}
	}
	return emit(y)
}

// vhostWindow is how many batches of virtual hosts are written at once
// before they are emitted.
const vhostWindow = 8

// emitVirtualHosts emits the YAML of each packed virtual host as an
// element at path, in order, written vhostBatch at a time on every core
// and emitted a few batches at a time.
func emitVirtualHosts(emit func([]byte) error, path []yamlchunk.Step, vhosts [][]byte) error {
	for start := 0; start < len(vhosts); start += vhostBatch * vhostWindow {
		window := vhosts[start:min(start+vhostBatch*vhostWindow, len(vhosts))]
		written := make([][]byte, len(window))
		errs := make([]error, (len(window)+vhostBatch-1)/vhostBatch)
		translate.Parallel(len(errs), func(b int) {
			bw := yamlchunk.NewWriter()
			for k := b * vhostBatch; k < min((b+1)*vhostBatch, len(window)); k++ {
				vh := &routev3.VirtualHost{}
				err := proto.Unmarshal(window[k], vh)
				var vj []byte
				if err == nil {
					vj, err = protojson.MarshalOptions{UseProtoNames: true}.Marshal(vh)
				}
				if err == nil {
					written[k], err = bw.ElementAt(path, vj)
				}
				if err != nil {
					errs[b] = fmt.Errorf("virtual host %d: %w", start+k, err)
					return
				}
			}
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for _, y := range written {
			if err := emit(y); err != nil {
				return err
			}
		}
	}
	return nil
}

// vhostFields are the numbers of HttpConnectionManager's route_config
// and RouteConfiguration's virtual_hosts.
func vhostFields() (rc, vh protowire.Number) {
	return (&hcmv3.HttpConnectionManager{}).ProtoReflect().Descriptor().Fields().ByName("route_config").Number(),
		(&routev3.RouteConfiguration{}).ProtoReflect().Descriptor().Fields().ByName("virtual_hosts").Number()
}

// splitVirtualHosts returns the packed connection manager cm without the
// virtual hosts of its route configuration, and those, each packed, in
// their order: each is unpacked on its own, never all at once.
func splitVirtualHosts(cm []byte) (rest []byte, vhosts [][]byte, err error) {
	rcNum, vhNum := vhostFields()
	err = eachField(cm, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num != rcNum || typ != protowire.BytesType {
			rest = append(rest, field...)
			return nil
		}
		var rc []byte
		err := eachField(value, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
			if num == vhNum && typ == protowire.BytesType {
				vhosts = append(vhosts, value)
			} else {
				rc = append(rc, field...)
			}
			return nil
		})
		rest = protowire.AppendBytes(protowire.AppendTag(rest, rcNum, protowire.BytesType), rc)
		return err
	})
	return rest, vhosts, err
}

// joinVirtualHosts returns the packed connection manager cm, whose route
// configuration has no virtual hosts, with vhosts (each packed) as its
// virtual hosts: the bytes proto's deterministic Marshal writes for the
// whole, which writes a message's fields in the order of their numbers.
func joinVirtualHosts(cm []byte, vhosts [][]byte) ([]byte, error) {
	rcNum, vhNum := vhostFields()
	var out []byte
	found := 0
	err := eachField(cm, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num != rcNum || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		found++
		var rc []byte
		written := false
		put := func() {
			for _, v := range vhosts {
				rc = protowire.AppendBytes(protowire.AppendTag(rc, vhNum, protowire.BytesType), v)
			}
			written = true
		}
		err := eachField(value, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
			if num == vhNum {
				return errors.New("virtual hosts read twice")
			}
			if num > vhNum && !written {
				put()
			}
			rc = append(rc, field...)
			return nil
		})
		if !written {
			put()
		}
		out = protowire.AppendBytes(protowire.AppendTag(out, rcNum, protowire.BytesType), rc)
		return err
	})
	if err == nil && found != 1 {
		err = fmt.Errorf("virtual hosts in a connection manager with %d route configurations", found)
	}
	return out, err
}

// eachField calls fn with each field of the packed message b: its number,
// wire type, bytes, and value when it is length-delimited.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, field, value []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		field := b[:n:n]
		b = b[n:]
		var value []byte
		if typ == protowire.BytesType {
			_, _, tn := protowire.ConsumeTag(field)
			value, _ = protowire.ConsumeBytes(field[tn:])
		}
		if err := fn(num, typ, field, value); err != nil {
			return err
		}
	}
	return nil
}

// packVirtualHosts puts vs, read and packed on their own, into the route
// configuration of the connection manager that is filter f of filter
// chain fc of l, read with an empty list of them.
func packVirtualHosts(l *listenerv3.Listener, fc, f int, vs [][]byte) error {
	if fc >= len(l.GetFilterChains()) || f >= len(l.FilterChains[fc].GetFilters()) {
		return errors.New("virtual hosts of no filter")
	}
	a := l.FilterChains[fc].Filters[f].GetTypedConfig()
	if a.GetTypeUrl() != hcmTypeURL {
		return fmt.Errorf("virtual hosts in a %s", a.GetTypeUrl())
	}
	b, err := joinVirtualHosts(a.GetValue(), vs)
	if err != nil {
		return err
	}
	a.Value = b
	return nil
}

// validateManager is validate of the packed connection manager b.
func validateManager(b []byte) error {
	rest, vhosts, err := splitVirtualHosts(b)
	if err != nil {
		return fmt.Errorf("unpacking: %w", err)
	}
	cm := &hcmv3.HttpConnectionManager{}
	if err := proto.Unmarshal(rest, cm); err != nil {
		return fmt.Errorf("unpacking: %w", err)
	}
	if err := validate(cm); err != nil {
		return err
	}
	errs := make([]error, (len(vhosts)+vhostBatch-1)/vhostBatch)
	translate.Parallel(len(errs), func(b int) {
		for k := b * vhostBatch; k < min((b+1)*vhostBatch, len(vhosts)); k++ {
			vh := &routev3.VirtualHost{}
			err := proto.Unmarshal(vhosts[k], vh)
			if err == nil {
				err = validate(vh)
			}
			if err != nil {
				errs[b] = fmt.Errorf("route_config.virtual_hosts[%d]: %w", k, err)
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
