//go:build unix

package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestWriteFileAt(t *testing.T) {
	dir := t.TempDir()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// A new file gets perm (less the umask); a replaced one keeps its mode.
	if err := WriteFileAt(d, "new", []byte("a"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "new")); fi.Mode().Perm()&^0o640 != 0 {
		t.Errorf("new file mode %v, want at most 0640", fi.Mode())
	}
	priv := filepath.Join(dir, "priv")
	os.WriteFile(priv, []byte("old"), 0o600)
	os.Chmod(priv, 0o600)
	if err := WriteFileAt(d, "priv", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(priv); fi.Mode().Perm() != 0o600 {
		t.Errorf("a 0600 file became %v", fi.Mode())
	}
	if b, _ := os.ReadFile(priv); string(b) != "new" {
		t.Errorf("content %q", b)
	}

	// A link at the name is replaced as a name: its target is not written.
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	os.Symlink(target, filepath.Join(dir, "link"))
	if err := WriteFileAt(d, "link", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Fatal("the link's target was written")
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link")); !fi.Mode().IsRegular() || fi.Mode().Perm()&^0o644 != 0 {
		t.Errorf("link replaced by %v, want a regular file with the new file's mode", fi.Mode())
	}

	// The folder swapped for a link after it was opened: the write lands in the folder.
	moved := dir + ".moved"
	os.Rename(dir, moved)
	defer os.Rename(moved, dir)
	other := t.TempDir()
	os.Symlink(other, dir)
	if err := WriteFileAt(d, "status.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(moved, "status.json")); err != nil {
		t.Errorf("not written in the open folder: %v", err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
	os.Remove(dir)

	// A folder in the way, a name that is a path: errors naming the file.
	os.Mkdir(filepath.Join(moved, "sub"), 0o755)
	for _, name := range []string{"sub", "a/b", "..", ""} {
		if err := WriteFileAt(d, name, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "writing") {
			t.Errorf("WriteFileAt(%q) = %v, want an error", name, err)
		}
	}
	// No temp files are left behind.
	ents, _ := os.ReadDir(moved)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}
}

// WriteFileAt syncs the file and its folder; ReplaceFileAt syncs neither, and is as atomic:
// the content is whole and no temporary file is left.
func TestReplaceFileAtDoesNotSync(t *testing.T) {
	files, fds := 0, 0
	defer func(f func(*os.File) error, d func(int) error) { syncFile, syncFD = f, d }(syncFile, syncFD)
	syncFile = func(f *os.File) error { files++; return f.Sync() }
	syncFD = func(fd int) error { fds++; return unix.Fsync(fd) }
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := WriteFileAt(dir, "a", []byte("durable"), 0o644); err != nil || files != 1 || fds != 1 {
		t.Fatalf("WriteFileAt: %v, %d file syncs, %d folder syncs", err, files, fds)
	}
	for i := range 3 {
		if err := ReplaceFileAt(dir, "a", []byte(fmt.Sprintf("progress %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if files != 1 || fds != 1 {
		t.Fatalf("ReplaceFileAt synced: %d file syncs, %d folder syncs", files, fds)
	}
	b, _ := os.ReadFile(filepath.Join(dir.Name(), "a"))
	ents, _ := os.ReadDir(dir.Name())
	if string(b) != "progress 2" || len(ents) != 1 {
		t.Fatalf("%q, %v", b, ents)
	}
}
