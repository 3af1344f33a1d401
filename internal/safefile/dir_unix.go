//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// NotFolderError is a path where a folder should be that is a link or another kind of file.
type NotFolderError struct {
	Path string
	What string // "a symbolic link", "a regular file", ...
}

func (e *NotFolderError) Error() string {
	return e.Path + " is " + e.What + ", not a folder: benchctl writes only into real folders of the job, never through a link"
}

// OwnerError is a folder or file owned by another user than the one benchctl runs as.
type OwnerError struct {
	Path      string
	Owner     int
	Want      int
	Directory bool
}

func (e *OwnerError) Error() string {
	what := "file"
	if e.Directory {
		what = "folder"
	}
	return fmt.Sprintf("%s is owned by uid %d, not by this user (uid %d): benchctl writes only into its own %ss of the job folder", e.Path, e.Owner, e.Want, what)
}

// OpenDir opens the folder at path for use as a base of *At calls. The last component
// must not be a link (earlier ones may be: a site's shared directory often is one).
func OpenDir(path string) (*os.File, error) {
	return openDirAt(unix.AT_FDCWD, path, path)
}

// OpenDirAt opens the folder name (one component) inside parent, never through a link.
func OpenDirAt(parent *os.File, name string) (*os.File, error) {
	full := filepath.Join(parent.Name(), name)
	if err := oneComponent(name); err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	return openDirAt(int(parent.Fd()), name, full)
}

func openDirAt(dfd int, name, full string) (*os.File, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			return nil, &NotFolderError{Path: full, What: describe(modeOf(uint32(st.Mode)))}
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// MkdirAt creates the folder name (one component) inside parent with perm (less the
// umask) unless it exists, and opens it, never through a link. created says whether this
// call made it.
func MkdirAt(parent *os.File, name string, perm os.FileMode) (dir *os.File, created bool, err error) {
	full := filepath.Join(parent.Name(), name)
	if err := oneComponent(name); err != nil {
		return nil, false, &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	err = unix.Mkdirat(int(parent.Fd()), name, uint32(perm.Perm()))
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, false, &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	d, oerr := openDirAt(int(parent.Fd()), name, full)
	return d, err == nil, oerr
}

// CreateAt opens the regular file name (one component) inside parent for writing,
// creating it with perm (less the umask) and truncating it: never through a link, and a
// FIFO or device there is refused without blocking.
func CreateAt(parent *os.File, name string, perm os.FileMode) (*os.File, error) {
	fd, full, err := openWriteAt(parent, name, 0, perm)
	if err != nil {
		return nil, err
	}
	if err := unix.Ftruncate(fd, 0); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "truncate", Path: full, Err: err}
	}
	return asFile(fd, full)
}

// AppendAt opens the file name (one component) inside parent for appending, creating it
// with perm when missing: never a link, never a FIFO (refused without blocking), and never
// truncated. Each Write of the returned file lands at its end (O_APPEND).
func AppendAt(parent *os.File, name string, perm os.FileMode) (*os.File, error) {
	fd, full, err := openWriteAt(parent, name, unix.O_APPEND, perm)
	if err != nil {
		return nil, err
	}
	return asFile(fd, full)
}

// openWriteAt opens name inside parent for writing (with extra flags), created with perm
// when missing, and checks that it is a regular file: a link or a FIFO is refused, never
// followed or waited on.
func openWriteAt(parent *os.File, name string, extra int, perm os.FileMode) (int, string, error) {
	full := filepath.Join(parent.Name(), name)
	if err := oneComponent(name); err != nil {
		return -1, full, &os.PathError{Op: "open", Path: full, Err: err}
	}
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(parent.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|extra, uint32(perm.Perm()))
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, full, &NotRegularError{Path: full, What: "a symbolic link", Hint: linkHint}
	case errors.Is(err, unix.ENXIO): // a FIFO without a reader
		return -1, full, &NotRegularError{Path: full, What: "a FIFO (named pipe)", Hint: linkHint}
	case err != nil:
		return -1, full, &os.PathError{Op: "open", Path: full, Err: err}
	}
	fd, err = checkedFD(fd, full, linkHint)
	return fd, full, err
}

// CheckOwner returns an *OwnerError unless f is owned by uid.
func CheckOwner(f *os.File, uid int) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if int(st.Uid) != uid {
		return &OwnerError{Path: f.Name(), Owner: int(st.Uid), Want: uid, Directory: st.Mode&unix.S_IFMT == unix.S_IFDIR}
	}
	return nil
}

// CheckPrivate returns an error unless f is owned by uid and neither group nor others
// have any permission on it (a folder 0700, a file 0600).
func CheckPrivate(f *os.File, uid int) error {
	if err := CheckOwner(f, uid); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if perm := st.Mode & 0o777; perm&0o077 != 0 {
		return &ModeError{Path: f.Name(), Mode: os.FileMode(perm)}
	}
	return nil
}

// ModeError is a private file or folder that group or others may use.
type ModeError struct {
	Path string
	Mode os.FileMode
}

func (e *ModeError) Error() string {
	return fmt.Sprintf("%s has mode %04o: group or others may use it, and it must be private to its owner (0700 for a folder, 0600 for a file)", e.Path, uint32(e.Mode))
}

func oneComponent(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%q is not one file name", name)
	}
	return nil
}

// OpenAt opens the regular file name (one component) inside dir for reading: not a link,
// and a FIFO or device is refused without blocking.
func OpenAt(dir *os.File, name string) (*os.File, error) {
	full := filepath.Join(dir.Name(), name)
	if err := oneComponent(name); err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	})
	if errors.Is(err, unix.ELOOP) {
		return nil, &NotRegularError{Path: full, What: "a symbolic link", Hint: linkHint}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: full, Err: err}
	}
	if fd, err = checkedFD(fd, full, linkHint); err != nil {
		return nil, err
	}
	return asFile(fd, full)
}

// InvalidInput marks the error as bad input: the job folder is the user's to fix (exit 4).
func (e *NotFolderError) InvalidInput() bool { return true }

// InvalidInput marks the error as bad input (exit 4).
func (e *OwnerError) InvalidInput() bool { return true }

// InvalidInput marks the error as bad input (exit 4).
func (e *ModeError) InvalidInput() bool { return true }

// CreateNewAt creates the file name (one component) inside dir, which must not exist yet
// (O_EXCL: not even as a link), with exactly perm, and opens it for writing.
func CreateNewAt(dir *os.File, name string, perm os.FileMode) (*os.File, error) {
	full := filepath.Join(dir.Name(), name)
	if err := oneComponent(name); err != nil {
		return nil, &os.PathError{Op: "create", Path: full, Err: err}
	}
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	})
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: full, Err: err}
	}
	f := os.NewFile(uintptr(fd), full)
	if err := f.Chmod(perm.Perm()); err != nil { // the umask may have taken bits off
		f.Close()
		return nil, err
	}
	return f, nil
}

// RemoveAt removes the entry name (one component; a file, or a link itself, never what it
// leads to) inside dir. A missing entry is not an error.
func RemoveAt(dir *os.File, name string) error {
	full := filepath.Join(dir.Name(), name)
	if err := oneComponent(name); err != nil {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	return nil
}

// LstatAt returns the type and size of name (one component) inside dir without following
// it: a link is reported as a link, a FIFO or device by its type, and nothing is opened.
// The mode holds only the type bits (0 for a regular file).
func LstatAt(dir *os.File, name string) (os.FileMode, int64, error) {
	full := filepath.Join(dir.Name(), name)
	if err := oneComponent(name); err != nil {
		return 0, 0, &os.PathError{Op: "lstat", Path: full, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, 0, &os.PathError{Op: "lstat", Path: full, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		return 0, st.Size, nil
	}
	return modeOf(uint32(st.Mode)), st.Size, nil
}
