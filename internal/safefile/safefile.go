package safefile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// TooLargeError is a file over a reader's limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the %s limit", e.Path, sizeText(e.Limit))
}

// SizeText writes a byte count for a message: "1 GiB", "16 MiB", "64 KiB", or "100-byte"
// (as in "the 100-byte limit").
func SizeText(n int64) string { return sizeText(n) }

func sizeText(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d-byte", n)
}

// NotRegularError is a path that is not a regular file: a FIFO, a socket, a device, a
// folder, or (where links are refused) a symbolic link.
type NotRegularError struct {
	Path string
	What string // "a FIFO (named pipe)", "a symbolic link", ...
	Hint string
}

func (e *NotRegularError) Error() string {
	msg := e.Path + " is " + e.What + ", not a regular file"
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// InvalidInput marks the error as bad input where a user named the file.
func (e *NotRegularError) InvalidInput() bool { return true }

// describe names a file type for a person.
func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeDir != 0:
		return "a folder"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// ReadFile reads a file a user named (a manifest, a build record, a context file): links
// are followed, but the file must be a regular file of at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf []byte
	n, err := readAll(f, &buf, path, limit)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// ReadFileNoFollow reads a file from a shared folder (the image cache): a regular file of
// at most limit bytes that is not itself a symbolic link (a link, FIFO, socket or device
// is a *NotRegularError, and a FIFO never blocks the open).
func ReadFileNoFollow(path string, limit int64) ([]byte, error) {
	var r Reader
	data, err := r.ReadNoFollow(path, limit)
	if err != nil {
		return nil, err
	}
	return slices.Clone(data), nil
}

// Describe names a file type for a person: "a symbolic link", "a FIFO (named pipe)", ...
func Describe(m fs.FileMode) string { return describe(m) }

// Reader reads many small files into a buffer it reuses (thousands of status.json and
// CSV files cost a few system calls each and no garbage). The bytes returned are valid
// until the next read. The zero value is ready to use; a Reader is not safe for
// concurrent use.
type Reader struct {
	buf []byte
}

// ReadNoFollow reads a file from the job folder: a regular file of at most limit bytes,
// not itself a symbolic link.
func (r *Reader) ReadNoFollow(path string, limit int64) ([]byte, error) {
	f, err := openNoFollowRaw(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.readFrom(f, path, limit)
}

// ReadBeneath reads rel, resolved beneath root (see OpenBeneath), of at most limit bytes.
func (r *Reader) ReadBeneath(root, rel string, limit int64) ([]byte, error) {
	f, err := openBeneathRaw(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return r.readFrom(f, filepath.Join(root, rel), limit)
}

// rawFile is an open file read without an *os.File (no allocation, no finalizer): the
// Reader's thousands of small reads stay cheap.
type rawFile interface {
	io.Reader
	Close() error
}

func (r *Reader) readFrom(f io.Reader, path string, limit int64) ([]byte, error) {
	if r.buf == nil {
		r.buf = make([]byte, 16<<10)
	}
	n, err := readAll(f, &r.buf, path, limit)
	if err != nil {
		return nil, err
	}
	data := r.buf[:n]
	if len(r.buf) > 1<<20 {
		r.buf = nil // do not keep a big file's buffer
	}
	return data, nil
}

// readAll reads r into *buf from the start, growing it up to limit+1 bytes.
func readAll(r io.Reader, buf *[]byte, path string, limit int64) (int, error) {
	if len(*buf) == 0 {
		*buf = make([]byte, min(16<<10, limit+1))
	}
	n := 0
	for {
		if n == len(*buf) {
			if int64(n) > limit {
				return 0, &TooLargeError{Path: path, Limit: limit}
			}
			grown := make([]byte, min(int64(2*len(*buf)), limit+1))
			copy(grown, (*buf)[:n])
			*buf = grown
		}
		m, err := r.Read((*buf)[n:])
		n += m
		if err == io.EOF {
			if int64(n) > limit {
				return 0, &TooLargeError{Path: path, Limit: limit}
			}
			return n, nil
		}
		if err != nil {
			return 0, &os.PathError{Op: "read", Path: path, Err: err}
		}
	}
}

// ReadOpen reads an open file (from OpenAt) from its current offset, of at most limit
// bytes, into the Reader's buffer.
func (r *Reader) ReadOpen(f *os.File, limit int64) ([]byte, error) {
	return r.readFrom(f, f.Name(), limit)
}

// OwnedPrivately reports whether fi is the caller's (this process's uid) and no one else
// may write it (no group or other write bit): what a reader believes of a derived file,
// such as an index or a reference, in a shared folder where anyone else could write one.
// Where files have no Unix owner it is false.
func OwnedPrivately(fi os.FileInfo) bool {
	uid, ok := Owner(fi)
	return ok && uid == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}
