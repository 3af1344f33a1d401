package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/benchctl/benchctl/internal/safefile"
)

// PlantedError is a lock path that holds something other than a regular file: a link, a
// FIFO, a folder. A co-writer of the shared directory may have put it there; opening it
// would create the link's target (as root, anywhere) or block on the FIFO, so it is
// refused instead.
type PlantedError struct {
	Path string
	What string // "a symbolic link", "a FIFO", ...
}

func (e *PlantedError) Error() string {
	return fmt.Sprintf("locking %s: it is %s, not a lock file benchctl made: remove it (someone with write access to the folder put it there)", e.Path, e.What)
}

// InvalidInput marks the error as bad input (exit 4).
func (e *PlantedError) InvalidInput() bool { return true }

// checkPlanted refuses a lock path that exists and is not a regular file. It only makes
// the error clear: the open that follows also refuses a link (O_NOFOLLOW) and cannot
// block on a FIFO (O_NONBLOCK), so a swap after this look changes nothing.
func checkPlanted(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", path, err)
	}
	if st.Mode().IsRegular() {
		return nil
	}
	return &PlantedError{Path: path, What: safefile.Describe(st.Mode())}
}
