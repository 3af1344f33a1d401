// Package atomicfile writes files so that readers never see a part of one: a temp file in
// the same folder, fsync, rename, fsync the folder. It is the one implementation the image
// cache, the node status files and the collected outputs share.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data under name (mode 0644). Readers see the old file or the new one.
func WriteFile(name string, data []byte) error {
	dir := filepath.Dir(name)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
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
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return SyncDir(dir)
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
