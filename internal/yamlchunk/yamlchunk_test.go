package yamlchunk

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestJSONToYAML(t *testing.T) {
	long := strings.Repeat("word ", 40)
	item := `{"s": "` + long + `", "n": 12345678901234, "f": 1.5, "l": [[1, 2], {"x": "y"}], "e": {}, "z": []}`
	tests := []struct {
		name   string
		json   string
		chunks int // at least
	}{
		{"scalars", `{"a": 1, "b": "x", "c": [1, 2], "d": {}}`, 0},
		{"placeholder in the input", `{"a": ["gwretrychunk1"]}`, 0},
		{"numbers as yaml.v2 resolves them", `{"a": [0, -0, 1, -1, 0.0, 1.5, 1e5, 1E+21, -2.5e-7, 0.1, 9223372036854775807, -9223372036854775808, 9223372036854775808, 18446744073709551615, 18446744073709551616, 100000000000000000000000, 1e400], "b": {"80": 80, "1e5": "1e5"}}`, 0},
		{"strings, booleans, null, empty", `{"s": "\u003c&\u00e9\u2028é😀 \"q\" \\ / \t\n", "y": "yes", "o": "on", "n": "null", "t": true, "f": false, "z": null, "": {"": [], "e": {}}, "l": [[], {}, [[]], "", " x"]}`, 0},
		{"top-level list", `[1, "a", {"b": null}]`, 0},
		{"a key twice: the last kept", `{"b": 1, "a": 2, "b": {"c": 3, "c": 4}, "l": [{"x": 1, "x": [2]}]}`, 0},
		{"large list, long strings folded", `{"a": {"b": [` + repeat(item, 3000) + `]}}`, 1},
		{"nested large lists", `{"top": [` + repeat(`{"name": "n", "inner": {"routes": [`+repeat(item, 300)+`]}}`, 4) + `], "after": 1}`, 5},
		{"large mappings, keys in yaml.v2's natural order", `{"http": {"routers": {` + keyed(`{"rule": "`+long+`", "n": [1, 2, {"a": "b"}]}`, 600) + `}, "services": {` + keyed(item, 200) + `}}, "tls": null}`, 3},
		{"large mapping, keys of every size written in batches", `{"m": {` + mixed(item, 300) + `}, "z": {` + keyed(`"v"`, 3000) + `}}`, 4},
		{"large list in a list item's first key", `{"l": [` + repeat(`{"a": [`+repeat(item, 300)+`], "b": 2}`, 2) + `]}`, 3},
	}
	// shared writes every case, with what it resolved for the cases
	// before.
	shared := NewWriter()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := yaml.JSONToYAML([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			got, err := JSONToYAML([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("chunked YAML differs from JSONToYAML (%d and %d bytes)", len(got), len(want))
			}
			got, err = shared.JSONToYAML([]byte(tt.json))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("a Writer's YAML after the other cases differs from JSONToYAML (%v)", err)
			}
			obj, err := readJSON([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			w := &chunkWriter{}
			if _, err := w.render(nil, obj); err != nil || w.n < tt.chunks {
				t.Errorf("%d chunks, %v; want at least %d", w.n, err, tt.chunks)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	type doc struct {
		Items []map[string]string `json:"items"`
	}
	var d doc
	for range 1000 {
		d.Items = append(d.Items, map[string]string{"k": "v", "w": "x y"})
	}
	want, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(d)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Marshal differs from sigs.k8s.io/yaml's (%v)", err)
	}
}

// keyed is n members "<key>": item, with keys that yaml.v2 sorts
// otherwise than bytes do (numbers in them, cases, punctuation).
func keyed(item string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"%s-r%d_x%d": %s`, []string{"team-00", "Team-1", "team-10", "a.b", "9"}[i%5], i, n-i, item)
	}
	return b.String()
}

// mixed is n members "<key>": value, the values of every kind and size:
// empty, scalars, long strings, item, lists of items too large for one
// batch or one chunk.
func mixed(item string, n int) string {
	values := []string{`{}`, `[]`, `"x"`, `1`, `null`, `"` + strings.Repeat("long ", 30) + `"`, item,
		`{"deep": {"deeper": [1, {"d": []}]}}`, `[` + repeat(item, 20) + `]`, `[` + repeat(item, 200) + `]`, `{` + keyed(item, 10) + `}`}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d": %s`, i, values[(i*7+i/11)%len(values)])
	}
	return b.String()
}

func repeat(item string, n int) string {
	return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
}

// TestReadStreamAsTree: readStream (token by token above streamDepth),
// which read uses above wholeJSON bytes, gives
// the tree readTree gives through encoding/json's tree of the whole
// document, keys given twice included.
func TestReadStreamAsTree(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `1`, `"x"`, `null`, `true`, `{"a":1}`, `{"b":1,"a":2,"c":[1,2,{"z":1,"y":[{"q":{"r":{"s":{"t":1,"u":2}}}}]}]}`,
		`{"a":1,"a":2}`, `{"b":1,"a":1,"b":{"x":[1,{"y":2,"y":3}]}}`, `[[[[[[1,2,{"b":1,"a":2}]]]]]]`,
		`{"x":{"y":{"z":{"w":{"v":{"u":1,"t":2,"u":3}}}}}}`, `{"n":[1.5,-0,1e21,12345678901234567890,9223372036854775807]}`,
		`{"yes":"no","on":"off","80":"x","":"empty"}`,
	}
	for _, d := range docs {
		got, err := newJSONReader().readStream([]byte(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		want, err := newJSONReader().readTree([]byte(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read %#v, readTree %#v", d, got, want)
		}
	}
	for _, bad := range []string{`{"a":1`, `[1,2`, `{"a":1}x`, `{1:2}`, ``} {
		if _, err := newJSONReader().readStream([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
		if _, err := newJSONReader().read([]byte(bad)); err == nil {
			t.Errorf("%q: accepted by read", bad)
		}
	}
}
