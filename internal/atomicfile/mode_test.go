//go:build unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A replaced file keeps its mode (a 0600 file stays 0600), whatever the umask; a new file
// gets the umask's mode, as os.Create gives it.
func TestWriteFileKeepsTheModeOfTheFileItReplaces(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o664, 0o444, 0o755} {
		p := filepath.Join(dir, "priv.csv")
		os.Remove(p)
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(p, []byte("new")); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != mode {
			t.Errorf("a %04o file was replaced by a %04o one", mode, got)
		}
	}
	for _, umask := range []int{0o022, 0o077, 0o002} {
		syscall.Umask(umask)
		p := filepath.Join(dir, "new.json")
		os.Remove(p)
		if err := WriteFile(p, []byte("x")); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if want := fs.FileMode(0o666 &^ umask); st.Mode().Perm() != want {
			t.Errorf("umask %04o: a new file has mode %04o, want %04o", umask, st.Mode().Perm(), want)
		}
	}
}

// Explicit modes are set whatever the umask and whatever the old file had.
func TestWriteFileModeSetsTheMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := filepath.Join(dir, "k.json")
	os.WriteFile(p, nil, 0o600)
	if err := WriteFileMode(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %04o, want 0644", st.Mode().Perm())
	}
}

// A symbolic link under the name is neither written through nor replaced: the error says
// so, and the link and its target are as they were.
func TestWriteFileRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("secret"), 0o600)
	link := filepath.Join(dir, "priv.csv")
	os.Symlink(target, link)
	err := WriteFile(link, []byte("new"))
	var le *LinkError
	if !errors.As(err, &le) {
		t.Fatalf("writing over a link: %v, want a *LinkError", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "secret" {
		t.Errorf("the target was written: %q", got)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("temp files left: %v", ents)
	}
}
