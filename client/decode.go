package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/weftdata/weft/errdefs"
)

// Validator is a request that can check itself after decoding: required
// fields present, values in range. Messages name the field at fault.
type Validator interface {
	Validate() error
}

// Decode parses data, one JSON object, into v strictly, then validates it
// when v is a Validator. It is the protocol's only JSON decoder of requests
// (commands, action bodies, ticket payloads), so that every malformed input
// gets the same clear answer: an error wrapping errdefs.ErrInvalidArgument
// that starts with what (e.g. "create_branch") and names the field and what
// was expected. It rejects an empty body, anything but an object, unknown
// fields, trailing data, a JSON null anywhere (leave a field out instead),
// and values of the wrong type.
func Decode(what string, data []byte, v any) error {
	if err := decodeStrict(data, v); err != nil {
		return fmt.Errorf("%w: %s: %w", errdefs.ErrInvalidArgument, what, err)
	}
	if path, ok := nullPath(data); ok {
		if path == "" {
			return fmt.Errorf("%w: %s: the body is null; send a JSON object", errdefs.ErrInvalidArgument, what)
		}
		return fmt.Errorf("%w: %s: field %q is null; give a value or leave the field out", errdefs.ErrInvalidArgument, what, path)
	}
	if val, ok := v.(Validator); ok {
		if err := val.Validate(); err != nil {
			if !errors.Is(err, errdefs.ErrInvalidArgument) {
				err = fmt.Errorf("%w: %w", errdefs.ErrInvalidArgument, err)
			}
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// decodeStrict decodes one JSON object into v, rejecting unknown fields and
// trailing data, with messages that name JSON fields rather than Go types.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var fe *fieldError
	switch {
	case err == nil:
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			return errors.New("trailing data after the JSON object")
		}
		return checkCase(data, reflect.TypeOf(v), "")
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Errorf("the body is not the expected JSON object: a JSON object is needed, not %s", te.Value)
		}
		return fmt.Errorf("field %q must be %s, not %s", jsonPath(te.Field), jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	case errors.Is(err, io.EOF):
		return errors.New("empty body; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("invalid JSON: the body ends early")
	}
	return fmt.Errorf("the body is not the expected JSON object: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// checkCase refuses object keys that encoding/json accepted only because
// it matches field names case-insensitively ("C" for "c"): the protocol's
// names are exact. It walks data (valid JSON, already decoded into a value
// of type t) beside t, and stops at types that decode themselves
// (json.Unmarshaler: their own decodeStrict call checks them).
func checkCase(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) && path != "" {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return nil
		}
		fields := jsonFields(t)
		for k, raw := range obj {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			ft, ok := fields[k]
			if !ok {
				for name := range fields {
					if strings.EqualFold(name, k) {
						return fmt.Errorf("unknown field %q: field names are case-sensitive; did you mean %q?", sub, name)
					}
				}
				continue
			}
			if err := checkCase(raw, ft, sub); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var list []json.RawMessage
		if json.Unmarshal(data, &list) != nil {
			return nil
		}
		for i, raw := range list {
			if err := checkCase(raw, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil {
			return nil
		}
		for k, raw := range obj {
			if err := checkCase(raw, t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// jsonFields maps the JSON names of struct t's fields (embedded structs'
// fields included, as encoding/json flattens them) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// jsonPath drops the names of embedded Go structs (capitalized; the
// protocol's JSON fields are lowercase) from a decoder's field path.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if p != "" && 'A' <= p[0] && p[0] <= 'Z' {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

// fieldError is a decoding error that already names its field (from an
// UnmarshalJSON method of this package).
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int32", "int64":
		return "an integer"
	case "uint64":
		return "a non-negative integer below 2^64"
	case "float64":
		return "a number"
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "struct", "ptr", "map":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "of another type"
}

// nullPath finds the first JSON null in data (already known to be valid
// JSON of bounded depth) and returns its path, like recipe.components[1].weight;
// "" is the top level.
func nullPath(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	path, found, _ := walkNull(dec, "")
	return path, found
}

func walkNull(dec *json.Decoder, path string) (string, bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, err
	}
	switch t := tok.(type) {
	case nil:
		return path, true, nil
	case json.Delim:
		switch t {
		case '{':
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return "", false, err
				}
				key, _ := k.(string)
				sub := key
				if path != "" {
					sub = path + "." + key
				}
				if p, found, err := walkNull(dec, sub); found || err != nil {
					return p, found, err
				}
			}
			_, err = dec.Token()
		case '[':
			for i := 0; dec.More(); i++ {
				if p, found, err := walkNull(dec, path+"["+strconv.Itoa(i)+"]"); found || err != nil {
					return p, found, err
				}
			}
			_, err = dec.Token()
		}
		return "", false, err
	}
	return "", false, nil
}

// required reports a missing or empty string field.
func required(field, value string) error {
	if value == "" {
		return fmt.Errorf("%w: field %q is missing or empty", errdefs.ErrInvalidArgument, field)
	}
	return nil
}
