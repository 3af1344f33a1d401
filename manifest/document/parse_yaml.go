package document

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?(.*)$`)

type yamlConverter struct {
	ctx   context.Context
	file  string
	count int
}

func parseYAML(ctx context.Context, file string, data []byte) (n *Node, err error) {
	// yaml.v3 can panic on some pathological inputs; a manifest must never crash benchctl.
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, &ParseError{File: file, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if off, err := yamlMarks(ctx, data, maxYAMLMarks); err != nil {
		return nil, err
	} else if off >= 0 {
		return nil, tooManyValues(file, 1+bytes.Count(data[:off], []byte{'\n'}), valuesMarks)
	}
	dec := yaml.NewDecoder(ctxReader{ctx: ctx, r: bytes.NewReader(data)})
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if ctx.Err() != nil {
			return nil, cancelled(ctx)
		}
		if err == io.EOF {
			return nil, &ParseError{File: file, Msg: "the document is empty"}
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if ctx.Err() != nil {
			return nil, cancelled(ctx)
		}
		line := extra.Line
		if err != nil {
			return nil, yamlError(file, err)
		}
		return nil, &ParseError{File: file, Line: line, Msg: "more than one YAML document (remove the second '---')"}
	}
	c := &yamlConverter{ctx: ctx, file: file}
	return c.convert(&doc, 0)
}

func yamlError(file string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return &ParseError{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

func (c *yamlConverter) convert(y *yaml.Node, depth int) (*Node, error) {
	c.count++
	if c.count > maxNodes {
		return nil, tooManyValues(c.file, y.Line, valuesYAML)
	}
	if c.count%CheckEvery == 0 && c.ctx.Err() != nil {
		return nil, cancelled(c.ctx)
	}
	if depth > maxDepth {
		return nil, &ParseError{File: c.file, Line: y.Line, Msg: fmt.Sprintf("nested more than %d levels deep", maxDepth)}
	}
	n := &Node{Line: y.Line, Col: y.Column}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return nil, &ParseError{File: c.file, Msg: "the document is empty"}
		}
		return c.convert(y.Content[0], depth)
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &ParseError{File: c.file, Line: y.Line, Msg: "unknown alias"}
		}
		a, err := c.convert(y.Alias, depth+1)
		if err != nil {
			return nil, err
		}
		// Report the position of the reference, not of the anchor.
		cp := *a
		cp.Line, cp.Col = y.Line, y.Column
		return &cp, nil
	case yaml.ScalarNode:
		if len(y.Value) > maxScalar {
			return nil, tooLongValue(c.file, y.Line, len(y.Value))
		}
		n.Kind, n.Value = ScalarNode, y.Value
		switch y.ShortTag() {
		case "!!int":
			n.Tag = TagInt
		case "!!float":
			n.Tag = TagFloat
		case "!!bool":
			n.Tag = TagBool
		case "!!null":
			n.Kind, n.Tag = NullNode, TagNull
		default: // !!str, !!timestamp, !!binary and custom tags are read as text
			n.Tag = TagStr
		}
	case yaml.SequenceNode:
		n.Kind = SeqNode
		for _, it := range y.Content {
			v, err := c.convert(it, depth+1)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, v)
		}
	case yaml.MappingNode:
		n.Kind = MapNode
		var merged []*Node // mappings pulled in with "<<", lower priority than explicit keys
		for i := 0; i+1 < len(y.Content); i += 2 {
			ky, vy := y.Content[i], y.Content[i+1]
			if ky.Kind == yaml.ScalarNode && ky.ShortTag() == "!!merge" {
				v, err := c.convert(vy, depth+1)
				if err != nil {
					return nil, err
				}
				switch v.Kind {
				case MapNode:
					merged = append(merged, v)
				case SeqNode:
					for _, m := range v.Items {
						if m.Kind != MapNode {
							return nil, &ParseError{File: c.file, Line: m.Line, Msg: "a '<<' merge list may hold only mappings"}
						}
						merged = append(merged, m)
					}
				default:
					return nil, &ParseError{File: c.file, Line: v.Line, Msg: "a '<<' merge needs a mapping or a list of mappings"}
				}
				continue
			}
			if ky.Kind != yaml.ScalarNode {
				return nil, &ParseError{File: c.file, Line: ky.Line, Col: ky.Column, Msg: "a mapping key must be a plain string"}
			}
			if len(ky.Value) > maxScalar {
				return nil, tooLongValue(c.file, ky.Line, len(ky.Value))
			}
			v, err := c.convert(vy, depth+1)
			if err != nil {
				return nil, err
			}
			n.Keys = append(n.Keys, &Node{Kind: ScalarNode, Tag: TagStr, Value: ky.Value, Line: ky.Line, Col: ky.Column})
			n.Items = append(n.Items, v)
		}
		if err := checkDuplicateKeys(c.file, n); err != nil {
			return nil, err
		}
		for _, m := range merged {
			for i, k := range m.Keys {
				if n.Get(k.Value) == nil {
					n.Keys = append(n.Keys, k)
					n.Items = append(n.Items, m.Items[i])
				}
			}
		}
	default:
		return nil, &ParseError{File: c.file, Line: y.Line, Msg: "unsupported YAML node"}
	}
	if n.Kind == ScalarNode && strings.ContainsRune(n.Value, 0) {
		return nil, &ParseError{File: c.file, Line: y.Line, Msg: "a value contains a NUL byte"}
	}
	return n, nil
}
