//go:build unix

package host

import (
	"os"

	"golang.org/x/sys/unix"
)

// openDir opens a folder, links followed (sysfs is made of them), without blocking: a FIFO
// swapped in after the caller's stat fails with ENOTDIR instead of waiting for a writer.
func openDir(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
