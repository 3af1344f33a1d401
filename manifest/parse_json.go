package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 64

type jsonParser struct {
	file       string
	dec        *json.Decoder
	lineStarts []int
}

func parseJSON(file string, data []byte) (*Node, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	p := &jsonParser{file: file, dec: json.NewDecoder(bytes.NewReader(data)), lineStarts: []int{0}}
	for i, b := range data {
		if b == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, size := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			off += size
		}
		line, col := p.pos(int64(off))
		return nil, &ParseError{File: file, Line: line, Col: col, Msg: "the file is not UTF-8 text (save it as UTF-8)"}
	}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		line, col := p.pos(p.dec.InputOffset())
		return nil, &ParseError{File: file, Line: line, Col: col, Msg: "unexpected content after the end of the JSON document"}
	}
	return n, nil
}

// pos turns a byte offset into a 1-based line and column.
func (p *jsonParser) pos(off int64) (int, int) {
	i := sort.Search(len(p.lineStarts), func(i int) bool { return int64(p.lineStarts[i]) > off }) - 1
	if i < 0 {
		i = 0
	}
	return i + 1, int(off) - p.lineStarts[i] + 1
}

func (p *jsonParser) fail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := p.pos(se.Offset)
		return &ParseError{File: p.file, Line: line, Col: col, Msg: "invalid JSON: " + se.Error()}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		line, _ := p.pos(p.dec.InputOffset())
		if p.dec.InputOffset() == 0 {
			return &ParseError{File: p.file, Msg: "the document is empty"}
		}
		return &ParseError{File: p.file, Line: line, Msg: "invalid JSON: unexpected end of input (a bracket or brace is not closed)"}
	}
	return &ParseError{File: p.file, Msg: "invalid JSON: " + err.Error()}
}

func (p *jsonParser) value(depth int) (*Node, error) {
	if depth > maxDepth {
		line, _ := p.pos(p.dec.InputOffset())
		return nil, &ParseError{File: p.file, Line: line, Msg: fmt.Sprintf("nested more than %d levels deep", maxDepth)}
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.fail(err)
	}
	end := p.dec.InputOffset()
	line, col := p.pos(end - 1)
	n := &Node{Line: line, Col: col}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind = MapNode
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.fail(err)
				}
				kl, kc := p.pos(p.dec.InputOffset() - 1)
				ks, _ := kt.(string)
				key := &Node{Kind: ScalarNode, Tag: TagStr, Value: ks, Line: kl, Col: kc}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Keys = append(n.Keys, key)
				n.Items = append(n.Items, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.fail(err)
			}
			if err := checkDuplicateKeys(p.file, n); err != nil {
				return nil, err
			}
		case '[':
			n.Kind = SeqNode
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Items = append(n.Items, v)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.fail(err)
			}
		default:
			return nil, &ParseError{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf("invalid JSON: unexpected %q", rune(t))}
		}
	case string:
		if strings.ContainsRune(t, 0) {
			return nil, &ParseError{File: p.file, Line: line, Col: col, Msg: "a value contains a NUL byte"}
		}
		n.Kind, n.Tag, n.Value = ScalarNode, TagStr, t
	case json.Number:
		n.Kind, n.Tag, n.Value = ScalarNode, TagInt, t.String()
		if bytes.ContainsAny([]byte(t), ".eE") {
			n.Tag = TagFloat
		}
	case bool:
		n.Kind, n.Tag, n.Value = ScalarNode, TagBool, fmt.Sprint(t)
	case nil:
		n.Kind, n.Tag, n.Value = NullNode, TagNull, "null"
	}
	return n, nil
}
