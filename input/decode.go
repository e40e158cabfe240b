package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	kjson "sigs.k8s.io/json"

	"github.com/gwretry/gwretry/translate"
)

// decodeStrict decodes the JSON j into v strictly and turns what goes wrong
// into InputErrors at pos about object, each with the field path and list
// indices ("spec.rules[0].retry.attempts: expected integer, got string
// \"three\""), rather than Go's "cannot unmarshal ... into Go struct field".
// It returns nil when v was decoded.
func decodeStrict(pos Position, object string, j []byte, v any) ErrorList {
	strictErrs, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return ErrorList{decodeError(pos, object, j, err)}
	}
	var out ErrorList
	for _, e := range strictErrs {
		out = append(out, strictError(pos, object, e))
	}
	return out
}

// strictError turns one of sigs.k8s.io/json's strict errors (`unknown field
// "spec.x"`, `duplicate field "spec.x"`), which carry the path with indices,
// into an InputError.
func strictError(pos Position, object string, e error) *InputError {
	var fe kjson.FieldError
	if !errors.As(e, &fe) {
		return &InputError{Pos: pos, Object: object, Msg: strings.TrimPrefix(e.Error(), "json: ")}
	}
	msg, _, _ := strings.Cut(e.Error(), ` "`)
	switch msg {
	case "unknown field":
		msg = "unknown field (field names are case-sensitive)"
	case "duplicate field":
		msg = "duplicate field: the key is set twice"
	}
	return &InputError{Pos: pos, Object: object, Field: fe.FieldPath(), Msg: msg}
}

// decodeError turns a decoding failure into an InputError. A type mismatch
// is located in j by its offset, to name the field with its list indices.
func decodeError(pos Position, object string, j []byte, err error) *InputError {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return &InputError{Pos: pos, Object: object, Msg: strings.TrimPrefix(err.Error(), "json: ")}
	}
	field, got, ok := locate(j, te.Offset)
	if !ok {
		// Not found: the path without indices is still better than Go's.
		field, got = te.Field, te.Value
	}
	return &InputError{Pos: pos, Object: object, Field: field, Msg: fmt.Sprintf("expected %s, got %s", typeText(te.Type), got)}
}

// typeText names a Go type as the manifest's author knows it.
func typeText(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// locate finds the value of the JSON document j that ends at offset (as
// encoding/json's UnmarshalTypeError.Offset gives it: just after a literal,
// or just after the '{' or '[' that opens an object or list) and returns
// its field path with list indices ("spec.rules[0].retry.attempts") and a
// description of it (`string "three"`).
func locate(j []byte, offset int64) (field, got string, ok bool) {
	type frame struct {
		list      bool
		index     int
		key       string
		expectKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.list:
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			default:
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			}
		}
		return b.String()
	}
	next := func() { // a value of the top container is complete
		if n := len(stack); n > 0 {
			if stack[n-1].list {
				stack[n-1].index++
			} else {
				stack[n-1].expectKey = true
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", false
		}
		n := len(stack)
		if d, isDelim := tok.(json.Delim); isDelim && (d == '}' || d == ']') {
			stack = stack[:n-1]
			next()
			continue
		}
		if n > 0 && !stack[n-1].list && stack[n-1].expectKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].expectKey = false
			continue
		}
		if dec.InputOffset() == offset {
			return path(), describe(tok), true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{expectKey: true})
		case json.Delim('['):
			stack = append(stack, frame{list: true})
		default:
			next()
		}
	}
}

// describe says what a JSON token is: `string "three"`, `number 1.5`,
// `boolean true`, `null`, `an object`, `a list`.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		return "string " + translate.QuoteShort(v)
	case json.Number:
		return "number " + v.String()
	case bool:
		return "boolean " + strconv.FormatBool(v)
	case nil:
		return "null"
	case json.Delim:
		if v == '[' {
			return "a list"
		}
	}
	return "an object"
}
