package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/benchctl/benchctl/manifest/document"
)

// docs/manifest.schema.json is the checked-in copy of Schema(); TestSchemaIsCurrent fails
// when it differs.
//go:generate go run ./internal/schemagen ../docs/manifest.schema.json

// schemaDraft is the JSON Schema dialect of Schema. Draft-07, not 2020-12: it is the newest
// draft that yaml-language-server (VS Code's YAML extension, Neovim's yamlls, the Helix and
// Zed YAML support) validates and completes with; the manifest needs nothing a later draft
// adds.
const schemaDraft = "http://json-schema.org/draft-07/schema#"

// Schema returns the manifest's JSON Schema, indented, with a final newline: what
// `benchctl schema` prints and docs/manifest.schema.json holds.
//
// It is built from the Spec types by reflection, following the decoder's rules (what may be
// null, which types have their own syntax: schemaShapes), with each field's doc comment of
// spec.go as its description and the resolver's enums and patterns (schemaRules). It
// describes what the decoder accepts and a little of what the resolver checks; what needs
// the file system or the environment (files exist, ${VAR}s are set, mounts agree) is left to
// `benchctl validate`. The schema never refuses a manifest that validate accepts, except
// where a field is written as the empty string (which validate reads as not given).
func Schema() ([]byte, error) {
	docs, err := fieldDocs()
	if err != nil {
		return nil, err
	}
	g := &schemaGen{docs: docs, seen: map[string]bool{}}
	root, err := g.of(reflect.TypeFor[Spec](), "")
	if err != nil {
		return nil, err
	}
	root.Schema = schemaDraft
	root.Title = "benchctl manifest"
	root.Description = "A benchctl manifest: the image, GPUs, mounts, environment and benchmarks of a benchmark run on one or more nodes. " +
		"`benchctl validate` checks what this schema cannot: that files exist, ${VAR}s are set and mounts agree."
	root.Type = schemaTypes{"object"} // the top level must be a mapping, never null
	g.applyRules(root, "")
	var missed []string
	for path := range schemaRules {
		if !g.seen[path] {
			missed = append(missed, path)
		}
	}
	if len(missed) > 0 {
		sort.Strings(missed)
		return nil, fmt.Errorf("manifest schema: rules for fields the manifest does not have: %s", strings.Join(missed, ", "))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// jsonSchema is a draft-07 schema with the keywords the manifest's schema uses, written in
// this order.
type jsonSchema struct {
	Schema               string        `json:"$schema,omitempty"`
	Title                string        `json:"title,omitempty"`
	Description          string        `json:"description,omitempty"`
	Type                 schemaTypes   `json:"type,omitempty"`
	Enum                 []any         `json:"enum,omitempty"`
	Pattern              string        `json:"pattern,omitempty"`
	MinLength            *int          `json:"minLength,omitempty"`
	MaxLength            *int          `json:"maxLength,omitempty"`
	Minimum              *int64        `json:"minimum,omitempty"`
	Maximum              *int64        `json:"maximum,omitempty"`
	MinItems             *int          `json:"minItems,omitempty"`
	Items                *jsonSchema   `json:"items,omitempty"`
	Required             []string      `json:"required,omitempty"`
	Properties           properties    `json:"properties,omitempty"`
	PatternProperties    properties    `json:"patternProperties,omitempty"`
	PropertyNames        *jsonSchema   `json:"propertyNames,omitempty"`
	AdditionalProperties any           `json:"additionalProperties,omitempty"` // false or a *jsonSchema
	AnyOf                []*jsonSchema `json:"anyOf,omitempty"`
	Not                  *jsonSchema   `json:"not,omitempty"`
}

// schemaTypes is the "type" keyword: one name, or a list of them.
type schemaTypes []string

func (t schemaTypes) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// properties keep their fields in the order of the Go struct (json's maps would sort them).
type properties []property

type property struct {
	name   string
	schema *jsonSchema
}

func (ps properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(p.name); err != nil {
			return nil, err
		}
		b.WriteByte(':')
		if err := enc.Encode(p.schema); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// schemaGen walks the Spec types.
type schemaGen struct {
	docs map[string]string // "Type.Field" -> doc comment
	seen map[string]bool   // rule paths applied
}

// of returns the schema of a value of type t at path ("", "gpu.vendor", "benchmarks[].env"),
// as the decoder reads it: its own syntax for a document.NodeDecoder, null allowed where the decoder
// leaves a pointer, struct, map or slice untouched by a null.
func (g *schemaGen) of(t reflect.Type, path string) (*jsonSchema, error) {
	if reflect.PointerTo(t).Implements(reflect.TypeFor[document.NodeDecoder]()) {
		shape, ok := schemaShapes[t]
		if !ok {
			return nil, fmt.Errorf("manifest schema: %s (at %s) has its own syntax but no shape in schemaShapes", t, pathName(path))
		}
		return shape(), nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		s, err := g.of(t.Elem(), path)
		if err != nil {
			return nil, err
		}
		return nullable(s), nil
	case reflect.Struct:
		s := &jsonSchema{Type: schemaTypes{"object", "null"}, AdditionalProperties: false}
		for i := range t.NumField() {
			f := t.Field(i)
			name := document.FieldName(f)
			if name == "" || name == "-" {
				continue
			}
			fs, err := g.of(f.Type, document.Join(path, name))
			if err != nil {
				return nil, err
			}
			doc := g.docs[t.Name()+"."+f.Name]
			if doc == "" {
				return nil, fmt.Errorf("manifest schema: %s.%s (%s) has no doc comment in spec.go: it is the field's description", t.Name(), f.Name, pathName(document.Join(path, name)))
			}
			fs.Description = fieldDescription(f.Name, name, doc)
			g.applyRules(fs, document.Join(path, name))
			s.Properties = append(s.Properties, property{name, fs})
		}
		return s, nil
	case reflect.Map:
		v, err := g.mapValue(t.Elem(), path+".*")
		if err != nil {
			return nil, err
		}
		return &jsonSchema{Type: schemaTypes{"object", "null"}, AdditionalProperties: v}, nil
	case reflect.Slice:
		it, err := g.of(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		g.applyRules(it, path+"[]")
		return &jsonSchema{Type: schemaTypes{"array", "null"}, Items: it}, nil
	case reflect.String:
		return &jsonSchema{Type: schemaTypes{"string"}}, nil
	case reflect.Bool:
		return &jsonSchema{Type: schemaTypes{"boolean"}}, nil
	case reflect.Int, reflect.Int64:
		return &jsonSchema{Type: schemaTypes{"integer"}}, nil
	case reflect.Float64:
		return &jsonSchema{Type: schemaTypes{"number"}}, nil
	}
	return nil, fmt.Errorf("manifest schema: %s (at %s) cannot be described", t, pathName(path))
}

// mapValue: the values of a name->string map (env, buildArgs) are any scalar, kept as
// written; other maps' values are read as their type.
func (g *schemaGen) mapValue(t reflect.Type, path string) (*jsonSchema, error) {
	if t.Kind() == reflect.String {
		return &jsonSchema{Type: schemaTypes{"string", "number", "boolean"}}, nil
	}
	return g.of(t, path)
}

// nullable lets s also be null.
func nullable(s *jsonSchema) *jsonSchema {
	if len(s.Type) == 0 {
		return &jsonSchema{AnyOf: []*jsonSchema{s, {Type: schemaTypes{"null"}}}}
	}
	for _, t := range s.Type {
		if t == "null" {
			return s
		}
	}
	s.Type = append(s.Type, "null")
	return s
}

// applyRules applies the rule for path, if there is one, and notes that it was used.
func (g *schemaGen) applyRules(s *jsonSchema, path string) {
	if rule, ok := schemaRules[path]; ok {
		g.seen[path] = true
		rule(s)
	}
}

// fieldDescription turns a field's doc comment into its description: one paragraph per paragraph
// of the comment, a leading "Field is " or "Field are " dropped, another leading Go name
// replaced by the manifest's.
func fieldDescription(goName, jsonName, doc string) string {
	var paras []string
	for _, p := range strings.Split(strings.TrimSpace(doc), "\n\n") {
		paras = append(paras, strings.Join(strings.Fields(p), " "))
	}
	text := strings.Join(paras, "\n\n")
	for _, verb := range []string{" is ", " are "} {
		if rest, ok := strings.CutPrefix(text, goName+verb); ok {
			return strings.ToUpper(rest[:1]) + rest[1:]
		}
	}
	if rest, ok := strings.CutPrefix(text, goName+" "); ok {
		return jsonName + " " + rest
	}
	return text
}

// pathName is a rule path for messages: the top level is "(top level)".
func pathName(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}
