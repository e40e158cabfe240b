package yamlchunk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"sigs.k8s.io/yaml"
)

// sameJSON reports whether a and b are the same JSON value (numbers
// compared as written).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	for _, x := range []struct {
		data []byte
		v    *any
	}{{a, &va}, {b, &vb}} {
		d := json.NewDecoder(bytes.NewReader(x.data))
		d.UseNumber()
		if err := d.Decode(x.v); err != nil {
			t.Fatalf("%s: %v", x.data, err)
		}
	}
	return reflect.DeepEqual(va, vb)
}

func TestYAMLToJSONStrict(t *testing.T) {
	long := strings.Repeat("word ", 40)
	tests := []struct {
		name string
		yaml string
		// err: rejected; sigs.k8s.io/yaml's YAMLToJSONStrict rejects it
		// too unless stricter.
		err      bool
		stricter bool
	}{
		{name: "scalars", yaml: "a: 1\nb: x\nc: [1, 2.5, -3, 1e5, 0x1F, 0o17, 1_000]\nd: {}\ne: []\nf: null\ng: ~\nh: true\ni: \"yes\"\nj: ''\nk: 18446744073709551615\nl: 18446744073709551616\nm: -9223372036854775808\n"},
		{name: "strings that look like others, quoted", yaml: "a: \"1\"\nb: 'true'\nc: \"null\"\nd: \"2001-12-14\"\ne: \"<<\"\n\"80\": x\n"},
		{name: "folded and escaped strings", yaml: "a: " + strings.TrimSpace(strings.ReplaceAll(long, "word word ", "word\n  word ")) + "\nb: \"tab\\there \\\" \\\\ \\u00e9 \\x41\"\nc: |\n  two\n  lines\n"},
		{name: "nested", yaml: "l:\n- a: 1\n  b:\n  - [x, {u: z}]\n- - 1\n  - 2\nm:\n  q:\n    o: p\n"},
		{name: "merge key's string as a value", yaml: "a: <<\n"},
		{name: "explicit core tags", yaml: "a: !!str 12\nb: !!int \"12\"\nc: !!float 1\n"},
		{name: "empty document", yaml: ""},
		{name: "top-level list", yaml: "- 1\n- a\n"},
		{name: "duplicate key", yaml: "a: 1\nb: 2\na: 3\n", err: true},
		{name: "duplicate key, nested", yaml: "l:\n- x: 1\n  x: 1\n", err: true},
		{name: "duplicate key, once quoted", yaml: "a: 1\n\"a\": 1\n", err: true},
		{name: "syntax error", yaml: "a: [1\n", err: true},
		{name: "infinity", yaml: "a: .inf\n", err: true},
		{name: "alias", yaml: "a: &x 1\nb: *x\n", err: true, stricter: true},
		{name: "merge key", yaml: "a: &x {c: 1}\nb:\n  <<: *x\n", err: true, stricter: true},
		{name: "integer key", yaml: "1: a\n", err: true, stricter: true},
		{name: "second document", yaml: "a: 1\n---\nb: 2\n", err: true, stricter: true},
		{name: "other tag", yaml: "a: !!binary aGk=\n", err: true, stricter: true},
		{name: "timestamp", yaml: "a: 2001-12-14\n", err: true, stricter: true},
		{name: "YAML 1.1 boolean", yaml: "a: yes\n", err: true, stricter: true},
		{name: "YAML 1.1 boolean key", yaml: "n: 1\n", err: true, stricter: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := yaml.YAMLToJSONStrict([]byte(tt.yaml))
			got, err := YAMLToJSONStrict([]byte(tt.yaml))
			// Read a byte at a time from a reader, the same JSON or the
			// same error.
			fromReader, rerr := ReaderToJSONNested(iotest.OneByteReader(strings.NewReader(tt.yaml)), nil, nil)
			if (rerr == nil) != (err == nil) || err == nil && !bytes.Equal(fromReader, got) || err != nil && rerr.Error() != err.Error() {
				t.Errorf("from a reader: %s, %v; from bytes: %s, %v", fromReader, rerr, got, err)
			}
			if tt.err {
				if err == nil {
					t.Errorf("accepted, as %s", got)
				}
				if !tt.stricter && wantErr == nil {
					t.Errorf("sigs.k8s.io/yaml accepts it (%s): the case is stricter", want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if wantErr != nil {
				t.Fatalf("sigs.k8s.io/yaml rejects it: %v", wantErr)
			}
			if !sameJSON(t, got, want) {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

// TestRoundTrip writes strings that YAML could read as something else
// with JSONToYAML and reads them back with YAMLToJSONStrict.
func TestRoundTrip(t *testing.T) {
	values := []any{"yes", "no", "on", "off", "y", "n", "Y", "True", "NULL", "~", "", " ", "-", "?", ":", "2001-12-14", "2001-12-14T21:59:43.10-05:00",
		"0o17", "0x1F", "0b101", "1_000", "+1", "-0", ".5", "1e5", "1:20", "1:20:30.5", ".inf", "-.Inf", ".nan", "<<", "=", "!x", "&a", "*a", "%x", "@x", "`x",
		"a: b", "a #b", "#a", "[a]", "{a}", "a\nb", "a\tb", " a", "a ", "\"", "'", "é\u2028\u0085x", strings.Repeat("long words ", 30),
		1, -1, 0, 1.5, 1e21, 9223372036854775807, uint64(18446744073709551615), true, false, nil}
	doc := map[string]any{}
	for i, v := range values {
		doc[strings.Repeat("k", i%7)+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = map[string]any{"v": v, "l": []any{v, v}}
	}
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	y, err := JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	back, err := YAMLToJSONStrict(y)
	if err != nil {
		t.Fatalf("%v in\n%s", err, y)
	}
	if !sameJSON(t, back, j) {
		t.Errorf("read back %s\nwrote %s", back, j)
	}
	want, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, back, want) {
		t.Errorf("read back %s\nsigs.k8s.io/yaml reads %s", back, want)
	}
}

// TestPiecesAsWhole: the JSON YAMLToJSONPieces returns, with each split
// sequence filled again with its pieces, is YAMLToJSONStrict's; split is
// asked with the path from the root, so a sequence inside a piece at
// another path is not split.
func TestPiecesAsWhole(t *testing.T) {
	doc := "a:\n  b:\n  - x: 1\n    b:\n    - 2\n  - z: [3, 4]\n  c:\n  - 5\nb:\n- 6\n"
	split := func(path []string) bool {
		return slices.Equal(path, []string{"a", "b"}) || slices.Equal(path, []string{"b"})
	}
	got := map[string][]string{}
	j, err := YAMLToJSONPieces([]byte(doc), split, func(path []string, _ string, i int, p []byte) error {
		k := strings.Join(path, ".")
		if len(got[k]) != i {
			t.Errorf("%s: piece %d after %d", k, i, len(got[k]))
		}
		got[k] = append(got[k], compact(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if compact(t, j) != `{"a":{"b":[],"c":[5]},"b":[]}` {
		t.Errorf("document = %s", j)
	}
	want := map[string][]string{"a.b": {`{"x":1,"b":[2]}`, `{"z":[3,4]}`}, "b": {"6"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pieces = %q, want %q", got, want)
	}
	whole, err := YAMLToJSONStrict([]byte(doc))
	if err != nil || compact(t, whole) != `{"a":{"b":[{"x":1,"b":[2]},{"z":[3,4]}],"c":[5]},"b":[6]}` {
		t.Errorf("whole = %s, %v", whole, err)
	}
	// A mapping's values are pieces with their keys, the mapping {}.
	keys := map[string]string{}
	j, err = YAMLToJSONPieces([]byte("m:\n  a: 1\n  b: [2]\no: 3\n"), func(path []string) bool { return slices.Equal(path, []string{"m"}) },
		func(path []string, key string, i int, p []byte) error {
			keys[key] = fmt.Sprint(i, " ", compact(t, p))
			return nil
		})
	if err != nil || compact(t, j) != `{"m":{},"o":3}` || !reflect.DeepEqual(keys, map[string]string{"a": "0 1", "b": "1 [2]"}) {
		t.Errorf("mapping pieces: %s %v %v", j, keys, err)
	}
	if _, err := YAMLToJSONPieces([]byte("m:\n  a: 1\n  a: 2\n"), func(path []string) bool { return len(path) == 1 }, func([]string, string, int, []byte) error { return nil }); err == nil {
		t.Error("a key given twice in a split mapping was read")
	}
	// A piece's error is the reader's.
	if _, err := YAMLToJSONPieces([]byte("b:\n- {k: 1, k: 2}\n"), split, func([]string, string, int, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), `key "k" already set`) {
		t.Errorf("duplicate key in a piece: %v", err)
	}
}

// TestNestedPieces: a split sequence inside a piece is split too, its
// pieces given first with the indices of the elements they are in, and
// the enclosing piece has [] in their place; a sequence's element is not
// split as its sequence is, though it has the same path.
func TestNestedPieces(t *testing.T) {
	doc := "l:\n- name: a\n  fc:\n  - f:\n    - tc:\n        vh:\n        - v: 1\n        - v: 2\n  - f:\n    - tc:\n        vh:\n        - v: 3\n  m:\n    k: 4\n- name: b\n"
	split := func(path []string) bool {
		return slices.Equal(path, []string{"l"}) || slices.Equal(path, []string{"l", "fc", "f", "tc", "vh"}) || slices.Equal(path, []string{"l", "m"})
	}
	var got []string
	j, err := YAMLToJSONNested([]byte(doc), split, func(path []string, at []int, key string, i int, p []byte) error {
		got = append(got, fmt.Sprintf("%s %v %q %d %s", strings.Join(path, "."), at, key, i, compact(t, p)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if compact(t, j) != `{"l":[]}` {
		t.Errorf("document = %s", j)
	}
	want := []string{
		`l.fc.f.tc.vh [0 0 0] "" 0 {"v":1}`,
		`l.fc.f.tc.vh [0 0 0] "" 1 {"v":2}`,
		`l.fc.f.tc.vh [0 1 0] "" 0 {"v":3}`,
		`l.m [0] "k" 0 4`,
		`l [] "" 0 {"name":"a","fc":[{"f":[{"tc":{"vh":[]}}]},{"f":[{"tc":{"vh":[]}}]}],"m":{}}`,
		`l [] "" 1 {"name":"b"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pieces:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A duplicate key in a nested piece is the reader's error.
	if _, err := YAMLToJSONNested([]byte("l:\n- m:\n    k: 1\n    k: 2\n"), split, func([]string, []int, string, int, []byte) error { return nil }); err == nil || !strings.Contains(err.Error(), `key "k" already set`) {
		t.Errorf("duplicate key in a nested piece: %v", err)
	}
}

func compact(t *testing.T, j []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, j); err != nil {
		t.Fatalf("%s: %v", j, err)
	}
	return b.String()
}
