//go:build linux

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestDirHelpersRefuseLinksAndFIFOs(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	os.Symlink(elsewhere, filepath.Join(dir, "linked"))
	var nf *NotFolderError
	if _, err := OpenDirAt(d, "linked"); !errors.As(err, &nf) || !strings.Contains(err.Error(), "linked is a symbolic link, not a folder") {
		t.Errorf("OpenDirAt(link) = %v", err)
	}
	if _, _, err := MkdirAt(d, "linked", 0o755); !errors.As(err, &nf) {
		t.Errorf("MkdirAt(link) = %v", err)
	}
	if _, err := OpenDir(filepath.Join(dir, "linked")); !errors.As(err, &nf) {
		t.Errorf("OpenDir(link) = %v", err)
	}
	sub, created, err := MkdirAt(d, "sub", 0o700)
	if err != nil || !created {
		t.Fatalf("MkdirAt: %v %v", created, err)
	}
	sub.Close()
	if sub, created, err = MkdirAt(d, "sub", 0o700); err != nil || created {
		t.Fatalf("MkdirAt again: %v %v", created, err)
	}
	if err := CheckPrivate(sub, os.Geteuid()); err != nil {
		t.Errorf("a 0700 folder: %v", err)
	}
	sub.Close()
	for _, name := range []string{"a/b", "..", ""} {
		if _, _, err := MkdirAt(d, name, 0o755); err == nil {
			t.Errorf("MkdirAt(%q) made a folder", name)
		}
	}

	// The log: a link or a FIFO there is refused without blocking; a file is truncated.
	os.Symlink(filepath.Join(elsewhere, "x"), filepath.Join(dir, "b.log"))
	var nr *NotRegularError
	if _, err := CreateAt(d, "b.log", 0o644); !errors.As(err, &nr) {
		t.Errorf("CreateAt(link) = %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "x")); err == nil {
		t.Error("CreateAt created the link's target")
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "f.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = noHang(t, "CreateAt", func() error { f, err := CreateAt(d, "f.log", 0o644); closeIf(f); return err })
	if !errors.As(err, &nr) {
		t.Errorf("CreateAt(fifo) = %v", err)
	}
	os.WriteFile(filepath.Join(dir, "c.log"), []byte("old content"), 0o644)
	f, err := CreateAt(d, "c.log", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	f.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "c.log")); string(b) != "new" {
		t.Errorf("not truncated: %q", b)
	}

	// A private file: mode and owner.
	p := filepath.Join(dir, "s")
	os.WriteFile(p, []byte("x"), 0o644)
	os.Chmod(p, 0o644)
	sf, _ := os.Open(p)
	defer sf.Close()
	var me *ModeError
	if err := CheckPrivate(sf, os.Geteuid()); !errors.As(err, &me) || !strings.Contains(err.Error(), "mode 0644") {
		t.Errorf("CheckPrivate(0644) = %v", err)
	}
	var oe *OwnerError
	if err := CheckOwner(sf, os.Geteuid()+1); !errors.As(err, &oe) {
		t.Errorf("CheckOwner(other) = %v", err)
	}
}
