// Package atomicfile writes files so that readers never see a part of one: a temp file in
// the same folder, fsync, rename, fsync the folder. It is the one implementation the image
// cache, the node status files and the collected outputs share.
//
// Modes: a file that replaces a regular file keeps that file's permission bits (a 0600
// perf.csv stays 0600); a new file gets the mode os.Create gives, 0666 less the umask.
// WriteFileMode sets a mode the caller decides instead (a secret's 0600, a shared cache's
// 0644). A symbolic link under the name is refused (*LinkError): the rename would replace
// the link rather than write its target, and following it would let whoever planted it
// choose where benchctl writes.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data under name, keeping the mode of the regular file it replaces, or
// with 0666 less the umask when there is none. Readers see the old file or the new one.
func WriteFile(name string, data []byte) error {
	return write(name, data, 0, false)
}

// WriteFileMode writes data under name with exactly the permission bits perm, whatever the
// umask and the file it replaces had.
func WriteFileMode(name string, data []byte, perm fs.FileMode) error {
	return write(name, data, perm.Perm(), true)
}

// LinkError is a name that is a symbolic link: atomic writes neither follow nor replace it.
type LinkError struct{ Path string }

func (e *LinkError) Error() string {
	return fmt.Sprintf("writing %s: it is a symbolic link; benchctl replaces files by renaming a new one over them and does not write through links: give the path of the file itself", e.Path)
}

// InvalidInput marks the error as bad input: the user (or a co-writer of a shared folder)
// put the link there.
func (e *LinkError) InvalidInput() bool { return true }

func write(name string, data []byte, perm fs.FileMode, explicit bool) error {
	st, err := os.Lstat(name)
	switch {
	case err == nil && st.Mode()&fs.ModeSymlink != 0:
		return &LinkError{Path: name}
	case err == nil && st.Mode().IsRegular() && !explicit:
		perm, explicit = st.Mode().Perm(), true
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("writing %s: %w", name, err)
	}
	dir := filepath.Dir(name)
	tmp, err := createTemp(dir, "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if explicit { // the umask took bits off, or the mode must be exactly this
		if err := tmp.Chmod(perm); err != nil {
			tmp.Close()
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("syncing %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return SyncDir(dir)
}

// createTemp creates a new file in dir with mode 0666 less the umask (os.CreateTemp gives
// 0600, which would make every new file private).
func createTemp(dir, prefix string) (*os.File, error) {
	var b [8]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(b[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no unused temp file name in %s", dir)
}

// SyncDir makes a folder's entries (a rename, a new file) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing folder %s: %w", dir, err)
	}
	return nil
}
