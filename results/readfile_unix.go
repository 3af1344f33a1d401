//go:build unix

package results

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// readInto reads a file with open, fstat, read until EOF, close: no poller registration,
// which os.ReadFile would add. Node folders hold what containers wrote, so the file must be
// a regular file itself: a symbolic link (to a host file, say) is refused, and a FIFO
// neither blocks the open nor is read.
func readInto(path string, buf *[]byte, limit int64) (int, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.ELOOP {
		return 0, &os.PathError{Op: "open", Path: path, Err: errors.New("is a symbolic link; a result must be a regular file written where it is, not a link to elsewhere")}
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0, &os.PathError{Op: "open", Path: path, Err: errors.New("is not a regular file")}
	}
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
