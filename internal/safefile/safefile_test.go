//go:build linux

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noHang fails the test if f does not return within 5 s (a FIFO open that blocks).
func noHang(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked on a FIFO", what)
		return nil
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "status.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no mkfifo here:", err)
	}
	var r Reader
	for name, f := range map[string]func() error{
		"Open":             func() error { f, err := Open(fifo); closeIf(f); return err },
		"OpenNoFollow":     func() error { f, err := OpenNoFollow(fifo); closeIf(f); return err },
		"OpenBeneath":      func() error { f, err := OpenBeneath(dir, "status.json"); closeIf(f); return err },
		"ReadFile":         func() error { _, err := ReadFile(fifo, 1<<20); return err },
		"ReadNoFollow":     func() error { _, err := r.ReadNoFollow(fifo, 1<<20); return err },
		"ReadFileNoFollow": func() error { _, err := ReadFileNoFollow(fifo, 1<<20); return err },
	} {
		err := noHang(t, name, f)
		var nr *NotRegularError
		if !errors.As(err, &nr) || !strings.Contains(err.Error(), "a FIFO (named pipe), not a regular file") {
			t.Errorf("%s(fifo) = %v, want a NotRegularError naming a FIFO", name, err)
		}
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func TestReadLimits(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.csv")
	os.WriteFile(p, []byte(strings.Repeat("x", 100)), 0o644)
	var r Reader
	if b, err := r.ReadNoFollow(p, 100); err != nil || len(b) != 100 {
		t.Fatalf("at the limit: %d bytes, %v", len(b), err)
	}
	_, err := r.ReadNoFollow(p, 99)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("over the limit: %v, want a TooLargeError", err)
	}
	if _, err := ReadFile(p, 10); !errors.As(err, &tl) {
		t.Fatalf("ReadFile over the limit: %v", err)
	}
	if _, err := ReadFile(dir, 10); err == nil || !strings.Contains(err.Error(), "is a folder, not a regular file") {
		t.Fatalf("ReadFile(folder) = %v", err)
	}
}

func TestBeneath(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "walk"}[walk], func(t *testing.T) {
			forceWalk = walk
			defer func() { forceWalk = false }()
			outside := t.TempDir()
			os.WriteFile(filepath.Join(outside, "train.csv"), []byte("secret"), 0o644)
			node := t.TempDir()
			res := filepath.Join(node, "results", "bench")
			os.MkdirAll(filepath.Join(res, "real"), 0o755)
			os.WriteFile(filepath.Join(res, "real", "train.csv"), []byte("ok"), 0o644)
			os.Symlink(outside, filepath.Join(res, "sub"))                                  // a link in the middle, leading out
			os.Symlink("real", filepath.Join(res, "inside"))                                // a link in the middle, staying inside
			os.Symlink(filepath.Join(outside, "train.csv"), filepath.Join(res, "last.csv")) // the file itself a link

			f, err := OpenBeneath(node, "results/bench/real/train.csv")
			if err != nil {
				t.Fatalf("a plain path: %v", err)
			}
			f.Close()

			_, err = OpenBeneath(node, "results/bench/sub/train.csv")
			var oe *OutsideError
			if !errors.As(err, &oe) {
				t.Fatalf("a link in the middle leading out: %v, want an OutsideError", err)
			}
			if !strings.Contains(err.Error(), "not linked to elsewhere") {
				t.Errorf("no hint: %v", err)
			}

			_, err = OpenBeneath(node, "results/bench/last.csv")
			if err == nil {
				t.Fatal("the file itself a link was followed")
			}

			f, err = OpenBeneath(node, "results/bench/inside/train.csv")
			if walk {
				if err == nil {
					t.Fatal("the walk followed a link")
				}
			} else if err != nil {
				t.Fatalf("a link staying inside: %v", err)
			} else {
				f.Close()
			}

			for _, rel := range []string{"../x", "/etc/passwd", "results/../../x", ""} {
				if _, err := OpenBeneath(node, rel); !errors.As(err, &oe) {
					t.Errorf("OpenBeneath(%q) = %v, want an OutsideError", rel, err)
				}
			}
			if _, err := OpenBeneath(node, "results/bench/nope.csv"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a missing file: %v, want ErrNotExist", err)
			}
		})
	}
}

// ReadFileNoFollow reads a regular file and refuses a link to one; what it returns is the
// caller's to keep.
func TestReadFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.json")
	os.WriteFile(p, []byte("data"), 0o644)
	os.Symlink(p, filepath.Join(dir, "link"))
	a, err := ReadFileNoFollow(p, 10)
	if err != nil || string(a) != "data" {
		t.Fatalf("%q %v", a, err)
	}
	if b, _ := ReadFileNoFollow(p, 10); &a[0] == &b[0] {
		t.Error("two reads share a buffer")
	}
	var nr *NotRegularError
	if _, err := ReadFileNoFollow(filepath.Join(dir, "link"), 10); !errors.As(err, &nr) || !strings.Contains(err.Error(), "a symbolic link") {
		t.Errorf("a link: %v", err)
	}
}

// CopyNew never writes through what stands at the name, bounds what it copies, and leaves
// nothing behind a copy that failed.
func TestCopyNew(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "from")
	os.WriteFile(from, []byte("0123456789"), 0o644)
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	to := filepath.Join(dir, "to")
	os.Symlink(victim, to) // planted
	in, err := Open(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := CopyNew(in, to, 0o640, 0); err != nil {
		t.Fatal(err)
	}
	in.Close()
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("written through the link: %q", b)
	}
	if st, err := os.Lstat(to); err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o640 {
		t.Errorf("the copy: %v %v", st, err)
	}
	in, _ = Open(from)
	defer in.Close()
	var tl *TooLargeError
	if err := CopyNew(in, filepath.Join(dir, "small"), 0o644, 4); !errors.As(err, &tl) {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "small")); !os.IsNotExist(err) {
		t.Errorf("a failed copy was left: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	if _, err := Open(fifo); !IsNotRegular(err) {
		t.Errorf("a FIFO: %v", err)
	}
}
