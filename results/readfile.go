package results

import (
	"fmt"
	"io"
	"os"
)

// fileReader reads small files into a buffer it reuses, for the workers that read node
// folders: thousands of status.json and CSV files cost a few system calls each and no
// garbage. The returned bytes are valid until the next read.
type fileReader struct {
	buf []byte
}

// read returns path's contents. A file larger than limit is a *tooLargeError.
func (r *fileReader) read(path string, limit int64) ([]byte, error) {
	if r.buf == nil {
		r.buf = make([]byte, 16<<10)
	}
	n, err := readInto(path, &r.buf, limit)
	if err != nil {
		return nil, err
	}
	data := r.buf[:n]
	if len(r.buf) > 1<<20 {
		r.buf = nil // do not keep a big CSV's buffer for every worker
	}
	return data, nil
}

// tooLargeError is a file over a reader's limit.
type tooLargeError struct {
	path  string
	limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the %d MiB limit", e.path, e.limit>>20)
}

// readAllInto reads r into *buf from the start, growing it up to limit+1 bytes.
func readAllInto(r io.Reader, buf *[]byte, path string, limit int64) (int, error) {
	n := 0
	for {
		if n == len(*buf) {
			if int64(n) > limit {
				return 0, &tooLargeError{path: path, limit: limit}
			}
			grown := make([]byte, min(int64(2*len(*buf)), limit+1))
			copy(grown, (*buf)[:n])
			*buf = grown
		}
		m, err := r.Read((*buf)[n:])
		n += m
		if err == io.EOF {
			if int64(n) > limit {
				return 0, &tooLargeError{path: path, limit: limit}
			}
			return n, nil
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: path, Err: err}
		}
	}
}
