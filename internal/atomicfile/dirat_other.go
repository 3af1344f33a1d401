//go:build !unix

package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteFileAt writes data under name inside the folder dir, atomically (see WriteFile).
// Without openat, the folder is named by its path.
func WriteFileAt(dir *os.File, name string, data []byte, perm os.FileMode) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("writing %s: %q is not a file name", filepath.Join(dir.Name(), name), name)
	}
	return WriteFile(filepath.Join(dir.Name(), name), data)
}

// ReplaceFileAt is WriteFileAt (see the Linux one: there, without its fsyncs).
func ReplaceFileAt(dir *os.File, name string, data []byte, perm os.FileMode) error {
	return WriteFileAt(dir, name, data, perm)
}
