//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// linkHint is what a reader of the job folder is told about a symbolic link.
const linkHint = "a file in the job folder must be written where it is, not linked to elsewhere"

// Open opens a file a user named for reading: links are followed, but the file must be a
// regular file. A FIFO is refused without blocking (checked before the open, and the open
// is non-blocking, so a FIFO swapped in between cannot block it either).
func Open(path string) (*os.File, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, &NotRegularError{Path: path, What: describe(st.Mode())}
	}
	return openFlags(path, 0, "")
}

// OpenNoFollow opens a file of the job folder: a regular file that is not itself a link.
func OpenNoFollow(path string) (*os.File, error) {
	return openFlags(path, unix.O_NOFOLLOW, linkHint)
}

func openFlags(path string, extra int, hint string) (*os.File, error) {
	fd, err := openFD(path, extra, hint)
	if err != nil {
		return nil, err
	}
	return asFile(fd, path)
}

func openFD(path string, extra int, hint string) (int, error) {
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|extra, 0)
	})
	if err == unix.ELOOP && extra&unix.O_NOFOLLOW != 0 {
		return -1, &NotRegularError{Path: path, What: "a symbolic link", Hint: hint}
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return checkedFD(fd, path, hint)
}

// checkedFD returns fd if it is a regular file, else closes it.
func checkedFD(fd int, path, hint string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, &NotRegularError{Path: path, What: describe(modeOf(uint32(st.Mode))), Hint: hint}
	}
	return fd, nil
}

// asFile makes a checked regular file's fd an *os.File.
func asFile(fd int, path string) (*os.File, error) {
	// A regular file never blocks; clear the flag so that the *os.File is a plain one.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// fdFile reads a file descriptor directly, retrying EINTR; 0 bytes is io.EOF.
type fdFile int

func (f fdFile) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f fdFile) Close() error { return unix.Close(int(f)) }

func openNoFollowRaw(path string) (rawFile, error) {
	fd, err := openFD(path, unix.O_NOFOLLOW, linkHint)
	if err != nil {
		return nil, err
	}
	return fdFile(fd), nil
}

func openBeneathRaw(root, rel string) (rawFile, error) {
	fd, err := openBeneathFD(root, rel)
	if err != nil {
		return nil, err
	}
	return fdFile(fd), nil
}

func modeOf(m uint32) os.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFIFO:
		return os.ModeNamedPipe
	case unix.S_IFSOCK:
		return os.ModeSocket
	case unix.S_IFCHR:
		return os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		return os.ModeDevice
	case unix.S_IFDIR:
		return os.ModeDir
	case unix.S_IFLNK:
		return os.ModeSymlink
	}
	return os.ModeIrregular
}

func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// OutsideError is a path that leads out of the folder it must stay in.
type OutsideError struct {
	Root, Rel string
	Why       string
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("%s: %s; %s", filepath.Join(e.Root, e.Rel), e.Why, linkHint)
}

// OpenBeneath opens rel inside root: every component is resolved inside root, so a link
// anywhere on the way cannot lead outside it, and the file itself must be a regular file,
// not a link. rel must be a local path (no "..", not absolute). With openat2 (Linux 5.6+)
// links that stay beneath root are followed; without it any link on the way is refused.
func OpenBeneath(root, rel string) (*os.File, error) {
	fd, err := openBeneathFD(root, rel)
	if err != nil {
		return nil, err
	}
	return asFile(fd, filepath.Join(root, rel))
}

func openBeneathFD(root, rel string) (int, error) {
	if !filepath.IsLocal(rel) {
		return -1, &OutsideError{Root: root, Rel: rel, Why: "not a path inside the folder"}
	}
	dfd, err := retry(func() (int, error) {
		return unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dfd)
	full := filepath.Join(root, rel)
	fd, err := openat2Beneath(dfd, rel)
	if errors.Is(err, errNoOpenat2) {
		fd, err = walkBeneath(dfd, root, rel)
	}
	switch {
	case err == unix.EXDEV:
		return -1, &OutsideError{Root: root, Rel: rel, Why: "a symbolic link on the way leads outside " + root}
	case err == unix.ELOOP:
		return -1, &NotRegularError{Path: full, What: "a symbolic link (or a chain of them)", Hint: linkHint}
	case err != nil:
		var oe *OutsideError
		var nr *NotRegularError
		if errors.As(err, &oe) || errors.As(err, &nr) {
			return -1, err
		}
		return -1, &os.PathError{Op: "open", Path: full, Err: err}
	}
	return checkedFD(fd, full, linkHint)
}

// walkBeneath opens rel one component at a time, never following a link.
func walkBeneath(dfd int, root, rel string) (int, error) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	cur := dfd
	closeCur := func() {
		if cur != dfd {
			unix.Close(cur)
		}
	}
	for i, p := range parts {
		last := i == len(parts)-1
		flags := unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW
		if last {
			flags |= unix.O_NONBLOCK
		} else {
			flags |= unix.O_DIRECTORY
		}
		fd, err := retry(func() (int, error) { return unix.Openat(cur, p, flags, 0) })
		if err == unix.ELOOP || (err == unix.ENOTDIR && !last) {
			var st unix.Stat_t
			if unix.Fstatat(cur, p, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				closeCur()
				return -1, &OutsideError{Root: root, Rel: rel,
					Why: strings.Join(parts[:i+1], "/") + " is a symbolic link (links are not followed in the job folder on this kernel)"}
			}
		}
		closeCur()
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// Owner is the user id that owns the file fi describes (from Lstat, Stat or ReadDir).
func Owner(fi os.FileInfo) (uid int, ok bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

// noFollow is O_NOFOLLOW where the system has it.
const noFollow = unix.O_NOFOLLOW
