package document

import (
	"context"
	"fmt"
	"io"
)

// Limits on what a document may hold, so that no input within the size caps (4 MiB for a
// manifest, 64 MiB for a catalog) can exhaust memory or time: a parse keeps at most
// maxNodes values, maxDepth levels and maxScalar bytes per value, whatever the file holds.
// A real manifest holds a few hundred values; MAD's models.json a few tens of thousands.
const (
	// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
	maxDepth = 64
	// maxNodes bounds the values (mappings, lists, scalars) of one document, and alias
	// expansion ("billion laughs") with it.
	maxNodes = 200000
	// maxScalar bounds one string or number as written, in bytes.
	maxScalar = 1 << 20
	// maxYAMLMarks bounds the YAML syntax read before the YAML library builds its own
	// tree (which costs about 200 bytes a value, and is built before benchctl can count
	// values): the indicators that open a value (',', ':', '-', '?', '[', '{') and the
	// lines that hold something. Every value needs one, a flow mapping in a flow list aside,
	// which needs 2 for 3 values; so the library's tree stays under 3×maxNodes values.
	maxYAMLMarks = 2 * maxNodes // so that the message can say "more than maxNodes values"
	// CheckEvery is how many values are read (or checked, by a caller's loop) between two
	// looks at the context.
	CheckEvery = 1024
)

func tooManyValues(file string, line int, what string) error {
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf("more than %d %s: benchctl reads no larger document; split it into smaller files", maxNodes, what)}
}

// What tooManyValues counts.
const (
	valuesJSON  = "values (lists, objects, strings, numbers)"
	valuesYAML  = "values (lists, mappings, scalars; an alias counts each time it is used)"
	valuesMarks = "values (the YAML's ',', ':', '-', '?', '[', '{' and lines are counted before it is read, as many as 2 per value)"
)

func tooLongValue(file string, line, n int) error {
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf("a value of %d bytes: one value may be at most %d MiB; put such data in a file and give its path", n, maxScalar>>20)}
}

func tooMuchBlank(file string, line, n int) error {
	return &ParseError{File: file, Line: line, Msg: fmt.Sprintf("%d bytes of blank space in a row: at most %d MiB are read; remove them", n, maxScalar>>20)}
}

// cancelled is the error of a parse that ctx stopped: its cause (the signal that
// interrupted the command), which is a context.Canceled.
func cancelled(ctx context.Context) error { return context.Cause(ctx) }

// ctxReader is a reader that stops when ctx ends (checked at every read): a library that
// parses from a reader (the YAML decoder) then stops at its next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, cancelled(c.ctx)
	}
	if len(p) > 64<<10 {
		p = p[:64<<10] // look at ctx at least every 64 KiB
	}
	return c.r.Read(p)
}

// jsonTokens finds a JSON string or literal longer than maxScalar, or a run of blank space
// as long, before the JSON decoder buffers and copies it (a 60 MB string, or 60 million
// newlines, would otherwise cost several times that). It returns the offset and length of
// the first such run, or -1.
func jsonTokens(ctx context.Context, data []byte) (off, n int, blankRun bool, err error) {
	start := -1 // first byte of the current string's text, or of the current literal
	blank := -1 // first byte of the current run of blank space
	inStr, esc := false, false
	for i, b := range data {
		if i&(1<<20-1) == 0 && ctx.Err() != nil {
			return -1, 0, false, cancelled(ctx)
		}
		if inStr {
			switch {
			case esc:
				esc = false
			case b == '\\':
				esc = true
			case b == '"':
				if i-start > maxScalar {
					return start, i - start, false, nil
				}
				inStr, start = false, -1
			}
			continue
		}
		if isBlank(b) {
			if blank < 0 {
				blank = i
			}
		} else if blank >= 0 {
			if i-blank > maxScalar {
				return blank, i - blank, true, nil
			}
			blank = -1
		}
		switch b {
		case '"', '{', '}', '[', ']', ',', ':', ' ', '\t', '\r', '\n':
			if start >= 0 && i-start > maxScalar {
				return start, i - start, false, nil
			}
			start = -1
			if b == '"' {
				inStr, start = true, i+1
			}
		default:
			if start < 0 {
				start = i
			}
		}
	}
	if start >= 0 && len(data)-start > maxScalar {
		return start, len(data) - start, false, nil
	}
	if blank >= 0 && len(data)-blank > maxScalar {
		return blank, len(data) - blank, true, nil
	}
	return -1, 0, false, nil
}

// yamlMarks counts what opens a YAML value (see maxYAMLMarks) and returns the offset at
// which the count passes max, or -1. Marks inside quoted text and comments are counted too:
// the count is an upper bound, cheap to take before the YAML library reads the file.
func yamlMarks(ctx context.Context, data []byte, max int) (int, error) {
	count := 0
	lineStart := true
	for i, b := range data {
		if i&(1<<20-1) == 0 && ctx.Err() != nil {
			return -1, cancelled(ctx)
		}
		switch b {
		case '\n':
			lineStart = true
			continue
		case ' ', '\t', '\r':
			continue
		case ',', ':', '-', '?', '[', '{':
			count++
		}
		if lineStart {
			count++
			lineStart = false
		}
		if count > max {
			return i, nil
		}
	}
	return -1, nil
}
