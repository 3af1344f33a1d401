//go:build !unix

package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// NotFolderError is a path where a folder should be that is a link or another kind of file.
type NotFolderError struct{ Path, What string }

func (e *NotFolderError) Error() string { return e.Path + " is " + e.What + ", not a folder" }

// OwnerError is a folder or file owned by another user (not detected on this system).
type OwnerError struct {
	Path        string
	Owner, Want int
	Directory   bool
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("%s is owned by uid %d, not by uid %d", e.Path, e.Owner, e.Want)
}

// ModeError is a private file or folder that others may use (not detected on this system).
type ModeError struct {
	Path string
	Mode os.FileMode
}

func (e *ModeError) Error() string { return fmt.Sprintf("%s has mode %04o", e.Path, uint32(e.Mode)) }

// OpenDir opens a folder that is not a link.
func OpenDir(path string) (*os.File, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &NotFolderError{Path: path, What: describe(st.Mode())}
	}
	return os.Open(path)
}

// OpenDirAt opens the folder name inside parent.
func OpenDirAt(parent *os.File, name string) (*os.File, error) {
	return OpenDir(filepath.Join(parent.Name(), name))
}

// MkdirAt creates the folder name inside parent unless it exists, and opens it.
func MkdirAt(parent *os.File, name string, perm os.FileMode) (*os.File, bool, error) {
	p := filepath.Join(parent.Name(), name)
	err := os.Mkdir(p, perm)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return nil, false, err
	}
	d, oerr := OpenDir(p)
	return d, err == nil, oerr
}

// CreateAt opens the file name inside parent for writing, truncated.
func CreateAt(parent *os.File, name string, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(filepath.Join(parent.Name(), name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
}

// AppendAt opens the file name inside parent for appending, creating it with perm.
func AppendAt(parent *os.File, name string, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(filepath.Join(parent.Name(), name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
}

// CheckOwner is not checked on this system.
func CheckOwner(*os.File, int) error { return nil }

// CheckPrivate is not checked on this system.
func CheckPrivate(*os.File, int) error { return nil }

// OpenAt opens the regular file name inside dir for reading, not through a link.
func OpenAt(dir *os.File, name string) (*os.File, error) {
	return OpenNoFollow(filepath.Join(dir.Name(), name))
}

// InvalidInput marks the error as bad input: the job folder is the user's to fix (exit 4).
func (e *NotFolderError) InvalidInput() bool { return true }

// InvalidInput marks the error as bad input (exit 4).
func (e *OwnerError) InvalidInput() bool { return true }

// InvalidInput marks the error as bad input (exit 4).
func (e *ModeError) InvalidInput() bool { return true }

// CreateNewAt creates the file name inside dir, which must not exist yet.
func CreateNewAt(dir *os.File, name string, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir.Name(), name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

// RemoveAt removes the entry name inside dir (by path: no *at calls here). A missing entry
// is not an error.
func RemoveAt(dir *os.File, name string) error {
	if err := os.Remove(filepath.Join(dir.Name(), name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// LstatAt returns the type and size of name inside dir without following it (the mode
// holds only the type bits, 0 for a regular file).
func LstatAt(dir *os.File, name string) (os.FileMode, int64, error) {
	fi, err := os.Lstat(filepath.Join(dir.Name(), name))
	if err != nil {
		return 0, 0, err
	}
	return fi.Mode().Type(), fi.Size(), nil
}
