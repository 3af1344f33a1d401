package digestmemo

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// later is a clock digestSettle and more past the real one: the files written now are
// settled by it (the memo's Now), without waiting for the file system's clock.
func later() time.Time { return time.Now().Add(digestSettle + time.Second) }

func digestOf(t *testing.T, m *Memo, path string) (sum string, computed bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err = m.Digest(path, f, func() (string, error) {
		computed = true
		b, err := os.ReadFile(path)
		return "sum-of-" + string(b) + strings.Repeat("0", 64-7-len(b)), err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sum, computed
}

// A settled file's digest is read once and kept across runs (the memo saved and opened
// again); a file written since (same size, its modification time set back) is read again,
// as is a file written just now, which is not kept.
func TestDigestMemoKeepsWhatIsUnchanged(t *testing.T) {
	dir := t.TempDir()
	memo := filepath.Join(dir, "cache", "d.json") // its folder made by the first Save
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("aaaa"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := Open(memo)
	m.Now = later
	if _, computed := digestOf(t, m, a); !computed {
		t.Fatal("an empty memo had a digest")
	}
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(memo); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the memo: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(memo)); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("the memo's folder: %v %v", fi, err)
	}
	m = Open(memo)
	m.Now = later
	if sum, computed := digestOf(t, m, a); computed || !strings.HasPrefix(sum, "sum-of-aaaa") {
		t.Fatalf("a settled file was read again (%v), or its digest is %q", computed, sum)
	}
	old, _ := os.Stat(a)
	// The write below must fall in a later tick of the file system's clock than the read
	// (what digestSettle ensures outside tests): wait for the tick itself, an event, by
	// touching the file's metadata until its change time moves.
	ctime := func() int64 {
		fi, err := os.Stat(a)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ctim.Nano()
	}
	for first, deadline := ctime(), time.Now().Add(10*time.Second); ctime() == first; {
		if time.Now().After(deadline) {
			t.Fatal("the file system's clock did not move in 10 s")
		}
		if err := os.Chmod(a, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(a, []byte("bbbb"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(a, old.ModTime(), old.ModTime()); err != nil {
		t.Fatal(err)
	}
	if sum, computed := digestOf(t, m, a); !computed || !strings.HasPrefix(sum, "sum-of-bbbb") {
		t.Fatalf("a file written since (its mtime set back) was not read again: %q", sum)
	}
	m.Now = nil // the real clock: a file written just now has not settled
	fresh := filepath.Join(dir, "fresh")
	if err := os.WriteFile(fresh, []byte("cc"), 0o644); err != nil {
		t.Fatal(err)
	}
	digestOf(t, m, fresh)
	if _, computed := digestOf(t, m, fresh); !computed {
		t.Fatal("a file written just now was kept")
	}
}

// A memo another user could have written (a group-writable file or folder, a link, a FIFO)
// is not read, nor written; one that is not JSON, or of another format, is started again.
func TestDigestMemoRefusesWhatItCannotTrust(t *testing.T) {
	dir := t.TempDir()
	entry := `{"format":"` + digestMemoFormat + `","entries":{"/x":{"dev":1,"ino":2,"size":3,"mtime":4,"ctime":5,"sha256":"` + strings.Repeat("a", 64) + `","at":6}}}`
	for _, tt := range []struct {
		name  string
		plant func(path string) error
		keep  bool
	}{
		{"trusted", func(p string) error { return os.WriteFile(p, []byte(entry), 0o600) }, true},
		{"group-writable", func(p string) error {
			if err := os.WriteFile(p, []byte(entry), 0o600); err != nil {
				return err
			}
			return os.Chmod(p, 0o620)
		}, false},
		{"a link", func(p string) error {
			real := p + ".real"
			if err := os.WriteFile(real, []byte(entry), 0o600); err != nil {
				return err
			}
			return os.Symlink(real, p)
		}, false},
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }, false},
		{"not JSON", func(p string) error { return os.WriteFile(p, []byte("{"+strings.Repeat("x", 6000)), 0o600) }, false},
		{"another format", func(p string) error {
			return os.WriteFile(p, []byte(strings.Replace(entry, digestMemoFormat, "v0", 1)), 0o600)
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.Mkdir(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(sub, "d.json")
			if err := tt.plant(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan *Memo, 1)
			go func() { done <- Open(p) }()
			var m *Memo
			select {
			case m = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("OpenDigestMemo blocked")
			}
			if _, ok := m.entries["/x"]; ok != tt.keep {
				t.Errorf("entry kept: %v, want %v", ok, tt.keep)
			}
		})
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	m := Open(filepath.Join(open, "d.json"))
	m.dirty = true
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(open, "d.json")); err == nil {
		t.Error("a memo was written in a folder others may write")
	}
}

// A memo past maxDigestEntries keeps the most recently read.
func TestDigestMemoIsBounded(t *testing.T) {
	dir := t.TempDir()
	m := Open(filepath.Join(dir, "d.json"))
	for i := range maxDigestEntries + 10 {
		m.entries[filepath.Join("/f", strings.Repeat("x", 3), time.Duration(i).String())] = digestEntry{SHA256: strings.Repeat("a", 64), At: int64(i)}
	}
	m.dirty = true
	if err := m.Save(); err != nil {
		t.Fatal(err)
	}
	m = Open(filepath.Join(dir, "d.json"))
	if len(m.entries) != maxDigestEntries {
		t.Fatalf("%d entries kept", len(m.entries))
	}
	for _, e := range m.entries {
		if e.At < 10 {
			t.Fatalf("an oldest entry was kept: %+v", e)
		}
	}
}
