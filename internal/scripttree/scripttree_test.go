package scripttree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// checkout makes a checkout with scripts/x holding run.sh, a helper and a sub-folder.
func checkout(t *testing.T) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "scripts", "x")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/bash\n./helper.sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, "helper.sh"), []byte("echo hi\n"), 0o700)
	os.WriteFile(filepath.Join(dir, "sub", "conf.txt"), []byte("a=1\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "scripts", "common"), 0o755)
	os.WriteFile(filepath.Join(root, "scripts", "common", "lib.sh"), []byte("lib\n"), 0o644)
	return root, dir
}

func TestCopyKeepsFilesModesAndFollowsLinksInsideTheCheckout(t *testing.T) {
	root, dir := checkout(t)
	os.Symlink("../common/lib.sh", filepath.Join(dir, "lib.sh"))
	os.Symlink("../common", filepath.Join(dir, "common"))
	dst := filepath.Join(t.TempDir(), "run_directory")
	n, err := Copy(context.Background(), root, dir, dst, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len("#!/bin/bash\n./helper.sh\n")+len("echo hi\n")+len("a=1\n")+2*len("lib\n")) {
		t.Errorf("copied %d bytes", n)
	}
	for name, mode := range map[string]os.FileMode{"run.sh": 0o755, "helper.sh": 0o700, "sub/conf.txt": 0o644, "lib.sh": 0o644, "common/lib.sh": 0o644} {
		st, err := os.Lstat(filepath.Join(dst, name))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want a regular file of mode %v (links copied as what they lead to, as cp -L)", name, st, err, mode)
		}
	}
	// The copy is a copy: writing into it leaves the checkout as it was.
	os.WriteFile(filepath.Join(dst, "lib.sh"), []byte("changed"), 0o644)
	if b, _ := os.ReadFile(filepath.Join(root, "scripts", "common", "lib.sh")); string(b) != "lib\n" {
		t.Errorf("the checkout changed: %q", b)
	}
}

func TestBadScriptFoldersAreRefusedNamingTheEntry(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o644)
	for _, c := range []struct {
		name string
		make func(t *testing.T, root, dir string)
		lim  Limits
		want string
	}{
		{"link out of the checkout", func(t *testing.T, root, dir string) {
			os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "steal"))
		}, DefaultLimits, "steal: leads out of the checkout"},
		{"relative link out of the checkout", func(t *testing.T, root, dir string) {
			os.Symlink("../../../../../../../../etc", filepath.Join(dir, "sub", "etc"))
		}, DefaultLimits, "sub/etc: leads out of the checkout"},
		{"dangling link", func(t *testing.T, root, dir string) {
			os.Symlink("nothing-here", filepath.Join(dir, "gone"))
		}, DefaultLimits, "gone: is a symbolic link to nothing"},
		{"loop of links", func(t *testing.T, root, dir string) {
			os.Symlink("b", filepath.Join(dir, "a"))
			os.Symlink("a", filepath.Join(dir, "b"))
		}, DefaultLimits, "is a loop of symbolic links"},
		{"link to a folder that holds it", func(t *testing.T, root, dir string) {
			os.Symlink("..", filepath.Join(dir, "sub", "up"))
		}, DefaultLimits, "sub/up: is a link to a folder that holds it"},
		{"FIFO", func(t *testing.T, root, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, DefaultLimits, "pipe: is a FIFO (named pipe)"},
		{"link to a FIFO in the checkout", func(t *testing.T, root, dir string) {
			syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
			os.Symlink("../../fifo", filepath.Join(dir, "p"))
		}, DefaultLimits, "p: is a FIFO (named pipe)"},
		{"too many entries", func(t *testing.T, root, dir string) {}, Limits{Entries: 3, Bytes: 1 << 30}, "more than 3 files and folders"},
		{"too many bytes", func(t *testing.T, root, dir string) {}, Limits{Entries: 100, Bytes: 10}, "larger than the 10-byte bound"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, dir := checkout(t)
			c.make(t, root, dir)
			for _, run := range []func() error{
				func() error { return Check(context.Background(), root, dir, c.lim) },
				func() error {
					_, err := Copy(context.Background(), root, dir, filepath.Join(t.TempDir(), "rd"), c.lim)
					return err
				},
			} {
				done := make(chan error, 1)
				go func() { done <- run() }()
				select {
				case err := <-done:
					var e *Error
					if !errors.As(err, &e) || !strings.Contains(err.Error(), c.want) {
						t.Errorf("got %v, want an *Error containing %q", err, c.want)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the walk blocked")
				}
			}
		})
	}
}

func TestADeviceIsRefused(t *testing.T) {
	root, dir := checkout(t)
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, int(0x103)); err != nil {
		t.Skipf("cannot make a device here (not root): %v", err)
	}
	err := Check(context.Background(), root, dir, DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "null: is a character device") {
		t.Fatalf("got %v", err)
	}
}

func TestTheFolderItselfMustStayInTheCheckout(t *testing.T) {
	root, _ := checkout(t)
	other := t.TempDir()
	os.Symlink(other, filepath.Join(root, "scripts", "away"))
	err := Check(context.Background(), root, filepath.Join(root, "scripts", "away"), DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "leads out of the checkout") {
		t.Fatalf("got %v", err)
	}
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	if err := Check(context.Background(), root, filepath.Join(root, "file"), DefaultLimits); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("a file as the folder: %v", err)
	}
}

func TestACancelledWalkStops(t *testing.T) {
	root, dir := checkout(t)
	for i := range 600 {
		os.WriteFile(filepath.Join(dir, "sub", "f"+strconv.Itoa(i)), nil, 0o644)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("stopped by the test"))
	if err := Check(ctx, root, dir, DefaultLimits); err == nil || err.Error() != "stopped by the test" {
		t.Fatalf("got %v", err)
	}
}

// A path of hostile length is clipped in the message, its start and end kept.
func TestLongPathsAreClipped(t *testing.T) {
	e := &Error{Path: "/" + strings.Repeat("a", 6000) + "/end", Msg: "is a FIFO"}
	if m := e.Error(); len(m) > 300 || !strings.HasSuffix(m, "aaa/end: is a FIFO") || !strings.HasPrefix(m, "/aaa") {
		t.Errorf("%d bytes: %q", len(m), m)
	}
}
