package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBodyBytes is the largest request body accepted (spec I5: 10 MB).
const MaxBodyBytes = 10 << 20

// ReadBody reads a request body of at most MaxBodyBytes. A longer body is
// an *Error with status 413; it is not read past the limit.
func ReadBody(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, tooLarge()
		}
		return nil, fmt.Errorf("read request body: %w", err)
	}
	if len(data) > MaxBodyBytes {
		return nil, tooLarge()
	}
	return data, nil
}

func tooLarge() *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, ErrCode: CodeRequestTooLarge,
		Message: fmt.Sprintf("request body is larger than %d bytes", MaxBodyBytes)}
}

// Refused is the type of a known parameter Prism cannot honour. Any value
// but null is refused with code unsupported_parameter; the field's `why`
// tag says why.
type Refused json.RawMessage

// tolerant is implemented by the types whose unknown fields are ignored
// (messages, content parts, input items: places where clients echo back
// response objects with keys Prism does not read).
type tolerant interface{ tolerant() }

// decoder is implemented by union types (string or list, string or object)
// that decode themselves; path is the JSON path of the value.
type decoder interface {
	decodeWire(raw []byte, path string) *Error
}

var (
	rawType      = reflect.TypeFor[json.RawMessage]()
	refusedType  = reflect.TypeFor[Refused]()
	decoderType  = reflect.TypeFor[decoder]()
	tolerantType = reflect.TypeFor[tolerant]()
)

// decodeBody decodes a whole request body into v, a pointer to a struct:
// one JSON object, valid UTF-8, nothing after it.
func decodeBody(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return invalid("", "request body is empty; want a JSON object")
	}
	if !utf8.Valid(data) {
		return invalid("", "request body is not valid UTF-8")
	}
	if data[0] != '{' {
		return invalid("", "request body is not a JSON object")
	}
	if !json.Valid(data) {
		return invalid("", "request body is not valid JSON: %v", syntaxError(data))
	}
	if err := decodeValue(data, reflect.ValueOf(v).Elem(), ""); err != nil {
		return err
	}
	return nil
}

// DecodeObject decodes a request body into v, a pointer to a struct, by
// the rules of the chat endpoints: one JSON object of valid UTF-8, an
// unknown key refused with code unknown_parameter and its path in param,
// a value of the wrong type with invalid_request_error naming it. The
// helper and operator endpoints use it, so every endpoint answers in one
// shape.
func DecodeObject(body []byte, v any) error {
	return decodeBody(body, v)
}

// syntaxError returns encoding/json's description of why data is not one
// JSON value.
func syntaxError(data []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return errors.New("invalid JSON")
}

// decodeInto decodes raw into the value v points to, reporting errors at
// path; union types use it for their object and list forms.
func decodeInto(raw []byte, v any, path string) *Error {
	return decodeValue(raw, reflect.ValueOf(v).Elem(), path)
}

// decodeValue decodes the JSON value raw (already known to be valid JSON)
// into v, naming path in every error.
func decodeValue(raw []byte, v reflect.Value, path string) *Error {
	raw = bytes.TrimSpace(raw)
	t := v.Type()
	if reflect.PointerTo(t).Implements(decoderType) {
		return v.Addr().Interface().(decoder).decodeWire(raw, path)
	}
	switch {
	case t == rawType:
		v.SetBytes(bytes.Clone(raw))
		return nil
	case t == refusedType:
		if string(raw) != "null" {
			v.SetBytes(bytes.Clone(raw))
		}
		return nil
	}
	isNull := string(raw) == "null"
	switch t.Kind() {
	case reflect.Pointer:
		if isNull {
			v.SetZero()
			return nil
		}
		elem := reflect.New(t.Elem())
		if err := decodeValue(raw, elem.Elem(), path); err != nil {
			return err
		}
		v.Set(elem)
		return nil
	case reflect.Struct:
		if isNull {
			return nil
		}
		return decodeStruct(raw, v, path)
	case reflect.Slice:
		if isNull {
			v.SetZero()
			return nil
		}
		if raw[0] != '[' {
			return invalid(path, "%s: want an array, got %s", name(path), kindOf(raw))
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return invalid(path, "%s: %v", name(path), err)
		}
		s := reflect.MakeSlice(t, len(elems), len(elems))
		for i, e := range elems {
			if err := decodeValue(e, s.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if isNull {
		return nil // null leaves a scalar at its zero value, as encoding/json does
	}
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		return invalid(path, "%s: want %s, got %s", name(path), want(t), kindOf(raw))
	}
	return nil
}

// decodeStruct decodes a JSON object into a struct, key by key in document
// order, so that the first bad key is the one reported.
func decodeStruct(raw []byte, v reflect.Value, path string) *Error {
	if raw[0] != '{' {
		return invalid(path, "%s: want an object, got %s", name(path), kindOf(raw))
	}
	t := v.Type()
	open := reflect.PointerTo(t).Implements(tolerantType)
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return invalid(path, "%s: %v", name(path), err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid(path, "%s: %v", name(path), err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return invalid(path, "%s: %v", name(path), err)
		}
		at := join(path, key)
		f, ok := fieldByTag(t, key)
		if !ok {
			if open {
				continue
			}
			return &Error{Status: http.StatusBadRequest, ErrCode: CodeUnknownParameter, Param: clip(at),
				Message: "unknown parameter: " + clip(at)}
		}
		if f.Type == refusedType && string(bytes.TrimSpace(val)) != "null" {
			return unsupported(at, "%s is not supported: %s", at, f.Tag.Get("why"))
		}
		if err := decodeValue(val, v.FieldByIndex(f.Index), at); err != nil {
			return err
		}
	}
	return nil
}

// fieldByTag finds the exported field whose json tag names key, fields
// of embedded structs (Sampling) included.
func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, f := range reflect.VisibleFields(t) {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.IsExported() && !f.Anonymous && tag == key && tag != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// name is how an error message names the value at path.
func name(path string) string {
	if path == "" {
		return "request body"
	}
	return path
}

// kindOf names the JSON kind of raw for a message.
func kindOf(raw []byte) string {
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if len(raw) > 40 {
		return "a number of " + strconv.Itoa(len(raw)) + " characters"
	}
	return "the number " + string(raw)
}

// want names what a Go type accepts, for a message.
func want(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map:
		return "an object"
	}
	return "a " + t.String()
}
