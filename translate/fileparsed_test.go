package translate

import (
	"bytes"
	"testing"
)

func TestFileParsed(t *testing.T) {
	data := []byte("written")
	parse := func(b []byte) (string, error) { return "parsed " + string(b), nil }
	tests := []struct {
		name  string
		files []File
		want  string
		err   bool
	}{
		{"the backend's parse of these bytes", []File{{Path: "a", Data: data, Parsed: NewParsed(data, "kept")}}, "kept", false},
		{"bytes replaced after the parse", []File{{Path: "a", Data: bytes.Clone(data), Parsed: NewParsed(data, "kept")}}, "parsed written", false},
		{"a parse of another type", []File{{Path: "a", Data: data, Parsed: NewParsed(data, 1)}}, "parsed written", false},
		{"no parse", []File{{Path: "a", Data: data}}, "parsed written", false},
		{"no such file", []File{{Path: "b", Data: data}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FileParsed(tt.files, "a", parse)
			if (err != nil) != tt.err || got != tt.want {
				t.Errorf("got %q, %v; want %q, error %v", got, err, tt.want, tt.err)
			}
		})
	}
}
