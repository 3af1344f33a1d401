package document

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

type jsonParser struct {
	ctx   context.Context
	file  string
	data  []byte
	dec   *json.Decoder
	count int // values read (see maxNodes)
	// The position of the last offset asked for: offsets are asked for in increasing
	// order, so that finding a line costs the bytes since the last one (no table of every
	// line start, which a file of 60 million newlines would make 480 MB).
	at, atLine, atLineStart int
}

func parseJSON(ctx context.Context, file string, data []byte) (*Node, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	p := &jsonParser{ctx: ctx, file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data)), atLine: 1}
	if valid, err := validUTF8(ctx, data); err != nil {
		return nil, err
	} else if !valid {
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
	if off, size, blank, err := jsonTokens(ctx, data); err != nil {
		return nil, err
	} else if off >= 0 {
		line, _ := p.pos(int64(off))
		if blank {
			return nil, tooMuchBlank(file, line, size)
		}
		return nil, tooLongValue(file, line, size)
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

// pos turns a byte offset into a 1-based line and column (of bytes).
func (p *jsonParser) pos(off int64) (int, int) {
	o := min(max(int(off), 0), len(p.data))
	if o < p.at { // an earlier offset (an error's): count from the start
		p.at, p.atLine, p.atLineStart = 0, 1, 0
	}
	seg := p.data[p.at:o]
	if n := bytes.Count(seg, []byte{'\n'}); n > 0 {
		p.atLine += n
		p.atLineStart = p.at + bytes.LastIndexByte(seg, '\n') + 1
	}
	p.at = o
	return p.atLine, o - p.atLineStart + 1
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
	if p.count++; p.count > maxNodes {
		line, _ := p.pos(p.dec.InputOffset())
		return nil, tooManyValues(p.file, line, valuesJSON)
	}
	if p.count%CheckEvery == 0 && p.ctx.Err() != nil {
		return nil, cancelled(p.ctx)
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

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// validUTF8 is utf8.Valid, a MiB at a time with a look at ctx between.
func validUTF8(ctx context.Context, data []byte) (bool, error) {
	for len(data) > 0 {
		if ctx.Err() != nil {
			return false, cancelled(ctx)
		}
		end := min(len(data), 1<<20)
		for back := 0; back < utf8.UTFMax-1 && end < len(data) && !utf8.RuneStart(data[end]); back++ {
			end-- // cut before a character, not inside it (a byte that no cut helps is invalid in the next piece)
		}
		if !utf8.Valid(data[:end]) {
			return false, nil
		}
		data = data[end:]
	}
	return true, nil
}
