//go:build unix

package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// WriteFileAt writes data under name inside the open folder dir, atomically: a temp file
// created beside it (openat O_CREAT|O_EXCL|O_NOFOLLOW), fsync, renameat, fsync the folder.
// Every step is relative to dir's descriptor, so a folder on the way that is swapped for a
// link after dir was opened cannot redirect the write. name must be one path component.
// A regular file already at name keeps its mode (permission bits); a new file gets perm
// less the umask. A link (or anything else) at name is replaced as a name, never
// followed; a folder there is an error.
func WriteFileAt(dir *os.File, name string, data []byte, perm os.FileMode) error {
	return writeAt(dir, name, data, perm, true)
}

// ReplaceFileAt is WriteFileAt without its two fsyncs: readers see the old file or the new
// one, as with WriteFileAt, but after a crash of the machine (not of benchctl) the file may
// hold an older content. For a file rewritten often whose last write alone must last (a
// progress view: status.json while the node runs), at a fraction of the cost on a shared
// file system.
func ReplaceFileAt(dir *os.File, name string, data []byte, perm os.FileMode) error {
	return writeAt(dir, name, data, perm, false)
}

// syncFile and syncFD are the fsyncs of a written file and of its folder (counted by tests).
var (
	syncFile = (*os.File).Sync
	syncFD   = unix.Fsync
)

func writeAt(dir *os.File, name string, data []byte, perm os.FileMode, durable bool) error {
	full := filepath.Join(dir.Name(), name)
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("writing %s: %q is not a file name", full, name)
	}
	dfd := int(dir.Fd())
	keep := -1
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
		keep = int(st.Mode & 0o7777)
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return fmt.Errorf("writing %s: a folder is in the way", full)
	case err != nil && !errors.Is(err, unix.ENOENT):
		return fmt.Errorf("writing %s: %w", full, err)
	}
	tmp, fd, err := createTempAt(dfd, name, perm)
	if err != nil {
		return fmt.Errorf("writing %s: %w", full, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), tmp))
	done := false
	defer func() {
		if !done {
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", full, err)
	}
	if keep >= 0 {
		if err := f.Chmod(os.FileMode(keep) & os.ModePerm); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", full, err)
		}
	}
	if durable {
		if err := syncFile(f); err != nil {
			f.Close()
			return fmt.Errorf("syncing %s: %w", full, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", full, err)
	}
	if err := unix.Renameat(dfd, tmp, dfd, name); err != nil {
		return fmt.Errorf("writing %s: %w", full, err)
	}
	done = true
	if !durable {
		return nil
	}
	if err := syncFD(dfd); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("syncing folder %s: %w", dir.Name(), err)
	}
	return nil
}

// createTempAt creates a new file ".<name>.tmp-<random>" in dfd, never through a link.
func createTempAt(dfd int, name string, perm os.FileMode) (string, int, error) {
	for range 100 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", -1, err
		}
		tmp := "." + name + ".tmp-" + hex.EncodeToString(b[:])
		fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return tmp, fd, err
	}
	return "", -1, errors.New("could not find a free temp file name")
}
