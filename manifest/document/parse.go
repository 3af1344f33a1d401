package document

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Parse parses JSON (by a .json name) or YAML into a Node tree.
func Parse(name string, data []byte) (*Node, error) {
	return ParseContext(context.Background(), name, data)
}

// ParseContext is Parse that stops when ctx ends, returning its cause. Whatever data holds,
// the parse keeps a bounded number of values (see the limits in limits.go): a larger
// document is a *ParseError that says which limit it passed.
func ParseContext(ctx context.Context, name string, data []byte) (*Node, error) {
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return parseJSON(ctx, name, data)
	}
	return parseYAML(ctx, name, data)
}

// ReadLimited reads f to its end, at most limit+1 bytes (more than limit means too large:
// the caller says so). The buffer is sized from the file's size, so that a file near the
// limit costs its size once, not the several copies of a growing buffer.
func ReadLimited(f *os.File, limit int64) ([]byte, error) {
	size := int64(512)
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		size = min(st.Size(), limit) + 1
	}
	buf := make([]byte, 0, size)
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // the file grew since the stat
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), int(limit)+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}
