package yamlfast

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type inner struct {
	Name  string            `json:"name"`
	Count int               `json:"count,omitempty"`
	Ratio float64           `json:"ratio,omitempty"`
	Tags  []string          `json:"tags,omitempty"`
	Ann   map[string]string `json:"ann,omitempty"`
}

// TestMarshalAsSigs compares Marshal with sigs.k8s.io/yaml's Marshal,
// byte for byte.
func TestMarshalAsSigs(t *testing.T) {
	long := strings.Repeat("word ", 40)
	cases := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"empty map", map[string]any{}},
		{"empty list", []any{}},
		{"nil slice in struct", inner{}},
		{"scalars that resolve", map[string]any{
			"yes": "yes", "no": "no", "on": "on", "true": "true", "null": "null", "tilde": "~",
			"int": "1", "float": "1.5", "hex": "0x1F", "octal": "0777", "exp": "1e3", "empty": "",
			"colon": "a: b", "hash": "a #b", "dash": "- a", "quote": `"a'`, "base60": "1:20",
		}},
		{"numbers", map[string]any{
			"zero": 0, "neg": -7, "big": int64(9223372036854775807), "min": int64(-9223372036854775808),
			"ubig": uint64(18446744073709551615), "half": 0.5, "tiny": 1e-9, "huge": 1e300, "whole": 3.0,
			"f32": float32(0.1),
		}},
		{"raw numbers", map[string]json.RawMessage{
			"a": json.RawMessage("1e3"), "b": json.RawMessage("1E+2"), "c": json.RawMessage("-0"),
			"d": json.RawMessage("9223372036854775808"), "e": json.RawMessage("18446744073709551616"),
			"f": json.RawMessage("-9223372036854775809"), "g": json.RawMessage("0.10"),
			"h": json.RawMessage("999999999999999999"), "i": json.RawMessage("-999999999999999999"),
			"j": json.RawMessage("1000000000000000000"), "k": json.RawMessage("-1000000000000000000"),
			"l": json.RawMessage("10"), "m": json.RawMessage("1.0"), "n": json.RawMessage("1e400"),
		}},
		{"html and separators", map[string]string{"a": "<b>&</b>", "b": "x\u2028y\u2029z", "c": "tab\tnl\ncr\r", "d": "nul\x00bell\x07"}},
		{"unicode", map[string]string{"a": "é", "b": "日本", "c": "\u0085", "d": "\x7f", "e": "\uFEFF", "f": "\x80bad", "g": "\U0001F600"}},
		{"long strings", map[string]any{"folded": long, "lines": long + "\n" + long}},
		{"keys", map[string]int{"1": 1, "true": 2, "null": 3, "a b": 4, "": 5, "-": 6, "?": 7}},
		{"nested", map[string]any{"l": []any{[]any{1, "a"}, map[string]any{"k": []any{}}, nil, true, false},
			"s": []inner{{Name: "a", Count: 2, Ratio: 0.25, Tags: []string{"x", "y"}, Ann: map[string]string{"k": "v"}}}}},
		{"top-level list", []any{"a", 1, map[string]any{"b": nil}}},
		{"top-level scalar", "hello"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, werr := yaml.Marshal(c.v)
			got, gerr := Marshal(c.v)
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("error %v, sigs.k8s.io/yaml: %v", gerr, werr)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Marshal:\n%s\nsigs.k8s.io/yaml:\n%s", got, want)
			}
		})
	}
}

// TestTreeFallsBack: JSON the two readers might read differently goes to
// yaml.v2, errors and all.
func TestTreeFallsBack(t *testing.T) {
	for _, j := range []string{`"\ud800"`, `{"a":"\uD83D\uDE00"}`, "\"\x7f\"", "\"\u0080\"", "\"é\""} {
		if plain([]byte(j)) {
			t.Errorf("plain(%q) = true", j)
		}
		var want any
		werr := yaml.Unmarshal([]byte(j), &want)
		got, gerr := Tree([]byte(j))
		if (werr != nil) != (gerr != nil) {
			t.Errorf("Tree(%q): error %v, yaml.v2: %v", j, gerr, werr)
		}
		_ = got
	}
	for _, j := range []string{`{"a":[1,"b",null,true]}`, `"\u00e9\u2028"`} {
		if !plain([]byte(j)) {
			t.Errorf("plain(%q) = false", j)
		}
	}
}

// TestTreeRejectsTrailingData: one JSON value, as yaml.v2 reads one
// document.
func TestTreeRejectsTrailingData(t *testing.T) {
	if _, err := Tree([]byte(`{"a":1} {"b":2}`)); err == nil {
		t.Error("Tree read two values")
	}
}
