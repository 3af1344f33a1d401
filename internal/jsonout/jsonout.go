// Package jsonout is how benchctl prints a value for -o json, whichever command or exporter
// prints it: indented, one value and a newline, and every list that is empty as [], never
// null.
package jsonout

import (
	"encoding"
	"encoding/json"
	"io"
	"reflect"
)

// Write prints v as indented JSON for -o json, with every list that is empty as [],
// never null: a script that reads `.[]` or `.gpus[]` must not have to special-case nothing.
// Nil slices are replaced in place (v's own slices and those it points to) before printing,
// so v should not be used afterwards for anything that tells nil from empty.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(emptyLists(v))
}

// Line prints v as one compact JSON line (several nodes' documents interleaved line by
// line), its empty lists [] as Write's are.
func Line(w io.Writer, v any) error { return json.NewEncoder(w).Encode(emptyLists(v)) }

// emptyLists returns v (as a pointer to a copy when v is not a pointer, so that a nil slice
// at the top can be replaced) with every nil slice reachable through exported struct
// fields, pointers, slices and arrays made empty. Maps and interfaces are left as they are
// (their contents cannot be set in place), and so are byte slices and types that marshal
// themselves, whose nil may mean something else.
func emptyLists(v any) any {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return v
	}
	if rv.Kind() != reflect.Pointer {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		rv = p
	}
	fillLists(rv, map[uintptr]bool{})
	return rv.Interface()
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func fillLists(v reflect.Value, seen map[uintptr]bool) {
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		(v.CanAddr() && (reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler))) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		fillLists(v.Elem(), seen)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillLists(f, seen)
			}
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return // []byte is base64 text, not a list
		}
		if v.IsNil() {
			if v.CanSet() {
				v.Set(reflect.MakeSlice(t, 0, 0))
			}
			return
		}
		for i := range v.Len() {
			fillLists(v.Index(i), seen)
		}
	case reflect.Array:
		if v.CanAddr() {
			for i := range v.Len() {
				fillLists(v.Index(i), seen)
			}
		}
	}
}
