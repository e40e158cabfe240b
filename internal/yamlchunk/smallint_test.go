package yamlchunk

import (
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
)

// TestSmallIntAsYAMLv2: smallInt reads a JSON integer of at most 18 digits
// as the int yaml.v2 resolves it to, and leaves every other number
// (floats, exponents, longer integers, what is not a JSON number) to
// yaml.v2's own resolution.
func TestSmallIntAsYAMLv2(t *testing.T) {
	for _, tt := range []struct {
		s    string
		read bool
	}{
		{"0", true}, {"-0", true}, {"7", true}, {"-7", true}, {"42", true},
		{"65535", true}, {"2147483647", true}, {"-2147483648", true},
		{"999999999999999999", true}, {"-999999999999999999", true},
		{"1000000000000000000", false}, {"9223372036854775807", false},
		{"9223372036854775808", false}, {"01", false}, {"00", false},
		{"1.0", false}, {"1e3", false}, {"1E3", false}, {"-1.5", false},
		{"0x10", false}, {"", false}, {"-", false}, {"+1", false}, {"1_000", false},
	} {
		got, ok := smallInt(tt.s)
		if ok != tt.read {
			t.Errorf("smallInt(%q) read = %v, want %v", tt.s, ok, tt.read)
			continue
		}
		if !ok {
			continue
		}
		var v any
		if err := yamlv2.Unmarshal([]byte(tt.s), &v); err != nil {
			t.Fatalf("yaml.v2 on %q: %v", tt.s, err)
		}
		if n, isInt := v.(int); !isInt || n != got {
			t.Errorf("smallInt(%q) = %d, yaml.v2 reads %#v", tt.s, got, v)
		}
	}
}
