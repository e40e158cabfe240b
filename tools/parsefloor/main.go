// Command parsefloor measures the memory floor of reading gwretry's
// outputs back: for each large file of a `translate --target all -o DIR`
// it parses the file with the library its backend reads it back with and
// prints the heap that library's parse holds, before gwretry compares or
// judges anything. docs/performance.md uses it to show why a 10,000-route
// run cannot stay within 200 MB while every output is parsed back.
//
//	go run ./tools/gencorpus -routes 10000 > /tmp/c10000.yaml
//	gwretry translate /tmp/c10000.yaml --target all -o /tmp/out -q --report none
//	go run ./tools/parsefloor /tmp/out
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	parser "github.com/haproxytech/client-native/v5/config-parser"
	"github.com/haproxytech/client-native/v5/config-parser/options"
	crossplane "github.com/nginxinc/nginx-go-crossplane"
	yamlv3 "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	_ "github.com/gwretry/gwretry/backends/envoy" // registers the types Envoy's Anys name
	"github.com/gwretry/gwretry/internal/yamlchunk"
)

// reader is one file of an output directory and how its backend parses it.
type reader struct {
	path, library string
	parse         func(data []byte) (any, error)
}

var readers = []reader{
	{"envoy/envoy.yaml", "yaml.v3 node tree (what yamlchunk.YAMLToJSONStrict read before it read events)", func(data []byte) (any, error) {
		var n yamlv3.Node
		err := yamlv3.Unmarshal(data, &n)
		return &n, err
	}},
	{"envoy/envoy.yaml", "JSON from yaml.v3's events (yamlchunk.YAMLToJSONStrict)", func(data []byte) (any, error) {
		return yamlchunk.YAMLToJSONStrict(data)
	}},
	{"envoy/envoy.yaml", "the typed bootstrap alone (protojson, once the JSON is dropped)", func(data []byte) (any, error) {
		j, err := yamlchunk.YAMLToJSONStrict(data)
		if err != nil {
			return nil, err
		}
		runtime.GC() // only the JSON is alive; measure the proto
		bs := &bootstrapv3.Bootstrap{}
		return bs, protojson.Unmarshal(j, bs)
	}},
	{"nginx/nginx.conf", "nginx-go-crossplane payload", func(data []byte) (any, error) {
		return crossplane.Parse("nginx.conf", &crossplane.ParseOptions{
			Open:          func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
			Glob:          func(string) ([]string, error) { return nil, errors.New("no include") },
			SingleFile:    true,
			ParseComments: true,
		})
	}},
	{"haproxy/haproxy.cfg", "client-native config-parser", func(data []byte) (any, error) {
		return parser.New(options.String(string(data)), options.NoNamedDefaultsFrom)
	}},
}

func heap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// measure returns the heap r's parse of data holds once it returns. What
// it holds is unreachable once measure returns, before the next file.
func measure(r reader, data []byte) (held int64, err error) {
	before := heap()
	v, err := r.parse(data)
	if err != nil {
		return 0, err
	}
	held = int64(heap()) - int64(before)
	runtime.KeepAlive(v)
	runtime.KeepAlive(data) // the file's bytes are not the parse's
	return held, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: parsefloor DIR (the -o DIR of gwretry translate --target all)")
		os.Exit(2)
	}
	fmt.Printf("%-22s %9s %11s  %s\n", "file", "file MB", "parse MB", "library")
	for _, r := range readers {
		data, err := os.ReadFile(filepath.Join(os.Args[1], r.path))
		if err != nil {
			fmt.Fprintln(os.Stderr, "parsefloor:", err)
			os.Exit(1)
		}
		held, err := measure(r, data)
		if err != nil {
			fmt.Fprintf(os.Stderr, "parsefloor: %s: %v\n", r.path, err)
			os.Exit(1)
		}
		fmt.Printf("%-22s %9.1f %11.1f  %s\n", r.path, float64(len(data))/1e6, float64(held)/1e6, r.library)
	}
}
