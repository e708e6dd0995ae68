package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// WriteJSON writes v as one indented JSON document. Lists are never null:
// every nil slice in v (outside fields tagged omitempty) is written as [].
func WriteJSON(w io.Writer, v any) error {
	v = emptyLists(v)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// WriteJSONL writes JSON Lines: one record per item, each an object whose
// first key "type" is kind (e.g. "tensor"), then a final record
// {"type":"summary","schema_version":N,...} with the keys of summary (an
// object). Lists are never null.
func WriteJSONL[T any](w io.Writer, kind string, items []T, summary any) error {
	for _, it := range items {
		if err := writeRecord(w, kind, nil, it); err != nil {
			return err
		}
	}
	schema, err := json.Marshal(ckpt.Schema(0))
	if err != nil {
		return err
	}
	return writeRecord(w, "summary", schema, summary)
}

// writeRecord writes v (a JSON object) as one line with "type": kind
// first, then "schema_version": schema when given.
func writeRecord(w io.Writer, kind string, schema json.RawMessage, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(emptyLists(v)); err != nil {
		return err
	}
	body := bytes.TrimSpace(buf.Bytes())
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("JSON Lines record of type %s is not an object", kind)
	}
	head := fmt.Sprintf(`{"type":%q`, kind)
	if schema != nil {
		head += `,"schema_version":` + string(schema)
	}
	if len(body) > 2 {
		head += ","
	}
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	if _, err := w.Write(body[1:]); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// emptyLists returns v with every nil slice reachable through exported
// struct fields, pointers and list elements replaced by an empty one, so
// that it marshals as [] (fields tagged omitempty, byte slices, map
// values and types with their own MarshalJSON are left alone). v's nested
// values are updated in place; a struct passed by value is copied first.
func emptyLists(v any) any {
	if v == nil {
		return v
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		fill(p.Elem(), 0)
		return p.Interface()
	}
	fill(rv, 0)
	return v
}

var marshalerType = reflect.TypeFor[json.Marshaler]()

func fill(v reflect.Value, depth int) {
	if depth > 32 || !v.IsValid() {
		return
	}
	if v.Type().Implements(marshalerType) || (v.CanAddr() && v.Addr().Type().Implements(marshalerType)) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			fill(v.Elem(), depth+1)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			fv := v.Field(i)
			if fv.Kind() == reflect.Slice && fv.IsNil() && fv.CanSet() && !omitEmpty(tag) && fv.Type().Elem().Kind() != reflect.Uint8 {
				fv.Set(reflect.MakeSlice(fv.Type(), 0, 0))
			}
			fill(fv, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	}
}

func omitEmpty(tag string) bool {
	_, opts, _ := strings.Cut(tag, ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "omitempty" || o == "omitzero" {
			return true
		}
	}
	return false
}
