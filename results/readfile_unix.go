//go:build unix

package results

import (
	"io"
	"os"
	"syscall"
)

// readInto reads a file with open, read until EOF, close: no poller registration and no
// stat, which os.ReadFile would add.
func readInto(path string, buf *[]byte, limit int64) (int, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	return readAllInto(fdReader(fd), buf, path, limit)
}

// fdReader reads a file descriptor, retrying EINTR; 0 bytes is io.EOF.
type fdReader int

func (f fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
